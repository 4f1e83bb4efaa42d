package memorymanager

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpunode/gpunode/internal/k8s/node"
)

// benchNode is a machine of n NUMA nodes with 64Gi of memory and 8 1Gi
// hugepages each.
func benchNode(b *testing.B, n int) *node.Node {
	b.Helper()
	var sb strings.Builder
	sb.WriteString("apiVersion: gpunode.io/v1\nkind: Node\nnumaNodes:\n")
	for i := range n {
		fmt.Fprintf(&sb, "- {id: %d, cpus: \"%d-%d\", memory: 64Gi, hugepages: [{pageSize: 1Gi, count: 8}]}\n", i, 4*i, 4*i+3)
	}
	nd, err := node.Parse([]byte(sb.String()))
	if err != nil {
		b.Fatal(err)
	}
	return nd
}

func benchReserved(nd *node.Node) Reserved {
	r := Reserved{}
	for _, nn := range nd.NUMANodes {
		r[nn.ID] = map[v1.ResourceName]uint64{v1.ResourceMemory: 1 << 30}
	}
	return r
}

// benchPod is a Guaranteed pod with one regular init container, one sidecar
// and two app containers asking mem (and 1Gi hugepages for the first app).
func benchPod(i int, mem string) *v1.Pod {
	rl := func(m string, huge bool) v1.ResourceRequirements {
		l := v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse(m)}
		if huge {
			l["hugepages-1Gi"] = resource.MustParse("1Gi")
		}
		return v1.ResourceRequirements{Requests: l, Limits: l}
	}
	always := v1.ContainerRestartPolicyAlways
	p := &v1.Pod{}
	p.Name = fmt.Sprintf("p%d", i)
	p.UID = types.UID(p.Name)
	p.Spec.InitContainers = []v1.Container{
		{Name: "init", Resources: rl(mem, false)},
		{Name: "side", Resources: rl("1Gi", false), RestartPolicy: &always},
	}
	p.Spec.Containers = []v1.Container{
		{Name: "a", Resources: rl(mem, true)},
		{Name: "b", Resources: rl("2Gi", false)},
	}
	return p
}

// admitAll runs the container-scope flow the simulator uses: hints, then an
// allocation along the first preferred hint (or none), for every container.
func admitAll(b *testing.B, p *Static, pods []*v1.Pod) int {
	placed := 0
	for _, pod := range pods {
		cs := append(append([]v1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...)
		for i := range cs {
			var chosen node.Hint
			for _, h := range p.ContainerHints(pod, &cs[i])[string(v1.ResourceMemory)] {
				if h.Preferred {
					chosen = h
					break
				}
			}
			if _, err := p.Allocate(pod, &cs[i], chosen); err == nil {
				placed++
			}
		}
	}
	return placed
}

// BenchmarkAdmitPods admits 24 four-container pods (single- and multi-NUMA
// requests, init-container reuse) on a fresh clone of an 8-NUMA machine.
func BenchmarkAdmitPods(b *testing.B) {
	nd := benchNode(b, 8)
	base := NewStatic(nd, benchReserved(nd))
	var pods []*v1.Pod
	for i := range 24 {
		mem := []string{"4Gi", "20Gi", "70Gi", "8Gi"}[i%4]
		pods = append(pods, benchPod(i, mem))
	}
	b.ReportAllocs()
	for b.Loop() {
		if admitAll(b, base.Clone(), pods) == 0 {
			b.Fatal("nothing placed")
		}
	}
}

// BenchmarkHints16 computes the hints of a 100Gi request on 16 NUMA nodes
// (65,535 masks).
func BenchmarkHints16(b *testing.B) {
	nd := benchNode(b, 16)
	p := NewStatic(nd, benchReserved(nd))
	pod := benchPod(0, "100Gi")
	c := &pod.Spec.Containers[0]
	b.ReportAllocs()
	for b.Loop() {
		if len(p.ContainerHints(pod, c)) == 0 {
			b.Fatal("no hints")
		}
	}
}

// BenchmarkPodRequests sums the pod-level requests of a four-container pod.
func BenchmarkPodRequests(b *testing.B) {
	pod := benchPod(0, "4Gi")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := PodRequests(pod); err != nil {
			b.Fatal(err)
		}
	}
}
