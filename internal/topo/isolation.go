package topo

import (
	"errors"

	"k8s.io/utils/cpuset"
)

// PipelineSplit divides the online CPUs the way gpunode's
// inference-isolated profile isolates them (tune's boot.isolcpus,
// nohz_full and rcu_nocbs "auto"; irqaffinity is the housekeeping set): on
// every NUMA node with CPUs, the first 1/8 of its physical cores (at least
// one), with all their SMT siblings, are housekeeping (kernel, system
// services, IRQs); the rest is the pipeline set, isolated for the pinned
// threads of the GPU's ranks. 'gpunode bind' places ranks on a node's
// pipeline CPUs when the host's isolation is this split. It fails when
// the topology lists no online CPU, or when no CPU is left to isolate
// (hk is still returned then).
func (t *Topology) PipelineSplit() (hk, pipeline cpuset.CPUSet, err error) {
	hk, all := cpuset.New(), cpuset.New()
	for _, n := range t.NUMANodes {
		var ids []int
		for _, c := range t.CPUs {
			if c.NUMANode == n.ID && c.Online {
				ids = append(ids, c.ID)
			}
		}
		if len(ids) == 0 {
			continue
		}
		node := cpuset.New(ids...)
		all = all.Union(node)
		cores := t.CoreGroups(node)
		for _, core := range cores[:max(1, len(cores)/8)] {
			hk = hk.Union(core)
		}
	}
	if all.Size() == 0 {
		return cpuset.New(), cpuset.New(), errors.New("the topology lists no online CPUs")
	}
	pipeline = all.Difference(hk)
	if pipeline.Size() == 0 {
		return hk, pipeline, errors.New("too few CPUs to isolate any")
	}
	return hk, pipeline, nil
}

// PipelineIsolation reports whether the host's boot-time isolation is
// PipelineSplit's (isolcpus is the pipeline set and nohz_full is empty or
// the same set): the isolation gpunode's inference-isolated profile sets.
func (t *Topology) PipelineIsolation() (pipeline cpuset.CPUSet, ok bool) {
	_, pipe, err := t.PipelineSplit()
	if err != nil || t.IsolatedCPUs.Size() == 0 || !t.IsolatedCPUs.Equals(pipe) {
		return pipe, false
	}
	if nz := t.NohzFullCPUs.CPUSet; nz.Size() > 0 && !nz.Equals(pipe) {
		return pipe, false
	}
	return pipe, true
}
