package cpumanager

import (
	"fmt"
	"math"
	"slices"
)

// The distribute-cpus-across-numa allocation (KEP-2902) as a search: for
// k = the fewest NUMA nodes that could hold the request up to the most that
// could be useful, score every k-subset of the NUMA nodes that can take an
// even share of the request in chunks of `chunk` CPUs, keep the best-scoring
// one, and allocate from it. Shares are packed within each NUMA node. When
// no k works, or the request is not a whole number of chunks, the packed
// allocation over all free CPUs is used instead.

// kSubsets walks the k-element subsets of positions 0..n-1 in lexicographic
// order, calling visit with the positions (reused between calls) until visit
// returns false.
func kSubsets(n, k int, visit func(pos []int) bool) {
	if k < 1 || k > n {
		return
	}
	pos := make([]int, k)
	for i := range pos {
		pos[i] = i
	}
	for {
		if !visit(pos) {
			return
		}
		i := k - 1
		for i >= 0 && pos[i] == n-k+i {
			i--
		}
		if i < 0 {
			return
		}
		pos[i]++
		for j := i + 1; j < k; j++ {
			pos[j] = pos[j-1] + 1
		}
	}
}

// ownedPrefix is how many leading elements of a k-element combination own
// their storage in kubelet's enumerator. It builds each combination by
// appending one element per recursion level to a slice that starts empty,
// so a level that finds its slice full gets a fresh array (capacity 1, 2,
// 4, 8, ... as Go's append grows small slices) and every deeper level writes
// into that array. All combinations below one owner prefix therefore share
// the storage of their last elements, and a combination kubelet remembers
// ("the best so far") keeps its owner prefix but shows the tail of whichever
// combination with that prefix its walk wrote last. Reproducing this keeps
// the NUMA nodes chosen identical to kubelet's.
func ownedPrefix(k int) int {
	capacity, owned := 0, 0
	for length := 1; length <= k; length++ {
		if length > capacity {
			capacity = max(1, 2*capacity)
			owned = length
		}
	}
	return owned
}

// remembered holds a combination the way kubelet's enumerator leaves it: see
// ownedPrefix.
type remembered struct {
	pos   []int
	owned int
	valid bool
}

func (r *remembered) keep(pos []int) {
	r.pos = append(r.pos[:0], pos...)
	r.owned = ownedPrefix(len(pos))
	r.valid = true
}

// overwrite is called with every combination the walk writes after keep.
func (r *remembered) overwrite(pos []int) {
	if r.valid && slices.Equal(r.pos[:r.owned], pos[:r.owned]) {
		copy(r.pos[r.owned:], pos[r.owned:])
	}
}

// roundMilli rounds to three decimals, as kubelet's balance score does.
func roundMilli(x float64) float64 { return math.Round(x*1000) / 1000 }

// imbalance is kubelet's "balance score": the population standard deviation
// of the free CPUs left per NUMA node, with the mean and the result rounded
// to thousandths. Lower is better.
func imbalance(left []int, nodes []int) float64 {
	var total float64
	for _, g := range nodes {
		total += float64(left[g])
	}
	n := float64(len(nodes))
	mean := roundMilli(total / n)
	var sq float64
	for _, g := range nodes {
		dev := float64(left[g]) - mean
		sq += dev * dev
	}
	return roundMilli(math.Sqrt(sq / n))
}

// handOut takes chunk-sized pieces from the NUMA nodes in order, round after
// round, lowering left, until rest is handed out. It reports false if a
// round finds no node with a chunk left (kubelet loops forever there).
func handOut(left []int, nodes []int, rest, chunk int) bool {
	for rest > 0 {
		progress := false
		for _, g := range nodes {
			if rest == 0 {
				break
			}
			if left[g] < chunk {
				continue
			}
			left[g] -= chunk
			rest -= chunk
			progress = true
		}
		if !progress {
			return false
		}
	}
	return true
}

// spreadSearch is the state of one distributed allocation.
type spreadSearch struct {
	d        *draft
	want     int
	chunk    int
	bySocket bool
	order    []int // NUMA nodes with free CPUs, in rank (may repeat a node)
	nodes    []int // the same, each node once: the population of the score
}

// candidate is a scored NUMA combination.
type candidate struct {
	combo      remembered // positions in order
	extra      remembered // positions in the combination's remainder nodes
	extraNodes []int      // the combination's nodes that can take a remainder chunk
	score      float64
	oneSocket  bool
}

// evenShare is the per-node share of the request over k nodes, in whole
// chunks.
func (s *spreadSearch) evenShare(k int) int { return s.want / k / s.chunk * s.chunk }

// judge scores the combination of NUMA nodes combo (group numbers). ok is
// false when it cannot carry the request evenly.
func (s *spreadSearch) judge(combo []int) (score float64, extraNodes []int, extra []int, ok bool) {
	d := s.d
	distinct := slices.Clone(combo)
	slices.Sort(distinct)
	distinct = slices.Compact(distinct)
	freeCPUs := 0
	for _, g := range distinct {
		freeCPUs += d.avail[tierNUMA][g]
	}
	chunks := 0
	for _, g := range combo {
		chunks += d.avail[tierNUMA][g] / s.chunk
	}
	if freeCPUs < s.want || chunks*s.chunk < s.want {
		return 0, nil, nil, false
	}
	share := s.evenShare(len(combo))
	if s.bySocket {
		for _, g := range combo {
			share = min(share, d.avail[tierNUMA][g]/s.chunk*s.chunk)
		}
	}
	for _, g := range combo {
		if d.avail[tierNUMA][g] < share {
			return 0, nil, nil, false
		}
	}
	left := slices.Clone(d.avail[tierNUMA])
	for _, g := range combo {
		left[g] -= share
	}
	rest := s.want - share*len(combo)
	for _, g := range combo {
		if left[g] >= s.chunk {
			extraNodes = append(extraNodes, g)
		}
	}
	if rest == 0 {
		return imbalance(left, s.nodes), extraNodes, nil, true
	}
	// Place the remainder: try subsets of extraNodes, largest first, and keep
	// the one leaving the most balanced machine.
	score = math.MaxFloat64
	var best remembered
	trial := make([]int, len(left))
	picked := make([]int, 0, len(extraNodes))
	for size := len(extraNodes); size >= 1; size-- {
		fromThisWalk := false
		kSubsets(len(extraNodes), size, func(pos []int) bool {
			if fromThisWalk {
				best.overwrite(pos)
			}
			picked = picked[:0]
			room := 0
			for _, p := range pos {
				picked = append(picked, extraNodes[p])
				room += left[extraNodes[p]]
			}
			if room < rest {
				return true
			}
			copy(trial, left)
			if !handOut(trial, picked, rest, s.chunk) {
				return true
			}
			if v := imbalance(trial, s.nodes); v < score {
				score = v
				best.keep(pos)
				fromThisWalk = true
			}
			return true
		})
	}
	if best.valid {
		extra = best.pos
	}
	return score, extraNodes, extra, true
}

// sameSocket reports whether the NUMA nodes all sit in one socket of the
// machine.
func (s *spreadSearch) sameSocket(combo []int) bool {
	lo := s.d.lo
	var socket = -1
	for _, g := range combo {
		for _, cpu := range lo.member[tierNUMA][g] {
			if x := lo.home[tierSocket][cpu]; socket < 0 {
				socket = x
			} else if x != socket {
				return false
			}
		}
	}
	return true
}

// best searches the k-combinations of s.order; nil if none carries the
// request.
func (s *spreadSearch) best(k int) *candidate {
	var win *candidate
	combo := make([]int, k)
	kSubsets(len(s.order), k, func(pos []int) bool {
		if win != nil {
			win.combo.overwrite(pos)
			if win.score == 0 && (!s.bySocket || win.oneSocket) {
				return false
			}
		}
		for i, p := range pos {
			combo[i] = s.order[p]
		}
		score, extraNodes, extra, ok := s.judge(combo)
		if !ok {
			return true
		}
		oneSocket := s.bySocket && s.sameSocket(combo)
		better := win == nil && score < math.MaxFloat64 || win != nil && score < win.score
		if s.bySocket {
			held := win != nil && win.oneSocket
			if oneSocket != held {
				better = oneSocket
			}
		}
		if !better {
			return true
		}
		if win == nil {
			win = &candidate{}
		}
		win.combo.keep(pos)
		win.extraNodes = extraNodes
		win.extra = remembered{}
		if extra != nil {
			win.extra.keep(extra)
		}
		win.score = score
		win.oneSocket = oneSocket
		return true
	})
	return win
}

// carryOut allocates along the chosen combination: an even share packed
// from each node, then the remainder a chunk at a time from the remainder
// nodes in turn.
func (s *spreadSearch) carryOut(c *candidate) ([]int, error) {
	d := s.d
	combo := make([]int, len(c.combo.pos))
	for i, p := range c.combo.pos {
		combo[i] = s.order[p]
	}
	var extra []int
	if c.extra.valid {
		for _, p := range c.extra.pos {
			extra = append(extra, c.extraNodes[p])
		}
	}
	share := s.evenShare(len(combo))
	for _, g := range combo {
		share = min(share, d.avail[tierNUMA][g]/s.chunk*s.chunk)
	}
	packFrom := func(g, n int) {
		got, _ := d.lo.pack(d.freeIn(tierNUMA, g), n, d.avail[tierNUMA][g], d.spread, false)
		d.pick(got)
	}
	for _, g := range combo {
		packFrom(g, share)
	}
	rest := s.want - share*len(combo)
	for rest > 0 {
		progress := false
		for _, g := range extra {
			if rest == 0 {
				break
			}
			if d.avail[tierNUMA][g] < s.chunk {
				continue
			}
			packFrom(g, s.chunk)
			rest -= s.chunk
			progress = true
		}
		if !progress {
			break // kubelet loops forever here; report the shortfall instead
		}
	}
	if d.owed > 0 {
		return nil, fmt.Errorf(quoteAccountingShort, d.owed)
	}
	if d.owed < 0 {
		return nil, fmt.Errorf(quoteAccountingOver, d.owed)
	}
	return d.result(), nil
}

// spreadOverNUMA is the distributed allocation of want CPUs out of the free
// slots in chunks of chunk CPUs (offered: the caller's set size, for the
// error text).
func (lo *layout) spreadOverNUMA(free []int, want, offered, chunk int, spread, bySocket bool) ([]int, error) {
	if want%chunk != 0 {
		return lo.pack(free, want, offered, spread, false)
	}
	d := newDraft(lo, free, want, spread)
	if d.satisfied() {
		return nil, nil
	}
	if d.owed > d.nFree {
		return nil, fmt.Errorf(quoteNotEnoughCPUs, want, offered)
	}
	s := &spreadSearch{d: d, want: want, chunk: chunk, bySocket: bySocket, order: d.rank(tierNUMA)}
	s.nodes = slices.Clone(s.order)
	slices.Sort(s.nodes)
	s.nodes = slices.Compact(s.nodes)

	// Bounds on k: no fewer nodes than the request needs at an equal share
	// of the machine's chunks per node, no more than chunks requested or
	// nodes with free CPUs.
	ceilDiv := func(a, b int) int { return (a + b - 1) / b }
	perNode := ceilDiv(ceilDiv(len(lo.cpuIDs), chunk), len(lo.label[tierNUMA]))
	needChunks := ceilDiv(want, chunk)
	fewest := ceilDiv(needChunks, perNode)
	most := min(needChunks, len(s.nodes))
	for k := fewest; k <= most; k++ {
		if c := s.best(k); c != nil {
			return s.carryOut(c)
		}
	}
	return lo.pack(free, want, offered, spread, false)
}
