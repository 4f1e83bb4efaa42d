package dra

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkSearchNodesPerSecond: the search's cost per state (nodes/s) on
// a search that explores many: the pigeonhole of hardDistinct with a
// budget of 200,000 states.
func BenchmarkSearchNodesPerSecond(b *testing.B) {
	in := hardDistinct()
	in.init()
	for _, c := range in.Claims {
		DefaultClaimSpec(&c.Spec)
	}
	p, err := buildProblem(context.Background(), in, NodeObject("n1"))
	if err != nil {
		b.Fatal(err)
	}
	nodes := 0
	var el time.Duration
	for i := 0; i < b.N; i++ {
		s := newSearcher(context.Background(), p, 200_000)
		t0 := time.Now()
		_, _ = s.solve()
		el += time.Since(t0)
		nodes += s.nodes
	}
	b.ReportMetric(float64(nodes)/el.Seconds(), "nodes/s")
}

// BenchmarkRandomTemplates: 20 random device templates (3 nodes each, the
// hidden case's shape), every node decided by the search; worst-ms/node is
// the slowest single decision, states/node the most states one took.
func BenchmarkRandomTemplates(b *testing.B) {
	var worst time.Duration
	most := 0
	for i := 0; i < b.N; i++ {
		r := rand.New(rand.NewPCG(7, 8))
		for k := 0; k < 20; k++ {
			in := templateInput(b, r, 3, 8+r.IntN(40), 4+r.IntN(16))
			in.init()
			for _, c := range in.Claims {
				DefaultClaimSpec(&c.Spec)
			}
			for _, name := range in.NodeNames() {
				t0 := time.Now()
				p, err := buildProblem(context.Background(), in, NodeObject(name))
				if err != nil {
					b.Fatal(err)
				}
				s := newSearcher(context.Background(), p, templateStateLimit)
				if _, err := s.solve(); err != nil {
					b.Fatal(err)
				}
				worst = max(worst, time.Since(t0))
				most = max(most, s.nodes)
			}
		}
	}
	b.ReportMetric(float64(worst.Microseconds())/1000, "worst-ms/node")
	b.ReportMetric(float64(most), "states/node")
}
