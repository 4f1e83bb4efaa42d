package node

import (
	"math/bits"
	"strconv"
	"strings"
)

// Mask is a set of NUMA node ids 0..63, the same representation as kubelet's
// topologymanager/bitmask (a uint64).
type Mask uint64

// MaskOf returns the mask with the given NUMA ids set. Ids outside 0..63 are
// ignored (the node model rejects them when it is loaded).
func MaskOf(ids ...int) Mask {
	var m Mask
	for _, id := range ids {
		if id >= 0 && id < 64 {
			m |= 1 << uint(id)
		}
	}
	return m
}

// Count returns the number of NUMA nodes in m.
func (m Mask) Count() int { return bits.OnesCount64(uint64(m)) }

// IsSet reports whether NUMA node id is in m.
func (m Mask) IsSet(id int) bool { return id >= 0 && id < 64 && m&(1<<uint(id)) != 0 }

// AnySet reports whether any of ids is in m.
func (m Mask) AnySet(ids []int) bool {
	for _, id := range ids {
		if m.IsSet(id) {
			return true
		}
	}
	return false
}

// Bits returns the NUMA ids in m, ascending.
func (m Mask) Bits() []int {
	out := make([]int, 0, m.Count())
	for v := uint64(m); v != 0; v &= v - 1 {
		out = append(out, bits.TrailingZeros64(v))
	}
	return out
}

// IsNarrowerThan matches kubelet's BitMask.IsNarrowerThan: fewer bits, ties
// broken by the lower value.
func (m Mask) IsNarrowerThan(o Mask) bool {
	if m.Count() == o.Count() {
		return m < o
	}
	return m.Count() < o.Count()
}

// String renders m as a list of NUMA ids, e.g. "0,1".
func (m Mask) String() string {
	var b strings.Builder
	for i, id := range m.Bits() {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(id))
	}
	return b.String()
}

// Hint is a kubelet TopologyHint: a NUMA affinity (nil = any) and whether it
// is preferred.
type Hint struct {
	// Affinity is nil when the hint expresses no NUMA preference.
	Affinity *Mask
	// Preferred marks the narrowest hints that satisfy the request.
	Preferred bool
}

// NewHint returns a hint with affinity m.
func NewHint(m Mask, preferred bool) Hint { return Hint{Affinity: &m, Preferred: preferred} }

// String renders h like kubelet's log lines: "{0,1 preferred}".
func (h Hint) String() string {
	a := "any"
	if h.Affinity != nil {
		a = "{" + h.Affinity.String() + "}"
	}
	if h.Preferred {
		return a + " preferred"
	}
	return a
}

// DefaultMaxMasks bounds how many NUMA masks a hint provider enumerates. With
// up to 16 NUMA nodes every mask is enumerated, as kubelet does; beyond that
// masks are enumerated by increasing size while the total stays under this
// bound, and the mask of all nodes is always added.
const DefaultMaxMasks = 1 << 16

// IterateMasks calls f for the masks over ids in kubelet's order (all masks of
// size 1, then 2, ...; lexicographic within a size). When enumerating all
// 2^len(ids)-1 masks would exceed limit, it stops after the largest size k
// that keeps the count within limit and then calls f with the mask of all ids
// (unless already visited). It returns false when it truncated.
func IterateMasks(ids []int, limit int, f func(Mask)) bool {
	n := len(ids)
	if n == 0 {
		return true
	}
	if limit <= 0 {
		limit = DefaultMaxMasks
	}
	total := 0
	full := true
	idx := make([]int, n)
	for k := 1; k <= n; k++ {
		c := binomial(n, k)
		if total+c > limit && k > 1 {
			full = false
			break
		}
		total += c
		// lexicographic combinations of size k
		for i := 0; i < k; i++ {
			idx[i] = i
		}
		for {
			var m Mask
			for i := 0; i < k; i++ {
				m |= 1 << uint(ids[idx[i]])
			}
			f(m)
			i := k - 1
			for i >= 0 && idx[i] == n-k+i {
				i--
			}
			if i < 0 {
				break
			}
			idx[i]++
			for j := i + 1; j < k; j++ {
				idx[j] = idx[j-1] + 1
			}
		}
	}
	if !full {
		f(MaskOf(ids...))
	}
	return full
}

func binomial(n, k int) int {
	if k < 0 || k > n {
		return 0
	}
	if k > n-k {
		k = n - k
	}
	r := 1
	for i := 1; i <= k; i++ {
		r = r * (n - k + i) / i
		if r > 1<<40 {
			return 1 << 40
		}
	}
	return r
}
