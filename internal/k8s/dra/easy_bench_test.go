package dra

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func loadSeedInput(tb testing.TB, slices, claim string) *Input {
	tb.Helper()
	rd := func(n string) (string, []byte) {
		p := filepath.Join("testdata", "seed", n)
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		return p, b
	}
	in := &Input{}
	p, b := rd(slices)
	ss, err := LoadSlices(p, b)
	if err != nil {
		tb.Fatal(err)
	}
	for _, s := range ss {
		in.Slices = append(in.Slices, s.Obj)
	}
	p, b = rd("classes.yaml")
	cs, err := LoadClasses(p, b)
	if err != nil {
		tb.Fatal(err)
	}
	for _, c := range cs {
		in.Classes = append(in.Classes, c.Obj)
	}
	p, b = rd(claim)
	cl, err := LoadClaims(p, b)
	if err != nil {
		tb.Fatal(err)
	}
	for _, c := range cl {
		in.Claims = append(in.Claims, c.Obj)
	}
	return in
}

// BenchmarkEasyFitDynamicMIG: the seed's 5.3.4 claim (three MIG devices on
// one GPU) on the dynamic-MIG DGX slices, loading included: the in-process
// part of the "DRA easy case" whole-process figure.
func BenchmarkEasyFitDynamicMIG(b *testing.B) {
	for i := 0; i < b.N; i++ {
		in := loadSeedInput(b, "slices-dgx-h100-dynamic-mig.yaml", "5.3.4-claim.yaml")
		rep, err := Run(context.Background(), in, Options{})
		if err != nil || !rep.Fits {
			b.Fatalf("%v %+v", err, rep)
		}
	}
}

// The DRA easy case in process: one node (the DGX fixture's full GPUs), a
// claim that fits (seed 5.3.1's shared claim), input loaded once. Gpunode
// is the decision `k8s dra allocate` makes; Upstream is the anchor, the
// upstream allocator alone on the same input.
func BenchmarkEasyFitGpunode(b *testing.B) {
	benchEasy(b, Options{})
}

func BenchmarkEasyFitUpstream(b *testing.B) {
	benchEasy(b, Options{Solver: SolverUpstream})
}

func benchEasy(b *testing.B, o Options) {
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		in := loadSeedInput(b, "slices-dgx-h100.yaml", "5.3.1-shared-claim.yaml")
		b.StartTimer()
		rep, err := Run(context.Background(), in, o)
		if err != nil || !rep.Fits {
			b.Fatalf("%v %+v", err, rep)
		}
	}
}
