package dra

import (
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestPoolAcrossNodes: a pool is one driver's, and may span nodes: its two
// slices, one for this node and one for another, make it complete (its
// devices here can be allocated), for gpunode as for the upstream
// allocator; a pool of the same name from another driver does not count.
func TestPoolAcrossNodes(t *testing.T) {
	mk := func(secondDriver string) *Input {
		gpus := synthNode(t, "n1", 2, 2, MIGNone)[:1]
		gpus[0].Spec.Pool.ResourceSliceCount = 2
		second := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "n2-part"}, Spec: resourceapi.ResourceSliceSpec{
			Driver: secondDriver, NodeName: ptr.To("n2"), Pool: gpus[0].Spec.Pool,
			Devices: []resourceapi.Device{{Name: "other-0"}}}}
		return &Input{Slices: append(gpus, second), Classes: gpuClasses(), Nodes: []string{"n1"},
			Claims: []*resourceapi.ResourceClaim{claimOf("c", []resourceapi.DeviceRequest{exact("gpu", "gpu.nvidia.com", 1)})}}
	}
	for _, s := range []Solver{SolverUpstream, SolverAuto, SolverGpunode} {
		nr := runOne(t, mk("gpu.nvidia.com"), Options{Solver: s})
		if !nr.Fits || nr.Allocations[0].Results[0].Device != "gpu-0" {
			t.Fatalf("solver %q, complete pool: %+v %+v", s, nr, nr.Explain)
		}
		if nr := runOne(t, mk("other.example.com"), Options{Solver: s}); nr.Fits {
			t.Fatalf("solver %q, the second slice another driver's: fits %+v", s, nr)
		}
	}
}
