// Code in this file is ported from Kubernetes v1.37.2
// pkg/kubelet/cm/cpumanager/topology/alignment.go (Apache License 2.0, The Kubernetes Authors).

package cpumanager

import (
	"fmt"

	"k8s.io/utils/cpuset"
)

// Alignment is metadata about a cpuset allocation
type Alignment struct {
	// UncoreCache is true if all the CPUs are uncore-cache aligned,
	// IOW if they all share the same Uncore cache block.
	// If the allocated CPU count is greater than a Uncore Group size,
	// CPUs can't be uncore-aligned; otherwise, they are.
	// This flag tracks alignment, not interference or lack thereof.
	UncoreCache bool
}

func (ca Alignment) String() string {
	return fmt.Sprintf("aligned=<uncore:%v>", ca.UncoreCache)
}

// Allocation represents a CPU set plus alignment metadata
type Allocation struct {
	CPUs    cpuset.CPUSet
	Aligned Alignment
}

func (ca Allocation) String() string {
	return ca.CPUs.String() + " " + ca.Aligned.String()
}

// EmptyAllocation returns a new zero-valued CPU allocation. Please note that
// a empty cpuset is aligned according to every possible way we can consider
func EmptyAllocation() Allocation {
	return Allocation{
		CPUs: cpuset.New(),
		Aligned: Alignment{
			UncoreCache: true,
		},
	}
}

func isAlignedAtUncoreCache(topo *CPUTopology, cpuList ...int) bool {
	if len(cpuList) <= 1 {
		return true
	}
	reference, ok := topo.CPUDetails[cpuList[0]]
	if !ok {
		return false
	}
	for _, cpu := range cpuList[1:] {
		info, ok := topo.CPUDetails[cpu]
		if !ok {
			return false
		}
		if info.UncoreCacheID != reference.UncoreCacheID {
			return false
		}
	}
	return true
}
