package tune

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/journal"
	"github.com/gpunode/gpunode/internal/testhost"
	"github.com/gpunode/gpunode/internal/tune/tunetest"
)

func tunersHost(t *testing.T) string {
	t.Helper()
	root := testhost.Copy(t, "downgraded")
	if err := tunetest.Overlay(root, tunetest.Options{Tuners: true}); err != nil {
		t.Fatal(err)
	}
	return root
}

func tunerChecks(t *testing.T, root, profile string) map[string]check.Check {
	t.Helper()
	ctx := context.Background()
	fs := mustFS(t, root)
	cat := NewCatalogue()
	cs, err := TunerSource{Host: NewHost(ctx, fs), Cat: cat, Profile: mustLoad(t, cat, fs, profile)}.Checks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]check.Check{}
	for _, c := range cs {
		out[c.ID] = c
	}
	return out
}

// TestTuners: each competing tuner is detected with what it will undo,
// and is absent on a host without it.
func TestTuners(t *testing.T) {
	root := tunersHost(t)
	got := tunerChecks(t, root, ProfileInference)
	for id, want := range map[string][]string{
		// hpc-compute's THP, latency-performance's swappiness and dirty
		// ratio (through the include); its governor and EPP agree.
		CheckTuned:    {"[vm] transparent_hugepages=always (mm.thp.enabled wants never; /usr/lib/tuned/hpc-compute/tuned.conf)", "[sysctl] vm.swappiness=10 (vm.swappiness wants 0; /usr/lib/tuned/latency-performance/tuned.conf)"},
		CheckCpupower: {"/etc/sysconfig/cpupower sets governor powersave"},
		CheckPPD:      {"profile balanced"},
	} {
		c := got[id]
		if c.Status != check.Drift {
			t.Errorf("%s: %s (%s), want drift", id, c.Status, c.Detail)
			continue
		}
		for _, w := range want {
			if !strings.Contains(c.Detail, w) {
				t.Errorf("%s detail %q lacks %q", id, c.Detail, w)
			}
		}
		if strings.Contains(c.Detail, "governor=") || strings.Contains(c.Detail, "energy_perf_bias") {
			t.Errorf("%s: governor/EPP agree with the profile but are reported: %s", id, c.Detail)
		}
	}
	// irqbalance is enabled but gpunode placed no IRQ: nothing to undo.
	if c := got[CheckIRQBal]; c.Status != check.OK {
		t.Errorf("irqbalance before irq apply: %s (%s), want ok", c.Status, c.Detail)
	}
	// After an 'irq apply' transaction, irqbalance will move the IRQs.
	fs := mustFS(t, root)
	if err := os.MkdirAll(filepath.Join(root, "proc/irq/9"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "proc/irq/9/smp_affinity_list"), []byte("0-3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := journal.Run(context.Background(), fs, journal.DefaultDir, journal.Meta{Owner: "irq", Command: "gpunode irq apply"}, func(ctx context.Context, tx *journal.Tx) ([]journal.Action, error) {
		p := "/proc/irq/9/smp_affinity_list"
		return []journal.Action{{Step: journal.Step{Kind: journal.KindValue, ID: "irq9", Path: p, Original: "0-3", OriginalRaw: []byte("0-3\n"), New: "1"},
			Do: func(context.Context) error { return fs.WriteString(p, "1") }}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if c := tunerChecks(t, root, ProfileInference)[CheckIRQBal]; c.Status != check.Drift || len(c.Fix) == 0 {
		t.Errorf("irqbalance after irq apply: %s (%s), want drift with a fix", c.Status, c.Detail)
	}

	// A stock host has none of them (irqbalance is installed, idle).
	plain := tunerChecks(t, testhost.Path(t, "vm-2vcpu"), ProfileInference)
	for _, id := range []string{CheckTuned, CheckCpupower, CheckPPD} {
		if plain[id].Status != check.Absent {
			t.Errorf("%s on vm-2vcpu: %s (%s), want absent", id, plain[id].Status, plain[id].Detail)
		}
	}
}

// TestTunerFixesRun: the tuners' fixes (a tuned child profile that
// overrides the conflicts, the cpupower governor, powerprofilesctl, and
// irqbalance stopped after an irq apply) run and leave every tuner check ok.
func TestTunerFixesRun(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	root := tunersHost(t)
	runFixes(t, bash, fixStubDir(t), root, nil, ProfileInference)
	for id, c := range tunerChecks(t, root, ProfileInference) {
		if c.Status.Failing() {
			t.Errorf("%s after the fixes: %s (%s)", id, c.Status, c.Detail)
		}
	}
}
