package miglive

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/mig"
)

// FakeDevice is an in-memory MIG GPU built from a fake-backend GPU and its
// catalogue product. Unlike go-nvml's mock server it enforces what the
// driver enforces: placements from the profile's list, no overlap on the
// memory-slice axis, per-profile maxima and the compute-slice total.
type FakeDevice struct {
	mu      sync.Mutex
	info    Info
	product *mig.Product
	current bool
	pending bool
	// ResetNeeded makes mode changes wait for a reset (current stays, pending
	// changes), like a GPU whose clients could not be stopped.
	ResetNeeded bool
	insts       []Instance
}

var _ Device = (*FakeDevice)(nil)

// FakeDevices builds a FakeDevice for every GPU of a fake status. GPUs whose
// device id the catalogue does not know are not MIG-capable.
func FakeDevices(st gpu.Status, cat *mig.Catalogue) ([]Device, error) {
	var out []Device
	for _, g := range st.GPUs {
		d, err := NewFakeDevice(g, cat)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// ParseDeviceID parses "0x20B010DE" (device, vendor) as GPU status prints it.
func ParseDeviceID(s string) (mig.DeviceID, error) {
	v, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(strings.TrimSpace(s)), "0x"), 16, 32)
	if err != nil {
		// The parser's own text ("strconv.ParseUint: ...") is not for users.
		return mig.DeviceID{}, fmt.Errorf("pci_device_id %q: Invalid value: want the PCI device and vendor id in hex, as nvidia-smi prints it (0x233010DE)", s)
	}
	return mig.DeviceID{Device: uint16(v >> 16), Vendor: uint16(v)}, nil
}

// NewFakeDevice builds one FakeDevice.
func NewFakeDevice(g gpu.GPU, cat *mig.Catalogue) (*FakeDevice, error) {
	var id mig.DeviceID
	var err error
	if strings.TrimSpace(g.PCIDeviceID) == "" {
		// No pci_device_id (an nvidia-smi sample without it): the product
		// name finds the catalogue entry; a GPU the catalogue does not know
		// by name is not MIG-capable, as one with an unknown id.
		if p, err := cat.Lookup(g.Name); err == nil && len(p.DeviceIDs) > 0 {
			id = mig.DeviceID{Device: p.DeviceIDs[0], Vendor: 0x10de}
		}
	} else if id, err = ParseDeviceID(g.PCIDeviceID); err != nil {
		return nil, fmt.Errorf("GPU %d: %w", g.Index, err)
	}
	d := &FakeDevice{info: Info{Index: g.Index, UUID: g.UUID, Name: g.Name, DeviceID: id, MemoryBytes: g.MemoryBytes}}
	if p, err := cat.ByDeviceID(id.Device); err == nil && g.MIG != nil {
		d.product, d.info.MIGCapable = p, true
		d.current, d.pending = g.MIG.Current, g.MIG.Pending
	}
	for _, gi := range g.MIGInstances {
		if d.product == nil {
			return nil, fmt.Errorf("GPU %d: MIG instances on a GPU without MIG", g.Index)
		}
		idx, ok := d.product.ProfileByID(gi.ProfileID)
		if !ok {
			return nil, fmt.Errorf("GPU %d: GPU instance %d: profile id %d is not a %s profile", g.Index, gi.GPUInstanceID, gi.ProfileID, d.product.Key)
		}
		pr := &d.product.Profiles[idx]
		in := Instance{NVMLProfile: pr.NVMLProfile, Placement: mig.Placement{Start: gi.Start, Size: gi.Size}}
		for _, ci := range gi.ComputeInstances {
			c := pr.ComputeSlices
			if mp, err := mig.ParseMigProfile(ci.Profile); err == nil {
				c = mp.C
			}
			in.CISlices = append(in.CISlices, c)
		}
		if err := d.check(in); err != nil {
			return nil, fmt.Errorf("GPU %d: GPU instance %d: %w", g.Index, gi.GPUInstanceID, err)
		}
		d.insts = append(d.insts, in)
	}
	return d, nil
}

// Info implements Device.
func (d *FakeDevice) Info() Info { return d.info }

// MIGMode implements Device.
func (d *FakeDevice) MIGMode(context.Context) (bool, bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.info.MIGCapable {
		return false, false, mig.ErrNotMIGCapable
	}
	return d.current, d.pending, nil
}

// SetMIGMode implements Device.
func (d *FakeDevice) SetMIGMode(_ context.Context, on bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.info.MIGCapable {
		return mig.ErrNotMIGCapable
	}
	if len(d.insts) > 0 && !on {
		return fmt.Errorf("GPU %d: in use by MIG instances", d.info.Index)
	}
	d.pending = on
	if !d.ResetNeeded {
		d.current = on
	}
	return nil
}

// Instances implements Device.
func (d *FakeDevice) Instances(context.Context) ([]Instance, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]Instance, len(d.insts))
	for i, in := range d.insts {
		in.CISlices = append([]int(nil), in.CISlices...)
		out[i] = in
	}
	return out, nil
}

// DestroyAll implements Device.
func (d *FakeDevice) DestroyAll(context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.insts = nil
	return nil
}

func (d *FakeDevice) check(in Instance) error {
	pr, ok := profileByEnum(d.product, in.NVMLProfile)
	if !ok {
		return fmt.Errorf("profile enum %d not supported", in.NVMLProfile)
	}
	okPl := in.Placement.Size == pr.MemorySlices
	if okPl {
		okPl = false
		for _, s := range pr.Starts {
			okPl = okPl || s == in.Placement.Start
		}
	}
	if !okPl {
		return fmt.Errorf("%s: placement %s not in %s: Invalid Argument", pr.Name, in.Placement, pr.PlacementString())
	}
	n, compute := 0, pr.ComputeSlices
	for _, o := range d.insts {
		if o.NVMLProfile == in.NVMLProfile {
			n++
		}
		op, _ := profileByEnum(d.product, o.NVMLProfile)
		compute += op.ComputeSlices
		if o.Placement.Start < in.Placement.Start+in.Placement.Size && in.Placement.Start < o.Placement.Start+o.Placement.Size {
			return fmt.Errorf("%s at %s overlaps %s at %s: Insufficient Resources", pr.Name, in.Placement, op.Name, o.Placement)
		}
	}
	if n >= pr.MaxCount {
		return fmt.Errorf("%s: at most %d: Insufficient Resources", pr.Name, pr.MaxCount)
	}
	if compute > d.product.ComputeSlices {
		return fmt.Errorf("%s: compute slices exhausted: Insufficient Resources", pr.Name)
	}
	for _, c := range in.CISlices {
		if c <= 0 || c > pr.ComputeSlices {
			return fmt.Errorf("%s: compute instance of %d slices: Invalid Argument", pr.Name, c)
		}
	}
	return nil
}

// Create implements Device.
func (d *FakeDevice) Create(_ context.Context, nvmlProfile int, pl mig.Placement, ciSlices int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.info.MIGCapable || !d.current {
		return fmt.Errorf("GPU %d: MIG mode is not enabled", d.info.Index)
	}
	in := Instance{NVMLProfile: nvmlProfile, Placement: pl}
	if pr, ok := profileByEnum(d.product, nvmlProfile); ok {
		if ciSlices == 0 {
			ciSlices = pr.ComputeSlices
		}
	}
	in.CISlices = []int{ciSlices}
	if err := d.check(in); err != nil {
		return err
	}
	d.insts = append(d.insts, in)
	return nil
}

// ProfileInfos implements Device: the fake serves its catalogue product,
// so it reports nothing live.
func (d *FakeDevice) ProfileInfos(context.Context) ([]mig.NVMLProfileInfo, error) { return nil, nil }
