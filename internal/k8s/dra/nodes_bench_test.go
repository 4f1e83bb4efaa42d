package dra

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"
)

// hardTemplate is case 120 of the template probe (seed 7, 8): a random
// device template over 3 nodes that took the old search 12 s.
func hardTemplate(t testing.TB) *Input {
	r := rand.New(rand.NewPCG(7, 8))
	var in *Input
	for i := 0; i <= 120; i++ {
		in = templateInput(t, r, 3, 8+r.IntN(40), 4+r.IntN(16))
	}
	return in
}

// BenchmarkSearchNodesPerSecond: the general search's cost per search node
// (nodes/s), on the hard template's first node with a fixed budget.
func BenchmarkSearchNodesPerSecond(b *testing.B) {
	in := hardTemplate(b)
	in.init()
	for _, c := range in.Claims {
		DefaultClaimSpec(&c.Spec)
	}
	nodes := 0
	var el time.Duration
	for i := 0; i < b.N; i++ {
		p, err := buildProblem(context.Background(), in, NodeObject("node0"))
		if err != nil {
			b.Fatal(err)
		}
		s := newSearcher(context.Background(), p, 200_000)
		t0 := time.Now()
		_, _ = s.solve()
		el += time.Since(t0)
		nodes += s.nodes
	}
	b.ReportMetric(float64(nodes)/el.Seconds(), "nodes/s")
}
