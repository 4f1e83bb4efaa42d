package dra

import (
	"context"
	"errors"
	"slices"
)

// The exact search decides the same question as the upstream allocator
// (does some choice of subrequests and devices satisfy every claim?) but
// proves "no" without trying every combination:
//
//   - every matchAttribute constraint of a claim is fixed to one value before
//     the claim's devices are chosen, which restricts the covered requests'
//     candidates to the devices with that value;
//   - before each request, a flow bound checks that the remaining requests
//     of all claims can still get distinct free devices: requests -> devices
//     -> counter sets (each with the largest number of still-candidate
//     devices that fit in its remaining counters, computed exactly) -> sink;
//   - failed states (position, devices taken, constraint state) are
//     memoised.
//
// A solution it finds is valid for the allocator's rules; the devices may
// differ from the allocator's first fit.

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

// pick is one device of a solution.
type pick struct {
	claim  int
	alt    *alt
	device int
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
	// per-claim constraint state
	matchVal []string         // value per match constraint of the current claim
	distinct []map[string]int // values taken per distinct constraint
	failed   map[string]bool
	packMemo map[string]int
	// restricted candidates of the current claim per (request, alt)
	restrict [][][]int
	// counter set of a device (-1: none), for the bound
	setOf   []int
	numSets int
	// stats for explanations
	boundFails     int
	constraintFail bool
}

func newSearcher(ctx context.Context, p *problem, budget int) *searcher {
	s := &searcher{ctx: ctx, p: p, budget: budget, used: make([]bool, len(p.devices)), claimOf: make([]int, len(p.devices)),
		remain: slices.Clone(p.counters), failed: map[string]bool{}, packMemo: map[string]int{}, setOf: make([]int, len(p.devices))}
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
	return s
}

// solve returns a solution, nil when none exists, or errBudget.
func (s *searcher) solve() ([]pick, error) {
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
	if s.nodes&1023 == 0 && s.ctx.Err() != nil {
		return s.ctx.Err()
	}
	return nil
}

// claim chooses values for claim ci's matchAttribute constraints, then its
// requests.
func (s *searcher) claim(ci int) (bool, error) {
	if ci == len(s.p.claims) {
		return true, nil
	}
	c := &s.p.claims[ci]
	var matchIdx []int
	for i, k := range c.constraints {
		if k.kind == matchConstraint {
			matchIdx = append(matchIdx, i)
		}
	}
	s.matchVal = make([]string, len(c.constraints))
	s.distinct = make([]map[string]int, len(c.constraints))
	for i, k := range c.constraints {
		if k.kind == distinctConstraint {
			s.distinct[i] = map[string]int{}
		}
	}
	var assign func(j int) (bool, error)
	assign = func(j int) (bool, error) {
		if j == len(matchIdx) {
			s.restrictClaim(ci)
			if !s.bound(ci, 0) {
				return false, nil
			}
			return s.request(ci, 0)
		}
		k := &c.constraints[matchIdx[j]]
		var last error
		for _, v := range s.values(c, k) {
			s.matchVal[matchIdx[j]] = v
			ok, err := assign(j + 1)
			if errors.Is(err, errLimit) {
				// The limit does not depend on the value: try no other.
				return false, err
			}
			if ok || err != nil {
				return ok, err
			}
			last = err
		}
		return false, last
	}
	return assign(0)
}

// values lists the values constraint k can take: those of the candidates of
// the requests it covers, plus "" (no covered device at all).
func (s *searcher) values(c *claimInfo, k *constraint) []string {
	seen := map[string]bool{}
	var out []string
	for ri := range c.requests {
		for ai := range c.requests[ri].alts {
			a := &c.requests[ri].alts[ai]
			if !k.covers(a) {
				continue
			}
			for _, d := range a.cands {
				v := attrKey(lookupAttr(&s.p.devices[d], k.attr))
				if v != "" && !seen[v] {
					seen[v] = true
					out = append(out, v)
				}
			}
		}
	}
	return append(out, "")
}

// restrictClaim filters the candidates of claim ci by its match values.
func (s *searcher) restrictClaim(ci int) {
	c := &s.p.claims[ci]
	s.restrict = make([][][]int, len(c.requests))
	for ri := range c.requests {
		s.restrict[ri] = make([][]int, len(c.requests[ri].alts))
		for ai := range c.requests[ri].alts {
			a := &c.requests[ri].alts[ai]
			cands := a.cands
			for i, k := range c.constraints {
				if k.kind != matchConstraint || !k.covers(a) {
					continue
				}
				v := s.matchVal[i]
				var f []int
				for _, d := range cands {
					if v != "" && attrKey(lookupAttr(&s.p.devices[d], k.attr)) == v {
						f = append(f, d)
					}
				}
				cands = f
			}
			s.restrict[ri][ai] = cands
		}
	}
}

func (s *searcher) request(ci, ri int) (bool, error) {
	if err := s.tick(); err != nil {
		return false, err
	}
	c := &s.p.claims[ci]
	if ri == len(c.requests) {
		saveMatch, saveDistinct, saveRestrict := s.matchVal, s.distinct, s.restrict
		ok, err := s.claim(ci + 1)
		s.matchVal, s.distinct, s.restrict = saveMatch, saveDistinct, saveRestrict
		if errors.Is(err, errLimit) {
			return false, nil
		}
		return ok, err
	}
	key := s.stateKey(ci, ri)
	if s.failed[key] {
		return false, nil
	}
	if !s.bound(ci, ri) {
		s.failed[key] = true
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
		if a.all {
			ok, err = s.allDevices(ci, ri, a)
		} else {
			ok, err = s.devicesFrom(ci, ri, ai, a, 0, a.count)
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
	if len(s.failed) < 1<<20 {
		s.failed[key] = true
	}
	return false, nil
}

func (s *searcher) claimDevices(ci int) int {
	n := 0
	for i := len(s.picks) - 1; i >= 0 && s.picks[i].claim == ci; i-- {
		n++
	}
	return n
}

// devicesFrom picks need more devices for alt a from restricted candidates
// at position start on.
func (s *searcher) devicesFrom(ci, ri, ai int, a *alt, start, need int) (bool, error) {
	if need == 0 {
		return s.request(ci, ri+1)
	}
	if err := s.tick(); err != nil {
		return false, err
	}
	cands := s.restrict[ri][ai]
	for i := start; i <= len(cands)-need; i++ {
		d := cands[i]
		if !s.take(ci, a, d) {
			continue
		}
		ok, err := s.devicesFrom(ci, ri, ai, a, i+1, need-1)
		if ok {
			return ok, err
		}
		s.untake(ci, a, d)
		if err != nil {
			return false, err
		}
	}
	return false, nil
}

// allDevices takes every candidate of an All request (any failure fails it).
func (s *searcher) allDevices(ci, ri int, a *alt) (bool, error) {
	if len(a.cands) == 0 || a.allBlocked || a.tainted > 0 {
		return false, nil
	}
	taken := 0
	ok := true
	for _, d := range a.cands {
		s.constraintFail = false
		if !s.take(ci, a, d) {
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
		r, err = s.request(ci, ri+1)
		if r {
			return r, err
		}
	}
	for i := taken - 1; i >= 0; i-- {
		s.untake(ci, a, a.cands[i])
	}
	return false, err
}

// take checks and records device d for alt a of claim ci.
func (s *searcher) take(ci int, a *alt, d int) bool {
	p := s.p
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
		v := attrKey(lookupAttr(dev, k.attr))
		if v == "" {
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
			s.distinct[i][attrKey(lookupAttr(dev, k.attr))]++
		}
	}
	for _, cu := range dev.consume {
		s.remain[cu.counter] -= cu.milli
	}
	if !s.used[d] {
		s.claimOf[d] = ci
	}
	s.used[d] = true
	s.picks = append(s.picks, pick{claim: ci, alt: a, device: d})
	return true
}

func (s *searcher) untake(ci int, a *alt, d int) {
	p := s.p
	dev := &p.devices[d]
	s.picks = s.picks[:len(s.picks)-1]
	c := &p.claims[ci]
	for i := range c.constraints {
		k := &c.constraints[i]
		if k.kind == distinctConstraint && k.covers(a) {
			s.distinct[i][attrKey(lookupAttr(dev, k.attr))]--
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
	}
}

func (s *searcher) stateKey(ci, ri int) string {
	b := make([]byte, 0, 8+len(s.used)/8+1+8*len(s.matchVal))
	b = append(b, byte(ci), byte(ci>>8), byte(ri), byte(ri>>8))
	var acc byte
	for i, u := range s.used {
		if u {
			acc |= 1 << (i & 7)
		}
		if i&7 == 7 {
			b = append(b, acc)
			acc = 0
		}
	}
	b = append(b, acc, 0xff)
	// Which claim holds a device matters for admin access only; the
	// distinct values follow from the picks of this claim.
	for _, pk := range s.picks {
		if pk.claim == ci {
			b = append(b, byte(pk.device), byte(pk.device>>8), byte(pk.device>>16))
		}
	}
	for _, v := range s.matchVal {
		b = append(b, v...)
		b = append(b, 0)
	}
	return string(b)
}
