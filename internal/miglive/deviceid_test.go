package miglive

import (
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/mig"
)

// A GPU without pci_device_id (an nvidia-smi sample without it) is matched
// to the profile table by its product name; a malformed id is named as the
// field, without the parser's text (issue 28 item 6).
func TestFakeDeviceWithoutPCIDeviceID(t *testing.T) {
	cat := mig.Builtin()
	d, err := NewFakeDevice(gpu.GPU{Index: 0, UUID: "GPU-a", Name: "NVIDIA H100 80GB HBM3", MIG: &gpu.MIGMode{}}, cat)
	if err != nil {
		t.Fatal(err)
	}
	if in := d.Info(); !in.MIGCapable || in.DeviceID.Device != 0x2330 {
		t.Fatalf("H100 by name: %+v", in)
	}
	d, err = NewFakeDevice(gpu.GPU{Index: 1, UUID: "GPU-b", Name: "Tesla T4"}, cat)
	if err != nil || d.Info().MIGCapable {
		t.Fatalf("T4 by name: %+v, %v", d, err)
	}
	_, err = NewFakeDevice(gpu.GPU{Index: 2, UUID: "GPU-c", Name: "x", PCIDeviceID: "zz"}, cat)
	if err == nil || strings.Contains(err.Error(), "strconv") || !strings.Contains(err.Error(), `GPU 2: pci_device_id "zz": Invalid value`) {
		t.Fatalf("bad id: %v", err)
	}
}
