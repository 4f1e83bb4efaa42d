package dra

import (
	"context"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestPerDeviceNodeSelection: with perDeviceNodeSelection each device says
// where it is: one device on n1 fits one request there, not two; gpunode
// and the upstream allocator agree.
func TestPerDeviceNodeSelection(t *testing.T) {
	mk := func(count int64) *Input {
		s := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "per-device"}, Spec: resourceapi.ResourceSliceSpec{
			Driver: "gpu.nvidia.com", PerDeviceNodeSelection: ptr.To(true),
			Pool: resourceapi.ResourcePool{Name: "fabric", Generation: 1, ResourceSliceCount: 1},
			Devices: []resourceapi.Device{
				{Name: "gpu-0", NodeName: ptr.To("n1"), Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"type": {StringValue: ptr.To("gpu")}}},
				{Name: "gpu-1", NodeName: ptr.To("n2"), Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"type": {StringValue: ptr.To("gpu")}}},
			}}}
		return &Input{Slices: []*resourceapi.ResourceSlice{s}, Classes: gpuClasses(), Nodes: []string{"n1"},
			Claims: []*resourceapi.ResourceClaim{claimOf("c", []resourceapi.DeviceRequest{exact("gpu", "gpu.nvidia.com", count)})}}
	}
	for _, s := range []Solver{SolverAuto, SolverGpunode, SolverUpstream} {
		nr := runOne(t, mk(1), Options{Solver: s})
		if !nr.Fits || nr.Allocations[0].Results[0].Device != "gpu-0" {
			t.Fatalf("solver %q, one device: %+v %+v", s, nr, nr.Explain)
		}
		if nr := runOne(t, mk(2), Options{Solver: s}); nr.Fits {
			t.Fatalf("solver %q, two devices: fits %+v", s, nr)
		}
	}
}

// TestSearchRemembersFailures: states proven to fail are remembered (the
// memo that keeps the pigeonhole from being searched again).
func TestSearchRemembersFailures(t *testing.T) {
	in := hardDistinct()
	in.init()
	for _, c := range in.Claims {
		DefaultClaimSpec(&c.Spec)
	}
	p, err := buildProblem(context.Background(), in, NodeObject("n1"))
	if err != nil {
		t.Fatal(err)
	}
	s := newSearcher(context.Background(), p, 3000)
	if _, err := s.solve(); err == nil {
		t.Fatalf("the budget of 3000 states decided the pigeonhole")
	}
	if len(s.failed) == 0 {
		t.Fatalf("%d states explored, none remembered as failed", s.nodes)
	}
}
