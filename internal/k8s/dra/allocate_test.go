package dra

import (
	"fmt"
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

// TestAutoMatchesUpstreamSmall: the product path decides without the
// upstream allocator, agrees with it on fits, and where the claim fits
// easily its devices are the upstream allocator's first fit.
func TestAutoMatchesUpstreamSmall(t *testing.T) {
	for _, k := range []int64{1, 3, 24, 25} {
		in := migInput(t, k)
		auto := runOne(t, in, Options{Explain: true})
		up := runOne(t, migInput(t, k), Options{Solver: SolverUpstream, UpstreamLimit: 2 * time.Second})
		if auto.Explain == nil || auto.Explain.Solver != "gpunode" {
			t.Fatalf("k=%d: not decided by gpunode: %+v", k, auto.Explain)
		}
		if up.Undecided {
			continue
		}
		if auto.Fits != up.Fits {
			t.Fatalf("k=%d: auto %v upstream %v", k, auto.Fits, up.Fits)
		}
		if k <= 3 && fmt.Sprint(auto.Allocations) != fmt.Sprint(up.Allocations) {
			t.Fatalf("k=%d: devices differ from the upstream first fit:\n%v\n%v", k, auto.Allocations, up.Allocations)
		}
	}
}
