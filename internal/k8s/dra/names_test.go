package dra

import (
	"strings"
	"testing"
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
