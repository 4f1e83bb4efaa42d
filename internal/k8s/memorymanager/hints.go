package memorymanager

import (
	"math/bits"
	"slices"
	"sort"

	v1 "k8s.io/api/core/v1"

	"github.com/gpunode/gpunode/internal/k8s/node"
)

// ContainerHints returns the container's hints per memory type (nil = no
// preference), as kubelet's GetTopologyHints.
func (p *Static) ContainerHints(pod *v1.Pod, c *v1.Container) map[string][]node.Hint {
	if asks, _ := pinnedAsks(pod, c); len(asks) > 0 {
		return p.CalculateHints(pod, asks)
	}
	return nil
}

// PodHints returns the pod's hints per memory type, as kubelet's
// GetPodTopologyHints.
func (p *Static) PodHints(pod *v1.Pod) map[string][]node.Hint {
	if !handles(pod) {
		return nil
	}
	if asks, err := PodRequests(pod); err == nil && len(asks) > 0 {
		return p.CalculateHints(pod, asks)
	}
	return nil
}

// sortedNames returns the memory types of reqs in name order.
func sortedNames(reqs map[v1.ResourceName]uint64) []v1.ResourceName {
	names := make([]v1.ResourceName, 0, len(reqs))
	for name := range reqs {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// CalculateHints returns the hints kubelet's Static policy offers for reqs,
// the same list for every memory type: each NUMA mask (in node.IterateMasks
// order) whose allocatable memory covers every request and whose free memory
// (plus what the pod's init containers leave for reuse on exactly that mask)
// does too, skipping masks that would break the group rule (a node of a
// multi-NUMA group is no single-NUMA hint; a node with assignments joins a
// larger mask only if that mask is its group). A hint is preferred when it
// has as few nodes as the smallest mask whose allocatable memory suffices,
// whether or not that mask is free. No mask: an empty map.
func (p *Static) CalculateHints(pod *v1.Pod, reqs map[v1.ResourceName]uint64) map[string][]node.Hint {
	names := sortedNames(reqs)
	// Dense per-NUMA tables (ids are 0..63) so the mask loop does no map
	// lookups or allocations.
	var alloc, free [][node.MaxNUMANodeID + 1]uint64
	alloc = make([][node.MaxNUMANodeID + 1]uint64, len(names))
	free = make([][node.MaxNUMANodeID + 1]uint64, len(names))
	want := make([]uint64, len(names))
	var assigned, grouped node.Mask // nodes with assignments / in a multi-NUMA group
	var cells [node.MaxNUMANodeID + 1]node.Mask
	for _, id := range p.ids {
		st := p.state[id]
		for k, name := range names {
			if t := st.Memory[name]; t != nil {
				alloc[k][id] = t.Allocatable
				free[k][id] = t.Free
			}
		}
		if st.NumberOfAssignments > 0 {
			assigned |= node.MaskOf(id)
		}
		if len(st.Cells) > 1 {
			grouped |= node.MaskOf(id)
		}
		cells[id] = node.MaskOf(st.Cells...)
	}
	for k, name := range names {
		want[k] = reqs[name]
	}
	minAffinitySize := len(p.ids)
	var masks []node.Mask
	full := node.IterateMasks(p.ids, p.MaxMasks, func(m node.Mask) {
		for k := range names {
			var a uint64
			for v := uint64(m); v != 0; v &= v - 1 {
				a += alloc[k][bits.TrailingZeros64(v)]
			}
			if a < want[k] {
				return
			}
		}
		count := m.Count()
		if count < minAffinitySize {
			minAffinitySize = count
		}
		if count == 1 {
			if grouped&m != 0 {
				return
			}
		} else {
			// A node already used by an allocation may join this mask only
			// when it is in a group equal to this mask.
			for v := uint64(m & assigned); v != 0; v &= v - 1 {
				id := bits.TrailingZeros64(v)
				if grouped&node.MaskOf(id) == 0 || cells[id] != m {
					return
				}
			}
		}
		for k, name := range names {
			var f uint64
			for v := uint64(m); v != 0; v &= v - 1 {
				f += free[k][bits.TrailingZeros64(v)]
			}
			if f+p.reuse.amount(string(pod.UID), m, name) < want[k] {
				return
			}
		}
		masks = append(masks, m)
	})
	if !full {
		if g := p.greedyMinNodes(reqs); g > 0 && g < minAffinitySize {
			minAffinitySize = g
		}
	}
	hints := map[string][]node.Hint{}
	if len(masks) == 0 {
		return hints
	}
	// One list shared by every memory type: the hints are identical.
	list := make([]node.Hint, len(masks))
	for i := range masks {
		list[i] = node.Hint{Affinity: &masks[i], Preferred: masks[i].Count() == minAffinitySize}
	}
	for _, name := range names {
		hints[string(name)] = list
	}
	return hints
}

// greedyMinNodes is a lower bound on the number of NUMA nodes whose
// allocatable memory fits every requested type.
func (p *Static) greedyMinNodes(reqs map[v1.ResourceName]uint64) int {
	best := 0
	for name, want := range reqs {
		var caps []uint64
		for _, id := range p.ids {
			if t := p.state[id].Memory[name]; t != nil {
				caps = append(caps, t.Allocatable)
			}
		}
		sort.Slice(caps, func(i, j int) bool { return caps[i] > caps[j] })
		var sum uint64
		k := 0
		for i, c := range caps {
			sum += c
			if sum >= want {
				k = i + 1
				break
			}
		}
		if k == 0 {
			return 0
		}
		if k > best {
			best = k
		}
	}
	return best
}
