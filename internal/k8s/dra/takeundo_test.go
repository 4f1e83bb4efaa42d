package dra

import (
	"context"
	"testing"
)

// TestUntakeRestores: taking a device and giving it back restores the
// search's state: the picks, the pick hash (a memo key's part) and the
// remaining counters.
func TestUntakeRestores(t *testing.T) {
	in := migClaim(t, 2)
	in.init()
	for _, c := range in.Claims {
		DefaultClaimSpec(&c.Spec)
	}
	p, err := buildProblem(context.Background(), in, NodeObject("n1"))
	if err != nil {
		t.Fatal(err)
	}
	s := newSearcher(context.Background(), p, 1000)
	at := altAt{claim: 0, request: 0, alt: 0}
	a := &p.claims[0].requests[0].alts[0]
	h0, n0 := s.pickH, len(s.picks)
	remain := append([]int64(nil), s.remain...)
	if !s.take(at, a, a.cands[0]) {
		t.Fatal("the first candidate cannot be taken")
	}
	if s.pickH == h0 || len(s.picks) != n0+1 {
		t.Fatalf("take changed nothing: hash %v, picks %d", s.pickH, len(s.picks))
	}
	s.untake(at, a, a.cands[0])
	if s.pickH != h0 || len(s.picks) != n0 {
		t.Fatalf("untake: hash %v (was %v), picks %d (was %d)", s.pickH, h0, len(s.picks), n0)
	}
	for i := range remain {
		if s.remain[i] != remain[i] {
			t.Fatalf("counter %d: %d, was %d", i, s.remain[i], remain[i])
		}
	}
}
