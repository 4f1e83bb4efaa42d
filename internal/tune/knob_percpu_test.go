package tune

import (
	"context"
	"reflect"
	"testing"
)

// TestPerCPUChangesFromRead: a per-CPU knob's changes work from the values
// its read saw (one read of each CPU's file per audit), and equal what
// a new Host's read gives while the host is unchanged: the same steps,
// original values and original bytes.
func TestPerCPUChangesFromRead(t *testing.T) {
	root, fsys := stockHost(t, "dgx-h100")
	const gov = "/sys/devices/system/cpu/cpu5/cpufreq/scaling_governor"
	writeUnder(t, root, gov, "performance\n") // one CPU already right
	h := newHost(t, fsys)
	k := perCPUKnob{rel: "cpufreq/scaling_governor", spec: spec{kind: valWord}}
	obs, err := k.read(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	if len(obs.perCPU) != 224 {
		t.Fatalf("read kept %d CPUs' values, want 224", len(obs.perCPU))
	}
	fromRead, ps, err := k.changes(h, obs, "performance")
	if err != nil {
		t.Fatal(err)
	}
	// The fixes take the persistent part alone: it must be what changes gives.
	if got := k.persists("performance"); !reflect.DeepEqual(got, ps) {
		t.Errorf("persists %+v, changes' persist %+v", got, ps)
	}
	fresh := newHost(t, fsys)
	obs2, err := k.read(context.Background(), fresh)
	if err != nil {
		t.Fatal(err)
	}
	reread, _, err := k.changes(fresh, obs2, "performance")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := k.changes(h, observation{}, "performance"); err == nil {
		t.Error("changes without the read's values: no error")
	}
	if len(fromRead) != 223 || len(fromRead) != len(reread) {
		t.Fatalf("%d changes from the read, %d from a new read; want 223 (every CPU but cpu5)", len(fromRead), len(reread))
	}
	for i := range fromRead {
		a, b := fromRead[i], reread[i]
		if a.Desc != b.Desc || !reflect.DeepEqual(a.Step, b.Step) {
			t.Errorf("change %d: from the read %q %+v, from a new read %q %+v", i, a.Desc, a.Step, b.Desc, b.Step)
		}
		if len(a.Step.OriginalRaw) == 0 || a.Step.Original == "" {
			t.Errorf("change %d: no original value or bytes: %+v", i, a.Step)
		}
	}
	// The files are not read again: a CPU changed after the read still
	// shows the value the read saw.
	writeUnder(t, root, gov, "powersave\n")
	again, _, err := k.changes(h, obs, "performance")
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 223 {
		t.Errorf("%d changes after cpu5 changed on disk, want the 223 of the read", len(again))
	}
}
