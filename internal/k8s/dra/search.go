package dra

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// The exact search decides the same question as the upstream allocator
// (does some choice of subrequests and devices satisfy every claim?) but
// proves "no" without trying every combination:
//
//   - every matchAttribute constraint of a claim is fixed to one value before
//     the claim's devices are chosen, one constraint at a time, each value
//     drawn from the candidates the constraints fixed before left, which
//     restricts the covered requests' candidates to the devices with that
//     value; the flow bound prunes after every value;
//   - before each request, a flow bound checks that the remaining requests
//     of all claims can still get distinct free devices: requests -> devices
//     -> counter sets (each with the largest number of still-candidate
//     devices that fit in its remaining counters, computed exactly) -> sink;
//   - when every request is plain (one alternative, an exact count, no admin
//     access, no counters, no distinctAttribute), the flow is not a bound
//     but the answer: the values of every claim are fixed first and one
//     flow over all of them decides, without choosing devices one by one;
//   - devices that no claim can tell apart (the same candidacy, attribute
//     values and state) are tried once per position, not once each;
//   - failed states (position, devices taken, constraint state, as a
//     128-bit incremental hash) are memoised.
//
// Attribute values are interned per constraint once, before the search:
// a visit builds no map or string key. A solution it finds is valid for
// the allocator's rules; the devices may differ from the allocator's first
// fit.

// errBudget: the search hit its node budget and decided nothing.
var errBudget = errors.New("search budget exhausted")

// errAllConstraint: an All request's device broke a claim constraint, which
// makes the upstream allocator fail the whole allocation.
var errAllConstraint = errors.New("all-devices request breaks a claim constraint")

// errLimit: every alternative of a request would take the claim over 32
// devices. That depends only on the subrequests chosen before, not on the
// devices, so the search goes back to the last subrequest choice of the
// claim (as upstream does), not through every device combination.
var errLimit = errors.New("claim over the device limit")

// plainFirstBudget is how many nodes the device-by-device search gets
// before a plain problem is handed to the flow (its first fit follows the
// allocator's device order; the flow's devices do not).
const plainFirstBudget = 2_000

// altAt names alternative alt of request request of claim claim: the
// position of a device choice.
type altAt struct{ claim, request, alt int }

// candidates are one claim's candidate devices restricted by its match
// values, by request and alternative (nil: not restricted yet).
type candidates struct{ byRequest [][][]int }

// of lists the candidates of request ri's alternative ai.
func (c candidates) of(ri, ai int) []int { return c.byRequest[ri][ai] }

func (c candidates) restricted() bool { return c.byRequest != nil }

// unrestricted is claim c's candidates as the classes and selectors left them.
func unrestricted(c *claimInfo) candidates {
	out := candidates{byRequest: make([][][]int, len(c.requests))}
	for ri := range c.requests {
		out.byRequest[ri] = make([][]int, len(c.requests[ri].alts))
		for ai := range c.requests[ri].alts {
			out.byRequest[ri][ai] = c.requests[ri].alts[ai].cands
		}
	}
	return out
}

// pick is one device of a solution.
type pick struct {
	claim  int
	alt    *alt
	device int
}

// key128 is a memo key: two independent 64-bit hashes of a state.
type key128 struct{ a, b uint64 }

func (k key128) xor(o key128) key128 { return key128{k.a ^ o.a, k.b ^ o.b} }

func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// hashOf is the key of one item (kind tags the item's role): two chains of
// a bijective mixer from different seeds, so the lanes collide apart.
func hashOf(kind, a, b, c uint64) key128 {
	x := mix64(mix64(mix64(kind^0x5851f42d4c957f2d)^a)^b) ^ c
	y := mix64(mix64(mix64(kind^0x14057b7ef767814f)^a)^b) ^ c
	return key128{mix64(x), mix64(y)}
}

type searcher struct {
	ctx     context.Context
	p       *problem
	budget  int
	nodes   int
	used    []bool // taken by a claim of this pod (exclusive or admin)
	claimOf []int  // claim that took the device, -1
	remain  []int64
	picks   []pick
	// val[c][k][d] is device d's interned value of claim c's constraint
	// k's attribute (0: none); nvals bounds the ids.
	val   [][][]int32
	nvals int
	// matchIdx[c] are the match constraints of claim c.
	matchIdx [][]int
	// per-claim constraint state; phase2: every claim's values are fixed
	// (matchValOf, restrictOf) and devices are being chosen
	phase2     bool
	matchValOf [][]int32
	matchVal   []int32   // value per constraint of the current claim (match ones)
	distinct   [][]int32 // per distinct constraint: count per value id
	failed     map[key128]struct{}
	packMemo   map[key128]int
	// incremental hashes: devices used, picks of the current claim, match
	// values of the current claim
	usedH, pickH, matchH key128
	// restricted candidates of the current claim
	restrict candidates
	// plain: every request is plain, the flow decides. restrictOf holds
	// each claim's candidates restricted by its values (phase one: the
	// claims before the current one).
	plainOK    bool
	plain      bool
	restrictOf []candidates
	// classOf: devices with the same class are interchangeable.
	classOf []int32
	// counter set of a device (-1: none), for the bound
	setOf   []int
	numSets int
	// scratch of values() and the bound (reused, never per visit)
	vstamp []uint32
	vmark  uint32
	bs     boundScratch
	// stats for explanations
	boundFails     int
	constraintFail bool
	// where the search was when it stopped (for "undecided" answers)
	atClaim, atRequest int
}

func newSearcher(ctx context.Context, p *problem, budget int) *searcher {
	s := &searcher{ctx: ctx, p: p, budget: budget, used: make([]bool, len(p.devices)), claimOf: make([]int, len(p.devices)),
		remain: slices.Clone(p.counters), failed: map[key128]struct{}{}, packMemo: map[key128]int{}, setOf: make([]int, len(p.devices))}
	for i := range s.claimOf {
		s.claimOf[i] = -1
	}
	// A counter set is identified by the first counter a device uses; all
	// devices of one set in the NVIDIA layout share their first counter.
	setIDs := map[int]int{}
	for i, d := range p.devices {
		s.setOf[i] = -1
		if len(d.consume) > 0 {
			first := d.consume[0].counter
			id, ok := setIDs[first]
			if !ok {
				id = len(setIDs)
				setIDs[first] = id
			}
			s.setOf[i] = id
		}
	}
	s.numSets = len(setIDs)
	s.intern()
	s.classify()
	s.plainOK = s.isPlain()
	s.bs.init(len(p.devices), s.numSets)
	s.restrictOf = make([]candidates, len(p.claims))
	s.matchValOf = make([][]int32, len(p.claims))
	return s
}

// intern gives every attribute value a constraint compares a small id,
// once: the search then compares integers.
func (s *searcher) intern() {
	p := s.p
	ids := map[string]int32{}
	s.val = make([][][]int32, len(p.claims))
	s.matchIdx = make([][]int, len(p.claims))
	byAttr := map[string][]int32{} // the same attribute is interned once
	for ci := range p.claims {
		c := &p.claims[ci]
		s.val[ci] = make([][]int32, len(c.constraints))
		for k := range c.constraints {
			con := &c.constraints[k]
			if con.kind == matchConstraint {
				s.matchIdx[ci] = append(s.matchIdx[ci], k)
			}
			if v, ok := byAttr[string(con.attr)]; ok {
				s.val[ci][k] = v
				continue
			}
			v := make([]int32, len(p.devices))
			name := splitAttrName(con.attr)
			for d := range p.devices {
				key := attrKey(name.of(&p.devices[d]))
				if key == "" {
					continue
				}
				id, ok := ids[key]
				if !ok {
					id = int32(len(ids) + 1)
					ids[key] = id
				}
				v[d] = id
			}
			byAttr[string(con.attr)] = v
			s.val[ci][k] = v
		}
	}
	s.nvals = len(ids) + 1
	s.vstamp = make([]uint32, s.nvals)
}

// classify groups devices no claim can tell apart: the same candidacy in
// every alternative, the same value of every constraint attribute, the same
// state, no counters and no shared allocation.
func (s *searcher) classify() {
	p := s.p
	sig := make([][]byte, len(p.devices))
	for ci := range p.claims {
		for ri := range p.claims[ci].requests {
			for ai := range p.claims[ci].requests[ri].alts {
				in := make([]bool, len(p.devices))
				for _, d := range p.claims[ci].requests[ri].alts[ai].cands {
					in[d] = true
				}
				for d := range sig {
					if in[d] {
						sig[d] = append(sig[d], 1)
					} else {
						sig[d] = append(sig[d], 0)
					}
				}
			}
		}
		for k := range s.val[ci] {
			for d := range sig {
				v := s.val[ci][k][d]
				sig[d] = append(sig[d], byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
			}
		}
	}
	s.classOf = make([]int32, len(p.devices))
	classes := map[string]int32{}
	for d := range p.devices {
		if len(p.devices[d].consume) > 0 || p.devices[d].multi {
			s.classOf[d] = int32(len(p.devices) + d) // alone
			continue
		}
		if p.inUse[d] {
			sig[d] = append(sig[d], 1)
		}
		id, ok := classes[string(sig[d])]
		if !ok {
			id = int32(len(classes))
			classes[string(sig[d])] = id
		}
		s.classOf[d] = id
	}
}

// isPlain: every request has one alternative with an exact count, no admin
// access and no counter-consuming candidate; no distinctAttribute; every
// claim within the 32-device limit. The flow over all claims' restricted
// candidates is then exact.
func (s *searcher) isPlain() bool {
	for _, c := range s.p.claims {
		n := 0
		for _, k := range c.constraints {
			if k.kind != matchConstraint {
				return false
			}
		}
		for _, r := range c.requests {
			if len(r.alts) != 1 {
				return false
			}
			a := &r.alts[0]
			if a.all || a.admin || a.capacity || a.count <= 0 {
				return false
			}
			for _, d := range a.cands {
				if len(s.p.devices[d].consume) > 0 || s.p.devices[d].multi {
					return false
				}
			}
			n += a.count
		}
		if n > 32 {
			return false
		}
	}
	return true
}

// solve returns a solution, nil when none exists, or errBudget / the
// context's error.
func (s *searcher) solve() ([]pick, error) {
	if s.plainOK {
		// A short device-by-device search first: an easy fit gets the
		// devices in the allocator's order.
		full := s.budget
		s.budget = min(full, plainFirstBudget)
		sol, err := s.solveOnce()
		s.budget = full
		if !errors.Is(err, errBudget) || s.nodes >= full {
			return sol, err
		}
		s.plain = true
	}
	return s.solveOnce()
}

func (s *searcher) solveOnce() ([]pick, error) {
	ok, err := s.claim(0)
	if errors.Is(err, errAllConstraint) || errors.Is(err, errLimit) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, nil
	}
	return append([]pick{}, s.picks...), nil
}

func (s *searcher) tick() error {
	s.nodes++
	if s.nodes > s.budget {
		return errBudget
	}
	if s.nodes&255 == 0 && s.ctx.Err() != nil {
		return s.ctx.Err()
	}
	return nil
}

// claim chooses values for claim ci's matchAttribute constraints (phase
// one: the values of every claim are fixed before any device is chosen, so
// the bound sees every claim restricted), then the next claim's. With all
// values fixed, the devices are chosen (phase two) or, for a plain
// problem, read off one flow.
func (s *searcher) claim(ci int) (bool, error) {
	if ci == len(s.p.claims) {
		if s.plain {
			return s.plainSolution()
		}
		return s.devicesOf(0)
	}
	s.atClaim, s.atRequest = ci, 0
	c := &s.p.claims[ci]
	matchIdx := s.matchIdx[ci]
	s.matchVal = make([]int32, len(c.constraints))
	s.restrict = unrestricted(c)
	var assign func(j int) (bool, error)
	assign = func(j int) (bool, error) {
		if err := s.tick(); err != nil {
			return false, err
		}
		if j == len(matchIdx) {
			if !s.bound(ci, 0) {
				return false, nil
			}
			s.restrictOf[ci], s.matchValOf[ci] = s.restrict, slices.Clone(s.matchVal)
			saveMatch, saveRestrict := s.matchVal, s.restrict
			ok, err := s.claim(ci + 1)
			s.matchVal, s.restrict = saveMatch, saveRestrict
			s.restrictOf[ci] = candidates{}
			return ok, err
		}
		ki := matchIdx[j]
		prev, prevH := s.restrict, s.matchH
		defer func() { s.restrict, s.matchH = prev, prevH }()
		var last error
		for _, v := range s.values(ci, ki) {
			s.matchVal[ki] = v
			s.matchH = prevH.xor(hashOf(1, uint64(ci), uint64(ki), uint64(v)))
			s.restrict = s.restrictBy(ci, ki, v, prev)
			if j+1 < len(matchIdx) && !s.bound(ci, 0) {
				continue
			}
			ok, err := assign(j + 1)
			// An error ends the loop: errLimit too (the limit does not
			// depend on the values, so no other is tried).
			if ok || err != nil {
				return ok, err
			}
			last = err
		}
		return false, last
	}
	return assign(0)
}

// devicesOf starts choosing claim ci's devices (phase two), its values
// fixed.
func (s *searcher) devicesOf(ci int) (bool, error) {
	if ci == len(s.p.claims) {
		return true, nil
	}
	wasPhase2 := s.phase2
	saveMatch, saveDistinct, saveRestrict, savePH := s.matchVal, s.distinct, s.restrict, s.pickH
	defer func() {
		s.phase2 = wasPhase2
		s.matchVal, s.distinct, s.restrict, s.pickH = saveMatch, saveDistinct, saveRestrict, savePH
	}()
	s.phase2 = true
	s.atClaim, s.atRequest = ci, 0
	c := &s.p.claims[ci]
	s.matchVal, s.restrict, s.pickH = s.matchValOf[ci], s.restrictOf[ci], key128{}
	s.distinct = make([][]int32, len(c.constraints))
	for i, k := range c.constraints {
		if k.kind == distinctConstraint {
			s.distinct[i] = make([]int32, s.nvals)
		}
	}
	ok, err := s.request(ci, 0)
	if errors.Is(err, errLimit) {
		// Back to the previous claim's devices, as before (at the first
		// claim, solveOnce reads it as no solution either way).
		return false, nil
	}
	return ok, err
}

// plainSolution runs the exact flow over every claim's restricted
// candidates and, when it saturates, reads the devices off it.
func (s *searcher) plainSolution() (bool, error) {
	ds := s.demands(len(s.p.claims), 0)
	ok, _ := s.flowOf(ds)
	if !ok {
		return false, nil
	}
	f := s.bs.f
	for i, d := range ds {
		a := &s.p.claims[d.claim].requests[d.request].alts[0]
		for e := f.head[2+i]; e >= 0; e = f.next[e] {
			if e&1 == 0 && f.capa[e] == 0 && f.to[e] >= s.bs.base {
				dev := s.bs.devs[f.to[e]-s.bs.base]
				s.picks = append(s.picks, pick{claim: d.claim, alt: a, device: dev})
			}
		}
	}
	slices.SortStableFunc(s.picks, func(x, y pick) int {
		if x.claim != y.claim {
			return x.claim - y.claim
		}
		return x.device - y.device
	})
	return true, nil
}

// values lists the values constraint ki of claim ci can take: those of
// the (already restricted) candidates of the requests it covers, in order
// of first appearance, plus 0 (no covered device at all).
func (s *searcher) values(ci, ki int) []int32 {
	c := &s.p.claims[ci]
	k := &c.constraints[ki]
	val := s.val[ci][ki]
	s.vmark++
	if s.vmark == 0 {
		clear(s.vstamp)
		s.vmark = 1
	}
	var out []int32
	for ri := range c.requests {
		for ai := range c.requests[ri].alts {
			if !k.covers(&c.requests[ri].alts[ai]) {
				continue
			}
			for _, d := range s.restrict.of(ri, ai) {
				v := val[d]
				if v != 0 && s.vstamp[v] != s.vmark {
					s.vstamp[v] = s.vmark
					out = append(out, v)
				}
			}
		}
	}
	return append(out, 0)
}

// restrictBy filters the candidates of claim ci's alternatives covered by
// constraint ki to value v (0: none of them), from prev.
func (s *searcher) restrictBy(ci, ki int, v int32, prev candidates) candidates {
	c := &s.p.claims[ci]
	k := &c.constraints[ki]
	val := s.val[ci][ki]
	out := make([][][]int, len(prev.byRequest))
	for ri, alts := range prev.byRequest {
		out[ri] = make([][]int, len(alts))
		for ai, cands := range alts {
			if !k.covers(&c.requests[ri].alts[ai]) {
				out[ri][ai] = cands
				continue
			}
			var f []int
			if v != 0 {
				for _, d := range cands {
					if val[d] == v {
						f = append(f, d)
					}
				}
			}
			out[ri][ai] = f
		}
	}
	return candidates{byRequest: out}
}

func (s *searcher) request(ci, ri int) (bool, error) {
	if err := s.tick(); err != nil {
		return false, err
	}
	s.atClaim, s.atRequest = ci, ri
	c := &s.p.claims[ci]
	if ri == len(c.requests) {
		return s.devicesOf(ci + 1)
	}
	key := s.stateKey(ci, ri)
	if _, bad := s.failed[key]; bad {
		return false, nil
	}
	if !s.bound(ci, ri) {
		s.remember(key)
		return false, nil
	}
	devs := s.claimDevices(ci)
	allLimit := true
	for ai := range c.requests[ri].alts {
		a := &c.requests[ri].alts[ai]
		if devs+a.count > 32 {
			continue
		}
		var ok bool
		var err error
		at := altAt{claim: ci, request: ri, alt: ai}
		if a.all {
			ok, err = s.allDevices(at, a)
		} else {
			ok, err = s.devicesFrom(at, a, 0, a.count)
		}
		if errors.Is(err, errLimit) {
			continue
		}
		allLimit = false
		if ok || err != nil {
			return ok, err
		}
	}
	if allLimit {
		return false, errLimit
	}
	s.remember(key)
	return false, nil
}

func (s *searcher) remember(key key128) {
	if len(s.failed) < 1<<20 {
		s.failed[key] = struct{}{}
	}
}

func (s *searcher) claimDevices(ci int) int {
	n := 0
	for i := len(s.picks) - 1; i >= 0 && s.picks[i].claim == ci; i-- {
		n++
	}
	return n
}

// devicesFrom picks need more devices for alt a from restricted candidates
// at position start on. Of devices in one class, free ones, a failed one is
// not followed by another at this position (they are interchangeable).
func (s *searcher) devicesFrom(at altAt, a *alt, start, need int) (bool, error) {
	if need == 0 {
		return s.request(at.claim, at.request+1)
	}
	if err := s.tick(); err != nil {
		return false, err
	}
	cands := s.restrict.of(at.request, at.alt)
	var failedCls [8]int32
	nf := 0
	for i := start; i <= len(cands)-need; i++ {
		d := cands[i]
		free := !s.used[d]
		if free && slices.Contains(failedCls[:nf], s.classOf[d]) {
			continue
		}
		if !s.take(at, a, d) {
			continue
		}
		ok, err := s.devicesFrom(at, a, i+1, need-1)
		if ok {
			return ok, err
		}
		s.untake(at, a, d)
		if err != nil {
			return false, err
		}
		if free {
			if nf < len(failedCls) {
				failedCls[nf] = s.classOf[d]
				nf++
			} else {
				failedCls[len(failedCls)-1] = s.classOf[d]
			}
		}
	}
	return false, nil
}

// allDevices takes every candidate of an All request (any failure fails it).
func (s *searcher) allDevices(at altAt, a *alt) (bool, error) {
	if len(a.cands) == 0 || a.allBlocked || a.tainted > 0 {
		return false, nil
	}
	taken := 0
	ok := true
	for _, d := range a.cands {
		s.constraintFail = false
		if !s.take(at, a, d) {
			if s.constraintFail {
				// The allocator stops with an error here ("cannot add
				// device ... because a claim constraint would not be
				// satisfied"): nothing fits.
				return false, errAllConstraint
			}
			ok = false
			break
		}
		taken++
	}
	var err error
	if ok {
		var r bool
		r, err = s.request(at.claim, at.request+1)
		if r {
			return true, nil
		}
	}
	for i := taken - 1; i >= 0; i-- {
		s.untake(at, a, a.cands[i])
	}
	return false, err
}

// take checks and records device d for alternative a, at at.
func (s *searcher) take(at altAt, a *alt, d int) bool {
	p, ci := s.p, at.claim
	dev := &p.devices[d]
	if a.admin {
		if s.claimOf[d] == ci {
			return false
		}
	} else if s.used[d] || p.inUse[d] {
		return false
	}
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
	c := &p.claims[ci]
	for i := range c.constraints {
		k := &c.constraints[i]
		if !k.covers(a) {
			continue
		}
		v := s.val[ci][i][d]
		if v == 0 {
			s.constraintFail = true
			return false
		}
		switch k.kind {
		case matchConstraint:
			if v != s.matchVal[i] {
				s.constraintFail = true
				return false
			}
		case distinctConstraint:
			if s.distinct[i][v] > 0 {
				s.constraintFail = true
				return false
			}
		}
	}
	for i := range c.constraints {
		k := &c.constraints[i]
		if k.kind == distinctConstraint && k.covers(a) {
			s.distinct[i][s.val[ci][i][d]]++
		}
	}
	for _, cu := range dev.consume {
		s.remain[cu.counter] -= cu.milli
	}
	if !s.used[d] {
		s.claimOf[d] = ci
		s.usedH = s.usedH.xor(hashOf(2, uint64(d), 0, 0))
	}
	s.used[d] = true
	s.pickH = s.pickH.xor(hashOf(3, uint64(d), uint64(at.request), uint64(at.alt)))
	s.picks = append(s.picks, pick{claim: ci, alt: a, device: d})
	return true
}

func (s *searcher) untake(at altAt, a *alt, d int) {
	p, ci := s.p, at.claim
	dev := &p.devices[d]
	s.picks = s.picks[:len(s.picks)-1]
	s.pickH = s.pickH.xor(hashOf(3, uint64(d), uint64(at.request), uint64(at.alt)))
	c := &p.claims[ci]
	for i := range c.constraints {
		k := &c.constraints[i]
		if k.kind == distinctConstraint && k.covers(a) {
			s.distinct[i][s.val[ci][i][d]]--
		}
	}
	for _, cu := range dev.consume {
		s.remain[cu.counter] += cu.milli
	}
	// The device stays used if another pick of this pod holds it.
	still := false
	for _, pk := range s.picks {
		if pk.device == d {
			still = true
			if s.claimOf[d] == ci && pk.claim != ci {
				s.claimOf[d] = pk.claim
			}
		}
	}
	if !still {
		s.used[d] = false
		s.claimOf[d] = -1
		s.usedH = s.usedH.xor(hashOf(2, uint64(d), 0, 0))
	}
}

// stateKey is the memo key of position (ci, ri): the devices used, the
// current claim's picks (with their alternative: distinct counts follow
// from them), its match values. Incremental: no work per device.
func (s *searcher) stateKey(ci, ri int) key128 {
	return s.usedH.xor(s.pickH).xor(s.matchH).xor(hashOf(4, uint64(ci), uint64(ri), 0))
}

// left names what the search had not decided when it stopped.
func (s *searcher) left() string {
	p := s.p
	if s.atClaim >= len(p.claims) {
		return "the last check of the allocation"
	}
	c := &p.claims[s.atClaim]
	out := "claim " + c.key
	if s.atRequest < len(c.requests) {
		out += ", request " + c.requests[s.atRequest].name
	}
	if rest := len(p.claims) - s.atClaim - 1; rest > 0 {
		out += fmt.Sprintf(", and %d claim(s) after it", rest)
	}
	return out
}
