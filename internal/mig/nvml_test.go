package mig

import (
	"fmt"
	"math"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
)

// TestProductFromNVMLMatchesBuiltin feeds go-nvml's A100 mock data (whose
// placements are right) through ProductFromNVML and compares the result
// with the built-in catalogue.
func TestProductFromNVMLMatchesBuiltin(t *testing.T) {
	c := Builtin()
	for _, tc := range []struct {
		cfg gpus.Config
		key string
	}{{gpus.A100_SXM4_40GB, "A100-40GB"}, {gpus.A100_SXM4_80GB, "A100-80GB"}} {
		base, err := c.ByDeviceID(uint16(tc.cfg.PciDeviceId >> 16))
		if err != nil || base.Key != tc.key {
			t.Fatalf("%s: %v %v", tc.cfg.Name, base, err)
		}
		var infos []NVMLProfileInfo
		for enum, info := range tc.cfg.MIGProfiles.GpuInstanceProfiles {
			in := NVMLProfileInfo{NVMLProfile: enum, ID: int(info.Id), SliceCount: int(info.SliceCount),
				InstanceCount: int(info.InstanceCount), MultiprocessorCount: int(info.MultiprocessorCount),
				MemorySizeMB: info.MemorySizeMB}
			for _, pl := range tc.cfg.MIGProfiles.GpuInstancePlacements[enum] {
				in.Placements = append(in.Placements, Placement{int(pl.Start), int(pl.Size)})
			}
			infos = append(infos, in)
		}
		p, err := ProductFromNVML(base, tc.cfg.Name, uint16(tc.cfg.PciDeviceId>>16), tc.cfg.MemoryMB<<20, infos)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Profiles) != len(base.Profiles) || p.MemorySlices != 8 || p.ComputeSlices != 7 {
			t.Fatalf("%s: %d profiles, %d/%d slices", tc.key, len(p.Profiles), p.ComputeSlices, p.MemorySlices)
		}
		for _, want := range base.Profiles {
			i, ok := p.Profile(want.Name)
			if !ok {
				t.Errorf("%s: NVML data lacks %s", tc.key, want.Name)
				continue
			}
			got := p.Profiles[i]
			if got.NVMLProfile != want.NVMLProfile || got.ComputeSlices != want.ComputeSlices || got.MemorySlices != want.MemorySlices ||
				got.MaxCount != want.MaxCount || fmt.Sprint(got.Starts) != fmt.Sprint(want.Starts) || got.SMs != want.SMs ||
				got.MediaExtensions != want.MediaExtensions {
				t.Errorf("%s %s: nvml %+v, builtin %+v", tc.key, want.Name, got, want)
			}
		}
		// The override plans like the builtin.
		c2, err := c.With(p)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := c2.Lookup(tc.key); got.Source != "nvml" {
			t.Fatalf("override not used: %+v", got)
		}
		if len(c2.space(&p).feasible) != len(c.space(base).feasible) {
			t.Errorf("%s: nvml data gives %d configurations, builtin %d", tc.key, len(c2.space(&p).feasible), len(c.space(base).feasible))
		}
	}
}

func TestMigMemoryGB(t *testing.T) {
	const mb = 1 << 20
	cases := []struct {
		total, mig uint64
		want       int
	}{
		{40960 * mb, 4864, 5}, {40960 * mb, 9856, 10}, {40960 * mb, 19968, 20}, {40960 * mb, 40192, 40},
		{81920 * mb, 9856, 10}, {81920 * mb, 40192, 40}, {81920 * mb, 80384, 80}, {0, 1, 0},
	}
	for _, tc := range cases {
		if got := MigMemoryGB(tc.total, tc.mig); got != tc.want {
			t.Errorf("MigMemoryGB(%d, %d) = %d, want %d", tc.total, tc.mig, got, tc.want)
		}
	}
}

// TestMigMemoryGBMatchesFloatFormula compares the integer arithmetic with the
// formula as mig-parted states it in floating point, over device sizes of 4
// to 192 GiB (in 1 GiB and odd 10 MiB steps) and every GI size in 64 MiB
// steps, plus the edges of whole eighths.
func TestMigMemoryGBMatchesFloatFormula(t *testing.T) {
	float := func(total, migMB uint64) int {
		frac := math.Ceil(float64(migMB)*(1<<20)/float64(total)*8) / 8
		return int(math.Round(frac * math.Ceil(float64(total)/(1<<30))))
	}
	n := 0
	for totalMB := uint64(4 << 10); totalMB <= 192<<10; totalMB += 1 << 10 {
		for _, total := range []uint64{totalMB << 20, (totalMB + 10) << 20, totalMB<<20 - 1} {
			for migMB := uint64(1); migMB <= total>>20; migMB += 64 {
				for _, m := range []uint64{migMB, total >> 23 * (migMB % 8)} {
					n++
					if got, want := MigMemoryGB(total, m), float(total, m); got != want {
						t.Fatalf("MigMemoryGB(%d, %d) = %d, float formula %d", total, m, got, want)
					}
				}
			}
		}
	}
	if n < 100000 {
		t.Fatalf("only %d cases", n)
	}
	if got := MigMemoryGB(1, math.MaxUint64); got != math.MaxInt {
		t.Errorf("overflowing share = %d, want MaxInt", got)
	}
}
