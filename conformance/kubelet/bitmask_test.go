package kubelet

import (
	"slices"
	"testing"

	"github.com/gpunode/gpunode/internal/k8s/topology"
	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager/bitmask"
)

// TestIterateBitmasksMatchesUpstream compares gpunode's iterative subset
// walk with kubelet's bitmask.IterateBitMasks: the same masks in the same
// order, for every set of up to 10 ids drawn from 0..11 in a few shapes.
func TestIterateBitmasksMatchesUpstream(t *testing.T) {
	sets := [][]int{{}, {0}, {3}, {0, 1}, {1, 0}, {0, 2, 5}, {7, 3, 1, 0}, {0, 1, 2, 3, 4, 5, 6, 7}, {11, 9, 7, 5, 3, 1, 0, 2, 4, 6}}
	for n := 1; n <= 10; n++ {
		s := make([]int, n)
		for i := range s {
			s[i] = (i*5 + n) % 12
		}
		sets = append(sets, s)
	}
	for _, ids := range sets {
		var mine, theirs []uint64
		topology.IterateBitmasks(ids, func(m topology.Bitmask) { mine = append(mine, uint64(m)) })
		bitmask.IterateBitMasks(ids, func(m bitmask.BitMask) {
			var u uint64
			for _, b := range m.GetBits() {
				u |= 1 << uint(b)
			}
			theirs = append(theirs, u)
		})
		if !slices.Equal(mine, theirs) {
			t.Errorf("ids %v: %d masks %x, kubelet %d masks %x", ids, len(mine), mine, len(theirs), theirs)
		}
	}
}
