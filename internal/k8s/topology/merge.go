package topology

import (
	"math/bits"
	"slices"
)

// mergeLists returns the hint kubelet's HintMerger.Merge returns for lists,
// without enumerating their Cartesian product (see the package comment).
func (p *Policy) mergeLists(lists [][]Hint) Hint {
	def := p.def
	for _, l := range lists {
		if len(l) == 0 { // no combination at all
			return Hint{def.Ptr(), false}
		}
	}
	if m, ok := p.bestPreferred(lists); ok {
		return Hint{m.Ptr(), true}
	}
	b := maxOfMinAffinityCounts(lists)
	cands := reachableANDs(def, lists, closureAuto)
	if len(cands) == 0 {
		return Hint{def.Ptr(), false}
	}
	return Hint{p.bestNonPreferred(cands, b).Ptr(), false}
}

// bestPreferred finds the fittest non-empty mask produced by a combination
// whose hints are all preferred and whose non-nil masks are all equal.
// Such a combination either has no mask (merged = default) or shares one raw
// mask X (merged = default & X), so the states are {nil} and the X's.
func (p *Policy) bestPreferred(lists [][]Hint) (Bitmask, bool) {
	nilState := true
	var states map[Bitmask]struct{}
	for _, l := range lists {
		prefNil := false
		prefMasks := map[Bitmask]struct{}{}
		for _, h := range l {
			switch {
			case !h.Preferred:
			case h.Affinity == nil:
				prefNil = true
			default:
				prefMasks[*h.Affinity] = struct{}{}
			}
		}
		next := map[Bitmask]struct{}{}
		for x := range states {
			if _, ok := prefMasks[x]; ok || prefNil {
				next[x] = struct{}{}
			}
		}
		if nilState {
			for x := range prefMasks {
				next[x] = struct{}{}
			}
		}
		nilState = nilState && prefNil
		states = next
		if !nilState && len(states) == 0 {
			return 0, false
		}
	}
	var best Bitmask
	found := false
	consider := func(m Bitmask) {
		if m == 0 {
			return
		}
		if !found || p.fitter(m, best) {
			best, found = m, true
		}
	}
	if nilState {
		consider(p.def)
	}
	for x := range states {
		consider(p.def & x)
	}
	return best, found
}

// maxOfMinAffinityCounts is kubelet's bestNonPreferredAffinityCount: the
// largest, over the lists, of the bit count of the list's narrowest non-nil
// mask (raw, not restricted to the machine's nodes).
func maxOfMinAffinityCounts(lists [][]Hint) int {
	best := 0
	for _, l := range lists {
		minCount := -1
		for _, h := range l {
			if h.Affinity == nil {
				continue
			}
			if c := h.Affinity.Count(); minCount < 0 || c < minCount {
				minCount = c
			}
		}
		if minCount > best {
			best = minCount
		}
	}
	return best
}

// bestNonPreferred applies HintMerger.compare's non-preferred cases to the
// set of distinct merged masks: a mask with exactly b bits if any (fittest),
// else the widest below b (fittest), else the narrowest above b.
func (p *Policy) bestNonPreferred(cands []Bitmask, b int) Bitmask {
	hasEq, below, above := false, 0, MaxNUMANodes+1
	for _, m := range cands {
		switch c := m.Count(); {
		case c == b:
			hasEq = true
		case c < b:
			below = max(below, c)
		default:
			above = min(above, c)
		}
	}
	target := above
	switch {
	case hasEq:
		target = b
	case below > 0:
		target = below
	}
	var best Bitmask
	found := false
	for _, m := range cands {
		if m.Count() != target {
			continue
		}
		if !found || p.fitter(m, best) {
			best, found = m, true
		}
	}
	return best
}

// denseMaxBits bounds the compressed width for which the dense transform and
// the dense de-duplication bitset are used (2^20 uint64 = 8 MiB per array).
const (
	denseMaxBits  = 20
	bitsetMaxBits = 24
)

// closureMode selects how reachableANDs computes the closure (tests force
// each path; production uses closureAuto).
type closureMode int

const (
	closureAuto closureMode = iota
	closurePairwise
	closureDense
)

// reachableANDs returns the distinct non-zero masks def & h1 & ... & hn over
// all combinations (one hint per list; nil = def).
func reachableANDs(def Bitmask, lists [][]Hint, mode closureMode) []Bitmask {
	if def == 0 {
		return nil
	}
	// Masks per list, restricted to the machine's nodes (nil = all).
	sets := make([][]uint64, len(lists))
	for i, l := range lists {
		s := make([]uint64, len(l))
		for j, h := range l {
			m := def
			if h.Affinity != nil {
				m &= *h.Affinity
			}
			s[j] = uint64(m)
		}
		sets[i] = s
	}
	cm := newCompressor(def, sets)
	k := len(cm.classes)
	full := uint64(1)<<uint(k) - 1
	csets := make([][]uint64, len(sets))
	var seen []uint64
	if k <= bitsetMaxBits {
		seen = make([]uint64, (1<<uint(k)+63)/64)
	}
	for i, s := range sets {
		for j, m := range s { // compress in place
			s[j] = cm.compress(m)
		}
		csets[i] = dedup(s, seen)
	}

	cur := []uint64{full}
	var dense, f []uint64 // zeta transform of the multiset of reachable masks; scratch
	var bound uint64      // upper bound of every count in dense
	denseCost := uint64(k+2) << uint(k)
	for _, t := range csets {
		if dense == nil && k <= denseMaxBits && mode != closurePairwise {
			if hi, lo := bits.Mul64(uint64(len(cur)), uint64(len(t))); hi != 0 || lo > 4*denseCost || mode == closureDense {
				dense = make([]uint64, 1<<uint(k))
				for _, m := range cur {
					dense[m] = 1
				}
				zetaSuperset(dense, k)
				bound = uint64(len(cur))
				f = make([]uint64, 1<<uint(k))
			}
		}
		if dense == nil {
			cur = andPairs(cur, t, k)
			if len(cur) == 0 {
				return nil
			}
			continue
		}
		if hi, _ := bits.Mul64(bound, uint64(len(t))); hi != 0 {
			// Counts could wrap: reduce to 0/1 before going on.
			mobiusSuperset(dense, k)
			bound = 0
			for m, v := range dense {
				if v != 0 {
					dense[m] = 1
					bound++
				}
			}
			zetaSuperset(dense, k)
		}
		clear(f)
		for _, m := range t {
			f[m] = 1
		}
		zetaSuperset(f, k)
		for m := range dense {
			dense[m] *= f[m]
		}
		bound *= uint64(len(t))
	}
	out := make([]Bitmask, 0, 64)
	if dense != nil {
		// Counts are exact modulo 2^64 and below 2^64, hence exact.
		mobiusSuperset(dense, k)
		for m, v := range dense {
			if m != 0 && v != 0 {
				out = append(out, cm.expand(uint64(m)))
			}
		}
		return out
	}
	for _, m := range cur {
		if m != 0 {
			out = append(out, cm.expand(m))
		}
	}
	return out
}

// dedup removes duplicates from c, with the zeroed bitset seen when it is
// large enough (left zeroed again), else by sorting.
func dedup(c []uint64, seen []uint64) []uint64 {
	if seen == nil {
		slices.Sort(c)
		return slices.Compact(c)
	}
	out := c[:0]
	for _, m := range c {
		if seen[m>>6]&(1<<(m&63)) == 0 {
			seen[m>>6] |= 1 << (m & 63)
			out = append(out, m)
		}
	}
	for _, m := range out {
		seen[m>>6] &^= 1 << (m & 63)
	}
	return out
}

// andPairs returns the distinct non-zero s & t for s in a, t in b.
func andPairs(a, b []uint64, k int) []uint64 {
	var out []uint64
	if k <= bitsetMaxBits {
		seen := make([]uint64, (1<<uint(k)+63)/64)
		for _, s := range a {
			for _, t := range b {
				r := s & t
				if r == 0 || seen[r>>6]&(1<<(r&63)) != 0 {
					continue
				}
				seen[r>>6] |= 1 << (r & 63)
				out = append(out, r)
			}
		}
		return out
	}
	seen := make(map[uint64]struct{})
	for _, s := range a {
		for _, t := range b {
			r := s & t
			if r == 0 {
				continue
			}
			if _, ok := seen[r]; ok {
				continue
			}
			seen[r] = struct{}{}
			out = append(out, r)
		}
	}
	return out
}

// zetaSuperset turns f into F(m) = sum of f(s) over s ⊇ m (in place).
func zetaSuperset(f []uint64, k int) {
	for i := 0; i < k; i++ {
		bit := 1 << uint(i)
		for m := range f {
			if m&bit == 0 {
				f[m] += f[m|bit]
			}
		}
	}
}

// mobiusSuperset inverts zetaSuperset (in place, modulo 2^64).
func mobiusSuperset(f []uint64, k int) {
	for i := 0; i < k; i++ {
		bit := 1 << uint(i)
		for m := range f {
			if m&bit == 0 {
				f[m] -= f[m|bit]
			}
		}
	}
}

// compressor maps masks over the machine's nodes onto equivalence classes of
// bits that no mask tells apart: every mask holds all or none of a class, so
// ANDs commute with the mapping and expand(compress(m)) == m.
type compressor struct {
	classes []Bitmask
	table   [8][256]uint64 // byte lookup: raw byte -> compressed bits
}

func newCompressor(def Bitmask, sets [][]uint64) *compressor {
	classes := make([]Bitmask, 1, MaxNUMANodes)
	classes[0] = def
	singletons := def.Count()
refine:
	for _, s := range sets {
		for _, m := range s {
			if len(classes) == singletons {
				break refine
			}
			for j, n := 0, len(classes); j < n; j++ {
				c := classes[j]
				if in := c & Bitmask(m); in != 0 && in != c {
					classes[j] = in
					classes = append(classes, c&^Bitmask(m))
				}
			}
		}
	}
	slices.Sort(classes)
	cm := &compressor{classes: classes}
	for j, c := range classes {
		for _, id := range c.Bits() {
			for v := 0; v < 256; v++ {
				if v&(1<<uint(id%8)) != 0 {
					cm.table[id/8][v] |= 1 << uint(j)
				}
			}
		}
	}
	return cm
}

func (cm *compressor) compress(m uint64) uint64 {
	var r uint64
	for i := 0; i < 8 && m != 0; i++ {
		r |= cm.table[i][m&0xff]
		m >>= 8
	}
	return r
}

func (cm *compressor) expand(r uint64) Bitmask {
	var m Bitmask
	for ; r != 0; r &= r - 1 {
		m |= cm.classes[bits.TrailingZeros64(r)]
	}
	return m
}
