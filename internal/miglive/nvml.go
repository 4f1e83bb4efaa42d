//go:build linux && cgo

package miglive

import (
	"context"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/mig"
)

// nvmlDevicesOf returns the MIG devices of an NVML backend (ok false for
// other backends).
func nvmlDevicesOf(b gpu.Backend) ([]Device, bool, error) {
	n, ok := b.(gpu.NVMLer)
	if !ok {
		return nil, false, nil
	}
	devs, err := NVMLDevices(n.NVML())
	return devs, true, err
}

// nvmlDevice is a Device over go-nvml (the real library or its mock).
type nvmlDevice struct {
	dev  nvml.Device
	info Info
}

var _ Device = (*nvmlDevice)(nil)

// NVMLDevices returns a Device for every GPU of an initialised NVML (the
// caller owns Init/Shutdown).
func NVMLDevices(lib nvml.Interface) ([]Device, error) {
	n, ret := gpu.NVMLCall(lib.DeviceGetCount)
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("nvml: device count: %w", ret)
	}
	var out []Device
	for i := 0; i < n; i++ {
		dev, ret := gpu.NVMLCall(func() (nvml.Device, nvml.Return) { return lib.DeviceGetHandleByIndex(i) })
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("nvml: GPU %d: %w", i, ret)
		}
		info := Info{Index: i}
		info.UUID, _ = gpu.NVMLCall(dev.GetUUID)
		info.Name, _ = gpu.NVMLCall(dev.GetName)
		if p, ret := gpu.NVMLCall(dev.GetPciInfo); ret == nvml.SUCCESS {
			info.DeviceID = mig.DeviceID{Device: uint16(p.PciDeviceId >> 16), Vendor: uint16(p.PciDeviceId)}
		}
		if m, ret := gpu.NVMLCall(dev.GetMemoryInfo); ret == nvml.SUCCESS {
			info.MemoryBytes = m.Total
		}
		_, _, ret = gpu.NVMLCall2(dev.GetMigMode)
		info.MIGCapable = ret == nvml.SUCCESS
		out = append(out, &nvmlDevice{dev: dev, info: info})
	}
	return out, nil
}

func (d *nvmlDevice) Info() Info { return d.info }

func (d *nvmlDevice) MIGMode(context.Context) (bool, bool, error) {
	cur, pend, ret := gpu.NVMLCall2(d.dev.GetMigMode)
	if ret != nvml.SUCCESS {
		return false, false, fmt.Errorf("nvml: GPU %d: MIG mode: %w", d.info.Index, ret)
	}
	return cur == nvml.DEVICE_MIG_ENABLE, pend == nvml.DEVICE_MIG_ENABLE, nil
}

func (d *nvmlDevice) SetMIGMode(_ context.Context, on bool) error {
	mode := nvml.DEVICE_MIG_DISABLE
	if on {
		mode = nvml.DEVICE_MIG_ENABLE
	}
	var activation nvml.Return
	ret := gpu.NVMLCallRet(func() nvml.Return {
		var r nvml.Return
		activation, r = d.dev.SetMigMode(mode)
		return r
	})
	if ret != nvml.SUCCESS {
		return fmt.Errorf("nvml: GPU %d: set MIG mode %v: %w", d.info.Index, on, ret)
	}
	// activation != SUCCESS (e.g. ERROR_IN_USE) means the mode is pending a
	// reset; MIGMode shows it as current != pending.
	_ = activation
	return nil
}

// giEnums are the GPU_INSTANCE_PROFILE_* values to scan.
func giEnums() []int {
	out := make([]int, nvml.GPU_INSTANCE_PROFILE_COUNT)
	for i := range out {
		out[i] = i
	}
	return out
}

// ciEnumBySlices maps compute slices to COMPUTE_INSTANCE_PROFILE_* values.
var ciEnumBySlices = map[int]int{
	1: nvml.COMPUTE_INSTANCE_PROFILE_1_SLICE, 2: nvml.COMPUTE_INSTANCE_PROFILE_2_SLICE,
	3: nvml.COMPUTE_INSTANCE_PROFILE_3_SLICE, 4: nvml.COMPUTE_INSTANCE_PROFILE_4_SLICE,
	6: nvml.COMPUTE_INSTANCE_PROFILE_6_SLICE, 7: nvml.COMPUTE_INSTANCE_PROFILE_7_SLICE,
	8: nvml.COMPUTE_INSTANCE_PROFILE_8_SLICE,
}

// gis lists the GPU instances of every GI profile the GPU reports.
func (d *nvmlDevice) gis() map[int][]nvml.GpuInstance {
	out := map[int][]nvml.GpuInstance{}
	for _, e := range giEnums() {
		info, ret := gpu.NVMLCall(func() (nvml.GpuInstanceProfileInfo, nvml.Return) { return d.dev.GetGpuInstanceProfileInfo(e) })
		if ret != nvml.SUCCESS {
			continue
		}
		gis, ret := gpu.NVMLCall(func() ([]nvml.GpuInstance, nvml.Return) { return d.dev.GetGpuInstances(&info) })
		if ret != nvml.SUCCESS {
			continue
		}
		out[e] = gis
	}
	return out
}

func (d *nvmlDevice) cis(gi nvml.GpuInstance) map[int][]nvml.ComputeInstance {
	out := map[int][]nvml.ComputeInstance{}
	seen := map[uint32]bool{}
	for slices, e := range ciEnumBySlices {
		info, ret := gpu.NVMLCall(func() (nvml.ComputeInstanceProfileInfo, nvml.Return) {
			return gi.GetComputeInstanceProfileInfo(e, nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
		})
		if ret != nvml.SUCCESS || seen[info.Id] {
			continue
		}
		seen[info.Id] = true
		cis, ret := gpu.NVMLCall(func() ([]nvml.ComputeInstance, nvml.Return) { return gi.GetComputeInstances(&info) })
		if ret == nvml.SUCCESS && len(cis) > 0 {
			out[slices] = cis
		}
	}
	return out
}

func (d *nvmlDevice) Instances(context.Context) ([]Instance, error) {
	all := d.gis()
	var out []Instance
	for _, e := range giEnums() {
		for _, gi := range all[e] {
			info, ret := gpu.NVMLCall(gi.GetInfo)
			if ret != nvml.SUCCESS {
				return nil, fmt.Errorf("nvml: GPU %d: GPU instance info: %w", d.info.Index, ret)
			}
			in := Instance{NVMLProfile: e, Placement: mig.Placement{Start: int(info.Placement.Start), Size: int(info.Placement.Size)}}
			cis := d.cis(gi)
			for _, s := range []int{1, 2, 3, 4, 6, 7, 8} {
				for range cis[s] {
					in.CISlices = append(in.CISlices, s)
				}
			}
			out = append(out, in)
		}
	}
	return out, nil
}

func (d *nvmlDevice) DestroyAll(context.Context) error {
	for _, gis := range d.gis() {
		for _, gi := range gis {
			for _, cis := range d.cis(gi) {
				for _, ci := range cis {
					if ret := gpu.NVMLCallRet(ci.Destroy); ret != nvml.SUCCESS {
						return fmt.Errorf("nvml: GPU %d: destroy compute instance: %w", d.info.Index, ret)
					}
				}
			}
			if ret := gpu.NVMLCallRet(gi.Destroy); ret != nvml.SUCCESS {
				return fmt.Errorf("nvml: GPU %d: destroy GPU instance: %w", d.info.Index, ret)
			}
		}
	}
	return nil
}

func (d *nvmlDevice) Create(_ context.Context, nvmlProfile int, pl mig.Placement, ciSlices int) error {
	info, ret := gpu.NVMLCall(func() (nvml.GpuInstanceProfileInfo, nvml.Return) { return d.dev.GetGpuInstanceProfileInfo(nvmlProfile) })
	if ret != nvml.SUCCESS {
		return fmt.Errorf("nvml: GPU %d: GPU instance profile %d: %w", d.info.Index, nvmlProfile, ret)
	}
	p := nvml.GpuInstancePlacement{Start: uint32(pl.Start), Size: uint32(pl.Size)}
	gi, ret := gpu.NVMLCall(func() (nvml.GpuInstance, nvml.Return) { return d.dev.CreateGpuInstanceWithPlacement(&info, &p) })
	if ret != nvml.SUCCESS {
		return fmt.Errorf("nvml: GPU %d: create GPU instance (profile %d at %s): %w", d.info.Index, info.Id, pl, ret)
	}
	if ciSlices == 0 {
		ciSlices = int(info.SliceCount)
	}
	e, ok := ciEnumBySlices[ciSlices]
	if !ok {
		return fmt.Errorf("nvml: GPU %d: no compute instance profile of %d slices", d.info.Index, ciSlices)
	}
	ciInfo, ret := gpu.NVMLCall(func() (nvml.ComputeInstanceProfileInfo, nvml.Return) {
		return gi.GetComputeInstanceProfileInfo(e, nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
	})
	if ret == nvml.SUCCESS {
		_, ret = gpu.NVMLCall(func() (nvml.ComputeInstance, nvml.Return) { return gi.CreateComputeInstance(&ciInfo) })
	}
	if ret != nvml.SUCCESS {
		_ = gpu.NVMLCallRet(gi.Destroy)
		return fmt.Errorf("nvml: GPU %d: create %d-slice compute instance: %w", d.info.Index, ciSlices, ret)
	}
	return nil
}

func (d *nvmlDevice) ProfileInfos(context.Context) ([]mig.NVMLProfileInfo, error) {
	var out []mig.NVMLProfileInfo
	for _, e := range giEnums() {
		info, ret := gpu.NVMLCall(func() (nvml.GpuInstanceProfileInfo, nvml.Return) { return d.dev.GetGpuInstanceProfileInfo(e) })
		if ret != nvml.SUCCESS {
			continue
		}
		pls, ret := gpu.NVMLCall(func() ([]nvml.GpuInstancePlacement, nvml.Return) {
			return d.dev.GetGpuInstancePossiblePlacements(&info)
		})
		if ret != nvml.SUCCESS || len(pls) == 0 {
			continue
		}
		pi := mig.NVMLProfileInfo{NVMLProfile: e, ID: int(info.Id), SliceCount: int(info.SliceCount),
			InstanceCount: int(info.InstanceCount), MultiprocessorCount: int(info.MultiprocessorCount), MemorySizeMB: info.MemorySizeMB}
		for _, p := range pls {
			pi.Placements = append(pi.Placements, mig.Placement{Start: int(p.Start), Size: int(p.Size)})
		}
		out = append(out, pi)
	}
	return out, nil
}
