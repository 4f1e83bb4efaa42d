package tune

import (
	"context"
	"testing"
)

// TestApplyRereadsUnderTheLock: Apply plans on a fresh Host, so the
// per-Host caches (each CPU's governor, the cpuidle states) that a plan
// or an audit filled on the caller's Host are not what apply changes and
// journals. A CPU set right on disk after the plan gets the steps it gets
// on a Host that never read it; from the stale reads it would get a step
// (with the old value as its original) for what is already right.
func TestApplyRereadsUnderTheLock(t *testing.T) {
	ctx := context.Background()
	cat := NewCatalogue()
	steps := func(h *Host, root string) int {
		t.Helper()
		writeUnder(t, root, "/sys/devices/system/cpu/cpu5/cpufreq/scaling_governor", "performance\n")
		writeUnder(t, root, "/sys/devices/system/cpu/cpu5/cpuidle/state2/disable", "1\n")
		rep, err := Apply(ctx, h, cat, applyReq(mustLoad(t, cat, h.FS, ProfileInference)))
		if err != nil {
			t.Fatal(err)
		}
		return rep.Steps
	}
	// The caller's Host read every CPU (a plan) before cpu5 changed.
	root, fsys := stockHost(t, "dgx-h100")
	h := newHost(t, fsys)
	if _, err := Plan(ctx, h, cat, applyReq(mustLoad(t, cat, fsys, ProfileInference))); err != nil {
		t.Fatal(err)
	}
	afterPlan := steps(h, root)
	freshRoot, freshFS := stockHost(t, "dgx-h100")
	fresh := steps(newHost(t, freshFS), freshRoot)
	if afterPlan != fresh || fresh == 0 {
		t.Errorf("apply after a plan on the same Host journaled %d steps, on a new Host %d: apply used the plan's reads", afterPlan, fresh)
	}
}
