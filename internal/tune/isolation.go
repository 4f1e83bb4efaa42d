package tune

import (
	"fmt"

	"k8s.io/utils/cpuset"
)

// housekeeping returns the CPUs kept for the kernel and system services
// when isolating: on every NUMA node with CPUs, the first 1/8 of its
// physical cores (at least one), with all their SMT siblings. The rest are
// isolated for pinned data-loader and communication threads.
func housekeeping(h *Host) (hk, iso cpuset.CPUSet, err error) {
	if h.Topo == nil {
		return cpuset.New(), cpuset.New(), fmt.Errorf("needs the topology: %w", h.TopoErr)
	}
	// The rule lives in topo, so that 'gpunode bind' recognises the
	// isolation this profile sets and places ranks on it.
	return h.Topo.PipelineSplit()
}

func autoIsolated(h *Host) (string, error) {
	_, iso, err := housekeeping(h)
	if err != nil {
		return "", err
	}
	return iso.String(), nil
}

func autoHousekeeping(h *Host) (string, error) {
	hk, _, err := housekeeping(h)
	if err != nil {
		return "", err
	}
	return hk.String(), nil
}
