package dra

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpunode/gpunode/internal/k8s/dra"
)

var cases = flag.Int("cases", 5000, "random scenarios")

var profiles = []string{"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}

func classes() []*resourceapi.DeviceClass {
	mk := func(name, typ string) *resourceapi.DeviceClass {
		return &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: resourceapi.DeviceClassSpec{
			Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
				Expression: fmt.Sprintf("device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == '%s'", typ)}}}}}
	}
	return []*resourceapi.DeviceClass{mk("gpu.nvidia.com", "gpu"), mk("mig.nvidia.com", "mig")}
}

func randRequest(r *rand.Rand, name string, mig bool) resourceapi.ExactDeviceRequest {
	e := resourceapi.ExactDeviceRequest{DeviceClassName: "gpu.nvidia.com", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: int64(1 + r.IntN(4))}
	if mig && r.IntN(4) > 0 {
		e.DeviceClassName = "mig.nvidia.com"
		e.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
			Expression: fmt.Sprintf("device.attributes['gpu.nvidia.com'].profile == '%s'", profiles[r.IntN(len(profiles))])}}}
	}
	if r.IntN(10) == 0 {
		e.AllocationMode, e.Count = resourceapi.DeviceAllocationModeAll, 0
	}
	return e
}

// scenario draws one NVIDIA-shaped node and 1-3 claims.
func scenario(t *testing.T, r *rand.Rand) *dra.Input {
	mode := []string{dra.MIGNone, dra.MIGDynamic}[r.IntN(2)]
	n := 1 + r.IntN(8)
	if mode == dra.MIGDynamic {
		n = 1 + r.IntN(3)
	}
	in := &dra.Input{Slices: synthSlices(t, "n1", n, 1+r.IntN(4), mode), Classes: classes()}
	for c := 0; c < 1+r.IntN(3); c++ {
		claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c%d", c), Namespace: "default"}}
		for q := 0; q < 1+r.IntN(2); q++ {
			name := fmt.Sprintf("r%d", q)
			req := resourceapi.DeviceRequest{Name: name}
			if r.IntN(4) == 0 {
				for s := 0; s < 2; s++ {
					e := randRequest(r, name, mode == dra.MIGDynamic)
					req.FirstAvailable = append(req.FirstAvailable, resourceapi.DeviceSubRequest{Name: fmt.Sprintf("s%d", s), DeviceClassName: e.DeviceClassName,
						Selectors: e.Selectors, AllocationMode: e.AllocationMode, Count: e.Count})
				}
			} else {
				e := randRequest(r, name, mode == dra.MIGDynamic)
				req.Exactly = &e
			}
			claim.Spec.Devices.Requests = append(claim.Spec.Devices.Requests, req)
		}
		switch r.IntN(4) {
		case 0:
			attr := dra.AttrPCIeRoot
			if mode == dra.MIGDynamic {
				attr = "gpu.nvidia.com/parentUUID"
			}
			claim.Spec.Devices.Constraints = append(claim.Spec.Devices.Constraints, resourceapi.DeviceConstraint{MatchAttribute: ptr.To(resourceapi.FullyQualifiedName(attr))})
		case 1:
			claim.Spec.Devices.Constraints = append(claim.Spec.Devices.Constraints, resourceapi.DeviceConstraint{DistinctAttribute: ptr.To(resourceapi.FullyQualifiedName(dra.AttrPCIeRoot))})
		}
		in.Claims = append(in.Claims, claim)
	}
	// Some devices already allocated.
	if r.IntN(2) == 0 {
		al := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: "default"}, Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{}}}
		for _, s := range in.Slices {
			for _, d := range s.Spec.Devices {
				if r.IntN(8) == 0 && (mode == dra.MIGNone || d.Name != "gpu-0") {
					al.Status.Allocation.Devices.Results = append(al.Status.Allocation.Devices.Results,
						resourceapi.DeviceRequestAllocationResult{Request: "x", Driver: s.Spec.Driver, Pool: s.Spec.Pool.Name, Device: d.Name})
				}
			}
		}
		if mode == dra.MIGDynamic {
			// Allocated MIG devices must not overlap: keep a consistent set
			// by allocating at most one placement per GPU.
			seen := map[string]bool{}
			var keep []resourceapi.DeviceRequestAllocationResult
			for _, res := range al.Status.Allocation.Devices.Results {
				gpuOf := res.Device[:5]
				if !seen[gpuOf] {
					seen[gpuOf] = true
					keep = append(keep, res)
				}
			}
			al.Status.Allocation.Devices.Results = keep
		}
		in.Allocated = append(in.Allocated, al)
	}
	return in
}

// TestDifferentialRandom: gpunode's exact search alone against the upstream
// allocator on random scenarios: same fits; every gpunode allocation is
// accepted by the upstream allocator when pinned to exactly its devices.
func TestDifferentialRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var agree, fit, skipped int
	for i := 0; i < *cases; i++ {
		in := scenario(t, r)
		own, err := dra.Run(context.Background(), in, dra.Options{Solver: dra.SolverGpunode})
		if err != nil {
			t.Fatalf("case %d: gpunode: %v", i, err)
		}
		up, err := dra.Run(context.Background(), scenarioCopy(in), dra.Options{Solver: dra.SolverUpstream, UpstreamLimit: 2 * time.Second})
		if err != nil {
			t.Fatalf("case %d: upstream: %v", i, err)
		}
		o, u := own.Nodes[0], up.Nodes[0]
		if u.Undecided {
			skipped++
			continue
		}
		if o.Fits != u.Fits {
			t.Fatalf("case %d: gpunode fits=%v upstream fits=%v\nupstream: %+v\ngpunode: %+v", i, o.Fits, u.Fits, u.Explain, o.Explain)
		}
		agree++
		if o.Fits {
			fit++
			checkPinned(t, i, in, o)
		}
	}
	t.Logf("%d scenarios: %d agree (%d fit, %d do not), %d skipped (upstream over 2 s)", *cases, agree, fit, agree-fit, skipped)
}

func scenarioCopy(in *dra.Input) *dra.Input {
	out := &dra.Input{Slices: in.Slices, Classes: in.Classes, Allocated: in.Allocated}
	for _, c := range in.Claims {
		out.Claims = append(out.Claims, c.DeepCopy())
	}
	return out
}

// checkPinned validates gpunode's allocation with the upstream allocator:
// the slices keep only the devices gpunode chose (and the counter sets), and
// upstream must still allocate every claim there. Scenarios with All
// requests are not pinned (All would change meaning).
func checkPinned(t *testing.T, i int, in *dra.Input, nr dra.NodeReport) {
	t.Helper()
	for _, c := range in.Claims {
		for _, r := range c.Spec.Devices.Requests {
			if r.Exactly != nil && r.Exactly.AllocationMode == resourceapi.DeviceAllocationModeAll {
				return
			}
			for _, s := range r.FirstAvailable {
				if s.AllocationMode == resourceapi.DeviceAllocationModeAll {
					return
				}
			}
		}
	}
	chosen := map[string]bool{}
	for _, a := range nr.Allocations {
		for _, res := range a.Results {
			if chosen[res.Device] {
				t.Fatalf("case %d: device %s allocated twice: %+v", i, res.Device, nr.Allocations)
			}
			chosen[res.Device] = true
		}
	}
	pinned := scenarioCopy(in)
	pinned.Slices = nil
	for _, s := range in.Slices {
		s2 := s.DeepCopy()
		s2.Spec.Devices = nil
		for _, d := range s.Spec.Devices {
			if chosen[d.Name] {
				s2.Spec.Devices = append(s2.Spec.Devices, d)
			}
		}
		pinned.Slices = append(pinned.Slices, s2)
	}
	res, err := pinned.RunUpstream(context.Background(), dra.NodeObject("n1"))
	if err != nil || res == nil {
		t.Fatalf("case %d: gpunode's allocation %+v is not valid for the upstream allocator (err %v)", i, nr.Allocations, err)
	}
}
