package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const (
	driver = "gpu.example.com"
	class  = "gpu.example.com"
)

type device struct {
	name  string
	model string
	numa  int64
}

// sel is a generated request selector: "" (any), "model=X" or "numa=N";
// the oracle evaluates it in Go, the scheduler and gpunode as CEL.
type sel struct {
	model string
	numa  int64 // -1: any
}

func (s sel) cel() []resourcev1.DeviceSelector {
	var out []resourcev1.DeviceSelector
	if s.model != "" {
		out = append(out, resourcev1.DeviceSelector{CEL: &resourcev1.CELDeviceSelector{
			Expression: fmt.Sprintf(`device.attributes["%s"].model == %q`, driver, s.model)}})
	}
	if s.numa >= 0 {
		out = append(out, resourcev1.DeviceSelector{CEL: &resourcev1.CELDeviceSelector{
			Expression: fmt.Sprintf(`device.attributes["%s"].numa == %d`, driver, s.numa)}})
	}
	return out
}

func (s sel) match(d device) bool {
	return (s.model == "" || s.model == d.model) && (s.numa < 0 || s.numa == d.numa)
}

type request struct {
	name  string
	count int64
	sel   sel
}

type claimSpec struct {
	name      string
	requests  []request
	matchNUMA bool
}

type draCase struct {
	id        int
	nodes     map[string][]device
	order     []string
	allocated map[string]string // "node/device" -> allocated claim
	preClaims []*resourcev1.ResourceClaim
	claims    []claimSpec
}

func genDRACase(r *rand.Rand, id int, ns string) draCase {
	dc := draCase{id: id, nodes: map[string][]device{}, allocated: map[string]string{}}
	for i := range 1 + r.IntN(4) {
		node := fmt.Sprintf("d%d-n%d", id, i)
		dc.order = append(dc.order, node)
		for j := range r.IntN(9) {
			dc.nodes[node] = append(dc.nodes[node], device{name: fmt.Sprintf("gpu-%d", j),
				model: []string{"h100", "a100"}[r.IntN(2)], numa: int64(j * 2 / max(1, 8))})
		}
		// Devices in use by claims allocated before (0-3 per node).
		for k := range r.IntN(4) {
			devs := dc.nodes[node]
			if len(devs) == 0 {
				break
			}
			d := devs[r.IntN(len(devs))]
			key := node + "/" + d.name
			if dc.allocated[key] != "" {
				continue
			}
			name := fmt.Sprintf("used-%d-%d-%d", id, i, k)
			dc.allocated[key] = name
			cl := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
					Name: "r", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1}}}}}}
			cl.Status.Allocation = &resourcev1.AllocationResult{
				Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{Request: "r", Driver: driver, Pool: node, Device: d.name}}},
				NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{
					Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}},
			}
			dc.preClaims = append(dc.preClaims, cl)
		}
	}
	for c := range 1 + r.IntN(2) {
		cs := claimSpec{name: fmt.Sprintf("claim-%d-%d", id, c), matchNUMA: r.IntN(3) == 0}
		for q := range 1 + r.IntN(2) {
			s := sel{numa: -1}
			switch r.IntN(4) {
			case 0:
				s.model = []string{"h100", "a100"}[r.IntN(2)]
			case 1:
				s.numa = r.Int64N(2)
			}
			cs.requests = append(cs.requests, request{name: fmt.Sprintf("r%d", q), count: 1 + r.Int64N(3), sel: s})
		}
		dc.claims = append(dc.claims, cs)
	}
	return dc
}

func (dc draCase) slices() []*resourcev1.ResourceSlice {
	var out []*resourcev1.ResourceSlice
	for _, node := range dc.order {
		s := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-gpus"},
			Spec: resourcev1.ResourceSliceSpec{Driver: driver, NodeName: ptr.To(node),
				Pool: resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1}}}
		for _, d := range dc.nodes[node] {
			s.Spec.Devices = append(s.Spec.Devices, resourcev1.Device{Name: d.name, Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
				"model": {StringValue: ptr.To(d.model)}, "numa": {IntValue: ptr.To(d.numa)}}})
		}
		out = append(out, s)
	}
	return out
}

func (cs claimSpec) object(ns string) *resourcev1.ResourceClaim {
	cl := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cs.name}}
	for _, q := range cs.requests {
		cl.Spec.Devices.Requests = append(cl.Spec.Devices.Requests, resourcev1.DeviceRequest{Name: q.name,
			Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourcev1.DeviceAllocationModeExactCount,
				Count: q.count, Selectors: q.sel.cel()}})
	}
	if cs.matchNUMA {
		cl.Spec.Devices.Constraints = []resourcev1.DeviceConstraint{{MatchAttribute: ptr.To(resourcev1.FullyQualifiedName(driver + "/numa"))}}
	}
	return cl
}

type result struct{ request, pool, device string }

// valid checks one node's allocation of the pod's claims against the case
// (independently of both allocators): the count of every request, its
// selector, the devices on that node, free, used once, and matchAttribute.
func (dc draCase) valid(node string, alloc map[string][]result) error {
	devs := map[string]device{}
	for _, d := range dc.nodes[node] {
		devs[d.name] = d
	}
	used := map[string]bool{}
	for _, cs := range dc.claims {
		rs := alloc[cs.name]
		per := map[string]int64{}
		numa := int64(-1)
		for _, r := range rs {
			if r.pool != node {
				return fmt.Errorf("claim %s: device %s/%s is not on node %s", cs.name, r.pool, r.device, node)
			}
			d, ok := devs[r.device]
			if !ok {
				return fmt.Errorf("claim %s: no device %s on %s", cs.name, r.device, node)
			}
			if dc.allocated[node+"/"+r.device] != "" {
				return fmt.Errorf("claim %s: device %s is allocated to %s", cs.name, r.device, dc.allocated[node+"/"+r.device])
			}
			if used[r.device] {
				return fmt.Errorf("claim %s: device %s used twice", cs.name, r.device)
			}
			used[r.device] = true
			var q *request
			for i := range cs.requests {
				if cs.requests[i].name == r.request {
					q = &cs.requests[i]
				}
			}
			if q == nil {
				return fmt.Errorf("claim %s: result for unknown request %q", cs.name, r.request)
			}
			if !q.sel.match(d) {
				return fmt.Errorf("claim %s request %s: device %s (%s, numa %d) does not match %+v", cs.name, q.name, d.name, d.model, d.numa, q.sel)
			}
			per[r.request]++
			if cs.matchNUMA {
				if numa >= 0 && numa != d.numa {
					return fmt.Errorf("claim %s: matchAttribute numa broken (%d vs %d)", cs.name, numa, d.numa)
				}
				numa = d.numa
			}
		}
		for _, q := range cs.requests {
			if per[q.name] != q.count {
				return fmt.Errorf("claim %s request %s: %d devices, want %d", cs.name, q.name, per[q.name], q.count)
			}
		}
	}
	return nil
}

type draReport struct {
	Nodes []struct {
		Node        string `json:"node"`
		Fits        bool   `json:"fits"`
		Undecided   bool   `json:"undecided"`
		Allocations []struct {
			Claim   string `json:"claim"`
			Results []struct {
				Request, Driver, Pool, Device string
			} `json:"results"`
		} `json:"allocations"`
	} `json:"nodes"`
}

type draTally struct {
	cases, agree, bound, unbound, gpunodeNodesChecked int
	unexplained                                       []string
	gpunodeTime, schedTime                            time.Duration
}

const gate = "conformance.gpunode.io/hold"

func runDRA(t *testing.T, e *env, cases int, seed uint64) draTally {
	ns := "dra"
	ensureNamespace(t, e.client, ns)
	r := rand.New(rand.NewPCG(seed, 26))
	ctx := context.Background()
	var tl draTally
	rc := e.client.ResourceV1()
	for id := range cases {
		e.reset(t, ns)
		dc := genDRACase(r, id, ns)
		var nodes []*corev1.Node
		for _, n := range dc.order {
			nodes = append(nodes, nodeSpec{name: n, labels: map[string]string{labelCase: fmt.Sprint(id)}, cpu: 64, memGi: 256, pods: 110}.object())
		}
		if err := createNodes(ctx, e.client, nodes, 4); err != nil {
			t.Fatal(err)
		}
		if _, err := rc.DeviceClasses().Create(ctx, &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: class},
			Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
				Expression: fmt.Sprintf("device.driver == %q", driver)}}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, s := range dc.slices() {
			if _, err := rc.ResourceSlices().Create(ctx, s, metav1.CreateOptions{}); err != nil {
				t.Fatalf("case %d: slice: %v", id, err)
			}
		}
		for _, cl := range dc.preClaims {
			st := cl.Status
			got, err := rc.ResourceClaims(ns).Create(ctx, cl, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("case %d: claim: %v", id, err)
			}
			got.Status = st
			if _, err := rc.ResourceClaims(ns).UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("case %d: claim status: %v", id, err)
			}
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("trainer-%d", id)},
			Spec: corev1.PodSpec{NodeSelector: map[string]string{labelCase: fmt.Sprint(id)},
				SchedulingGates: []corev1.PodSchedulingGate{{Name: gate}},
				Containers:      []corev1.Container{{Name: "c", Image: "busybox"}}}}
		for i, cs := range dc.claims {
			if _, err := rc.ResourceClaims(ns).Create(ctx, cs.object(ns), metav1.CreateOptions{}); err != nil {
				t.Fatalf("case %d: claim %s: %v", id, cs.name, err)
			}
			n := fmt.Sprintf("c%d", i)
			pod.Spec.ResourceClaims = append(pod.Spec.ResourceClaims, corev1.PodResourceClaim{Name: n, ResourceClaimName: ptr.To(cs.name)})
			pod.Spec.Containers[0].Resources.Claims = append(pod.Spec.Containers[0].Resources.Claims, corev1.ResourceClaim{Name: n})
		}
		if _, err := e.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("case %d: pod: %v", id, err)
		}
		// The pod is Pending (gated): ask gpunode why, through the kubeconfig.
		t0 := time.Now()
		code, out, stderr := gpunode(ctx, "k8s", "dra", "allocate", "--kubeconfig", e.kubeconfig, "-n", ns, "--from-cluster", "pod/"+pod.Name, "-o", "json")
		tl.gpunodeTime += time.Since(t0)
		var rep draReport
		if code > 1 || json.Unmarshal(out, &rep) != nil {
			t.Fatalf("case %d: dra allocate exit %d: %s\n%s", id, code, stderr, out)
		}
		if !strings.Contains(stderr, fmt.Sprintf("%d allocated claims from https://", len(dc.preClaims))) {
			t.Fatalf("case %d: allocate did not read the cluster: %s", id, stderr)
		}
		fitting := map[string]bool{}
		for _, n := range rep.Nodes {
			if n.Undecided {
				t.Fatalf("case %d: node %s undecided", id, n.Node)
			}
			if !n.Fits {
				continue
			}
			fitting[n.Node] = true
			alloc := map[string][]result{}
			for _, a := range n.Allocations {
				_, name, _ := strings.Cut(a.Claim, "/")
				for _, x := range a.Results {
					alloc[name] = append(alloc[name], result{x.Request, x.Pool, x.Device})
				}
			}
			if err := dc.valid(n.Node, alloc); err != nil {
				t.Errorf("case %d: gpunode's allocation on %s is not valid: %v", id, n.Node, err)
			}
			tl.gpunodeNodesChecked++
		}
		// Release the gate: the scheduler decides now.
		p, err := e.client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Spec.SchedulingGates = nil
		if _, err := e.client.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		o, err := waitScheduled(ctx, e.client, ns, []string{pod.Name}, 15*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		tl.schedTime += o.elapsed
		tl.cases++
		node, bound := o.nodes[pod.Name]
		desc := fmt.Sprintf("case %d (%d nodes, %d devices in use, %d claims)", id, len(dc.order), len(dc.preClaims), len(dc.claims))
		if (code == 0) != bound {
			why := "unexplained: scheduler: " + o.message
			if o.timedOut {
				why = "the scheduler neither bound nor marked the pod unschedulable within 15s"
			}
			tl.unexplained = append(tl.unexplained, fmt.Sprintf("%s: gpunode fits=%v, scheduler bound=%v: %s", desc, code == 0, bound, why))
			continue
		}
		if o.timedOut {
			tl.unexplained = append(tl.unexplained, desc+": gpunode fits=false; the scheduler neither bound nor marked the pod unschedulable within 15s")
			continue
		}
		if !bound {
			tl.unbound++
			tl.agree++
			continue
		}
		tl.bound++
		if !fitting[node] {
			tl.unexplained = append(tl.unexplained, fmt.Sprintf("%s: the scheduler bound to %s, where gpunode says the claims do not fit (fits on %v)", desc, node, sortedKeys(fitting)))
			continue
		}
		alloc := map[string][]result{}
		for _, cs := range dc.claims {
			cl, err := rc.ResourceClaims(ns).Get(ctx, cs.name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if cl.Status.Allocation == nil {
				t.Fatalf("%s: pod bound but claim %s has no allocation", desc, cs.name)
			}
			for _, x := range cl.Status.Allocation.Devices.Results {
				alloc[cs.name] = append(alloc[cs.name], result{x.Request, x.Pool, x.Device})
			}
		}
		if err := dc.valid(node, alloc); err != nil {
			t.Errorf("%s: the scheduler's allocation is not valid by the oracle: %v", desc, err)
			continue
		}
		tl.agree++
	}
	e.reset(t, ns)
	return tl
}
