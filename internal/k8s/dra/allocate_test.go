package dra

import (
	"fmt"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
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

// TestAutoMatchesUpstreamSmall compares the product path (gpunode's own
// search, no upstream allocator) with upstream's allocator on shapes
// upstream decides within its limit (feasible and infeasible ones, at and
// one above each node's capacity of 2g.20gb instances: 3 per H100). A
// comparison upstream cannot make in time is a failure, not a skip: the
// cases are chosen so that it decides in well under a second (infeasible
// k=25 on 8 GPUs is not among them: upstream's search takes minutes there).
// Where the claim fits easily the devices are upstream's first fit.
func TestAutoMatchesUpstreamSmall(t *testing.T) {
	for _, c := range []struct {
		gpus int
		k    int64
		fits bool
	}{
		{8, 1, true}, {8, 3, true}, {8, 24, true}, {8, 100, false},
		{1, 3, true}, {1, 4, false}, {2, 6, true}, {2, 7, false}, {4, 13, false},
	} {
		mk := func() *Input {
			return &Input{Slices: synthNode(t, "n1", c.gpus, 4, MIGDynamic), Classes: gpuClasses(),
				Claims: []*resourceapi.ResourceClaim{claimOf("inference", []resourceapi.DeviceRequest{
					exact("mig", "mig.nvidia.com", c.k, "device.attributes['gpu.nvidia.com'].profile == '2g.20gb'")})}}
		}
		auto := runOne(t, mk(), Options{Explain: true})
		up := runOne(t, mk(), Options{Solver: SolverUpstream, UpstreamLimit: 20 * time.Second})
		if up.Undecided {
			t.Fatalf("%d GPUs, k=%d: upstream undecided within 20s", c.gpus, c.k)
		}
		if auto.Explain == nil || auto.Explain.Solver != "gpunode" {
			t.Fatalf("%d GPUs, k=%d: not decided by gpunode: %+v", c.gpus, c.k, auto.Explain)
		}
		if auto.Fits != up.Fits || up.Fits != c.fits {
			t.Fatalf("%d GPUs, k=%d: auto %v upstream %v, want %v", c.gpus, c.k, auto.Fits, up.Fits, c.fits)
		}
		if c.fits && len(auto.Allocations) > 0 && len(auto.Allocations[0].Results) != int(c.k) {
			t.Fatalf("%d GPUs, k=%d: auto allocated %d devices", c.gpus, c.k, len(auto.Allocations[0].Results))
		}
		if c.k <= 3 && c.gpus == 8 && fmt.Sprint(auto.Allocations) != fmt.Sprint(up.Allocations) {
			t.Fatalf("k=%d: devices differ from the upstream first fit:\n%v\n%v", c.k, auto.Allocations, up.Allocations)
		}
	}
}
