package dra

import (
	"strings"
	"testing"
	"time"
)

func TestPCIeRootInfeasible48(t *testing.T) {
	nr := runOne(t, pcieInput(t, 48), Options{Solver: SolverGpunode, Explain: true})
	if nr.Fits {
		t.Fatalf("9 GPUs on one root of 8 fit: %+v", nr)
	}
	if nr.Explain == nil || !strings.Contains(nr.Explain.Reason, "largest group") {
		t.Fatalf("explain: %+v", nr.Explain)
	}
	if len(nr.Explain.NearestFits) == 0 || !strings.Contains(nr.Explain.NearestFits[0], "count 24 instead of 25") {
		t.Fatalf("nearest: %+v", nr.Explain.NearestFits)
	}
	t.Log(nr.Explain.Reason, nr.Explain.NearestFits)
}

func TestMIG25of24(t *testing.T) {
	nr := runOne(t, migInput(t, 25), Options{Solver: SolverGpunode, Explain: true})
	if nr.Fits {
		t.Fatal("25 x 2g fit where 24 exist")
	}
	t.Log(nr.Explain.Reason, nr.Explain.NearestFits)
	nr = runOne(t, migInput(t, 24), Options{Solver: SolverGpunode})
	if !nr.Fits || len(nr.Allocations[0].Results) != 24 {
		t.Fatalf("24 x 2g do not fit: %+v", nr)
	}
}

func TestAutoMatchesUpstreamSmall(t *testing.T) {
	for _, k := range []int64{1, 3, 24, 25} {
		in := migInput(t, k)
		auto := runOne(t, in, Options{})
		up := runOne(t, migInput(t, k), Options{Solver: SolverUpstream, UpstreamLimit: 200 * time.Millisecond})
		if !up.Undecided && auto.Fits != up.Fits {
			t.Fatalf("k=%d: auto %v upstream %v", k, auto.Fits, up.Fits)
		}
		if k <= 3 && (auto.Explain != nil && auto.Explain.Solver == "gpunode") {
			t.Fatalf("k=%d: devices not from upstream: %+v", k, auto.Explain)
		}
	}
}
