package dra

import (
	"fmt"
	"slices"
	"strings"
)

// flow is a small max-flow graph (unit augmentations; total flow is at most
// the number of devices still wanted, a few hundred).
type flow struct {
	head []int
	next []int
	to   []int
	capa []int
	seen []int
	mark int
}

func newFlow(n int) *flow {
	f := &flow{head: make([]int, n), seen: make([]int, n)}
	for i := range f.head {
		f.head[i] = -1
	}
	return f
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

// demands lists what claims ci.. still need, from request ri of claim ci
// on: the fewest devices any of a request's alternatives needs, from the
// union of their candidates. Admin-access and All requests are left out.
func (s *searcher) demands(ci, ri int) []demand {
	var out []demand
	for c := ci; c < len(s.p.claims); c++ {
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
				cands := a.cands
				if c == ci && s.restrict != nil {
					cands = s.restrict[r][ai]
				}
				if d.count < 0 || a.count < d.count {
					d.count = a.count
				}
				union = append(union, cands...)
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
	return out
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
	if !ok {
		s.boundFails++
	}
	return ok
}

// boundDetail also returns, when the bound fails, how many devices could be
// found and how many were wanted.
func (s *searcher) boundDetail(ci, ri int) (bool, [2]int) {
	ds := s.demands(ci, ri)
	if len(ds) == 0 {
		return true, [2]int{}
	}
	want := 0
	devNode := map[int]int{}
	var devs []int
	for _, d := range ds {
		want += d.count
		n := 0
		for _, c := range d.cands {
			if _, ok := devNode[c]; ok {
				n++
				continue
			}
			if s.available(c) {
				devNode[c] = -1
				devs = append(devs, c)
				n++
			}
		}
		if n < d.count {
			return false, [2]int{n, d.count}
		}
	}
	// Counter-set capacities for the devices still candidates.
	bySet := map[int][]int{}
	for _, d := range devs {
		if g := s.setOf[d]; g >= 0 {
			bySet[g] = append(bySet[g], d)
		}
	}
	// nodes: 0 source, 1 sink, demands, devices, sets
	nd := len(ds)
	base := 2 + nd
	setNode := map[int]int{}
	n := base + len(devs)
	for g := range bySet {
		setNode[g] = n
		n++
	}
	f := newFlow(n)
	for i, d := range devs {
		devNode[d] = base + i
	}
	for i, d := range ds {
		f.edge(0, 2+i, d.count)
		for _, c := range d.cands {
			if v, ok := devNode[c]; ok && v >= 0 {
				f.edge(2+i, v, 1)
			}
		}
	}
	for _, d := range devs {
		if g := s.setOf[d]; g >= 0 {
			f.edge(devNode[d], setNode[g], 1)
		} else {
			f.edge(devNode[d], 1, 1)
		}
	}
	for g, members := range bySet {
		f.edge(setNode[g], 1, s.maxPack(g, members))
	}
	got := f.max(0, 1, want)
	return got == want, [2]int{got, want}
}

// maxPack is the largest number of members (devices of one counter set)
// that fit together in the remaining counters, exactly (members are few:
// one GPU's MIG placements); more than 62 members are not packed.
func (s *searcher) maxPack(g int, members []int) int {
	if len(members) > 62 {
		return len(members)
	}
	var kb strings.Builder
	fmt.Fprintf(&kb, "%d:", g)
	for _, m := range members {
		fmt.Fprintf(&kb, "%d,", m)
	}
	kb.WriteByte('|')
	seenC := map[int]bool{}
	for _, m := range members {
		for _, cu := range s.p.devices[m].consume {
			if !seenC[cu.counter] {
				seenC[cu.counter] = true
				fmt.Fprintf(&kb, "%d=%d,", cu.counter, s.remain[cu.counter])
			}
		}
	}
	key := kb.String()
	if v, ok := s.packMemo[key]; ok {
		return v
	}
	remain := map[int]int64{}
	for c := range seenC {
		remain[c] = s.remain[c]
	}
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
