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
	// weights and caps bound any multi-GPU demand: a GPU holds at most
	// caps[j] of weights[j]·config, so weights[j]·d <= caps[j]*n is
	// necessary for d to fit on n GPUs.
	weights [][MaxProfiles]int
	caps    []int
	// byWeight[j] lists profile indexes by ascending weights[j].
	byWeight [][]int
	// holders[i] counts the maximal configurations holding profile i.
	holders [MaxProfiles]int
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
	order := displayOrder(p)
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
	s.initBounds()
	return s
}

// initBounds derives the weight vectors used by bounded: compute slices,
// memory slices, media extensions, each profile, each pair of profiles, and
// the count of instances of at least 2 and at least half the memory slices.
func (s *space) initBounds() {
	var ws [][MaxProfiles]int
	var comp, mem, me, two, half [MaxProfiles]int
	for i := 0; i < s.k; i++ {
		comp[i], mem[i] = s.comp[i], s.mem[i]
		if s.me[i] {
			me[i] = 1
		}
		if s.mem[i] >= 2 {
			two[i] = 1
		}
		if 2*s.mem[i] >= s.p.MemorySlices {
			half[i] = 1
		}
	}
	ws = append(ws, comp, mem, me, two, half)
	for i := 0; i < s.k; i++ {
		var w [MaxProfiles]int
		w[i] = 1
		ws = append(ws, w)
		for j := i + 1; j < s.k; j++ {
			w2 := w
			w2[j] = 1
			ws = append(ws, w2)
		}
	}
	capOf := func(w [MaxProfiles]int) int {
		c := 0
		for _, m := range s.maximal {
			v := 0
			for i := 0; i < s.k; i++ {
				v += w[i] * int(m[i])
			}
			c = max(c, v)
		}
		return c
	}
	for _, w := range ws {
		c := capOf(w)
		// A pair weight whose cap is the sum of its parts' caps never
		// binds more than the parts do.
		nz, sum := 0, 0
		for i := 0; i < s.k; i++ {
			if w[i] != 0 {
				nz++
				var u [MaxProfiles]int
				u[i] = 1
				sum += capOf(u)
			}
		}
		if nz == 2 && c >= sum {
			continue
		}
		s.weights = append(s.weights, w)
		s.caps = append(s.caps, c)
		order := make([]int, s.k)
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool { return w[order[a]] < w[order[b]] })
		s.byWeight = append(s.byWeight, order)
	}
	for _, m := range s.maximal {
		for i := 0; i < s.k; i++ {
			if m[i] > 0 {
				s.holders[i]++
			}
		}
	}
}

// countBound is an upper bound on how many of rem's instances fit on n
// GPUs: for each weight, take the lightest instances until n GPUs' capacity
// of that weight is spent.
func (s *space) countBound(rem demand, n int) int {
	best := rem.total()
	for j, order := range s.byWeight {
		capacity := s.caps[j] * n
		cnt := 0
		for _, i := range order {
			w := s.weights[j][i]
			if w == 0 {
				cnt += int(rem[i])
				continue
			}
			take := min(int(rem[i]), capacity/w)
			cnt += take
			capacity -= take * w
			if take < int(rem[i]) {
				break
			}
		}
		best = min(best, cnt)
	}
	return best
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
	for j, w := range s.weights {
		v := 0
		for i := 0; i < s.k; i++ {
			v += w[i] * int(d[i])
		}
		if v > s.caps[j]*n {
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
// proves that none exists.
//
// Every subset of a feasible multiset is feasible, so a GPU never needs
// less than a maximal configuration clipped to what is left, and a clipped
// configuration dominated by another is never needed. Some GPU must hold an
// instance of the most constrained remaining profile, so the search only
// branches over the (undominated, clipped) configurations holding one. It
// memoises, per remainder, the most GPUs proven too few, and prunes with
// the weight caps.
func (s *space) solve(d demand, n int) ([]cfg, bool) {
	cfgs, ok, _ := s.search(d, n, nil)
	return cfgs, ok
}

// search is solve with an abort hook: stop is called with the number of
// nodes visited so far and ends the search when it returns true (complete
// is then false and ok meaningless).
func (s *space) search(d demand, n int, stop func(nodes int) bool) (cfgs []cfg, ok, complete bool) {
	if d.isZero() {
		return nil, true, true
	}
	if n <= 0 || !s.bounded(d, n) {
		return nil, false, true
	}
	tooFew := map[demand]int{}
	var out []cfg
	nodes, aborted := 0, false
	var rec func(rem demand, left int) bool
	rec = func(rem demand, left int) bool {
		if rem.isZero() {
			return true
		}
		if aborted {
			return false
		}
		if nodes++; stop != nil && stop(nodes) {
			aborted = true
			return false
		}
		if left == 0 || !s.bounded(rem, left) {
			return false
		}
		if _, ok := s.single(rem); ok {
			var c cfg
			for i := 0; i < s.k; i++ {
				c[i] = uint8(rem[i])
			}
			out = append(out, c)
			return true
		}
		if left == 1 {
			return false
		}
		if f, ok := tooFew[rem]; ok && f >= left {
			return false
		}
		// Branch on the remaining profile held by the fewest maximal
		// configurations.
		pivot, fewest := -1, 1<<30
		for i := 0; i < s.k; i++ {
			if rem[i] > 0 && s.holders[i] < fewest {
				pivot, fewest = i, s.holders[i]
			}
		}
		for _, c := range s.candidatesWith(rem, pivot) {
			next := rem
			for i := 0; i < s.k; i++ {
				next[i] -= uint16(c[i])
			}
			out = append(out, c)
			if rec(next, left-1) {
				return true
			}
			out = out[:len(out)-1]
			if aborted {
				return false
			}
		}
		if f, ok := tooFew[rem]; !ok || left > f {
			tooFew[rem] = left
		}
		return false
	}
	if rec(d, n) {
		return out, true, true
	}
	return nil, false, !aborted
}

// candidatesWith are the undominated maximal configurations clipped to rem
// that hold at least one instance of profile pivot.
func (s *space) candidatesWith(rem demand, pivot int) []cfg {
	out := make([]cfg, 0, 16)
	for _, m := range s.maximal {
		if m[pivot] == 0 {
			continue
		}
		var c cfg
		for i := 0; i < s.k; i++ {
			c[i] = uint8(min(uint16(m[i]), rem[i]))
		}
		dup := false
		for _, o := range out {
			if o == c {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, c)
		}
	}
	return dropDominated(out, s.k)
}

// dropDominated filters out, in place, the candidates that another candidate
// dominates (over the first k profiles).
func dropDominated(out []cfg, k int) []cfg {
	keep := out[:0]
	for a := range out {
		dom := false
		for b := range out {
			if a != b && dominates(out[b], out[a], k) {
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

// maxPlacedBudget bounds the branch-and-bound search of maxPlaced.
const maxPlacedBudget = 200

// maxPlaced returns the largest number of d's instances that fit on n GPUs,
// one sub-demand achieving it, and whether the search was exhaustive (when
// it ran out of budget the result is the best found, a lower bound).
//
// A demand fits on n GPUs iff some multiset of n maximal configurations
// covers it componentwise (clip each to what is left), so the search walks
// multisets of maximal configurations in canonical (non-decreasing index)
// order, bounding by the best gain any one GPU can still add.
func (s *space) maxPlaced(d demand, n int) (int, demand, bool) {
	total := d.total()
	gain := func(m cfg, cov demand) int {
		g := 0
		for i := 0; i < s.k; i++ {
			g += min(int(m[i]), int(d[i])-int(cov[i]))
		}
		return g
	}
	add := func(m cfg, cov demand) demand {
		for i := 0; i < s.k; i++ {
			cov[i] += uint16(min(int(m[i]), int(d[i])-int(cov[i])))
		}
		return cov
	}
	// Greedy incumbent.
	best, bestCov := 0, demand{}
	{
		var cov demand
		val := 0
		for g := 0; g < n; g++ {
			bi, bg := -1, 0
			for t, m := range s.maximal {
				if v := gain(m, cov); v > bg {
					bi, bg = t, v
				}
			}
			if bi < 0 {
				break
			}
			cov = add(s.maximal[bi], cov)
			val += bg
		}
		best, bestCov = val, cov
	}
	nodes, exact := 0, true
	var rec func(t, left int, cov demand, val int)
	rec = func(t, left int, cov demand, val int) {
		if val > best {
			best, bestCov = val, cov
		}
		if best == total || left == 0 {
			return
		}
		if nodes++; nodes > maxPlacedBudget {
			exact = false
			return
		}
		var rem demand
		for i := 0; i < s.k; i++ {
			rem[i] = d[i] - cov[i]
		}
		if val+s.countBound(rem, left) <= best {
			return
		}
		maxGain := 0
		gains := make([]int, len(s.maximal))
		for u := t; u < len(s.maximal); u++ {
			gains[u] = gain(s.maximal[u], cov)
			maxGain = max(maxGain, gains[u])
		}
		if val+left*maxGain <= best {
			return
		}
		for u := t; u < len(s.maximal); u++ {
			g := gains[u]
			if g == 0 || val+g+(left-1)*maxGain <= best {
				continue
			}
			rec(u, left-1, add(s.maximal[u], cov), val+g)
		}
	}
	rec(0, n, demand{}, 0)
	return best, bestCov, exact
}
