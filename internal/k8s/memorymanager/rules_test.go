package memorymanager

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpunode/gpunode/internal/k8s/node"
)

func reqs(mem string, extra ...string) v1.ResourceRequirements {
	l := v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse(mem)}
	for i := 0; i+1 < len(extra); i += 2 {
		l[v1.ResourceName(extra[i])] = resource.MustParse(extra[i+1])
	}
	return v1.ResourceRequirements{Requests: l, Limits: l}
}

func sidecar(name string, r v1.ResourceRequirements) v1.Container {
	always := v1.ContainerRestartPolicyAlways
	return v1.Container{Name: name, Resources: r, RestartPolicy: &always}
}

func TestPodRequestsRules(t *testing.T) {
	pod := &v1.Pod{}
	pod.Spec.InitContainers = []v1.Container{
		{Name: "i1", Resources: reqs("4Gi", "hugepages-2Mi", "8Mi")}, // hugepages only in init: left out
		sidecar("s1", reqs("1Gi")),
		{Name: "i2", Resources: reqs("4Gi")}, // runs next to s1: 5Gi
		sidecar("s2", reqs("1Gi")),
	}
	pod.Spec.Containers = []v1.Container{
		{Name: "a", Resources: reqs("1Gi", "hugepages-1Gi", "2Gi")},
		{Name: "b", Resources: reqs("1Gi")},
	}
	got, err := PodRequests(pod)
	if err != nil {
		t.Fatal(err)
	}
	// memory: max(init peak 5Gi, apps 2Gi + sidecars 2Gi) = 5Gi.
	want := map[v1.ResourceName]uint64{v1.ResourceMemory: 5 * gi, "hugepages-1Gi": 2 * gi}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("PodRequests = %v, want %v", got, want)
	}
	pod.Spec.Containers[1].Resources = reqs("4Gi") // apps 5Gi + sidecars 2Gi
	if got, _ := PodRequests(pod); got[v1.ResourceMemory] != 7*gi {
		t.Errorf("memory = %d, want %d", got[v1.ResourceMemory], 7*gi)
	}
	huge := resource.MustParse("100Ei")
	pod.Spec.Containers[0].Resources.Requests[v1.ResourceMemory] = huge
	if _, err := PodRequests(pod); err == nil || err.Error() != quoteNotInt64 {
		t.Errorf("err = %v, want %q", err, quoteNotInt64)
	}
}

// TestInitMemoryReused: an app container placed on the mask of a finished
// init container takes over its memory; the init block shrinks by as much.
func TestInitMemoryReused(t *testing.T) {
	p := NewStatic(twoNodes(t), Reserved{0: {v1.ResourceMemory: gi}, 1: {v1.ResourceMemory: gi}})
	pod := &v1.Pod{}
	pod.UID = types.UID("u")
	pod.Spec.InitContainers = []v1.Container{{Name: "init", Resources: reqs("4Gi")}}
	pod.Spec.Containers = []v1.Container{{Name: "app", Resources: reqs("3Gi")}}
	one := node.MaskOf(1)
	if _, err := p.Allocate(pod, &pod.Spec.InitContainers[0], node.NewHint(one, true)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Allocate(pod, &pod.Spec.Containers[0], node.NewHint(one, true)); err != nil {
		t.Fatal(err)
	}
	if r := p.State(1).Memory[v1.ResourceMemory].Reserved; r != 4*gi {
		t.Errorf("reserved on node 1 = %d, want %d (the app reuses the init memory)", r, 4*gi)
	}
	if b := p.Blocks("u", "init"); len(b) != 1 || b[0].Size != gi {
		t.Errorf("init blocks = %+v, want one of 1Gi", b)
	}
	if n := p.State(1).NumberOfAssignments; n != 2 {
		t.Errorf("assignments = %d, want 2", n)
	}
	// Another pod does not see the first pod's reusable memory.
	other := &v1.Pod{}
	other.UID = types.UID("v")
	other.Spec.Containers = []v1.Container{{Name: "app", Resources: reqs("2Gi")}}
	if _, err := p.Allocate(other, &other.Spec.Containers[0], node.NewHint(one, true)); err != nil {
		t.Fatal(err)
	}
	if r := p.State(1).Memory[v1.ResourceMemory].Reserved; r != 6*gi {
		t.Errorf("reserved on node 1 = %d, want %d", r, 6*gi)
	}
}

func TestAllocateErrors(t *testing.T) {
	p := NewStatic(twoNodes(t), Reserved{0: {v1.ResourceMemory: gi}, 1: {v1.ResourceMemory: gi}})
	pod, c := memPod("a", "30Gi", "")
	if _, err := p.Allocate(pod, c, node.Hint{}); err == nil || err.Error() != quoteNoDefaultAffinity {
		t.Errorf("too big: %v", err)
	}
	// 8Gi fits node 1 alone: preferred {1}; a merged {0} (7Gi) must widen
	// to {0,1}, which is not preferred.
	pod, c = memPod("b", "8Gi", "")
	zero := node.MaskOf(0)
	if _, err := p.Allocate(pod, c, node.NewHint(zero, true)); err == nil || err.Error() != quoteNoExtendedPreferred {
		t.Errorf("widen preferred: %v", err)
	}
	b, err := p.Allocate(pod, c, node.NewHint(zero, false))
	if err != nil || len(b) != 1 || !slices.Equal(b[0].NUMAAffinity, []int{0, 1}) {
		t.Fatalf("widen: %v %v", b, err)
	}
	// Node 0 is in group {0,1} now: a preferred {0} can only widen to the
	// group, which is not preferred for 1Gi; a non-preferred one can.
	pod, c = memPod("c", "1Gi", "")
	if _, err := p.Allocate(pod, c, node.NewHint(zero, true)); err == nil || err.Error() != quoteNoExtendedPreferred {
		t.Errorf("grouped node alone: %v", err)
	}
	if b, err := p.Allocate(pod, c, node.NewHint(zero, false)); err != nil || !slices.Equal(b[0].NUMAAffinity, []int{0, 1}) {
		t.Errorf("grouped node alone, not preferred: %v %v", b, err)
	}
	pod, c = memPod("d", "30Gi", "")
	if _, err := p.Allocate(pod, c, node.NewHint(zero, false)); err == nil || err.Error() != quoteNoExtension {
		t.Errorf("nothing to widen to: %v", err)
	}

	// A single-NUMA allocation on node 0 keeps node 0 out of {0,1}.
	p = NewStatic(twoNodes(t), Reserved{0: {v1.ResourceMemory: gi}, 1: {v1.ResourceMemory: gi}})
	pod, c = memPod("e", "1Gi", "")
	if _, err := p.Allocate(pod, c, node.NewHint(zero, true)); err != nil {
		t.Fatal(err)
	}
	pod, c = memPod("f", "1Gi", "")
	if _, err := p.Allocate(pod, c, node.NewHint(node.MaskOf(0, 1), false)); err == nil || err.Error() != quoteViolatesGroups {
		t.Errorf("mixing groups: %v", err)
	}
}

// TestStateInvariants drives random admissions and removals and checks what
// must hold of any state: free + reserved = allocatable per node and type,
// the blocks of a container share one affinity, nodes with assignments in a
// group agree on the group, and removing everything leaves no assignment.
func TestStateInvariants(t *testing.T) {
	for seed := range 300 {
		r := rand.New(rand.NewPCG(uint64(seed), 3))
		nd := benchNodeT(t, 1+r.IntN(5))
		p := NewStatic(nd, Reserved{0: {v1.ResourceMemory: gi}})
		var live [][2]string
		for i := range 12 {
			pod := benchPod(i, fmt.Sprintf("%dGi", 1+r.IntN(90)))
			cs := append(append([]v1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...)
			for ci := range cs {
				var chosen node.Hint
				if hs := p.ContainerHints(pod, &cs[ci])["memory"]; len(hs) > 0 && r.IntN(4) != 0 {
					chosen = hs[r.IntN(len(hs))]
				}
				blocks, err := p.Allocate(pod, &cs[ci], chosen)
				if err != nil {
					continue
				}
				live = append(live, [2]string{string(pod.UID), cs[ci].Name})
				for _, b := range blocks {
					if !slices.Equal(b.NUMAAffinity, blocks[0].NUMAAffinity) {
						t.Fatalf("seed %d: blocks %+v on different nodes", seed, blocks)
					}
				}
			}
			if len(live) > 0 && r.IntN(3) == 0 {
				k := r.IntN(len(live))
				p.RemoveContainer(live[k][0], live[k][1])
				live = slices.Delete(live, k, k+1)
			}
			checkInvariants(t, fmt.Sprintf("seed %d pod %d", seed, i), p, nd)
		}
		for _, l := range live {
			p.RemoveContainer(l[0], l[1])
		}
		for _, id := range nd.NUMAIDs() {
			if st := p.State(id); st.NumberOfAssignments != 0 || !slices.Equal(st.Cells, []int{id}) {
				t.Fatalf("seed %d: node %d after removing all: %d assignments, cells %v", seed, id, st.NumberOfAssignments, st.Cells)
			}
		}
	}
}

func checkInvariants(t *testing.T, name string, p *Static, nd *node.Node) {
	t.Helper()
	for _, id := range nd.NUMAIDs() {
		st := p.State(id)
		for k, tb := range st.Memory {
			if tb.Free+tb.Reserved != tb.Allocatable {
				t.Fatalf("%s: node %d %s: free %d + reserved %d != allocatable %d", name, id, k, tb.Free, tb.Reserved, tb.Allocatable)
			}
		}
		if st.NumberOfAssignments < 0 {
			t.Fatalf("%s: node %d: %d assignments", name, id, st.NumberOfAssignments)
		}
		if st.NumberOfAssignments > 0 {
			for _, other := range st.Cells {
				if o := p.State(other); !slices.Equal(o.Cells, st.Cells) {
					t.Fatalf("%s: node %d group %v, node %d group %v", name, id, st.Cells, other, o.Cells)
				}
			}
		}
	}
}

func benchNodeT(t *testing.T, n int) *node.Node {
	t.Helper()
	src := "apiVersion: gpunode.io/v1\nkind: Node\nnumaNodes:\n"
	for i := range n {
		src += fmt.Sprintf("- {id: %d, cpus: \"%d\", memory: 64Gi, hugepages: [{pageSize: 1Gi, count: 8}]}\n", i, i)
	}
	nd, err := node.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return nd
}
