package memorymanager

import (
	"maps"

	v1 "k8s.io/api/core/v1"

	"github.com/gpunode/gpunode/internal/k8s/node"
)

// initReuse is the memory regular (run-to-completion) init containers of one
// pod hold and that the pod's later containers may take over instead of
// booking more, per NUMA mask and memory type. Like kubelet it remembers a
// single pod: the one whose container was allocated last.
type initReuse struct {
	pod  string
	left map[reuseSlot]uint64
}

// reuseSlot is where reusable memory sits: the exact NUMA mask of the init
// container's block and its memory type.
type reuseSlot struct {
	numa node.Mask
	kind v1.ResourceName
}

// amount is what pod can reuse of kind on exactly the nodes of m.
func (r *initReuse) amount(pod string, m node.Mask, kind v1.ResourceName) uint64 {
	if r.pod != pod {
		return 0
	}
	return r.left[reuseSlot{m, kind}]
}

// note records the blocks just given to (or already held by) container c of
// pod: a regular init container makes its blocks reusable (the largest per
// slot counts), any other container uses reusable memory up. Switching to
// another pod forgets the previous one.
func (r *initReuse) note(pod *v1.Pod, c *v1.Container, blocks []Block) {
	if uid := string(pod.UID); r.pod != uid || r.left == nil {
		r.pod, r.left = uid, map[reuseSlot]uint64{}
	}
	lends := roleIn(pod, c.Name) == roleInit
	for _, b := range blocks {
		slot := reuseSlot{node.MaskOf(b.NUMAAffinity...), b.Type}
		have := r.left[slot]
		switch {
		case lends:
			r.left[slot] = max(have, b.Size)
		case have > 0:
			r.left[slot] = have - min(have, b.Size)
		}
	}
}

func (r initReuse) clone() initReuse {
	return initReuse{pod: r.pod, left: maps.Clone(r.left)}
}

// roleIn is the role of the first container of pod called name (roleApp if
// none is).
func roleIn(pod *v1.Pod, name string) role {
	for r, c := range containersOf(pod) {
		if c.Name == name {
			return r
		}
	}
	return roleApp
}

// settleInitBlocks lowers the blocks of the pod's regular init containers
// that precede c by what c's new blocks took over from them (same type and
// NUMA mask, earliest first), so that the pod's blocks add up to the memory
// booked for it. An init container's block can drop to size 0; kubelet's
// state shows the same.
func (p *Static) settleInitBlocks(pod *v1.Pod, c *v1.Container, blocks []Block) {
	held := p.owned[string(pod.UID)]
	for _, nb := range blocks {
		rest := nb.Size
		where := node.MaskOf(nb.NUMAAffinity...)
		for r, ic := range containersOf(pod) {
			if rest == 0 || r == roleApp || ic.Name == c.Name {
				break
			}
			lent := held[ic.Name]
			for j := 0; r == roleInit && j < len(lent); j++ {
				if lent[j].Type == nb.Type && node.MaskOf(lent[j].NUMAAffinity...) == where {
					cut := min(lent[j].Size, rest)
					lent[j].Size, rest = lent[j].Size-cut, rest-cut
				}
			}
		}
	}
}
