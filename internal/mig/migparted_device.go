package mig

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// DeviceID is a GPU's PCI identity as mig-parted device filters name it:
// device and vendor ("0x233010DE" is device 0x2330 of vendor 0x10DE),
// optionally qualified by the board's subsystem device and vendor
// ("0x233010DE:0x16C110DE").
type DeviceID struct {
	Device, Vendor                   uint16
	SubsystemDevice, SubsystemVendor uint16
	HasSubsystem                     bool
}

// String renders the id the way filters spell it, upper-case hex.
func (d DeviceID) String() string {
	if d.HasSubsystem {
		return fmt.Sprintf("0x%08X:0x%08X", d.primary(), d.subsystem())
	}
	return fmt.Sprintf("0x%08X", d.primary())
}

// primary and subsystem pack each device/vendor pair into the one 32-bit
// number a filter writes.
func (d DeviceID) primary() uint32 { return uint32(d.Device)<<16 | uint32(d.Vendor) }
func (d DeviceID) subsystem() uint32 {
	return uint32(d.SubsystemDevice)<<16 | uint32(d.SubsystemVendor)
}

// ParseFilterDeviceID reads one device-filter item. Each half is a number
// in Go syntax (strconv.ParseInt, base 0, 32 bits signed), so "0x233010DE",
// "590352606" and "0x2330_10DE" are the same id; the device is the upper
// and the vendor the lower 16 bits. This is what current mig-parted does.
func ParseFilterDeviceID(s string) (DeviceID, error) {
	primary, sub, qualified := strings.Cut(s, ":")
	if qualified && strings.Contains(sub, ":") {
		return DeviceID{}, fmt.Errorf(quoteDeviceIDShape, s)
	}
	var id DeviceID
	var err error
	if id.Device, id.Vendor, err = pciPair(primary); err != nil {
		return DeviceID{}, fmt.Errorf(quoteDeviceIDNumber, s, err)
	}
	if qualified {
		if id.SubsystemDevice, id.SubsystemVendor, err = pciPair(sub); err != nil {
			return DeviceID{}, fmt.Errorf(quoteSubsystemIDNumber, s, err)
		}
		id.HasSubsystem = true
	}
	return id, nil
}

// pciPair splits a 32-bit "device<<16 | vendor" number. A negative number
// is taken in two's complement, as mig-parted's conversion does.
func pciPair(s string) (hi, lo uint16, err error) {
	v, err := strconv.ParseInt(s, 0, 32)
	if err != nil {
		return 0, 0, err
	}
	u := uint32(v)
	return uint16(u >> 16), uint16(u), nil
}

// Matches reports whether filter id d selects the GPU hw: device and vendor
// agree and, when d names a subsystem, the subsystem agrees too. A filter
// without a subsystem selects every board of that device.
func (d DeviceID) Matches(hw DeviceID) bool {
	return d.primary() == hw.primary() && (!d.HasSubsystem || d.subsystem() == hw.subsystem())
}

// DeviceFilter is an entry's "device-filter": the PCI ids written there.
// Single records that the file wrote one bare string rather than a list,
// so that the entry is written back the same way.
type DeviceFilter struct {
	IDs    []string
	Single bool
}

// DeviceSelector is an entry's "devices": every GPU ("all") or the GPUs at
// the listed indices (which may be empty or name GPUs a node lacks).
type DeviceSelector struct {
	All     bool
	Indices []int
}

// Selects reports whether GPU index i is selected.
func (s DeviceSelector) Selects(i int) bool { return s.All || slices.Contains(s.Indices, i) }

// String renders "all" or "[0,1]".
func (s DeviceSelector) String() string {
	if s.All {
		return "all"
	}
	b := []byte{'['}
	for i, d := range s.Indices {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(d), 10)
	}
	return string(append(b, ']'))
}

// Filters returns the entry's device-filter ids; none means every GPU.
func (ms *MigConfigSpec) Filters() []string {
	return ms.DeviceFilter.IDs
}

// MatchesDeviceFilter reports whether the entry's device-filter selects a
// GPU with id hw. An item that does not parse selects nothing (mig-parted
// ignores the parse error the same way; Validate warns about it).
func (ms *MigConfigSpec) MatchesDeviceFilter(hw DeviceID) bool {
	selects := func(item string) bool {
		f, err := ParseFilterDeviceID(item)
		return err == nil && f.Matches(hw)
	}
	return len(ms.DeviceFilter.IDs) == 0 || slices.ContainsFunc(ms.DeviceFilter.IDs, selects)
}

// MatchesAllDevices reports "devices: all".
func (ms *MigConfigSpec) MatchesAllDevices() bool { return ms.Devices.All }

// MatchesDevices reports whether the entry's devices select GPU index i.
func (ms *MigConfigSpec) MatchesDevices(i int) bool { return ms.Devices.Selects(i) }

// DevicesString renders the devices field ("all" or "[0,1]").
func (ms *MigConfigSpec) DevicesString() string { return ms.Devices.String() }
