package cpumanager

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// draft is one allocation in progress: which CPUs are still free, which are
// already picked, and how many CPUs are still owed.
//
// owed follows kubelet's bookkeeping exactly: picking a list of CPUs lowers
// it by the length of the list even where some of them were picked before or
// were not free (kubelet can do that on machines whose groups differ in size,
// or whose groups straddle their parents), so that the CPUs chosen stay the
// same as kubelet's on such machines too.
type draft struct {
	lo     *layout
	free   []bool
	picked []bool
	nFree  int
	// avail[t][g]: free CPUs in group g of tier t.
	avail [tierCount][]int
	owed  int
	// spread is the distribute-cpus-across-cores ordering of single CPUs.
	spread bool
}

func newDraft(lo *layout, free []int, want int, spread bool) *draft {
	d := &draft{lo: lo, free: make([]bool, len(lo.cpuIDs)), picked: make([]bool, len(lo.cpuIDs)), owed: want, spread: spread}
	for t := range d.avail {
		d.avail[t] = make([]int, len(lo.label[t]))
	}
	for _, s := range free {
		if d.free[s] {
			continue
		}
		d.free[s] = true
		d.nFree++
		for t := range d.avail {
			d.avail[t][lo.home[t][s]]++
		}
	}
	return d
}

func (d *draft) satisfied() bool { return d.owed <= 0 }

// pick takes the given slots.
func (d *draft) pick(slots []int) {
	for _, s := range slots {
		d.picked[s] = true
		if !d.free[s] {
			continue
		}
		d.free[s] = false
		d.nFree--
		for t := range d.avail {
			d.avail[t][d.lo.home[t][s]]--
		}
	}
	d.owed -= len(slots)
}

// result lists the picked slots.
func (d *draft) result() []int {
	var out []int
	for s, ok := range d.picked {
		if ok {
			out = append(out, s)
		}
	}
	return out
}

// freeIn lists the free slots of group g of tier t.
func (d *draft) freeIn(t tier, g int) []int {
	var out []int
	for _, s := range d.lo.member[t][g] {
		if d.free[s] {
			out = append(out, s)
		}
	}
	return out
}

// byScarcity sorts groups of tier t: fewest free CPUs first, then lowest id.
func (d *draft) byScarcity(t tier, gs []int) {
	slices.SortFunc(gs, func(a, b int) int {
		if c := cmp.Compare(d.avail[t][a], d.avail[t][b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
}

// rank returns the groups of tier t that have free CPUs, in the order the
// allocator visits them. The outer of NUMA node and socket is ranked by
// scarcity on its own; every other tier is ranked by scarcity within each
// group of its parent, parents taken in their own rank (a group under two
// parents is listed under both, as kubelet does). Core's parent is the inner
// of NUMA node and socket; the cache's parent is the NUMA node.
func (d *draft) rank(t tier) []int {
	outer, inner := tierSocket, tierNUMA
	if d.lo.numaOuter {
		outer, inner = tierNUMA, tierSocket
	}
	if t == outer {
		var gs []int
		for g, n := range d.avail[t] {
			if n > 0 {
				gs = append(gs, g)
			}
		}
		d.byScarcity(t, gs)
		return gs
	}
	parent := inner
	switch t {
	case inner:
		parent = outer
	case tierCache:
		parent = tierNUMA
	}
	var out []int
	seen := make([]int, len(d.avail[t])) // stamp: parent position + 1
	for i, p := range d.rank(parent) {
		start := len(out)
		for _, s := range d.lo.member[parent][p] {
			if g := d.lo.home[t][s]; d.free[s] && seen[g] != i+1 {
				seen[g] = i + 1
				out = append(out, g)
			}
		}
		d.byScarcity(t, out[start:])
	}
	return out
}

// singles lists free CPUs one by one in the order single CPUs are picked:
// core by core in core rank, or, spreading, socket by socket in socket rank;
// ascending id within each.
func (d *draft) singles() []int {
	t := tierCore
	if d.spread {
		t = tierSocket
	}
	var out []int
	for _, g := range d.rank(t) {
		out = append(out, d.freeIn(t, g)...)
	}
	return out
}

// wholeGroups picks every entirely free group of tier t, in rank, that the
// CPUs still owed can absorb. Which groups are entirely free is decided once,
// before picking.
func (d *draft) wholeGroups(t tier) {
	var whole []int
	for _, g := range d.rank(t) {
		if d.avail[t][g] == d.lo.wholeSize(t, g) {
			whole = append(whole, g)
		}
	}
	for _, g := range whole {
		if m := d.lo.member[t][g]; d.owed >= len(m) {
			d.pick(m)
		}
	}
}

// partCache picks the CPUs still owed from the lowest-numbered free cores of
// cache c, if that yields exactly the number owed: as many cores as the debt
// needs, all their free threads, less the last thread when an odd number is
// owed on an SMT machine.
func (d *draft) partCache(c int) {
	perCore := d.lo.perCore
	coresWanted := (d.owed + perCore - 1) / perCore
	var cores []int
	for _, s := range d.freeIn(tierCache, c) {
		cores = append(cores, d.lo.home[tierCore][s])
	}
	slices.Sort(cores)
	cores = slices.Compact(cores)
	if len(cores) > coresWanted {
		cores = cores[:coresWanted]
	}
	var got []int
	for _, g := range cores {
		got = append(got, d.freeIn(tierCore, g)...)
	}
	slices.Sort(got)
	if d.owed%2 != 0 && perCore > 1 && len(got) > d.owed {
		got = got[:len(got)-1]
	}
	if len(got) == d.owed {
		d.pick(got)
	}
}

// caches is the prefer-align-cpus-by-uncorecache step: walking the caches in
// rank, take whole caches while at least a cache's worth is owed, and try to
// fit the rest into the cache at hand.
func (d *draft) caches() {
	visit := d.rank(tierCache)
	for i := 0; i < len(visit) && !d.satisfied(); i++ {
		if d.owed >= d.lo.perCache {
			d.wholeGroups(tierCache)
		}
		if !d.satisfied() {
			d.partCache(visit[i])
		}
	}
}

// pickSingles picks single CPUs until nothing is owed.
func (d *draft) pickSingles() {
	for queue := d.singles(); len(queue) > 0 && !d.satisfied(); queue = queue[1:] {
		d.pick(queue[:1])
	}
}

// pack is the default (packed) allocation of want CPUs out of the free
// slots: whole outer groups (NUMA node or socket), whole inner groups,
// optionally whole or fitting uncore caches, whole cores (unless spreading
// across cores), then single CPUs. requested and offered only feed the error
// text (offered is the size of the caller's set, unknown CPUs included).
func (lo *layout) pack(free []int, want, offered int, spread, byCache bool) ([]int, error) {
	d := newDraft(lo, free, want, spread)
	if d.satisfied() {
		return nil, nil
	}
	if d.owed > d.nFree {
		return nil, fmt.Errorf(quoteNotEnoughCPUs, want, offered)
	}
	outer, inner := tierSocket, tierNUMA
	if lo.numaOuter {
		outer, inner = tierNUMA, tierSocket
	}
	steps := []func(){
		func() { d.wholeGroups(outer) },
		func() { d.wholeGroups(inner) },
	}
	if byCache {
		steps = append(steps, d.caches)
	}
	if !spread {
		steps = append(steps, func() { d.wholeGroups(tierCore) })
	}
	steps = append(steps, d.pickSingles)
	for _, step := range steps {
		step()
		if d.satisfied() {
			return d.result(), nil
		}
	}
	return nil, errors.New(quoteFailedToAllocate)
}
