package tune

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestFixesRun pastes every fix of every fixture's audit into bash -e, in
// the order printed, against a copy of the fixture (paths rendered under
// the copy, commands replaced by the stand-ins of fixstub_test.go), twice
// (fixes must be safe to repeat), then audits again: every check whose fix
// is a command is ok, or pending-reboot for boot parameters; and 'tune
// plan' finds every file gpunode generates already as apply would write it.
// Checks whose fix is advice (a "# ..." comment: reseat a card) stay as
// they were; 'gpunode irq apply' (the IRQ layer's fix) must run, its
// effect is tested in internal/irq.
func TestFixesRun(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	stubs := fixStubDir(t)
	cases := []struct{ host, profile string }{
		{"dgx-h100", ProfileInferenceIsolated},
		{"dgx-h100", ProfileTraining},
		{"gh200", ProfileInference},
		{"amd-8numa", ProfileInferenceIsolated},
		{"downgraded", ProfileTraining},
		// nohz_full differs from isolcpus: base's boot.nohz_full fix.
		{"mixed-pcie", ProfileBase},
	}
	if testing.Short() {
		cases = cases[:1]
	}
	for _, tc := range cases {
		t.Run(tc.host+"/"+tc.profile, func(t *testing.T) {
			root, fsys := stockHost(t, tc.host)
			runFixes(t, bash, stubs, root, fsys, tc.profile)
		})
	}
}

// runFixes audits root against profile, runs the fixes and checks the
// result (see TestFixesRun).
func runFixes(t *testing.T, bash, stubs, root string, _ any, profile string) {
	t.Helper()
	ctx := context.Background()
	cat := NewCatalogue()
	fs := mustFS(t, root)
	p := mustLoad(t, cat, fs, profile)
	h := NewHost(ctx, fs)
	h.FixRoot = root
	before, err := Audit(ctx, h, cat, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var script []string
	fixed := map[string]Check{}
	for _, c := range before.Checks {
		if c.Status == StatusOK || len(c.Fix) == 0 {
			continue
		}
		script = append(script, "# "+c.ID)
		script = append(script, c.Fix...)
		for _, f := range c.Fix {
			// Comments are advice; gpunode commands of other layers
			// are run (they must paste) but tested by their layer.
			if !strings.HasPrefix(f, "#") && !strings.HasPrefix(f, "gpunode ") {
				fixed[c.ID] = c
			}
		}
	}
	if len(fixed) == 0 {
		t.Fatal("no check with a fix: the fixture has nothing to fix")
	}
	text := strings.Join(script, "\n") + "\n"
	for round := 1; round <= 2; round++ {
		cmd := exec.Command(bash, "-e", "-c", text)
		cmd.Env = append(os.Environ(), "PATH="+stubs+":"+os.Getenv("PATH"), "GPUNODE_FIX_ROOT="+root, "GPUNODE_FIX_STUB=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("round %d: the fixes fail: %v\n%s\nscript:\n%s", round, err, out, text)
		}
	}
	after, err := Audit(ctx, NewHost(ctx, mustFS(t, root)), cat, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range after.Checks {
		b, ok := fixed[c.ID]
		if !ok {
			continue
		}
		want := StatusOK
		if c.NeedsReboot && strings.HasPrefix(c.ID, "boot.") {
			want = StatusPendingReboot
		}
		if c.Status != want {
			t.Errorf("%s: %s after its fix, want %s (before: %s %q; after: current %q, detail %q)\nfix: %s", c.ID, c.Status, want, b.Status, b.Current, c.Current, c.Detail, strings.Join(b.Fix, "\n     "))
		}
	}
	rep, err := Plan(ctx, NewHost(ctx, mustFS(t, root)), cat, ApplyRequest{Profile: p})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Files {
		if f.Action != "unchanged" && f.Path != fileGrubBak {
			t.Errorf("after the fixes, tune plan would %s %s:\n%s", f.Action, f.Path, f.Content)
		}
	}
	for _, it := range rep.Items {
		t.Errorf("after the fixes, tune plan would still change %s: %v", it.ID, it.Actions)
	}
}
