package admit

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpunode/gpunode/internal/k8s/objects"

	"github.com/gpunode/gpunode/internal/k8s/kubeletcfg"
	"github.com/gpunode/gpunode/internal/k8s/node"
)

const twoNUMA = `apiVersion: gpunode.io/v1
kind: Node
numaNodes:
- {id: 0, cpus: "0-7", memory: 32Gi}
- {id: 1, cpus: "8-15", memory: 32Gi}
cores: ["0,4", "1,5", "2,6", "3,7", "8,12", "9,13", "10,14", "11,15"]
devices:
  nvidia.com/gpu:
  - {id: g0, numaNode: 0}
  - {id: g1, numaNode: 0}
  - {id: g2, numaNode: 1}
  - {id: g3, numaNode: 1}
`

func kcWith(extra string) string {
	return "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n" + extra
}

const staticAll = `cpuManagerPolicy: static
reservedSystemCPUs: "0,4"
memoryManagerPolicy: Static
systemReserved: {memory: 924Mi}
reservedMemory:
- {numaNode: 0, limits: {memory: 512Mi}}
- {numaNode: 1, limits: {memory: 512Mi}}
`

func podDoc(name, resources string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + "}\nspec:\n  containers:\n  - name: app\n    resources: " + resources + "\n---\n"
}

func guaranteedRes(cpu, mem string, gpus string) string {
	r := "{cpu: \"" + cpu + "\", memory: " + mem
	if gpus != "" {
		r += ", nvidia.com/gpu: " + gpus
	}
	r += "}"
	return "{requests: " + r + ", limits: " + r + "}"
}

type outcome struct {
	admitted bool
	reason   string
	message  string // substring
	cpus     string // first container's CPUs
	why      string // substring of the explanation
}

func TestScenarios(t *testing.T) {
	for _, tc := range []struct {
		name, kc, pods string
		want           []outcome
	}{
		{
			name: "restricted rejects a pod whose CPUs and GPUs sit on different nodes",
			kc:   staticAll + "topologyManagerPolicy: restricted\n",
			pods: podDoc("gpus", guaranteedRes("500m", "1Gi", "2")) + podDoc("cpus", guaranteedRes("8", "1Gi", "")) + podDoc("both", guaranteedRes("4", "1Gi", "2")),
			want: []outcome{
				{admitted: true},
				{admitted: true, cpus: "8-15"},
				{admitted: false, reason: ReasonTopologyAffinity, message: TopologyAffinityMessage, why: "each fits somewhere, but on different nodes"},
			},
		},
		{
			name: "best-effort admits the same pod across NUMA nodes",
			kc:   staticAll + "topologyManagerPolicy: best-effort\n",
			pods: podDoc("gpus", guaranteedRes("500m", "1Gi", "2")) + podDoc("cpus", guaranteedRes("8", "1Gi", "")) + podDoc("both", guaranteedRes("4", "1Gi", "2")),
			want: []outcome{{admitted: true}, {admitted: true, cpus: "8-15"}, {admitted: true, cpus: "1-2,5-6"}},
		},
		{
			name: "full-pcpus-only rejects odd CPU counts",
			kc:   staticAll + "topologyManagerPolicy: single-numa-node\ncpuManagerPolicyOptions: {full-pcpus-only: \"true\"}\n",
			pods: podDoc("odd", guaranteedRes("3", "1Gi", "")),
			want: []outcome{{admitted: false, reason: ReasonSMTAlignment, message: "SMT Alignment Error: requested 3 cpus not multiple cpus per core = 2", why: "multiple of 2"}},
		},
		{
			name: "best-effort admits to the device manager, which then fails",
			kc:   staticAll + "topologyManagerPolicy: best-effort\n",
			pods: podDoc("big", guaranteedRes("2", "1Gi", "8")),
			want: []outcome{{admitted: false, reason: ReasonUnexpected, message: "Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 8, Available: 4, which is unexpected", why: "only 4 nvidia.com/gpu are free on the whole node"}},
		},
		{
			name: "policy none still pins CPUs",
			kc:   staticAll,
			pods: podDoc("a", guaranteedRes("2", "1Gi", "")),
			want: []outcome{{admitted: true, cpus: "1,5"}},
		},
		{
			name: "burstable pods are admitted to the shared pool until allocatable runs out",
			kc:   "cpuManagerPolicy: none\nsystemReserved: {cpu: \"2\"}\n",
			pods: podDoc("a", "{requests: {cpu: \"10\"}}") + podDoc("b", "{requests: {cpu: \"5\"}}"),
			want: []outcome{{admitted: true}, {admitted: false, reason: "OutOfcpu", message: "Node didn't have enough resource: cpu, requested: 5000, used: 10000, capacity: 14000"}},
		},
		{
			// kubelet replaces the cpu reservations with the size of
			// reservedSystemCPUs (cmd/kubelet/app/server.go).
			name: "reservedSystemCPUs count against allocatable cpu",
			kc:   "cpuManagerPolicy: static\nreservedSystemCPUs: \"0,4\"\nkubeReserved: {cpu: \"5\"}\n",
			pods: podDoc("a", "{requests: {cpu: \"10\"}}") + podDoc("b", "{requests: {cpu: \"5\"}}"),
			want: []outcome{{admitted: true}, {admitted: false, reason: "OutOfcpu", message: "Node didn't have enough resource: cpu, requested: 5000, used: 10000, capacity: 14000"}},
		},
		{
			// kubelet's parsePercentage is float32: 1% of 64Gi is
			// 687194752 bytes, not the float64 687194767.
			name: "a percentage memory.available reserves what kubelet computes",
			kc:   "memoryManagerPolicy: Static\nevictionHard: {memory.available: \"1%\"}\nreservedMemory:\n- {numaNode: 0, limits: {memory: \"687194752\"}}\n",
			pods: podDoc("a", guaranteedRes("1", "1Gi", "")),
			want: []outcome{{admitted: true}},
		},
		{
			name: "pod scope aligns all containers to one node",
			kc:   staticAll + "topologyManagerPolicy: single-numa-node\ntopologyManagerScope: pod\n",
			pods: `apiVersion: v1
kind: Pod
metadata: {name: sidecars}
spec:
  initContainers:
  - name: setup
    resources: {limits: {cpu: "4", memory: 1Gi}}
  - name: proxy
    restartPolicy: Always
    resources: {limits: {cpu: "2", memory: 1Gi}}
  containers:
  - name: app
    resources: {limits: {cpu: "4", memory: 1Gi, nvidia.com/gpu: "2"}}
`,
			want: []outcome{{admitted: true, cpus: "1-2,5-6"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := node.Parse([]byte(twoNUMA))
			if err != nil {
				t.Fatal(err)
			}
			c, err := kubeletcfg.Parse([]byte(kcWith(tc.kc)), "kc.yaml")
			if err != nil {
				t.Fatal(err)
			}
			sim, err := New(n, &c.KC, Options{})
			if err != nil {
				t.Fatal(err)
			}
			pods, err := ParsePods(strings.NewReader(tc.pods), "pods.yaml")
			if err != nil {
				t.Fatal(err)
			}
			rep := sim.Run(pods)
			if len(rep.Pods) != len(tc.want) {
				t.Fatalf("%d results, want %d", len(rep.Pods), len(tc.want))
			}
			for i, w := range tc.want {
				got := rep.Pods[i]
				if got.Admitted != w.admitted || got.Reason != w.reason || !strings.Contains(got.Message, w.message) {
					t.Errorf("pod %s: admitted=%v reason=%q message=%q, want %v %q %q", got.Name, got.Admitted, got.Reason, got.Message, w.admitted, w.reason, w.message)
				}
				if w.cpus != "" && (len(got.Containers) == 0 || got.Containers[0].CPUs != w.cpus) {
					t.Errorf("pod %s: containers %+v, want CPUs %s", got.Name, got.Containers, w.cpus)
				}
				if w.why != "" && !strings.Contains(strings.Join(got.Explanation, "\n"), w.why) {
					t.Errorf("pod %s: explanation %q lacks %q", got.Name, got.Explanation, w.why)
				}
			}
		})
	}
}

func TestKubeletStartErrors(t *testing.T) {
	n, err := node.Parse([]byte(twoNUMA))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ kc, want string }{
		{"cpuManagerPolicy: static\n", "[cpumanager] unable to determine reserved CPU resources for static policy"},
		{"cpuManagerPolicy: static\nkubeReserved: {cpu: 500m}\ncpuManagerPolicyOptions: {align-by-socket: \"true\"}\n", `CPU Manager Policy Alpha-level Options not enabled, but option "align-by-socket" provided`},
		{"cpuManagerPolicy: static\nreservedSystemCPUs: \"0\"\nfeatureGates: {CPUManagerPolicyAlphaOptions: true}\ncpuManagerPolicyOptions: {align-by-socket: \"true\"}\ntopologyManagerPolicy: single-numa-node\n", "Topolgy manager single-numa-node policy is incompatible with CPUManager align-by-socket policy option"},
		{"memoryManagerPolicy: Static\nsystemReserved: {memory: 1Gi}\nreservedMemory: [{numaNode: 0, limits: {memory: 1Gi}}]\n", `the total amount "1Gi" of type "memory" is not equal to the value "1124Mi" determined by Node Allocatable feature`},
		{"memoryManagerPolicy: Static\nreservedMemory: [{numaNode: 5, limits: {memory: 100Mi}}]\n", "references a NUMA node 5 that does not exist"},
		// mergeDefaultEvictionSettings adds kubelet's memory.available=100Mi to the reservation.
		{"memoryManagerPolicy: Static\nevictionHard: {nodefs.available: 10%}\nmergeDefaultEvictionSettings: true\nreservedMemory: [{numaNode: 0, limits: {memory: 1Gi}}]\n", `the total amount "1Gi" of type "memory" is not equal to the value "100Mi" determined by Node Allocatable feature`},
		{"topologyManagerPolicy: best-effort\ntopologyManagerPolicyOptions: {max-allowable-numa-nodes: \"4\"}\n", `the minimum value of "max-allowable-numa-nodes" should not be less than 8`},
		{"topologyManagerPolicy: bogus\n", `unknown policy: "bogus"`},
	} {
		c, err := kubeletcfg.Parse([]byte(kcWith(tc.kc)), "kc.yaml")
		if err != nil {
			t.Fatal(err)
		}
		_, err = New(n, &c.KC, Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.kc, err, tc.want)
		}
	}
	var s strings.Builder
	s.WriteString("apiVersion: gpunode.io/v1\nkind: Node\nnumaNodes:\n")
	for i := 0; i < 9; i++ {
		s.WriteString("- {id: " + string(rune('0'+i)) + ", memory: 1Gi}\n")
	}
	nine, err := node.Parse([]byte(s.String()))
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubeletcfg.Parse([]byte(kcWith("topologyManagerPolicy: restricted\n")), "kc")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(nine, &c.KC, Options{}); err == nil || !strings.Contains(err.Error(), "unsupported on machines with more than 8 NUMA Nodes") {
		t.Errorf("9 NUMA nodes: %v", err)
	}
}

func TestParsePodsErrors(t *testing.T) {
	ok := podDoc("ok", guaranteedRes("1", "1Gi", ""))
	for _, tc := range []struct{ src, want string }{
		{"", "pods.yaml: no documents"},
		{ok + "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n", `pods.yaml:10: document 2: kind: this is a v1 Service "s", not a v1 Pod (or a List of Pods)`},
		// The line of the field, in a block-style file after a comment.
		{"# pods\napiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n  - name: a\n  - name: a\n", `pods.yaml:8: document 1: Pod "x": spec.containers[1].name: Duplicate value: "a"`},
		{ok + "apiVersion: v1\nkind: Pod\nmetadata: {name: w}\nspec:\n  containers:\n  - name: a\n    resources:\n      requests: {nvidia.com/gpu: 1}\n",
			`document 2: Pod "w": spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources`},
		{ok + "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: a, bogus: 1}]}\n", `pods.yaml:12: document 2: Pod "x": unknown field "spec.containers[0].bogus"`},
		{"apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: []}\n", "spec.containers: Required value"},
		{"apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: a}, {name: a}]}\n", `spec.containers[1].name: Duplicate value: "a"`},
		{"apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: a, resources: {requests: {nvidia.com/gpu: 1}}}]}\n", "spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources"},
		{"apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: a, resources: {requests: {nvidia.com/gpu: 1}, limits: {nvidia.com/gpu: 2}}}]}\n", "spec.containers[0].resources.requests: Invalid value: \"1\": must be equal to nvidia.com/gpu limit of 2"},
		{"apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: a, resources: {requests: {cpu: 2}, limits: {cpu: 1}}}]}\n", "must be less than or equal to cpu limit"},
		{"apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: a, resources: {limits: {cpu: \"1x\"}}}]}\n", "document 1"},
		{ok + ok, `pods.yaml: Pod "ok": metadata.name: Duplicate value: "ok" (objects 1 and 2 of the file)`},
		{"apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: a, restartPolicy: Always}]}\n", "restartPolicy: Forbidden"},
	} {
		_, err := ParsePods(strings.NewReader(tc.src), "pods.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.src, err, tc.want)
		}
	}
	list := `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: a}
  spec: {containers: [{name: c, resources: {limits: {cpu: "1", memory: 1Gi}}}]}
- apiVersion: v1
  kind: Pod
  metadata: {name: b}
  spec: {containers: [{name: c}]}
`
	pods, err := ParsePods(strings.NewReader(list), "list.yaml")
	if err != nil || len(pods) != 2 {
		t.Fatalf("list: %v %d", err, len(pods))
	}
	if q := pods[0].Spec.Containers[0].Resources.Requests.Cpu(); q.String() != "1" {
		t.Errorf("requests not defaulted from limits: %v", pods[0].Spec.Containers[0].Resources.Requests)
	}
}

// FuzzParsePods: every error is an *objects.Error naming the file and a line
// inside it; accepted pods have a name, a UID and containers, and written
// back as a v1 List (defaults and UIDs included) parse to the same pods:
// defaulting is idempotent.
func FuzzParsePods(f *testing.F) {
	f.Add([]byte(podDoc("a", guaranteedRes("1", "1Gi", "1"))))
	f.Add([]byte("apiVersion: v1\nkind: List\nitems: [{apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {containers: [{name: c}]}}]\n"))
	f.Add([]byte("apiVersion: v1\nkind: Pod\nmetadata: {name: a, uid: u}\nspec: {containers: [{name: c, resources: {limits: {cpu: 2, memory: 1Gi}}}]}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		pods, err := ParsePods(strings.NewReader(string(b)), "fuzz.yaml")
		if err != nil {
			// reading a fuzz input (far below the input bound) cannot fail:
			// every error is a decoding one, an *objects.Error
			var oe *objects.Error
			if !errors.As(err, &oe) {
				t.Fatalf("error %T, want an *objects.Error: %v", err, err)
			}
			if lines := 1 + strings.Count(string(b), "\n"); oe.File != "fuzz.yaml" || oe.Line < 0 || oe.Line > lines {
				t.Fatalf("error at %s:%d of %d lines: %v", oe.File, oe.Line, lines, err)
			}
			return
		}
		items := make([]*v1.Pod, len(pods))
		for i, p := range pods {
			if p.Name == "" || len(p.Spec.Containers) == 0 || p.UID == "" {
				t.Fatalf("accepted an invalid pod: %+v", p)
			}
			c := p.DeepCopy()
			c.APIVersion, c.Kind = "v1", "Pod"
			items[i] = c
		}
		list, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParsePods(strings.NewReader(string(list)), "again.yaml")
		if err != nil {
			t.Fatalf("written back, the pods do not parse: %v\n%s", err, list)
		}
		// Equal but for apiVersion and kind, which a List item may leave out.
		bare := func(ps []*v1.Pod) string {
			var out []*v1.Pod
			for _, p := range ps {
				c := p.DeepCopy()
				c.TypeMeta = metav1.TypeMeta{}
				out = append(out, c)
			}
			j, err := json.Marshal(out)
			if err != nil {
				t.Fatal(err)
			}
			return string(j)
		}
		if j1, j2 := bare(pods), bare(again); j1 != j2 {
			t.Fatalf("pods differ after the round trip:\n%s\n%s", j1, j2)
		}
	})
}
