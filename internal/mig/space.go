package mig

import (
	"sort"
)

// cfg is a single-GPU multiset: the count of each profile (by index).
type cfg [MaxProfiles]uint8

// placed is one GI in a layout.
type placed struct {
	prof  int
	start int
}

// space is the set of feasible single-GPU configurations of a product,
// enumerated once and cached in the Catalogue.
type space struct {
	p        *Product
	k        int
	comp     [MaxProfiles]int
	mem      [MaxProfiles]int
	max      [MaxProfiles]int
	me       [MaxProfiles]bool
	feasible map[cfg][]placed
	// maximal are the feasible configurations that cannot be extended by
	// one more instance, heaviest first.
	maximal []cfg
}

// space returns the (cached) configuration space of p.
func (c *Catalogue) space(p *Product) *space {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.spaces == nil {
		c.spaces = map[string]*space{}
	}
	key := p.Key
	if s, ok := c.spaces[key]; ok && s.p == p {
		return s
	}
	s := newSpace(p)
	c.spaces[key] = s
	return s
}

func newSpace(p *Product) *space {
	s := &space{p: p, k: len(p.Profiles), feasible: map[cfg][]placed{}}
	for i, pr := range p.Profiles {
		s.comp[i] = pr.ComputeSlices
		s.mem[i] = pr.MemorySlices
		s.max[i] = pr.MaxCount
		s.me[i] = pr.MediaExtensions
	}
	// Try bigger profiles first at each slot so that each multiset's first
	// (recorded) layout packs large instances to the left.
	order := make([]int, s.k)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		pa, pb := p.Profiles[order[a]], p.Profiles[order[b]]
		if pa.MemorySlices != pb.MemorySlices {
			return pa.MemorySlices > pb.MemorySlices
		}
		return pa.ComputeSlices > pb.ComputeSlices
	})
	startOK := make([][maxSlices]bool, s.k)
	for i, pr := range p.Profiles {
		for _, st := range pr.Starts {
			startOK[i][st] = true
		}
	}
	var cur cfg
	var stack []placed
	var rec func(slot, compute, me int)
	rec = func(slot, compute, me int) {
		if slot >= p.MemorySlices {
			if _, ok := s.feasible[cur]; !ok {
				s.feasible[cur] = append([]placed(nil), stack...)
			}
			return
		}
		for _, i := range order {
			if !startOK[i][slot] || int(cur[i]) >= s.max[i] || compute+s.comp[i] > p.ComputeSlices {
				continue
			}
			if s.me[i] && me+1 > p.MediaExtensionLimit {
				continue
			}
			if slot+s.mem[i] > p.MemorySlices {
				continue
			}
			cur[i]++
			stack = append(stack, placed{prof: i, start: slot})
			m := me
			if s.me[i] {
				m++
			}
			rec(slot+s.mem[i], compute+s.comp[i], m)
			stack = stack[:len(stack)-1]
			cur[i]--
		}
		rec(slot+1, compute, me)
	}
	rec(0, 0, 0)
	for f := range s.feasible {
		ext := false
		for i := 0; i < s.k && !ext; i++ {
			g := f
			g[i]++
			if _, ok := s.feasible[g]; ok {
				ext = true
			}
		}
		if !ext {
			s.maximal = append(s.maximal, f)
		}
	}
	sort.Slice(s.maximal, func(a, b int) bool {
		wa, wb := s.weight(s.maximal[a]), s.weight(s.maximal[b])
		if wa != wb {
			return wa > wb
		}
		return lessCfg(s.maximal[a], s.maximal[b])
	})
	return s
}

func lessCfg(a, b cfg) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] > b[i]
		}
	}
	return false
}

// weight orders configurations: memory slices, then compute slices.
func (s *space) weight(c cfg) int {
	w := 0
	for i := 0; i < s.k; i++ {
		w += int(c[i]) * (s.mem[i]*16 + s.comp[i])
	}
	return w
}

// demand is a multi-GPU demand: the count of each profile.
type demand [MaxProfiles]uint16

func (d demand) total() int {
	t := 0
	for _, v := range d {
		t += int(v)
	}
	return t
}

func (d demand) isZero() bool { return d == demand{} }

func (s *space) slices(d demand) (compute, memory, me int) {
	for i := 0; i < s.k; i++ {
		compute += int(d[i]) * s.comp[i]
		memory += int(d[i]) * s.mem[i]
		if s.me[i] {
			me += int(d[i])
		}
	}
	return
}

// bounded reports whether d can possibly fit on n GPUs by slice counts.
func (s *space) bounded(d demand, n int) bool {
	c, m, me := s.slices(d)
	if c > s.p.ComputeSlices*n || m > s.p.MemorySlices*n || me > s.p.MediaExtensionLimit*n {
		return false
	}
	for i := 0; i < s.k; i++ {
		if int(d[i]) > s.max[i]*n {
			return false
		}
	}
	return true
}

// single returns the layout of d on one GPU, if it fits.
func (s *space) single(d demand) ([]placed, bool) {
	var c cfg
	for i := 0; i < s.k; i++ {
		if int(d[i]) > s.max[i] {
			return nil, false
		}
		c[i] = uint8(d[i])
	}
	l, ok := s.feasible[c]
	return l, ok
}

// candidates are the maximal configurations clipped to rem, deduplicated
// and without dominated ones: taking more of the demand on one GPU is never
// worse, because every subset of a feasible multiset is feasible.
func (s *space) candidates(rem demand) []cfg {
	out := make([]cfg, 0, len(s.maximal))
	seen := make(map[cfg]bool, len(s.maximal))
	for _, m := range s.maximal {
		var c cfg
		nz := false
		for i := 0; i < s.k; i++ {
			v := m[i]
			if uint16(v) > rem[i] {
				v = uint8(rem[i])
			}
			c[i] = v
			if v > 0 {
				nz = true
			}
		}
		if !nz || seen[c] {
			continue
		}
		seen[c] = true
		out = append(out, c)
	}
	// Drop dominated candidates.
	keep := out[:0]
	for a := range out {
		dom := false
		for b := range out {
			if a != b && dominates(out[b], out[a], s.k) {
				dom = true
				break
			}
		}
		if !dom {
			keep = append(keep, out[a])
		}
	}
	return keep
}

// dominates reports b >= a componentwise with b != a.
func dominates(b, a cfg, k int) bool {
	strict := false
	for i := 0; i < k; i++ {
		if b[i] < a[i] {
			return false
		}
		if b[i] > a[i] {
			strict = true
		}
	}
	return strict
}

type memoKey struct {
	rem  demand
	left int
}

// solve finds one configuration per GPU (at most n) covering d exactly, or
// reports that none exists.
func (s *space) solve(d demand, n int) ([]cfg, bool) {
	if d.isZero() {
		return nil, true
	}
	if n <= 0 || !s.bounded(d, n) {
		return nil, false
	}
	fail := map[memoKey]bool{}
	var out []cfg
	var rec func(rem demand, left int) bool
	rec = func(rem demand, left int) bool {
		if rem.isZero() {
			return true
		}
		if left == 0 || !s.bounded(rem, left) {
			return false
		}
		if left == 1 {
			if _, ok := s.single(rem); ok {
				var c cfg
				for i := 0; i < s.k; i++ {
					c[i] = uint8(rem[i])
				}
				out = append(out, c)
				return true
			}
			return false
		}
		key := memoKey{rem, left}
		if fail[key] {
			return false
		}
		for _, c := range s.candidates(rem) {
			next := rem
			for i := 0; i < s.k; i++ {
				next[i] -= uint16(c[i])
			}
			out = append(out, c)
			if rec(next, left-1) {
				return true
			}
			out = out[:len(out)-1]
		}
		fail[key] = true
		return false
	}
	if rec(d, n) {
		return out, true
	}
	return nil, false
}

// maxPlaced returns the largest number of d's instances that fit on n GPUs
// and one sub-demand achieving it.
func (s *space) maxPlaced(d demand, n int) (int, demand) {
	type res struct {
		best int
		pick cfg
	}
	memo := map[memoKey]res{}
	var rec func(rem demand, left int) int
	rec = func(rem demand, left int) int {
		if rem.isZero() || left == 0 {
			return 0
		}
		key := memoKey{rem, left}
		if r, ok := memo[key]; ok {
			return r.best
		}
		best, pick := -1, cfg{}
		for _, c := range s.candidates(rem) {
			next := rem
			cnt := 0
			for i := 0; i < s.k; i++ {
				next[i] -= uint16(c[i])
				cnt += int(c[i])
			}
			v := cnt + rec(next, left-1)
			if v > best {
				best, pick = v, c
			}
			if best == rem.total() {
				break
			}
		}
		if best < 0 {
			best = 0
		}
		memo[key] = res{best, pick}
		return best
	}
	best := rec(d, n)
	var placedD demand
	rem, left := d, n
	for left > 0 && !rem.isZero() {
		r, ok := memo[memoKey{rem, left}]
		if !ok || r.pick == (cfg{}) {
			break
		}
		for i := 0; i < s.k; i++ {
			rem[i] -= uint16(r.pick[i])
			placedD[i] += uint16(r.pick[i])
		}
		left--
	}
	return best, placedD
}
