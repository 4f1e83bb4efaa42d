package tune

import (
	"context"
	"errors"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/journal/journaltest"
)

// eppBusy is a stateful fake of intel_pstate on a fixture tree: a write to
// a CPU's energy_performance_preference fails with EBUSY while that CPU's
// scaling_governor is performance (the kernel lets "performance" itself
// through; refusing every write makes the order matter for apply as well
// as for rollback).
func eppBusy(root string) *hostfs.Faults {
	return &hostfs.Faults{Hook: func(_ int, op hostfs.Op, p string) error {
		if op != hostfs.OpOpenWrite || path.Base(p) != "energy_performance_preference" {
			return nil
		}
		gov, err := os.ReadFile(filepath.Join(root, path.Dir(p), "scaling_governor"))
		if err == nil && strings.TrimSpace(string(gov)) == "performance" {
			return syscall.EBUSY
		}
		return nil
	}}
}

// TestEPPBeforeGovernor: against the fake, apply and rollback of a profile
// that sets both EPP and the governor succeed and restore the tree, because
// EPP is written first and restored last; with the two settings in the
// other order the same apply fails with EBUSY (the fake binds).
func TestEPPBeforeGovernor(t *testing.T) {
	ctx := context.Background()
	run := func(t *testing.T, swap bool) error {
		root, _ := stockHost(t, "downgraded")
		fsys := mustFS(t, root).WithFaults(eppBusy(root))
		cat := NewCatalogue()
		if swap {
			var ie, ig int
			for i, s := range cat.settings {
				switch s.ID {
				case "cpu.epp":
					ie = i
				case "cpu.governor":
					ig = i
				}
			}
			cat.settings[ie], cat.settings[ig] = cat.settings[ig], cat.settings[ie]
		}
		p := mustLoad(t, cat, fsys, ProfileBase)
		before, err := journaltest.Snapshot(root, "var/lib/gpunode")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Apply(ctx, NewHost(ctx, fsys), cat, ApplyRequest{Profile: p, StateDir: "/var/lib/gpunode", Command: "test", Clock: testClock}); err != nil {
			return err
		}
		for _, f := range []string{"energy_performance_preference", "scaling_governor"} {
			b, err := os.ReadFile(filepath.Join(root, "sys/devices/system/cpu/cpu0/cpufreq", f))
			if err != nil || strings.TrimSpace(string(b)) != "performance" {
				t.Errorf("after apply %s = %q, %v", f, b, err)
			}
		}
		if _, err := Rollback(ctx, fsys, "/var/lib/gpunode", false); err != nil {
			return err
		}
		after, err := journaltest.Snapshot(root, "var/lib/gpunode")
		if err != nil {
			t.Fatal(err)
		}
		if d := journaltest.Diff(before, after); len(d) > 0 {
			t.Errorf("rollback left differences:\n%s", strings.Join(d, "\n"))
		}
		return nil
	}
	if err := run(t, false); err != nil {
		t.Fatalf("EPP before governor: %v", err)
	}
	err := run(t, true)
	if err == nil || !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("governor before EPP: err = %v, want EBUSY from the fake", err)
	}
}
