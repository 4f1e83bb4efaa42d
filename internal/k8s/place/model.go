// Package place answers "will this gang fit inside one network domain right
// now, where, and if not, why" for the four ways users express
// topology-aware gang scheduling (seed 5.7): a Kubernetes PodGroup with a
// schedulingConstraints.topology key, a Job with KAI Scheduler annotations
// and a KAI Topology, a Volcano Job with networkTopology and HyperNodes, and
// a Job with Kueue pod-set annotations and a Kueue Topology (or plain
// --levels label keys).
//
// The model: nodes with free resources (allocatable minus the effective
// requests of the pods bound to them, computed as internal/k8s/admit/podres
// does), a topology of levels (outermost first) whose domains are sets of
// nodes, and a gang of tasks (identical pods each). A node can take a pod
// when it is schedulable (not cordoned, Ready, every NoSchedule/NoExecute
// taint tolerated, nodeSelector and required node affinity matched) and its
// free resources cover the pod's requests (and a pod slot). Place searches
// from the innermost level up to the required one (the whole cluster when
// none is required) and takes the first level at which one domain holds the
// whole gang, the best-fit domain there (least pod capacity left, then least
// primary resource left, then name), filled fullest-first. Fit is exact: for
// a single task a domain holds the gang iff the sum over its nodes of the
// pods each can take covers it; for several tasks an exact search over
// per-node count vectors with Pareto pruning decides it.
package place

import (
	"fmt"
	"runtime"
	"sort"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/gpunode/gpunode/internal/k8s/admit/podres"
	"github.com/gpunode/gpunode/internal/k8s/objects"
)

// ResourceGPU is the NVIDIA device plugin's resource name.
const ResourceGPU v1.ResourceName = "nvidia.com/gpu"

// Resources indexes the resource names a gang requests; node and pod
// vectors hold their amounts in the same order (cpu in millicores, the rest
// in units).
type Resources []v1.ResourceName

func (rs Resources) amount(name v1.ResourceName, q resource.Quantity) int64 {
	if name == v1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

func (rs Resources) vector(list v1.ResourceList) []int64 {
	out := make([]int64, len(rs))
	for i, name := range rs {
		if q, ok := list[name]; ok {
			out[i] = rs.amount(name, q)
		}
	}
	return out
}

// Format renders amount of resource i.
func (rs Resources) Format(i int, amount int64) string {
	if rs[i] == v1.ResourceCPU {
		return resource.NewMilliQuantity(amount, resource.DecimalSI).String()
	}
	if rs[i] == v1.ResourceMemory || rs[i] == v1.ResourceEphemeralStorage || len(rs[i]) > 9 && rs[i][:9] == "hugepages" {
		return resource.NewQuantity(amount, resource.BinarySI).String()
	}
	return resource.NewQuantity(amount, resource.DecimalSI).String()
}

// BoundPod is a pod already running on a node and its effective requests.
type BoundPod struct {
	Pod *objects.Pod
	Req []int64
}

// Node is a node with what is free on it.
type Node struct {
	Name          string
	Obj           *objects.Node
	Alloc         []int64
	Free          []int64
	FreePods      int64
	Unschedulable bool
	NotReady      bool
	Pods          []BoundPod
}

// Cluster is the nodes with their free resources for one set of resources.
type Cluster struct {
	Res   Resources
	Nodes []Node
	index map[string]int
	// Ignored counts bound pods on nodes that are not in the node list.
	Ignored int
}

// NodeIndex returns the index of the named node, or -1.
func (c *Cluster) NodeIndex(name string) int {
	if i, ok := c.index[name]; ok {
		return i
	}
	return -1
}

// EffectiveRequests is a pod's requests as the scheduler counts them:
// API-server defaulting (limits as requests), init/sidecar/app containers
// (podres.PodRequests), pod-level cpu/memory requests when set, plus the
// pod overhead. pod is not modified.
func EffectiveRequests(pod *v1.Pod) v1.ResourceList {
	p := &v1.Pod{Spec: v1.PodSpec{InitContainers: pod.Spec.InitContainers, Containers: pod.Spec.Containers}}
	if needsDefault(pod) {
		p.Spec = *pod.Spec.DeepCopy()
		podres.Default(p)
	}
	req := podres.PodRequests(p, false)
	if r := pod.Spec.Resources; r != nil {
		for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
			if q, ok := r.Requests[name]; ok {
				req[name] = q.DeepCopy()
			} else if q, ok := r.Limits[name]; ok {
				req[name] = q.DeepCopy()
			}
		}
	}
	for name, q := range pod.Spec.Overhead {
		sum := req[name]
		sum.Add(q)
		req[name] = sum
	}
	return req
}

// requestVector writes pod's effective requests for res into out. Pods with
// init containers or pod-level resources go through EffectiveRequests; for
// the rest (a sum over app containers of request-else-limit, plus overhead)
// it reads the quantities directly, without building maps.
func (rs Resources) requestVector(pod *objects.Pod, out []int64) {
	if len(pod.Inits()) > 0 || pod.PodResources() != nil {
		req := EffectiveRequests(pod.V1())
		for i, name := range rs {
			if q, ok := req[name]; ok {
				out[i] = rs.amount(name, q)
			}
		}
		return
	}
	for i, name := range rs {
		var sum int64
		for c := range pod.Containers {
			r := &pod.Containers[c]
			if q, ok := r.Requests.Get(name); ok {
				sum += rs.amount(name, q)
			} else if q, ok := r.Limits.Get(name); ok {
				sum += rs.amount(name, q)
			}
		}
		if q, ok := pod.Overhead().Get(name); ok {
			sum += rs.amount(name, q)
		}
		out[i] = sum
	}
}

// needsDefault reports whether some container has a limit without a request.
func needsDefault(pod *v1.Pod) bool {
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			for name := range cs[i].Resources.Limits {
				if _, ok := cs[i].Resources.Requests[name]; !ok {
					return true
				}
			}
		}
	}
	return false
}

// NewCluster computes each node's free resources for res: allocatable minus
// the effective requests of every pod bound to it (spec.nodeName set, not
// Succeeded or Failed).
func NewCluster(nodes []*objects.Node, pods []*objects.Pod, res Resources) *Cluster {
	R := len(res)
	c := &Cluster{Res: res, Nodes: make([]Node, len(nodes)), index: make(map[string]int, len(nodes))}
	flat := make([]int64, 2*R*len(nodes))
	for i, n := range nodes {
		nd := &c.Nodes[i]
		nd.Name = n.Name
		nd.Obj = n
		nd.Alloc = flat[2*R*i : 2*R*i+R : 2*R*i+R]
		nd.Free = flat[2*R*i+R : 2*R*(i+1) : 2*R*(i+1)]
		for r, name := range res {
			if q, ok := n.Allocatable.Get(name); ok {
				nd.Alloc[r] = res.amount(name, q)
			}
		}
		copy(nd.Free, nd.Alloc)
		nd.FreePods = 110
		if q, ok := n.Allocatable.Get(v1.ResourcePods); ok {
			nd.FreePods = q.Value()
		}
		nd.Unschedulable = n.Unschedulable
		nd.NotReady = !n.Ready()
		c.index[n.Name] = i
	}
	// bound pods: node of each, then one flat array of pods and requests
	on := make([]int32, len(pods))
	count := make([]int32, len(nodes)+1)
	for pi, p := range pods {
		on[pi] = -1
		if p.NodeName == "" || p.Phase == v1.PodSucceeded || p.Phase == v1.PodFailed {
			continue
		}
		i, ok := c.index[p.NodeName]
		if !ok {
			c.Ignored++
			continue
		}
		on[pi] = int32(i)
		count[i+1]++
	}
	for i := 1; i <= len(nodes); i++ {
		count[i] += count[i-1]
	}
	bound := make([]BoundPod, count[len(nodes)])
	reqs := make([]int64, R*len(bound))
	next := append([]int32(nil), count[:len(nodes)]...)
	slot := make([]int32, len(pods))
	for pi := range pods {
		if i := on[pi]; i >= 0 {
			slot[pi] = next[i]
			next[i]++
		}
	}
	parallel(len(pods), func(lo, hi int) {
		for pi := lo; pi < hi; pi++ {
			if on[pi] < 0 {
				continue
			}
			k := int(slot[pi])
			req := reqs[R*k : R*(k+1) : R*(k+1)]
			res.requestVector(pods[pi], req)
			bound[k] = BoundPod{Pod: pods[pi], Req: req}
		}
	})
	for pi := range pods {
		i := on[pi]
		if i < 0 {
			continue
		}
		nd := &c.Nodes[i]
		req := bound[slot[pi]].Req
		for r := range req {
			nd.Free[r] -= req[r]
		}
		nd.FreePods--
	}
	for i := range c.Nodes {
		c.Nodes[i].Pods = bound[count[i]:count[i+1]:count[i+1]]
	}
	return c
}

// parallel runs fn over [0, n) split into one range per CPU (one range
// when n is small); the ranges write disjoint data.
func parallel(n int, fn func(lo, hi int)) {
	w := runtime.GOMAXPROCS(0)
	if n < 4096 || w < 2 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	for k := 0; k < w; k++ {
		lo, hi := n*k/w, n*(k+1)/w
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(lo, hi)
		}()
	}
	wg.Wait()
}

// Task is one kind of pod of the gang: Count identical pods.
type Task struct {
	Name     string // Volcano task name; "" for a Job
	Count    int
	PodNames []string
	Template *v1.Pod
	Requests v1.ResourceList
	req      []int64
	affinity nodeaffinity.RequiredNodeAffinity
	selects  bool // the template has a nodeSelector or required node affinity
}

// Exclusion reasons (JSON codes), in the order they are checked.
const (
	ReasonCordoned = "cordoned"
	ReasonNotReady = "notReady"
	ReasonTainted  = "tainted"
	ReasonAffinity = "affinity"
	ReasonTooFull  = "tooFull"
)

// ReasonText is how the table says a reason.
func ReasonText(r string) string {
	switch r {
	case ReasonNotReady:
		return "not Ready"
	case ReasonAffinity:
		return "node selector/affinity"
	case ReasonTooFull:
		return "too full"
	}
	return r
}

// fit returns how many pods of t node n can take, and when none, why.
func (t *Task) fit(n *Node) (int, string, string) {
	if n.Unschedulable {
		return 0, ReasonCordoned, "spec.unschedulable"
	}
	if n.NotReady {
		return 0, ReasonNotReady, "Ready condition is not True"
	}
	if taint, bad := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), n.Obj.Taints, t.Template.Spec.Tolerations, func(tt *v1.Taint) bool {
		return tt.Effect == v1.TaintEffectNoSchedule || tt.Effect == v1.TaintEffectNoExecute
	}, false); bad {
		return 0, ReasonTainted, taint.ToString()
	}
	if !t.selects {
		// nothing to match: every node matches
	} else if ok, err := t.affinity.Match(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Obj.Name, Labels: n.Obj.Labels}}); err != nil || !ok {
		return 0, ReasonAffinity, "does not match the pod's nodeSelector/required node affinity"
	}
	k := n.FreePods
	for r, want := range t.req {
		if want <= 0 {
			continue
		}
		m := int64(0)
		if n.Free[r] > 0 {
			m = n.Free[r] / want
		}
		if m < k {
			k = m
		}
	}
	if k <= 0 {
		return 0, ReasonTooFull, ""
	}
	return int(k), "", ""
}

// shortOf describes the first resource of n that cannot hold one pod of t.
func (t *Task) shortOf(c *Cluster, n *Node) string {
	if n.FreePods <= 0 {
		return "no pod slot left"
	}
	for r, want := range t.req {
		if want > 0 && n.Free[r] < want {
			free := n.Free[r]
			if free < 0 {
				free = 0
			}
			return fmt.Sprintf("%s: %s free, pod wants %s", c.Res[r], c.Res.Format(r, free), c.Res.Format(r, want))
		}
	}
	return ""
}

// GangResources returns the resource names the tasks request, sorted with
// cpu and memory first.
func GangResources(tasks []*Task) Resources {
	seen := map[v1.ResourceName]bool{}
	var rs Resources
	for _, t := range tasks {
		for name, q := range t.Requests {
			if !seen[name] && !q.IsZero() && name != v1.ResourcePods {
				seen[name] = true
				rs = append(rs, name)
			}
		}
	}
	rank := func(n v1.ResourceName) int {
		switch n {
		case v1.ResourceCPU:
			return 0
		case v1.ResourceMemory:
			return 1
		}
		return 2
	}
	sort.Slice(rs, func(i, j int) bool {
		if rank(rs[i]) != rank(rs[j]) {
			return rank(rs[i]) < rank(rs[j])
		}
		return rs[i] < rs[j]
	})
	return rs
}

// primary is the index of the resource best fit and fullest-first compare
// after pod capacity: nvidia.com/gpu, else the first extended resource, else
// cpu, else -1.
func (rs Resources) primary() int {
	best := -1
	for i, n := range rs {
		if n == ResourceGPU {
			return i
		}
		if best < 0 && n != v1.ResourceCPU && n != v1.ResourceMemory {
			best = i
		}
	}
	if best >= 0 {
		return best
	}
	for i, n := range rs {
		if n == v1.ResourceCPU {
			return i
		}
	}
	return -1
}
