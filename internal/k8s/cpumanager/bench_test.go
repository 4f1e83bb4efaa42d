package cpumanager

import (
	"testing"

	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/k8s/node"
)

// benchMachine lays out sockets x numaPerSocket NUMA nodes of coresPerNUMA
// cores with threads SMT siblings each, Linux-style numbering (sibling t of
// core c is CPU t*totalCores+c) and uncoresPerNUMA L3 groups per NUMA node.
func benchMachine(sockets, numaPerSocket, coresPerNUMA, threads, uncoresPerNUMA int) *CPUTopology {
	total := sockets * numaPerSocket * coresPerNUMA
	n := &node.Node{}
	for t := 0; t < threads; t++ {
		for c := 0; c < total; c++ {
			numa := c / coresPerNUMA
			uncore := numa*uncoresPerNUMA + (c%coresPerNUMA)*uncoresPerNUMA/coresPerNUMA
			n.CPUs = append(n.CPUs, node.CPU{ID: t*total + c, Core: c, Socket: numa / numaPerSocket, NUMANode: numa, Uncore: uncore})
		}
	}
	return FromNode(n)
}

// fragmented removes every fifth CPU and the first few, so that no group is
// whole and the allocator has to rank partial groups.
func fragmented(topo *CPUTopology) cpuset.CPUSet {
	var ids []int
	for _, id := range topo.CPUDetails.CPUs().List() {
		if id%5 != 0 && id > 3 {
			ids = append(ids, id)
		}
	}
	return cpuset.New(ids...)
}

func BenchmarkTakePacked(b *testing.B) {
	topo := benchMachine(2, 2, 24, 2, 3) // 192 CPUs, 4 NUMA nodes, 12 L3 groups
	free := topo.CPUDetails.CPUs()
	frag := fragmented(topo)
	for _, bc := range []struct {
		name   string
		avail  cpuset.CPUSet
		n      int
		sort   CPUSortingStrategy
		uncore bool
	}{
		{"whole/8", free, 8, CPUSortingStrategyPacked, false},
		{"whole/100", free, 100, CPUSortingStrategyPacked, false},
		{"fragmented/37", frag, 37, CPUSortingStrategyPacked, false},
		{"spread/37", frag, 37, CPUSortingStrategySpread, false},
		{"uncore/21", frag, 21, CPUSortingStrategyPacked, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := takeByTopologyNUMAPacked(topo, bc.avail, bc.n, bc.sort, bc.uncore); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkTakeDistributed(b *testing.B) {
	topo := benchMachine(2, 4, 8, 2, 1) // 128 CPUs, 8 NUMA nodes
	free := topo.CPUDetails.CPUs()
	frag := fragmented(topo)
	for _, bc := range []struct {
		name  string
		avail cpuset.CPUSet
		n     int
		group int
		align bool
	}{
		{"whole/40", free, 40, 1, false},
		{"fragmented/50", frag, 50, 2, false},
		{"align-by-socket/30", frag, 30, 1, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := takeByTopologyNUMADistributed(topo, bc.avail, bc.n, bc.group, CPUSortingStrategyPacked, bc.align); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkStaticAllocate(b *testing.B) {
	topo := benchMachine(2, 2, 24, 2, 3)
	for _, bc := range []struct {
		name string
		opts Options
	}{
		{"default", Options{}},
		{"full-pcpus-only", Options{FullPhysicalCPUsOnly: true}},
		{"distribute-across-numa", Options{DistributeCPUsAcrossNUMA: true}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			base, err := NewStatic(topo, 2, cpuset.New(), bc.opts, "best-effort")
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				p := base.Clone()
				for i, req := range []string{"4", "10", "6", "30"} {
					pod := guaranteedPod(string(rune('a'+i)), req)
					if _, err := p.Allocate(pod, &pod.Spec.Containers[0], nil); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
