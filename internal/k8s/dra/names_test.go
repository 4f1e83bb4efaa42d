package dra

import (
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
)

// TestSliceNamesLiteral: slice names are the node's and the driver's names
// with dots as dashes, then the slice's index; dynamic MIG puts counter
// sets first.
func TestSliceNamesLiteral(t *testing.T) {
	var got []string
	for _, s := range synthNode(t, "dgx.01", 1, 1, MIGNone) {
		got = append(got, s.Name)
	}
	for _, s := range synthNode(t, "dgx.01", 2, 1, MIGDynamic) {
		got = append(got, s.Name)
	}
	want := []string{"dgx-01-gpu-nvidia-com-0", "dgx-01-gpu-nvidia-com-counters-0", "dgx-01-gpu-nvidia-com-gpu-0-0", "dgx-01-gpu-nvidia-com-gpu-1-0"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("names %q, want %q", got, want)
	}
}

// TestClassSelectorCompileError: a class whose selector does not compile
// is bad input, named by class and field.
func TestClassSelectorCompileError(t *testing.T) {
	in := loadSeedInput(t, "slices-dgx-h100.yaml", "5.3.1-shared-claim.yaml")
	in.Classes[0].Spec.Selectors[0].CEL.Expression = "device.driver =="
	err := Validate(in)
	if err == nil || !strings.HasPrefix(err.Error(), `DeviceClass "gpu.nvidia.com": spec.selectors[0].cel.expression: Invalid value: `) {
		t.Fatalf("err %v", err)
	}
}

// TestValidateAllocationMode: Validate (inputs built in process, as from a
// cluster) names an unknown allocation mode by its field.
func TestValidateAllocationMode(t *testing.T) {
	c := claimOf("c", []resourceapi.DeviceRequest{exact("r", "gpu.nvidia.com", 1)})
	c.Spec.Devices.Requests[0].Exactly.AllocationMode = "Some"
	err := validateClaim(t, c)
	want := `ResourceClaim "default/c": spec.devices.requests[0].exactly.allocationMode: Unsupported value: "Some": supported values: "All", "ExactCount"`
	if err == nil || err.Error() != want {
		t.Fatalf("err %v\nwant %s", err, want)
	}
}
