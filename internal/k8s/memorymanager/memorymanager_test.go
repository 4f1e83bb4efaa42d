package memorymanager

import (
	"sort"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpunode/gpunode/internal/k8s/node"
)

const gi = 1 << 30

func twoNodes(t *testing.T) *node.Node {
	t.Helper()
	n, err := node.Parse([]byte(`apiVersion: gpunode.io/v1
kind: Node
numaNodes:
- {id: 0, cpus: 0-3, memory: 10Gi, hugepages: [{pageSize: 1Gi, count: 2}]}
- {id: 1, cpus: 4-7, memory: 10Gi, hugepages: [{pageSize: 1Gi, count: 0}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func memPod(uid string, mem string, huge string) (*v1.Pod, *v1.Container) {
	p := &v1.Pod{}
	p.UID = types.UID(uid)
	rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse(mem)}
	if huge != "" {
		rl["hugepages-1Gi"] = resource.MustParse(huge)
	}
	p.Spec.Containers = []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: rl, Limits: rl}}}
	return p, &p.Spec.Containers[0]
}

func render(m map[string][]node.Hint) string {
	var out []string
	for r, hs := range m {
		var l []string
		for _, h := range hs {
			l = append(l, h.String())
		}
		sort.Strings(l)
		out = append(out, r+"="+strings.Join(l, " "))
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

func TestSystemReserved(t *testing.T) {
	n := twoNodes(t)
	res := v1.ResourceList{v1.ResourceMemory: resource.MustParse("1124Mi")}
	mk := func(a, b string) []MemoryReservation {
		return []MemoryReservation{{NumaNode: 0, Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse(a)}}, {NumaNode: 1, Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse(b)}}}
	}
	if _, err := SystemReserved(n, res, mk("1Gi", "100Mi")); err != nil {
		t.Errorf("exact sum rejected: %v", err)
	}
	_, err := SystemReserved(n, res, mk("1Gi", "200Mi"))
	if err == nil || err.Error() != `the total amount "1224Mi" of type "memory" is not equal to the value "1124Mi" determined by Node Allocatable feature` {
		t.Errorf("err = %v", err)
	}
	_, err = SystemReserved(n, res, []MemoryReservation{{NumaNode: 7, Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1124Mi")}}})
	if err == nil || err.Error() != "the reserved memory configuration references a NUMA node 7 that does not exist on this machine" {
		t.Errorf("err = %v", err)
	}
	_, err = SystemReserved(n, v1.ResourceList{}, nil)
	if err == nil || err.Error() != "[memorymanager] you should specify the system reserved memory" {
		t.Errorf("err = %v", err)
	}
}

func TestHintsAndGroups(t *testing.T) {
	n := twoNodes(t)
	p := NewStatic(n, Reserved{0: {v1.ResourceMemory: gi}, 1: {v1.ResourceMemory: gi}})
	// node 0: 10Gi - 1Gi reserved - 2Gi hugepages = 7Gi allocatable; node 1: 9Gi.
	if a := p.State(0).Memory[v1.ResourceMemory].Allocatable; a != 7*gi {
		t.Fatalf("allocatable node 0 = %d", a)
	}
	pod, c := memPod("a", "8Gi", "")
	if got, want := render(p.ContainerHints(pod, c)), "memory={0,1} {1} preferred"; got != want {
		t.Errorf("hints = %q, want %q", got, want)
	}
	pod, c = memPod("b", "12Gi", "")
	if got, want := render(p.ContainerHints(pod, c)), "memory={0,1} preferred"; got != want {
		t.Errorf("hints = %q, want %q", got, want)
	}
	all := node.MaskOf(0, 1)
	blocks, err := p.Allocate(pod, c, node.NewHint(all, true))
	if err != nil || len(blocks) != 1 || blocks[0].Size != 12*gi {
		t.Fatalf("allocate: %v %v", blocks, err)
	}
	if p.State(0).Memory[v1.ResourceMemory].Free != 0 || p.State(1).Memory[v1.ResourceMemory].Free != 4*gi {
		t.Errorf("free after group allocation: %d %d", p.State(0).Memory[v1.ResourceMemory].Free, p.State(1).Memory[v1.ResourceMemory].Free)
	}
	// Node 1 is in group {0,1}: no single-NUMA hint any more, and the group
	// hint is not preferred (the smallest mask by capacity has 1 node).
	pod, c = memPod("c", "1Gi", "")
	if got, want := render(p.ContainerHints(pod, c)), "memory={0,1}"; got != want {
		t.Errorf("hints after group = %q, want %q", got, want)
	}
	p.RemoveContainer("b", "c")
	if p.State(0).Memory[v1.ResourceMemory].Free != 7*gi || len(p.State(1).Cells) != 1 {
		t.Errorf("release: free %d cells %v", p.State(0).Memory[v1.ResourceMemory].Free, p.State(1).Cells)
	}
}

func TestHugepagesAndExtension(t *testing.T) {
	n := twoNodes(t)
	p := NewStatic(n, Reserved{0: {v1.ResourceMemory: gi}})
	pod, c := memPod("a", "1Gi", "2Gi")
	if got, want := render(p.ContainerHints(pod, c)), "hugepages-1Gi={0,1} {0} preferred; memory={0,1} {0} preferred"; got != want {
		t.Errorf("hints = %q, want %q", got, want)
	}
	// A merged hint of {1} cannot hold the hugepages: kubelet extends it to {0,1}.
	one := node.MaskOf(1)
	blocks, err := p.Allocate(pod, c, node.NewHint(one, false))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range blocks {
		if len(b.NUMAAffinity) != 2 {
			t.Errorf("block %+v not extended to {0,1}", b)
		}
	}
}
