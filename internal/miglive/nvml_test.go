//go:build linux && cgo

package miglive

import (
	"context"
	"reflect"
	"sort"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"

	"github.com/gpunode/gpunode/internal/mig"
)

// TestNVMLDGXA100: apply, assert and export against go-nvml's DGX A100 mock
// server (whose placements are right, but which accepts any placement): the
// GPU instances must be created with the planner's explicit placements.
func TestNVMLDGXA100(t *testing.T) {
	ctx := context.Background()
	srv := dgxa100.New()
	type created struct {
		gpu     int
		profile uint32
		start   uint32
		size    uint32
	}
	var calls []created
	for i, d := range srv.Devices {
		dev := d.(*dgxa100.Device)
		orig := dev.CreateGpuInstanceWithPlacementFunc
		dev.CreateGpuInstanceFunc = func(*nvml.GpuInstanceProfileInfo) (nvml.GpuInstance, nvml.Return) {
			t.Fatal("CreateGpuInstance without a placement")
			return nil, nvml.ERROR_UNKNOWN
		}
		dev.CreateGpuInstanceWithPlacementFunc = func(info *nvml.GpuInstanceProfileInfo, p *nvml.GpuInstancePlacement) (nvml.GpuInstance, nvml.Return) {
			calls = append(calls, created{i, info.Id, p.Start, p.Size})
			return orig(info, p)
		}
	}
	devs, err := NVMLDevices(srv)
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 8 || !devs[0].Info().MIGCapable || devs[0].Info().DeviceID.Device != 0x20B0 {
		t.Fatalf("devices: %d %+v", len(devs), devs[0].Info())
	}
	cat := mig.Builtin()
	p, err := Product(ctx, cat, devs[0])
	if err != nil {
		t.Fatal(err)
	}
	if p.Source != "nvml" || p.Key != "A100-40GB" {
		t.Errorf("live product %s from %s", p.Key, p.Source)
	}
	var names []string
	for _, pr := range p.Profiles {
		names = append(names, pr.Name)
	}
	sort.Strings(names)
	if want := []string{"1g.10gb", "1g.5gb", "1g.5gb+me", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"}; !reflect.DeepEqual(names, want) {
		t.Errorf("live profile names %v, want %v", names, want)
	}
	s := spec(t)
	res, err := Apply(ctx, cat, devs, s, Options{Label: "all-balanced", Host: tmpHost(t), JournalDir: "/j"})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range res.Devices {
		if d.Status != StatusApplied || d.ModeChange != "off -> on" {
			t.Errorf("GPU %d: %+v", d.GPU, d)
		}
	}
	if len(calls) != 32 {
		t.Fatalf("%d GPU instances created, want 32", len(calls))
	}
	// GPU 0: larger instances first (3g = enum 2, 2g = enum 1, 1g = enum
	// 0), each at a placement the profile allows, none overlapping.
	allowed := map[uint32][]uint32{2: {0, 4}, 1: {0, 2, 4}, 0: {0, 1, 2, 3, 4, 5, 6}}
	sizes := map[uint32]uint32{2: 4, 1: 2, 0: 1}
	used := map[uint32]bool{}
	for i, c := range calls[:4] {
		if i > 0 && c.profile > calls[i-1].profile {
			t.Errorf("creation order %+v: not largest first", calls[:4])
		}
		ok := c.size == sizes[c.profile]
		okStart := false
		for _, s := range allowed[c.profile] {
			okStart = okStart || s == c.start
		}
		if !ok || !okStart {
			t.Errorf("placement %+v not allowed", c)
		}
		for s := c.start; s < c.start+c.size; s++ {
			if used[s] {
				t.Fatalf("overlap on GPU 0: %+v", calls[:4])
			}
			used[s] = true
		}
	}
	a, err := Assert(ctx, cat, devs, s, "f", "all-balanced")
	if err != nil || !a.Applied {
		t.Fatalf("assert: %+v %v", a, err)
	}
	ex, err := Export(ctx, cat, devs, "current")
	if err != nil {
		t.Fatal(err)
	}
	cfg := ex.MigConfigs["current"]
	if len(cfg) != 1 || !cfg[0].Devices.All || !configsEqual(cfg[0].MigDevices, mig.MigConfig{"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}) {
		t.Errorf("export %+v", cfg)
	}
	// Switch to another layout: old instances are destroyed first.
	if _, err := Apply(ctx, cat, devs, s, Options{Label: "half", Host: tmpHost(t), JournalDir: "/j"}); err != nil {
		t.Fatal(err)
	}
	p0, _ := Product(ctx, cat, devs[0])
	got, err := Config(ctx, p0, devs[0])
	if err != nil || !reflect.DeepEqual(got, mig.MigConfig{"7g.40gb": 1}) {
		t.Errorf("GPU 0 after half: %v %v", got, err)
	}
}
