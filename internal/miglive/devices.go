package miglive

import (
	"context"
	"fmt"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/mig"
)

// Devices returns the MIG devices behind a GPU backend: NVML devices for the
// nvml backend, in-memory FakeDevices for the fake backend, read-only
// devices from 'nvidia-smi -q -x' for the nvidia-smi backend (export and
// assert; apply refuses them with ErrReadOnly). none has no devices.
func Devices(ctx context.Context, b gpu.Backend, cat *mig.Catalogue) ([]Device, error) {
	if devs, ok, err := nvmlDevicesOf(b); ok {
		return devs, err
	}
	switch b.Name() {
	case gpu.KindNVIDIASMI:
		st, err := b.Status(ctx)
		if err != nil {
			return nil, fmt.Errorf("MIG state through nvidia-smi: %w", err)
		}
		return SMIDevices(st, cat)
	case gpu.KindFake, gpu.KindNone:
		st, err := b.Status(ctx)
		if err != nil {
			return nil, err
		}
		if b.Name() == gpu.KindNone {
			return nil, fmt.Errorf("%s", st.Reason)
		}
		return FakeDevices(st, cat)
	}
	return nil, fmt.Errorf("MIG apply/assert/export need the NVML backend (this is %s; build gpunode with cgo and run it where libnvidia-ml.so.1 loads)", b.Name())
}

// NameInstances fills the profile names of MIG instances a backend read
// without them (NVML reports profile ids only; nvidia-smi's XML not even
// those: InferProfiles), from the catalogue product of each GPU's PCI
// device id. Unknown ids stay unnamed.
func NameInstances(st *gpu.Status, cat *mig.Catalogue) {
	InferProfiles(st, cat)
	for i := range st.GPUs {
		g := &st.GPUs[i]
		if len(g.MIGInstances) == 0 {
			continue
		}
		id, err := ParseDeviceID(g.PCIDeviceID)
		if err != nil {
			continue
		}
		p, err := cat.ByDeviceID(id.Device)
		if err != nil {
			continue
		}
		for j := range g.MIGInstances {
			gi := &g.MIGInstances[j]
			if gi.Profile != "" {
				continue
			}
			if k, ok := p.ProfileByID(gi.ProfileID); ok {
				gi.Profile = p.Profiles[k].Name
			}
		}
	}
}
