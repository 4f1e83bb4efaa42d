package node

import (
	"fmt"
	"sort"

	"k8s.io/utils/cpuset"
)

// MaxSplitCPUs bounds the CPUs of an evenly split node (EvenSplit).
const MaxSplitCPUs = 1 << 16

// EvenSplit is the node model when only counts are known (the gpunode
// agent's NFD labels on a live Node: gpunode.io/numa.nodes, and the Node's
// capacity): numa NUMA nodes with consecutive, equal shares of cpus CPUs
// (one CPU per core, socket and uncore = NUMA node) and of memBytes, no
// distances, and the devices of each resource dealt out in equal
// consecutive shares (device i on NUMA node i*numa/count).
func EvenSplit(name string, numa, cpus int, memBytes uint64, devices map[string]int) (*Node, error) {
	if numa < 1 || numa > MaxNUMANodeID+1 {
		return nil, fmt.Errorf("NUMA node count %d: want 1 to %d", numa, MaxNUMANodeID+1)
	}
	if cpus < numa || cpus > MaxSplitCPUs {
		return nil, fmt.Errorf("CPU count %d: want %d (one per NUMA node) to %d", cpus, numa, MaxSplitCPUs)
	}
	n := &Node{Name: name}
	for i := 0; i < numa; i++ {
		lo, hi := i*cpus/numa, (i+1)*cpus/numa
		ids := make([]int, 0, hi-lo)
		for c := lo; c < hi; c++ {
			ids = append(ids, c)
			n.CPUs = append(n.CPUs, CPU{ID: c, Core: c, Socket: i, NUMANode: i, Uncore: i})
		}
		n.NUMANodes = append(n.NUMANodes, NUMANode{ID: i, CPUs: cpuset.New(ids...), MemoryBytes: memBytes / uint64(numa)})
	}
	names := make([]string, 0, len(devices))
	for r := range devices {
		names = append(names, r)
	}
	sort.Strings(names)
	for _, r := range names {
		cnt := devices[r]
		if cnt < 0 || cnt > MaxSplitCPUs {
			return nil, fmt.Errorf("%s count %d: want 0 to %d", r, cnt, MaxSplitCPUs)
		}
		if cnt == 0 {
			continue
		}
		dr := DeviceResource{Name: r}
		for i := 0; i < cnt; i++ {
			dr.Devices = append(dr.Devices, Device{ID: fmt.Sprintf("%s-%d", r, i), NUMANodes: []int{i * numa / cnt}, Healthy: true})
		}
		n.Devices = append(n.Devices, dr)
	}
	if err := n.Validate(); err != nil {
		return nil, err
	}
	return n, nil
}
