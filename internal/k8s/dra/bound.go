package dra

import (
	"slices"
)

// flow is a small max-flow graph (unit augmentations; total flow is at most
// the number of devices still wanted, a few hundred). It is reused: reset
// keeps its arrays.
type flow struct {
	head []int
	next []int
	to   []int
	capa []int
	seen []int
	mark int
}

func (f *flow) reset(n int) {
	if cap(f.head) < n {
		f.head = make([]int, n)
		f.seen = make([]int, n)
		f.mark = 0
	}
	f.head = f.head[:n]
	f.seen = f.seen[:n]
	for i := range f.head {
		f.head[i] = -1
	}
	f.to, f.capa, f.next = f.to[:0], f.capa[:0], f.next[:0]
}

func (f *flow) edge(a, b, c int) {
	f.to = append(f.to, b, a)
	f.capa = append(f.capa, c, 0)
	f.next = append(f.next, f.head[a], f.head[b])
	f.head[a] = len(f.to) - 2
	f.head[b] = len(f.to) - 1
}

func (f *flow) augment(v, t int) bool {
	if v == t {
		return true
	}
	f.seen[v] = f.mark
	for e := f.head[v]; e >= 0; e = f.next[e] {
		w := f.to[e]
		if f.capa[e] > 0 && f.seen[w] != f.mark && f.augment(w, t) {
			f.capa[e]--
			f.capa[e^1]++
			return true
		}
	}
	return false
}

// max pushes up to limit units from s to t.
func (f *flow) max(s, t, limit int) int {
	n := 0
	for n < limit {
		f.mark++
		if !f.augment(s, t) {
			break
		}
		n++
	}
	return n
}

// demand is a bound's view of one remaining request.
type demand struct {
	claim, request int
	count          int
	cands          []int
}

// boundScratch is the bound's working memory, allocated once per search:
// per-device marks instead of maps.
type boundScratch struct {
	ds      []demand
	mark    uint32
	stamp   []uint32 // device seen in this bound
	devNode []int    // flow node of a seen, available device (-1: not available)
	devs    []int
	setMark []uint32
	setNode []int
	members [][]int
	sets    []int
	base    int
	f       flow
}

func (b *boundScratch) init(devices, sets int) {
	b.stamp = make([]uint32, devices)
	b.devNode = make([]int, devices)
	b.setMark = make([]uint32, sets)
	b.setNode = make([]int, sets)
	b.members = make([][]int, sets)
}

func (b *boundScratch) next() {
	b.mark++
	if b.mark == 0 {
		clear(b.stamp)
		clear(b.setMark)
		b.mark = 1
	}
}

// demands lists what claims ci.. still need, from request ri of claim ci
// on (in plain mode the claims before ci too, with their restricted
// candidates): the fewest devices any of a request's alternatives needs,
// from the union of their candidates. Admin-access and All requests are
// left out. The result is scratch memory, valid until the next call.
func (s *searcher) demands(ci, ri int) []demand {
	out := s.bs.ds[:0]
	first := ci
	if !s.phase2 {
		first = 0
	}
	for c := first; c < len(s.p.claims); c++ {
		cl := &s.p.claims[c]
		start := 0
		if c == ci {
			start = ri
		}
		for r := start; r < len(cl.requests); r++ {
			req := &cl.requests[r]
			d := demand{claim: c, request: r, count: -1}
			skip := false
			var union []int
			for ai := range req.alts {
				a := &req.alts[ai]
				if a.admin || a.all {
					skip = true
					break
				}
				cands := s.candsOf(ci, c, r, ai)
				if d.count < 0 || a.count < d.count {
					d.count = a.count
				}
				if len(req.alts) == 1 {
					union = cands
				} else {
					union = append(union, cands...)
				}
			}
			if skip || d.count <= 0 {
				continue
			}
			if len(req.alts) > 1 {
				slices.Sort(union)
				union = slices.Compact(union)
			}
			d.cands = union
			out = append(out, d)
		}
	}
	s.bs.ds = out
	return out
}

// candsOf is what the bound at claim ci sees of claim c's request r,
// alternative ai: the current claim's restriction, the restriction fixed
// for claims before it (phase one) or after it (phase two), else all.
func (s *searcher) candsOf(ci, c, r, ai int) []int {
	switch {
	case c == ci && s.restrict.restricted():
		return s.restrict.of(r, ai)
	case c < ci && s.restrictOf[c].restricted(), c > ci && s.phase2 && s.restrictOf[c].restricted():
		return s.restrictOf[c].of(r, ai)
	}
	return s.p.claims[c].requests[r].alts[ai].cands
}

func (s *searcher) available(d int) bool {
	p := s.p
	if s.used[d] || p.inUse[d] {
		return false
	}
	dev := &p.devices[d]
	if len(dev.consume) > 0 {
		if p.pools[dev.pool].overdrawn {
			return false
		}
		for _, cu := range dev.consume {
			if s.remain[cu.counter] < cu.milli {
				return false
			}
		}
	}
	return true
}

// bound reports whether the remaining demand could still be met.
func (s *searcher) bound(ci, ri int) bool {
	ok, _ := s.boundDetail(ci, ri)
	if ok {
		ok = s.distinctOK(ci, ri)
	}
	if !ok {
		s.boundFails++
	}
	return ok
}

// distinctOK: for every distinctAttribute constraint of claims ci.., the
// devices its remaining covered requests need are at most the values still
// free among their available candidates (each value once per claim).
func (s *searcher) distinctOK(ci, ri int) bool {
	first := ci
	if !s.phase2 {
		first = 0
	}
	for c := first; c < len(s.p.claims); c++ {
		cl := &s.p.claims[c]
		for ki := range cl.constraints {
			k := &cl.constraints[ki]
			if k.kind != distinctConstraint {
				continue
			}
			val := s.val[c][ki]
			need := 0
			s.vmark++
			if s.vmark == 0 {
				clear(s.vstamp)
				s.vmark = 1
			}
			free := 0
			start := 0
			if c == ci {
				start = ri
			}
			for r := start; r < len(cl.requests); r++ {
				req := &cl.requests[r]
				least := -1
				for ai := range req.alts {
					a := &req.alts[ai]
					n := a.count
					if a.all || !k.covers(a) {
						n = 0
					}
					if least < 0 || n < least {
						least = n
					}
					if n == 0 {
						continue
					}
					cands := s.candsOf(ci, c, r, ai)
					for _, d := range cands {
						v := val[d]
						if v == 0 || s.vstamp[v] == s.vmark || (c == ci && s.distinct != nil && s.distinct[ki] != nil && s.distinct[ki][v] > 0) {
							continue
						}
						if a.admin || s.available(d) {
							s.vstamp[v] = s.vmark
							free++
						}
					}
				}
				need += max(least, 0)
			}
			if need > free {
				return false
			}
		}
	}
	return true
}

// boundDetail also returns, when the bound fails, how many devices could be
// found and how many were wanted.
func (s *searcher) boundDetail(ci, ri int) (bool, [2]int) {
	return s.flowOf(s.demands(ci, ri))
}

// flowOf is the flow bound over ds: requests -> available devices ->
// counter sets (with their exact packing) -> sink. When every demand is
// plain and no device has counters, it is exact.
func (s *searcher) flowOf(ds []demand) (bool, [2]int) {
	if len(ds) == 0 {
		return true, [2]int{}
	}
	b := &s.bs
	b.next()
	want := 0
	b.devs = b.devs[:0]
	for _, d := range ds {
		want += d.count
		n := 0
		for _, c := range d.cands {
			if b.stamp[c] == b.mark {
				if b.devNode[c] >= 0 {
					n++
				}
				continue
			}
			b.stamp[c] = b.mark
			b.devNode[c] = -1
			if s.available(c) {
				b.devNode[c] = 0
				b.devs = append(b.devs, c)
				n++
			}
		}
		if n < d.count {
			return false, [2]int{n, d.count}
		}
	}
	// nodes: 0 source, 1 sink, demands, devices, sets
	nd := len(ds)
	b.base = 2 + nd
	n := b.base + len(b.devs)
	b.sets = b.sets[:0]
	for i, d := range b.devs {
		b.devNode[d] = b.base + i
		if g := s.setOf[d]; g >= 0 {
			if b.setMark[g] != b.mark {
				b.setMark[g] = b.mark
				b.setNode[g] = n
				n++
				b.members[g] = b.members[g][:0]
				b.sets = append(b.sets, g)
			}
			b.members[g] = append(b.members[g], d)
		}
	}
	f := &b.f
	f.reset(n)
	for i, d := range ds {
		f.edge(0, 2+i, d.count)
		for _, c := range d.cands {
			if v := b.devNode[c]; v >= 0 {
				f.edge(2+i, v, 1)
			}
		}
	}
	for _, d := range b.devs {
		if g := s.setOf[d]; g >= 0 {
			f.edge(b.devNode[d], b.setNode[g], 1)
		} else {
			f.edge(b.devNode[d], 1, 1)
		}
	}
	for _, g := range b.sets {
		f.edge(b.setNode[g], 1, s.maxPack(g, b.members[g]))
	}
	got := f.max(0, 1, want)
	return got == want, [2]int{got, want}
}

// maxPack is the largest number of members (devices of one counter set)
// that fit together in the remaining counters, exactly (members are few:
// one GPU's MIG placements); more than 62 members are not packed. The memo
// key is a hash of the members and their counters' remains.
func (s *searcher) maxPack(g int, members []int) int {
	if len(members) > 62 {
		return len(members)
	}
	key := hashOf(5, uint64(g), uint64(len(members)), 0)
	for i, m := range members {
		key = key.xor(hashOf(6, uint64(i), uint64(m), 0))
		for _, cu := range s.p.devices[m].consume {
			key = key.xor(hashOf(7, uint64(i), uint64(cu.counter), uint64(s.remain[cu.counter])))
		}
	}
	if v, ok := s.packMemo[key]; ok {
		return v
	}
	// The search below changes s.remain and restores it.
	remain := s.remain
	best := 0
	steps := 0
	var dfs func(i, n int)
	dfs = func(i, n int) {
		steps++
		if n > best {
			best = n
		}
		if n+len(members)-i <= best || steps > 1<<16 {
			return
		}
		for j := i; j < len(members); j++ {
			if n+len(members)-j <= best {
				return
			}
			dev := &s.p.devices[members[j]]
			fits := true
			for _, cu := range dev.consume {
				if remain[cu.counter] < cu.milli {
					fits = false
					break
				}
			}
			if !fits {
				continue
			}
			for _, cu := range dev.consume {
				remain[cu.counter] -= cu.milli
			}
			dfs(j+1, n+1)
			for _, cu := range dev.consume {
				remain[cu.counter] += cu.milli
			}
		}
	}
	dfs(0, 0)
	if steps > 1<<16 {
		best = len(members) // gave up: no bound
	}
	if len(s.packMemo) < 1<<16 {
		s.packMemo[key] = best
	}
	return best
}
