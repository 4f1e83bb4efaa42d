package miglive

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/mig"
)

// ErrReadOnly is returned by the write operations of devices read through
// nvidia-smi.
var ErrReadOnly = errors.New("the nvidia-smi backend reads MIG state only ('nvidia-smi -q -x'); creating or destroying instances and setting the MIG mode need the NVML backend (gpunode built with cgo, where libnvidia-ml.so.1 loads)")

// smiDevice is a MIG GPU as 'nvidia-smi -q -x' describes it: mode and the
// GPU/compute instances with their SMs and memory, no placements and no
// profile ids (those are inferred from the catalogue). Export and assert
// work on it; every write returns ErrReadOnly.
type smiDevice struct {
	info             Info
	current, pending bool
	insts            []Instance
}

var _ Device = (*smiDevice)(nil)

// SMIDevices builds read-only devices from an nvidia-smi status, naming
// each instance's profile from its SM count and memory (InferProfiles). An
// instance no profile of the GPU's catalogue product matches is an error
// naming it.
func SMIDevices(st gpu.Status, cat *mig.Catalogue) ([]Device, error) {
	InferProfiles(&st, cat)
	var out []Device
	for _, g := range st.GPUs {
		id, err := ParseDeviceID(g.PCIDeviceID)
		if err != nil {
			return nil, fmt.Errorf("GPU %d: %w", g.Index, err)
		}
		d := &smiDevice{info: Info{Index: g.Index, UUID: g.UUID, Name: g.Name, DeviceID: id, MemoryBytes: g.MemoryBytes}}
		p, perr := cat.ByDeviceID(id.Device)
		if perr == nil && g.MIG != nil {
			d.info.MIGCapable = true
			d.current, d.pending = g.MIG.Current, g.MIG.Pending
		}
		for _, gi := range g.MIGInstances {
			if p == nil {
				return nil, fmt.Errorf("GPU %d: MIG instances on a GPU the catalogue does not know (%s)", g.Index, g.PCIDeviceID)
			}
			k, ok := p.ProfileByID(gi.ProfileID)
			if !ok {
				return nil, fmt.Errorf("GPU %d: GPU instance %d (%d SMs, %d MiB): no %s profile matches", g.Index, gi.GPUInstanceID, gi.SMCount, gi.MemoryBytes>>20, p.Key)
			}
			pr := &p.Profiles[k]
			in := Instance{NVMLProfile: pr.NVMLProfile, Placement: mig.Placement{Start: gi.Start, Size: gi.Size}}
			for _, ci := range gi.ComputeInstances {
				in.CISlices = append(in.CISlices, ciSlices(pr, gi, ci))
			}
			d.insts = append(d.insts, in)
		}
		out = append(out, d)
	}
	return out, nil
}

// ciSlices is the compute slices of ci: its share of the GI's SMs times
// the profile's compute slices (the full GI when SMs are unknown).
func ciSlices(pr *mig.Profile, gi gpu.MIGInstance, ci gpu.MIGCompute) int {
	if ci.SMCount == 0 || gi.SMCount == 0 || len(gi.ComputeInstances) == 1 {
		return pr.ComputeSlices
	}
	n := int(math.Round(float64(ci.SMCount) * float64(pr.ComputeSlices) / float64(gi.SMCount)))
	return max(1, min(n, pr.ComputeSlices))
}

// InferProfiles names the GPU instances a backend reported without a
// profile id (nvidia-smi's XML): the catalogue profile of the GPU's
// product with the instance's SM count (when the catalogue has SM counts)
// and the memory size nearest to the instance's; on a tie the profile
// without media extensions. Instances that match nothing stay unknown.
func InferProfiles(st *gpu.Status, cat *mig.Catalogue) {
	for i := range st.GPUs {
		g := &st.GPUs[i]
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
			if gi.ProfileID != gpu.ProfileUnknown || gi.MemoryBytes == 0 {
				continue
			}
			gb := float64(gi.MemoryBytes) / (1 << 30)
			best, bestDiff := -1, math.Inf(1)
			for k := range p.Profiles {
				pr := &p.Profiles[k]
				if pr.SMs != 0 && gi.SMCount != 0 && pr.SMs != gi.SMCount {
					continue
				}
				diff := math.Abs(float64(pr.MemoryGB) - gb)
				if diff > float64(pr.MemoryGB)*0.15+0.5 {
					continue
				}
				if diff < bestDiff || diff == bestDiff && best >= 0 && p.Profiles[best].MediaExtensions && !pr.MediaExtensions {
					best, bestDiff = k, diff
				}
			}
			if best < 0 {
				continue
			}
			pr := &p.Profiles[best]
			gi.ProfileID, gi.Profile = pr.ID, pr.Name
			for c := range gi.ComputeInstances {
				ci := &gi.ComputeInstances[c]
				if ci.ProfileID == gpu.ProfileUnknown {
					ci.Profile = ciName(pr, ciSlices(pr, *gi, *ci))
				}
			}
		}
	}
}

func (d *smiDevice) Info() Info { return d.info }

func (d *smiDevice) MIGMode(context.Context) (bool, bool, error) { return d.current, d.pending, nil }

func (d *smiDevice) Instances(context.Context) ([]Instance, error) {
	return append([]Instance(nil), d.insts...), nil
}

// ProfileInfos returns none: the XML has no profile table, so Product uses
// the catalogue's.
func (d *smiDevice) ProfileInfos(context.Context) ([]mig.NVMLProfileInfo, error) { return nil, nil }

func (d *smiDevice) SetMIGMode(context.Context, bool) error { return ErrReadOnly }
func (d *smiDevice) DestroyAll(context.Context) error       { return ErrReadOnly }
func (d *smiDevice) Create(context.Context, int, mig.Placement, int) error {
	return ErrReadOnly
}
