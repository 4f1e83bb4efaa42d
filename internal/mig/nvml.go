package mig

import (
	"fmt"
	"math"
	"math/bits"
	"sort"
)

// NVMLProfileInfo is what a live backend reads for one GI profile with
// nvmlDeviceGetGpuInstanceProfileInfo and
// nvmlDeviceGetGpuInstancePossiblePlacements.
type NVMLProfileInfo struct {
	// NVMLProfile is the enum the info was queried with
	// (GPU_INSTANCE_PROFILE_1_SLICE = 0, ..._1_SLICE_REV1 = 7, ...).
	NVMLProfile int
	// ID is info.Id (the -lgip profile ID).
	ID                  int
	SliceCount          int
	InstanceCount       int
	MultiprocessorCount int
	MemorySizeMB        uint64
	Placements          []Placement
	// ComputeInstances are the CI profiles the GI supports; empty means
	// "derive them from the slice count".
	ComputeInstances []NVMLCIInfo
}

// NVMLCIInfo is one compute-instance profile of a GI profile.
type NVMLCIInfo struct {
	SliceCount    int
	InstanceCount int
	Placements    []Placement
}

// MigMemoryGB is the GB figure in a GI profile's name ("3g.40gb"), as
// mig-parted and nvidia-smi print it: the GI's share of device memory is
// rounded up to whole eighths, and that many eighths of the device's memory
// in GB (rounded up to a whole GB) are rounded to the nearest GB, halves up.
// The arithmetic is in integers, 128 bits wide where a product could
// overflow.
func MigMemoryGB(totalDeviceBytes, migMemoryMB uint64) int {
	if totalDeviceBytes == 0 {
		return 0
	}
	const oneMB, oneGB = 1 << 20, 1 << 30
	// eighths = ceil(migMemoryMB * 1 MiB * 8 / totalDeviceBytes)
	hi, lo := bits.Mul64(migMemoryMB, 8*oneMB)
	if hi >= totalDeviceBytes {
		return math.MaxInt // a share past 2^64 eighths: nothing real
	}
	eighths, rem := bits.Div64(hi, lo, totalDeviceBytes)
	if rem != 0 {
		eighths++
	}
	totalGB := totalDeviceBytes/oneGB + min(totalDeviceBytes%oneGB, 1)
	// round(eighths * totalGB / 8) = floor((eighths*totalGB + 4) / 8)
	hi, lo = bits.Mul64(eighths, totalGB)
	lo, carry := bits.Add64(lo, 4, 0)
	hi += carry
	if hi >= 8 {
		return math.MaxInt
	}
	gb, _ := bits.Div64(hi, lo, 8)
	return int(min(gb, math.MaxInt))
}

// ProductFromNVML builds a product from live NVML data, for Catalogue.With.
// base (may be nil) supplies the key, names and aliases of the catalogued
// product with the same device id; name is the device name NVML reports and
// totalMemoryBytes its memory. Profiles NVML reports as unsupported should
// be left out of infos.
func ProductFromNVML(base *Product, name string, deviceID uint16, totalMemoryBytes uint64, infos []NVMLProfileInfo) (Product, error) {
	p := Product{Key: name, Names: []string{name}, DeviceIDs: []uint16{deviceID}, Source: "nvml"}
	if base != nil {
		p.Key, p.Names, p.Aliases = base.Key, base.Names, base.Aliases
		p.DeviceIDs = append([]uint16(nil), base.DeviceIDs...)
		found := false
		for _, d := range p.DeviceIDs {
			found = found || d == deviceID
		}
		if !found {
			p.DeviceIDs = append(p.DeviceIDs, deviceID)
		}
	}
	sorted := append([]NVMLProfileInfo(nil), infos...)
	sort.SliceStable(sorted, func(a, b int) bool { return sorted[a].NVMLProfile < sorted[b].NVMLProfile })
	for _, in := range sorted {
		if len(in.Placements) == 0 {
			return Product{}, fmt.Errorf("nvml: profile %d (enum %d) has no placements", in.ID, in.NVMLProfile)
		}
		size := in.Placements[0].Size
		var starts []int
		for _, pl := range in.Placements {
			if pl.Size != size {
				return Product{}, fmt.Errorf("nvml: profile %d has placements of sizes %d and %d", in.ID, size, pl.Size)
			}
			starts = append(starts, pl.Start)
			p.MemorySlices = max(p.MemorySlices, pl.Start+pl.Size)
		}
		p.ComputeSlices = max(p.ComputeSlices, in.SliceCount)
		gb := MigMemoryGB(totalMemoryBytes, in.MemorySizeMB)
		me := in.NVMLProfile == nvmlGI1SliceRev1 || in.NVMLProfile == nvmlGI2SliceRev1
		pname := fmt.Sprintf("%dg.%dgb", in.SliceCount, gb)
		if me {
			pname += "+me"
			p.MediaExtensionLimit = 1
		}
		pr := Profile{ID: in.ID, NVMLProfile: in.NVMLProfile, Name: pname, ComputeSlices: in.SliceCount,
			MemorySlices: size, MemoryGB: gb, MaxCount: in.InstanceCount, Starts: starts,
			SMs: in.MultiprocessorCount, MediaExtensions: me}
		if len(in.ComputeInstances) == 0 {
			pr.ComputeInstances = ciOptions(in.SliceCount, pname)
		}
		seenCI := map[int]bool{}
		for _, ci := range in.ComputeInstances {
			if seenCI[ci.SliceCount] { // 1_SLICE and 1_SLICE_REV1 name the same CI
				continue
			}
			seenCI[ci.SliceCount] = true
			cp := CIProfile{ComputeSlices: ci.SliceCount, MaxCount: ci.InstanceCount, Default: ci.SliceCount == in.SliceCount}
			cp.Name = pname
			if !cp.Default {
				cp.Name = fmt.Sprintf("%dc.%s", ci.SliceCount, pname)
			}
			for _, pl := range ci.Placements {
				cp.Starts = append(cp.Starts, pl.Start)
			}
			pr.ComputeInstances = append(pr.ComputeInstances, cp)
		}
		p.Profiles = append(p.Profiles, pr)
	}
	if p.MediaExtensionLimit == 0 {
		p.MediaExtensionLimit = 1
	}
	if err := p.Validate(); err != nil {
		return Product{}, fmt.Errorf("nvml: %w", err)
	}
	return p, nil
}
