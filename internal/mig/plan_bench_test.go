package mig

import (
	"context"
	"fmt"
	"testing"
)

// scaledDemands are demands written for 8 GPUs, scaled to n GPUs by n/8.
var scaledDemands = []struct{ name, want string }{
	{"tight-infeasible", "4g.40gb=4,3g.40gb=4,2g.20gb=8,1g.20gb=3,1g.10gb=2,1g.10gb+me=7"}, // fits by slices, not by placement
	{"full-feasible", "3g.40gb=8,2g.20gb=8,1g.10gb=16"},
	{"mixed-feasible", "1g.10gb=20,1g.20gb=10,2g.20gb=6,3g.40gb=4,4g.40gb=2,1g.10gb+me=4"},
	{"packing-infeasible", "3g.40gb=9,4g.40gb=6,1g.10gb=7"},
}

func scaleWant(b testing.TB, want string, n int) []Want {
	w, err := ParseWant(want)
	if err != nil {
		b.Fatal(err)
	}
	for i := range w {
		w[i].Count = w[i].Count * n / 8
	}
	return w
}

// BenchmarkPlanManyGPUs plans demands on 64..1,024 identical H100s, the
// explanation and alternatives of infeasible ones included (targets: 10 ms
// on 256 GPUs, 50 ms on 1,024).
func BenchmarkPlanManyGPUs(b *testing.B) {
	c := Builtin()
	p, _ := c.Lookup("H100-80GB")
	ctx := context.Background()
	for _, n := range []int{64, 128, 256, 1024} {
		for _, sd := range scaledDemands {
			w := scaleWant(b, sd.want, n)
			b.Run(fmt.Sprintf("%s/gpus=%d", sd.name, n), func(b *testing.B) {
				for b.Loop() {
					if _, err := c.Plan(ctx, p, w, PlanOptions{GPUs: n}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
