package dra

// The DRA layer's emitted names and edges, through its entry points
// (Slices, Validate, Run): attribute names and values as the NVIDIA DRA
// driver and KEP-4381/5491 name them (literals, never the package's
// constants), the 128-devices-per-slice split at its edge, requests and
// constraints refused as the API server refuses them, admin-access
// results that do not consume a device, a cancelled run.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"

	"github.com/gpunode/gpunode/internal/output"
)

func attrString(a resourceapi.DeviceAttribute) string {
	switch {
	case a.StringValue != nil:
		return *a.StringValue
	case a.VersionValue != nil:
		return "v" + *a.VersionValue
	case a.IntValue != nil:
		return fmt.Sprint(*a.IntValue)
	case a.BoolValue != nil:
		return fmt.Sprint(*a.BoolValue)
	}
	return "?"
}

func TestSliceAttributesLiteral(t *testing.T) {
	s := synthNode(t, "n1", 2, 1, MIGNone)
	if len(s) != 1 || s[0].Spec.Driver != "gpu.nvidia.com" || s[0].Spec.Pool.Name != "n1" || s[0].Spec.NodeName == nil || *s[0].Spec.NodeName != "n1" {
		t.Fatalf("slice: driver %q pool %q", s[0].Spec.Driver, s[0].Spec.Pool.Name)
	}
	d := s[0].Spec.Devices[1]
	var got []string
	for k, v := range d.Attributes {
		got = append(got, string(k)+"="+attrString(v))
	}
	sort.Strings(got)
	want := []string{
		"architecture=Hopper", "brand=Nvidia", "cudaComputeCapability=v9.0.0", "cudaDriverVersion=v12.4.0",
		"driverVersion=v550.54.15", "productName=NVIDIA H100 80GB HBM3",
		"resource.kubernetes.io/numaNode=0", "resource.kubernetes.io/pciBusID=0000:11:00.0",
		"resource.kubernetes.io/pcieRoot=pci0000:01", "type=gpu", "uuid=GPU-00000001",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") || d.Name != "gpu-1" {
		t.Errorf("device %s attributes:\n got %v\nwant %v", d.Name, got, want)
	}
	if q, ok := d.Capacity["memory"]; !ok || q.Value.String() != "81559Mi" {
		t.Errorf("capacity %v", d.Capacity)
	}
	// Without MIG, only whole GPUs.
	for _, dev := range s[0].Spec.Devices {
		if attrString(dev.Attributes["type"]) != "gpu" {
			t.Errorf("MIG off: device %s of type %s", dev.Name, attrString(dev.Attributes["type"]))
		}
	}
}

// A ResourceSlice holds at most 128 devices: 127 and 128 GPUs fit one,
// 129 need two; a node with no GPU still publishes one (empty) slice.
func TestSliceSplitEdge(t *testing.T) {
	for _, c := range []struct{ gpus, slices int }{{0, 1}, {1, 1}, {127, 1}, {128, 1}, {129, 2}, {256, 2}, {257, 3}} {
		s := synthNode(t, "n1", c.gpus, 1, MIGNone)
		n := 0
		for _, x := range s {
			n += len(x.Spec.Devices)
			if len(x.Spec.Devices) > 128 {
				t.Errorf("%d GPUs: a slice of %d devices", c.gpus, len(x.Spec.Devices))
			}
		}
		if len(s) != c.slices || n != c.gpus {
			t.Errorf("%d GPUs: %d slices with %d devices, want %d slices", c.gpus, len(s), n, c.slices)
		}
	}
}

// Dynamic MIG: a counter set per GPU, named gpu-<i>-counter-set, that the
// table lists.
func TestDynamicMIGCounters(t *testing.T) {
	s := synthNode(t, "n1", 1, 1, MIGDynamic)
	var sets []string
	for _, x := range s {
		for _, c := range x.Spec.SharedCounters {
			sets = append(sets, c.Name)
		}
	}
	if strings.Join(sets, ",") != "gpu-0-counter-set" {
		t.Errorf("counter sets %v", sets)
	}
	l := &SliceList{}
	for _, x := range s {
		l.Items = append(l.Items, *x)
	}
	var b bytes.Buffer
	if err := l.WriteTable(&b, output.Options{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "gpu-0-counter-set") || !strings.Contains(b.String(), "mig") {
		t.Errorf("table lacks the counter set or MIG devices:\n%s", b.String())
	}
}

func validateClaim(t *testing.T, c *resourceapi.ResourceClaim) error {
	t.Helper()
	return Validate(&Input{Slices: synthNode(t, "n1", 2, 1, MIGNone), Classes: gpuClasses(), Claims: []*resourceapi.ResourceClaim{c}})
}

// Requests and constraints are refused as the API server refuses them
// (field path and message as in k8s.io/kubernetes validation).
func TestValidateRequestShapes(t *testing.T) {
	ok := exact("r", "gpu.nvidia.com", 1)
	if err := validateClaim(t, claimOf("c", []resourceapi.DeviceRequest{ok})); err != nil {
		t.Fatalf("a valid claim: %v", err)
	}
	both := exact("r", "gpu.nvidia.com", 1)
	both.FirstAvailable = []resourceapi.DeviceSubRequest{{Name: "a", DeviceClassName: "gpu.nvidia.com", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}}
	noClass := exact("r", "", 1)
	for _, c := range []struct {
		claim *resourceapi.ResourceClaim
		want  string
	}{
		{claimOf("c", []resourceapi.DeviceRequest{both}), "spec.devices.requests[0]: Invalid value: exactly one of exactly and firstAvailable"},
		{claimOf("c", []resourceapi.DeviceRequest{{Name: "r"}}), "spec.devices.requests[0]: Required value: exactly or firstAvailable"},
		{claimOf("c", []resourceapi.DeviceRequest{noClass}), "spec.devices.requests[0].exactly.deviceClassName: Required value"},
		{claimOf("c", []resourceapi.DeviceRequest{ok}, resourceapi.DeviceConstraint{Requests: []string{"r"}}), "spec.devices.constraints[0]: Invalid value: exactly one of matchAttribute and distinctAttribute"},
		{claimOf("c", []resourceapi.DeviceRequest{ok}, resourceapi.DeviceConstraint{Requests: []string{"r"},
			MatchAttribute: ptr.To(resourceapi.FullyQualifiedName("resource.kubernetes.io/pcieRoot")), DistinctAttribute: ptr.To(resourceapi.FullyQualifiedName("resource.kubernetes.io/pcieRoot"))}),
			"spec.devices.constraints[0]: Invalid value: exactly one of matchAttribute and distinctAttribute"},
	} {
		err := validateClaim(t, c.claim)
		var ie *InputError
		if err == nil || !errors.As(err, &ie) || !strings.HasSuffix(err.Error(), c.want) {
			t.Errorf("%v, want %q", err, c.want)
		}
	}
	// One of the two is fine.
	for _, k := range []resourceapi.DeviceConstraint{
		{Requests: []string{"r"}, MatchAttribute: ptr.To(resourceapi.FullyQualifiedName("resource.kubernetes.io/pcieRoot"))},
		{Requests: []string{"r"}, DistinctAttribute: ptr.To(resourceapi.FullyQualifiedName("resource.kubernetes.io/pcieRoot"))},
	} {
		if err := validateClaim(t, claimOf("c", []resourceapi.DeviceRequest{ok}, k)); err != nil {
			t.Errorf("constraint %+v refused: %v", k, err)
		}
	}
}

// A device allocated with admin access stays free for others; a device
// allocated without it does not. Two GPUs, a claim for two.
func TestAdminAccessDoesNotConsume(t *testing.T) {
	for _, admin := range []bool{true, false} {
		held := claimOf("held", []resourceapi.DeviceRequest{exact("r", "gpu.nvidia.com", 1)})
		held.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
			{Request: "r", Driver: "gpu.nvidia.com", Pool: "n1", Device: "gpu-0", AdminAccess: ptr.To(admin)}}}}
		in := &Input{Slices: synthNode(t, "n1", 2, 1, MIGNone), Classes: gpuClasses(), Allocated: []*resourceapi.ResourceClaim{held},
			Claims: []*resourceapi.ResourceClaim{claimOf("want", []resourceapi.DeviceRequest{exact("r", "gpu.nvidia.com", 2)})}}
		if nr := runOne(t, in, Options{}); nr.Fits != admin {
			t.Errorf("gpu-0 held with adminAccess=%v: fits %v, want %v", admin, nr.Fits, admin)
		}
	}
}

// A cancelled run stops with the context's error.
func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Run(ctx, pcieInput(t, 8), Options{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled run: %v, want context.Canceled", err)
	}
}
