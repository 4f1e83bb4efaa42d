package memorymanager

import (
	"cmp"
	"errors"
	"math/bits"
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/gpunode/gpunode/internal/k8s/node"
)

// Allocate books the container's memory along merged, the Topology
// Manager's hint, and returns the container's blocks (one per memory type,
// all on the same NUMA nodes). What kubelet does, in order:
//   - a container that already has blocks keeps them;
//   - an open affinity (nil) is replaced by this policy's own best hint;
//   - a mask whose free memory cannot hold the request is widened to the
//     best own hint that contains it;
//   - neither step may turn a preferred hint into a non-preferred one, and
//     the mask must not mix nodes of different allocation groups.
//
// Memory that regular init containers of the same pod hold on the same mask
// is reused before more is booked.
func (p *Static) Allocate(pod *v1.Pod, c *v1.Container, merged node.Hint) ([]Block, error) {
	asks, err := pinnedAsks(pod, c)
	if len(asks) == 0 {
		return nil, err
	}
	if have := p.owned[string(pod.UID)][c.Name]; have != nil {
		p.reuse.note(pod, c, have)
		return have, nil
	}
	where, err := p.placement(pod, asks, merged)
	if err != nil {
		return nil, err
	}
	return p.book(pod, c, where, asks), nil
}

// placement decides the NUMA mask for asks starting from merged.
func (p *Static) placement(pod *v1.Pod, asks map[v1.ResourceName]uint64, merged node.Hint) (node.Mask, error) {
	// The policy's own hints cannot change during one Allocate, so they are
	// computed at most once (CalculateHints never returns nil). Every memory
	// type gets the same list; kubelet reads the one for memory.
	var own map[string][]node.Hint
	ownHints := func() map[string][]node.Hint {
		if own == nil {
			own = p.CalculateHints(pod, asks)
		}
		return own
	}
	cur := merged
	if cur.Affinity == nil {
		hs := ownHints()
		if len(hs) == 0 {
			return 0, errors.New(quoteNoDefaultAffinity)
		}
		pick := strongest(hs[string(v1.ResourceMemory)])
		if merged.Preferred && !pick.Preferred {
			return 0, errors.New(quoteNoDefaultPreferred)
		}
		cur = pick
	}
	// kubelet would fail on an affinity still open here (no memory hint at
	// all); it is handled as the empty mask, which holds nothing.
	var m node.Mask
	if cur.Affinity != nil {
		m = *cur.Affinity
	}
	if cur.Affinity == nil || !p.holds(m, asks) {
		var wider []node.Hint
		for _, h := range ownHints()[string(v1.ResourceMemory)] {
			if m&^*h.Affinity == 0 {
				wider = append(wider, h)
			}
		}
		if len(wider) == 0 {
			return 0, errors.New(quoteNoExtension)
		}
		pick := strongest(wider)
		if cur.Preferred && !pick.Preferred {
			return 0, errors.New(quoteNoExtendedPreferred)
		}
		m = *pick.Affinity
	}
	if p.breaksGroups(m) {
		return 0, errors.New(quoteViolatesGroups)
	}
	return m, nil
}

// strongest is the hint kubelet's memory manager settles on among hs:
// preferred before non-preferred, then the narrower mask (fewer nodes, then
// the lower value); the earliest wins a tie. It is {nil, false} for no hints.
func strongest(hs []node.Hint) node.Hint {
	if len(hs) == 0 {
		return node.Hint{}
	}
	return slices.MinFunc(hs, func(a, b node.Hint) int {
		if a.Preferred != b.Preferred {
			if a.Preferred {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(a.Affinity.Count(), b.Affinity.Count()); c != 0 {
			return c
		}
		return cmp.Compare(*a.Affinity, *b.Affinity)
	})
}

// holds reports whether the free memory on the nodes of m covers every ask.
func (p *Static) holds(m node.Mask, asks map[v1.ResourceName]uint64) bool {
	for name, left := range asks {
		for v := uint64(m); v != 0 && left > 0; v &= v - 1 {
			if st := p.state[bits.TrailingZeros64(v)]; st != nil && st.Memory[name] != nil {
				left -= min(left, st.Memory[name].Free)
			}
		}
		if left > 0 {
			return false
		}
	}
	return true
}

// breaksGroups reports whether memory on m would break kubelet's rule for
// multi-NUMA allocations: a node that already has memory booked may join a
// mask of two or more nodes only if its group is exactly that mask (so a
// node never serves both single-NUMA and multi-NUMA allocations, nor two
// different groups).
func (p *Static) breaksGroups(m node.Mask) bool {
	if m.Count() < 2 {
		return false
	}
	for v := uint64(m); v != 0; v &= v - 1 {
		if st := p.state[bits.TrailingZeros64(v)]; st != nil && st.NumberOfAssignments > 0 && node.MaskOf(st.Cells...) != m {
			return true
		}
	}
	return false
}

// book takes the memory of asks on the nodes of m, records the container's
// blocks and settles init-container reuse.
func (p *Static) book(pod *v1.Pod, c *v1.Container, m node.Mask, asks map[v1.ResourceName]uint64) []Block {
	ids := m.Bits()
	uid := string(pod.UID)
	blocks := make([]Block, 0, len(asks))
	for _, name := range sortedNames(asks) {
		size := asks[name]
		blocks = append(blocks, Block{NUMAAffinity: ids, Type: name, Size: size})
		p.spread(ids, name, size-min(size, p.reuse.amount(uid, m, name)), true)
	}
	p.reuse.note(pod, c, blocks)
	if p.owned[uid] == nil {
		p.owned[uid] = map[string][]Block{}
	}
	p.owned[uid][c.Name] = blocks
	p.settleInitBlocks(pod, c, blocks)
	return blocks
}

// spread books (book) or releases size bytes of type name on the nodes of
// ids, in order, each node giving or taking back what it can. Booking
// counts one more assignment on every node of ids, even when nothing is left
// to take, and joins them in one group; releasing counts one less, and a
// node left without assignments is a group of its own again. What the nodes
// cannot give or take back is dropped, as kubelet does: kubelet does not
// record which node of a multi-NUMA block gave how much either, so after a
// rejected multi-NUMA pod the per-node free memory can differ from before
// (the total is the same).
func (p *Static) spread(ids []int, name v1.ResourceName, size uint64, book bool) {
	for _, id := range ids {
		st := p.state[id]
		if st == nil {
			continue
		}
		size -= st.Memory[name].shift(size, book)
		switch {
		case book:
			st.NumberOfAssignments++
			st.Cells = ids
		case st.NumberOfAssignments == 1:
			st.NumberOfAssignments, st.Cells = 0, []int{id}
		default:
			st.NumberOfAssignments--
		}
	}
}

// shift moves up to n bytes from free to reserved (toReserved) or back and
// returns how many it moved; a nil table moves nothing.
func (t *Table) shift(n uint64, toReserved bool) uint64 {
	if t == nil {
		return 0
	}
	from, to := &t.Reserved, &t.Free
	if toReserved {
		from, to = to, from
	}
	n = min(n, *from)
	*from -= n
	*to += n
	return n
}

// RemoveContainer releases the container's memory (see spread).
func (p *Static) RemoveContainer(podUID, container string) {
	for _, b := range p.forget(podUID, container) {
		p.spread(b.NUMAAffinity, b.Type, b.Size, false)
	}
}

// forget drops the container's blocks from the state and returns them (nil
// when it has none).
func (p *Static) forget(podUID, container string) []Block {
	byName := p.owned[podUID]
	blocks := byName[container]
	delete(byName, container)
	if len(byName) == 0 {
		delete(p.owned, podUID)
	}
	return blocks
}
