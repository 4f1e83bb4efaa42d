package cpumanager

import (
	"maps"
	"slices"

	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/k8s/node"
)

// CPUTopology is the machine as the CPU Manager sees it. Its fields carry
// the same information as kubelet's topology.CPUTopology (the conformance
// tests convert one into the other field by field): counts of logical CPUs,
// physical cores, uncore (L3) caches, sockets and NUMA nodes, and the
// placement of every logical CPU.
type CPUTopology struct {
	NumCPUs        int
	NumCores       int
	NumUncoreCache int
	NumSockets     int
	NumNUMANodes   int
	CPUDetails     CPUDetails
}

// CPUDetails maps a logical CPU id to its placement.
type CPUDetails map[int]CPUInfo

// CPUInfo places one logical CPU: its NUMA node, socket, physical core and
// uncore cache ids.
type CPUInfo struct {
	NUMANodeID    int
	SocketID      int
	CoreID        int
	UncoreCacheID int
}

// CPUs returns the set of logical CPU ids.
func (d CPUDetails) CPUs() cpuset.CPUSet { return cpuset.New(slices.Collect(maps.Keys(d))...) }

// CPUsPerCore is the number of hardware threads per physical core as
// kubelet computes it (logical CPUs divided by cores, 0 without cores).
func (topo *CPUTopology) CPUsPerCore() int { return quotient(topo.NumCPUs, topo.NumCores) }

// FromNode describes node n for the CPU Manager as kubelet's Discover
// describes a machine from cAdvisor's data. The node model already names a
// core after the lowest CPU id among its threads, as kubelet does, so ids
// carry over unchanged; the counts are those of distinct ids.
func FromNode(n *node.Node) *CPUTopology {
	topo := &CPUTopology{NumCPUs: len(n.CPUs), CPUDetails: make(CPUDetails, len(n.CPUs))}
	distinct := [4]map[int]struct{}{{}, {}, {}, {}}
	for _, c := range n.CPUs {
		topo.CPUDetails[c.ID] = CPUInfo{NUMANodeID: c.NUMANode, SocketID: c.Socket, CoreID: c.Core, UncoreCacheID: c.Uncore}
		for i, id := range [4]int{c.Core, c.Socket, c.NUMANode, c.Uncore} {
			distinct[i][id] = struct{}{}
		}
	}
	topo.NumCores, topo.NumSockets = len(distinct[0]), len(distinct[1])
	topo.NumNUMANodes, topo.NumUncoreCache = len(distinct[2]), len(distinct[3])
	return topo
}
