package gpu

import (
	"context"
	"errors"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/topo"
)

// Source is the GPU layer's check.Source for 'gpunode audit': the checks
// of Audit, with the CUDA runtime, forward-compatibility packages and the
// NVIDIA functions on the PCI bus read from FS. It reads, never writes.
type Source struct {
	Backend Backend
	// FS is the host (nil: nothing is read from it).
	FS *hostfs.FS
	// CUDARuntime overrides the detected CUDA runtime version; it must be
	// valid (ParseCUDARuntime), which the caller checks as a usage error.
	CUDARuntime string
}

var (
	_ check.Source    = Source{}
	_ check.Describer = Source{}
	_ check.Named     = Source{}
)

// Name implements check.Named.
func (Source) Name() string { return Layer }

// Describe implements check.Describer.
func (Source) Describe() []check.Description { return Describe() }

// Checks implements check.Source.
func (s Source) Checks(ctx context.Context) ([]check.Check, error) {
	b := s.Backend
	if b == nil {
		b = NewNone("no GPU backend")
	}
	st, err := b.Status(ctx)
	if c, ok := CallCheck(err); ok {
		// A wedged driver is a finding of the audit, not its failure.
		return []check.Check{c}, nil
	}
	if err != nil {
		return nil, err
	}
	o, err := s.Options()
	if err != nil {
		return nil, err
	}
	if s.FS != nil {
		Annotate(s.FS, &st)
	}
	return append(Audit(st, o), HealthChecks(st, HealthOptions{Host: s.FS})...), nil
}

// Options reads what Audit needs from the host besides the backend's
// status.
func (s Source) Options() (AuditOptions, error) {
	o, err := RuntimeOptions(s.FS, s.CUDARuntime)
	if err != nil {
		return o, err
	}
	if s.FS == nil {
		return o, nil
	}
	o.ForwardCompat = FindForwardCompat(s.FS)
	o.PCIFunctions, _ = NVIDIAFunctions(s.FS)
	return o, nil
}

// PCIFunction is an NVIDIA GPU function on the PCI bus.
type PCIFunction struct {
	BDF string `json:"bdf"`
	// Driver is the kernel driver bound to it ("nvidia", "vfio-pci"; ""
	// for none).
	Driver string `json:"driver,omitempty"`
}

// maxPCIDevices bounds the PCI devices NVIDIAFunctions looks at.
const maxPCIDevices = 4096

// NVIDIAFunctions lists the NVIDIA display/3D controllers (vendor 0x10de,
// class 0x03xxxx) under /sys/bus/pci/devices, in bdf order. Functions
// bound to vfio-pci are handed to VMs and left out.
func NVIDIAFunctions(host *hostfs.FS) ([]PCIFunction, error) {
	const dir = "/sys/bus/pci/devices"
	names, err := host.ReadDirNames(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	if len(names) > maxPCIDevices {
		names = names[:maxPCIDevices]
	}
	var out []PCIFunction
	for _, n := range names {
		ids, err := topo.ReadPCIIDs(host, path.Join(dir, n))
		if err != nil || ids.Vendor != topo.VendorNVIDIA || !strings.HasPrefix(ids.Class, "0x03") {
			continue
		}
		f := PCIFunction{BDF: n}
		if t, err := host.Readlink(path.Join(dir, n, "driver")); err == nil {
			f.Driver = path.Base(t)
		}
		if f.Driver == "vfio-pci" {
			continue
		}
		out = append(out, f)
	}
	return out, nil
}

// ForwardCompat is an installed CUDA forward-compatibility package: a
// compat directory holding libcuda.so from a newer driver.
type ForwardCompat struct {
	Dir          string `json:"dir"`
	Major, Minor int
}

// FindForwardCompat finds /usr/local/cuda-M.m/compat directories with a
// libcuda.so (NVIDIA's cuda-compat-M-m packages install there), newest
// first.
func FindForwardCompat(host *hostfs.FS) []ForwardCompat {
	names, err := host.ReadDirNames("/usr/local")
	if err != nil {
		return nil
	}
	var out []ForwardCompat
	for i, n := range names {
		if i >= 256 {
			break
		}
		v, ok := strings.CutPrefix(n, "cuda-")
		if !ok {
			continue
		}
		ma, mi, err := parseMajorMinor(v)
		if err != nil {
			continue
		}
		dir := "/usr/local/" + n + "/compat"
		libs, err := host.ReadDirNames(dir)
		if err != nil {
			continue
		}
		for _, l := range libs {
			if strings.HasPrefix(l, "libcuda.so") {
				out = append(out, ForwardCompat{Dir: dir, Major: ma, Minor: mi})
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Major != out[j].Major {
			return out[i].Major > out[j].Major
		}
		return out[i].Minor > out[j].Minor
	})
	return out
}

// orDash returns s, or "-" when s is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
