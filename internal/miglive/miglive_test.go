package miglive

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/journal"
	"github.com/gpunode/gpunode/internal/mig"
)

func spec(t *testing.T) *mig.MigPartedSpec {
	t.Helper()
	b, err := os.ReadFile("testdata/mig-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := mig.ParseMigParted(b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func fakeHost(t *testing.T, name string) (*hostfs.FS, gpu.Status) {
	t.Helper()
	h, err := hostfs.New(filepath.Join("..", "gpu", "testdata", "hosts", name))
	if err != nil {
		t.Fatal(err)
	}
	b, err := gpu.OpenFake(h, gpu.FakeFile)
	if err != nil {
		t.Fatal(err)
	}
	st, err := b.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return h, st
}

func fakeDevs(t *testing.T, name string) []Device {
	t.Helper()
	_, st := fakeHost(t, name)
	devs, err := FakeDevices(st, mig.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	return devs
}

func tmpHost(t *testing.T) *hostfs.FS {
	t.Helper()
	h, err := hostfs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestApplyAssertExportFake(t *testing.T) {
	ctx := context.Background()
	cat := mig.Builtin()
	devs := fakeDevs(t, "a100-mig")
	// GPU 1 has a pending disable in the fixture; make it a clean GPU.
	if err := devs[1].SetMIGMode(ctx, true); err != nil {
		t.Fatal(err)
	}
	s := spec(t)
	a, err := Assert(ctx, cat, devs, s, "f", "all-balanced")
	if err != nil || a.Applied {
		t.Fatalf("before apply: %+v %v", a, err)
	}
	h := tmpHost(t)
	res, err := Apply(ctx, cat, devs, s, Options{Label: "all-balanced", Host: h, JournalDir: "/var/lib/gpunode"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Journal == "" {
		t.Fatal("not journaled")
	}
	for _, d := range res.Devices {
		want := StatusApplied
		if d.GPU == 0 {
			want = StatusAlreadyApplied // the fixture's GPU 0 has this layout
		}
		if d.Status != want {
			t.Errorf("GPU %d: %s, want %s", d.GPU, d.Status, want)
		}
	}
	// Explicit placements, largest first.
	want := []Creation{
		{Order: 1, Profile: "3g.20gb", Placement: mig.Placement{Start: 0, Size: 4}},
		{Order: 2, Profile: "2g.10gb", Placement: mig.Placement{Start: 4, Size: 2}},
	}
	got := res.Devices[1].Create
	if len(got) != 4 || got[0].Profile != want[0].Profile || got[1].Profile != want[1].Profile || got[2].Profile != "1g.5gb" {
		t.Fatalf("create order %+v", got)
	}
	seen := map[int]bool{}
	for _, c := range got {
		for s := c.Placement.Start; s < c.Placement.Start+c.Placement.Size; s++ {
			if seen[s] {
				t.Fatalf("overlapping placements %+v", got)
			}
			seen[s] = true
		}
	}
	insts, _ := devs[3].Instances(ctx)
	if len(insts) != 4 {
		t.Fatalf("GPU 3 instances %+v", insts)
	}
	a, err = Assert(ctx, cat, devs, s, "f", "all-balanced")
	if err != nil || !a.Applied || len(a.Devices) != 8 {
		t.Fatalf("after apply: %+v %v", a, err)
	}
	// Idempotent: applying again changes nothing and journals nothing.
	res, err = Apply(ctx, cat, devs, s, Options{Label: "all-balanced", Host: h, JournalDir: "/var/lib/gpunode"})
	if err != nil || res.Journal != "" || res.Devices[0].Status != StatusAlreadyApplied {
		t.Fatalf("second apply: %+v %v", res, err)
	}
	// Export round-trips through mig-parted's parser and asserts.
	ex, err := Export(ctx, cat, devs, "current")
	if err != nil {
		t.Fatal(err)
	}
	b, err := yaml.Marshal(ex)
	if err != nil {
		t.Fatal(err)
	}
	want2 := "mig-configs:\n  current:\n  - devices: all\n    mig-devices:\n      1g.5gb: 2\n      2g.10gb: 1\n      3g.20gb: 1\n    mig-enabled: true\nversion: v1\n"
	if string(b) != want2 {
		t.Errorf("export:\n%s\nwant:\n%s", b, want2)
	}
	back, err := mig.ParseMigParted(b)
	if err != nil {
		t.Fatal(err)
	}
	if a, err := Assert(ctx, cat, devs, back, "export", "current"); err != nil || !a.Applied {
		t.Errorf("assert of export: %+v %v", a, err)
	}
}

func TestApplyRefusesBadLayouts(t *testing.T) {
	ctx := context.Background()
	cat := mig.Builtin()
	s := spec(t)
	for _, tc := range []struct {
		label string
		want  error
		text  string
	}{
		{"all-3g.20gb-plus-1g", nil, "does not fit"},
		{"unknown-profile", mig.ErrBadDemand, "4g.25gb"},
		{"no-such-label", mig.ErrNoSuchConfig, "selected mig-config not present"},
	} {
		devs := fakeDevs(t, "a100-mig")
		before, _ := devs[0].Instances(ctx)
		_, err := Apply(ctx, cat, devs, s, Options{Label: tc.label, Host: tmpHost(t), JournalDir: "/j"})
		if err == nil || !strings.Contains(err.Error(), tc.text) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s: %v, want %q", tc.label, err, tc.text)
		}
		after, _ := devs[0].Instances(ctx)
		if !reflect.DeepEqual(before, after) {
			t.Errorf("%s: GPU 0 was touched", tc.label)
		}
	}
	// A GPU without MIG.
	nomig, err := NewFakeDevice(gpu.GPU{Index: 0, UUID: "GPU-x", Name: "Tesla T4", PCIDeviceID: "0x1EB810DE"}, cat)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(ctx, cat, []Device{nomig}, s, Options{Label: "all-enabled", DryRun: true}); !errors.Is(err, mig.ErrNotMIGCapable) {
		t.Errorf("non-MIG GPU: %v", err)
	}
	if r, err := Apply(ctx, cat, []Device{nomig}, s, Options{Label: "all-disabled", DryRun: true}); err != nil || r.Devices[0].Status != StatusAlreadyApplied {
		t.Errorf("non-MIG GPU, MIG disabled: %+v %v", r, err)
	}
}

func TestApplyResetRequiredAndRollback(t *testing.T) {
	ctx := context.Background()
	cat := mig.Builtin()
	_, st := fakeHost(t, "h100x8")
	var devs []Device
	for _, g := range st.GPUs[:2] {
		d, err := NewFakeDevice(g, cat)
		if err != nil {
			t.Fatal(err)
		}
		devs = append(devs, d)
	}
	devs[1].(*FakeDevice).ResetNeeded = true
	h := tmpHost(t)
	s := spec(t)
	res, err := Apply(ctx, cat, devs, s, Options{Label: "all-balanced", Host: h, JournalDir: "/j"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Devices[0].Status != StatusApplied || res.Devices[0].ModeChange != "off -> on" {
		t.Errorf("GPU 0: %+v", res.Devices[0])
	}
	if !res.Devices[1].ResetRequired || res.Devices[1].Status != StatusResetRequired || !strings.Contains(res.Devices[1].Hint, "nvidia-smi -i") {
		t.Errorf("GPU 1: %+v", res.Devices[1])
	}
	// Rollback: GPU 0 back to MIG off without instances.
	kinds := journal.NewKinds()
	lookup := func(u string) (Device, error) {
		for _, d := range devs {
			if d.Info().UUID == u {
				return d, nil
			}
		}
		return nil, errors.New("no such GPU")
	}
	if err := RegisterJournalKinds(kinds, lookup); err != nil {
		t.Fatal(err)
	}
	if _, err := journal.Rollback(ctx, h, "/j", journal.WithOwner(JournalOwner), journal.WithKinds(kinds)); err != nil {
		t.Fatal(err)
	}
	cur, _, _ := devs[0].MIGMode(ctx)
	insts, _ := devs[0].Instances(ctx)
	if cur || len(insts) != 0 {
		t.Errorf("after rollback: mig %v, %d instances", cur, len(insts))
	}
}

func TestRollbackRestoresLayout(t *testing.T) {
	ctx := context.Background()
	cat := mig.Builtin()
	devs := fakeDevs(t, "a100-mig")[:1]
	before, _ := devs[0].Instances(ctx)
	h := tmpHost(t)
	if _, err := Apply(ctx, cat, devs, spec(t), Options{Label: "all-1g.5gb", Host: h, JournalDir: "/j"}); err != nil {
		t.Fatal(err)
	}
	mid, _ := devs[0].Instances(ctx)
	if len(mid) != 7 {
		t.Fatalf("%d instances, want 7", len(mid))
	}
	kinds := journal.NewKinds()
	if err := RegisterJournalKinds(kinds, func(string) (Device, error) { return devs[0], nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := journal.Rollback(ctx, h, "/j", journal.WithOwner(JournalOwner), journal.WithKinds(kinds)); err != nil {
		t.Fatal(err)
	}
	after, _ := devs[0].Instances(ctx)
	if !reflect.DeepEqual(before, after) {
		t.Errorf("rollback: %+v, want %+v", after, before)
	}
}

func TestMixedComputeInstances(t *testing.T) {
	ctx := context.Background()
	cat := mig.Builtin()
	devs := fakeDevs(t, "a100-mig")[:1]
	res, err := Apply(ctx, cat, devs, spec(t), Options{Label: "mixed-ci", Host: tmpHost(t), JournalDir: "/j"})
	if err != nil {
		t.Fatal(err)
	}
	var cis []string
	for _, c := range res.Devices[0].Create {
		cis = append(cis, c.ComputeInstance)
	}
	if !reflect.DeepEqual(cis, []string{"1c.3g.20gb", "2c.3g.20gb"}) {
		t.Errorf("compute instances %v", cis)
	}
	p, _ := Product(ctx, cat, devs[0])
	got, _ := Config(ctx, p, devs[0])
	if !reflect.DeepEqual(got, mig.MigConfig{"1c.3g.20gb": 1, "2c.3g.20gb": 1}) {
		t.Errorf("config %v", got)
	}
}

func TestExportMerge(t *testing.T) {
	ctx := context.Background()
	cat := mig.Builtin()
	devs := fakeDevs(t, "a100-mig")
	ex, err := Export(ctx, cat, devs, "current")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := yaml.Marshal(ex)
	// GPU 0 has a layout, the others are enabled and empty (GPU 1 is
	// pending a disable: its current mode is still on).
	want := "mig-configs:\n  current:\n  - devices:\n    - 0\n    mig-devices:\n      1g.5gb: 2\n      2g.10gb: 1\n      3g.20gb: 1\n    mig-enabled: true\n  - devices:\n    - 1\n    - 2\n    - 3\n    - 4\n    - 5\n    - 6\n    - 7\n    mig-devices: {}\n    mig-enabled: true\nversion: v1\n"
	if string(b) != want {
		t.Errorf("export:\n%s\nwant:\n%s", b, want)
	}
	if _, err := mig.ParseMigParted(b); err == nil {
		t.Log("note: mig-parted accepts enabled entries with empty mig-devices")
	}
}

func TestNameInstances(t *testing.T) {
	st := gpu.Status{GPUs: []gpu.GPU{{PCIDeviceID: "0x20B010DE", MIGInstances: []gpu.MIGInstance{{ProfileID: 9}, {ProfileID: 19, Profile: "kept"}, {ProfileID: 99}}}}}
	NameInstances(&st, mig.Builtin())
	got := []string{st.GPUs[0].MIGInstances[0].Profile, st.GPUs[0].MIGInstances[1].Profile, st.GPUs[0].MIGInstances[2].Profile}
	if !reflect.DeepEqual(got, []string{"3g.20gb", "kept", ""}) {
		t.Errorf("names %v", got)
	}
}

func FuzzParseDeviceID(f *testing.F) {
	f.Add("0x20B010DE")
	f.Add("233010de")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseDeviceID(s)
		if err != nil {
			return
		}
		back, err := ParseDeviceID(id.String())
		if err != nil || back != id {
			t.Fatalf("%q -> %v -> %v %v", s, id, back, err)
		}
	})
}

// TestDisableDestroysFirst: leaving MIG mode destroys the instances first
// (the driver refuses otherwise) and a rollback brings both back.
func TestDisableDestroysFirst(t *testing.T) {
	ctx := context.Background()
	cat := mig.Builtin()
	devs := fakeDevs(t, "a100-mig")[:1]
	before, _ := devs[0].Instances(ctx)
	h := tmpHost(t)
	res, err := Apply(ctx, cat, devs, spec(t), Options{Label: "all-disabled", Host: h, JournalDir: "/j"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Devices[0].Status != StatusApplied || !res.Devices[0].Destroy {
		t.Fatalf("%+v", res.Devices[0])
	}
	cur, _, _ := devs[0].MIGMode(ctx)
	if cur {
		t.Fatal("MIG still on")
	}
	kinds := journal.NewKinds()
	if err := RegisterJournalKinds(kinds, func(string) (Device, error) { return devs[0], nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := journal.Rollback(ctx, h, "/j", journal.WithOwner(JournalOwner), journal.WithKinds(kinds)); err != nil {
		t.Fatal(err)
	}
	cur, _, _ = devs[0].MIGMode(ctx)
	after, _ := devs[0].Instances(ctx)
	if !cur || !reflect.DeepEqual(before, after) {
		t.Errorf("after rollback: mig %v instances %+v", cur, after)
	}
}
