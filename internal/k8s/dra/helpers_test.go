package dra

import (
	"context"
	"fmt"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/mig"
	"github.com/gpunode/gpunode/internal/topo"
)

// synthNode builds the slices of a node with n H100 GPUs, perRoot GPUs per
// PCIe root complex.
func synthNode(t testing.TB, node string, n, perRoot int, migMode string) []*resourceapi.ResourceSlice {
	t.Helper()
	st := gpu.Status{DriverVersion: "550.54.15", CUDAVersion: "12.4"}
	tp := &topo.Topology{}
	for i := 0; i < n; i++ {
		bdf := fmt.Sprintf("0000:%02x:00.0", 0x10+i)
		st.GPUs = append(st.GPUs, gpu.GPU{Index: i, Name: "NVIDIA H100 80GB HBM3", UUID: fmt.Sprintf("GPU-%08d", i), PCIAddress: bdf,
			Architecture: "Hopper", ComputeCapability: "9.0", MemoryBytes: 81559 << 20, SMCount: 132, NUMANode: ptr.To(i / (n/2 + 1))})
		tp.GPUs = append(tp.GPUs, topo.PCIDevice{BDF: bdf, PCIePath: []string{fmt.Sprintf("pci0000:%02x", i/perRoot), bdf}})
	}
	l, err := Slices(SliceOptions{NodeName: node, MIG: migMode, Topology: tp, Status: st, Catalog: mig.Builtin()})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*resourceapi.ResourceSlice, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out
}

func gpuClasses() []*resourceapi.DeviceClass {
	mk := func(name, typ string) *resourceapi.DeviceClass {
		return &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: resourceapi.DeviceClassSpec{
			Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
				Expression: fmt.Sprintf("device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == '%s'", typ)}}}}}
	}
	return []*resourceapi.DeviceClass{mk("gpu.nvidia.com", "gpu"), mk("mig.nvidia.com", "mig")}
}

func claimOf(name string, reqs []resourceapi.DeviceRequest, cons ...resourceapi.DeviceConstraint) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: reqs, Constraints: cons}}}
}

func exact(name, class string, count int64, cel ...string) resourceapi.DeviceRequest {
	r := resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class,
		AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count}}
	for _, c := range cel {
		r.Exactly.Selectors = append(r.Exactly.Selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: c}})
	}
	return r
}

func matchAttr(attr string, reqs ...string) resourceapi.DeviceConstraint {
	return resourceapi.DeviceConstraint{Requests: reqs, MatchAttribute: ptr.To(resourceapi.FullyQualifiedName(attr))}
}

// pcieInput: n/2+1 GPUs on one PCIe root of a node with n GPUs on two
// roots (the shape the issue measured upstream on).
func pcieInput(t testing.TB, n int) *Input {
	return &Input{Slices: synthNode(t, "n1", n, n/2, MIGNone), Classes: gpuClasses(),
		Claims: []*resourceapi.ResourceClaim{claimOf("train", []resourceapi.DeviceRequest{exact("gpus", "gpu.nvidia.com", int64(n/2+1))}, matchAttr(AttrPCIeRoot))}}
}

// migInput: k x 2g.20gb on a dynamic-MIG node of 8 H100s (24 exist).
func migInput(t testing.TB, k int64) *Input {
	return &Input{Slices: synthNode(t, "n1", 8, 4, MIGDynamic), Classes: gpuClasses(),
		Claims: []*resourceapi.ResourceClaim{claimOf("inference", []resourceapi.DeviceRequest{
			exact("mig", "mig.nvidia.com", k, "device.attributes['gpu.nvidia.com'].profile == '2g.20gb'")})}}
}

func runOne(t testing.TB, in *Input, o Options) NodeReport {
	t.Helper()
	rep, err := Run(context.Background(), in, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Nodes) != 1 {
		t.Fatalf("nodes: %d", len(rep.Nodes))
	}
	return rep.Nodes[0]
}

type (
	resourceSliceT = resourceapi.ResourceSlice
	resourceClaimT = resourceapi.ResourceClaim
)
