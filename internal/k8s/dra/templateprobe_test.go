package dra

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"
)

func TestProbeTemplates(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < 200; i++ {
		in := templateInput(t, r, 3, 8+r.IntN(40), 4+r.IntN(16))
		t0 := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		rep, err := Run(ctx, in, Options{Solver: SolverGpunode})
		cancel()
		el := time.Since(t0)
		if el > 100*time.Millisecond || err != nil {
			t.Logf("case %d: %v err=%v", i, el, err)
		}
		_ = rep
	}
}
