package cpumanager

import "k8s.io/utils/cpuset"

// CPUSortingStrategy is how single CPUs are ordered once whole groups are
// taken: packed fills a core's threads before moving to the next core;
// spread (distribute-cpus-across-cores) walks the CPUs of a socket in id
// order, which with the usual Linux numbering visits one thread of every
// core before the second threads, and never takes whole cores.
type CPUSortingStrategy string

const (
	CPUSortingStrategyPacked CPUSortingStrategy = "packed"
	CPUSortingStrategySpread CPUSortingStrategy = "spread"
)

// takeByTopologyNUMAPacked picks numCPUs CPUs of availableCPUs the way
// kubelet's default static policy does (see layout.pack).
func takeByTopologyNUMAPacked(topo *CPUTopology, availableCPUs cpuset.CPUSet, numCPUs int, strategy CPUSortingStrategy, preferAlignByUncoreCache bool) (cpuset.CPUSet, error) {
	return newLayout(topo).take(availableCPUs, numCPUs, strategy == CPUSortingStrategySpread, 0, preferAlignByUncoreCache, false)
}

// takeByTopologyNUMADistributed picks numCPUs CPUs of availableCPUs spread
// evenly over as few NUMA nodes as possible in chunks of cpuGroupSize, as
// kubelet's distribute-cpus-across-numa option does (see
// layout.spreadOverNUMA).
func takeByTopologyNUMADistributed(topo *CPUTopology, availableCPUs cpuset.CPUSet, numCPUs int, cpuGroupSize int, strategy CPUSortingStrategy, alignBySocket bool) (cpuset.CPUSet, error) {
	return newLayout(topo).take(availableCPUs, numCPUs, strategy == CPUSortingStrategySpread, cpuGroupSize, false, alignBySocket)
}

// take runs the packed allocation (chunk 0; byCache applies) or the
// NUMA-distributed one (chunk > 0; bySocket applies) on a CPU set; spread
// orders single CPUs across cores.
func (lo *layout) take(avail cpuset.CPUSet, n int, spread bool, chunk int, byCache, bySocket bool) (cpuset.CPUSet, error) {
	run := func(free []int) ([]int, error) { return lo.pack(free, n, avail.Size(), spread, byCache) }
	if chunk > 0 {
		run = func(free []int) ([]int, error) {
			return lo.spreadOverNUMA(free, n, avail.Size(), chunk, spread, bySocket)
		}
	}
	got, err := run(lo.slots(avail))
	if err != nil {
		return cpuset.New(), err
	}
	return lo.cpuSet(got), nil
}
