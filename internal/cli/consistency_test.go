package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/testhost"
)

// TestUsageConsistency: inputs that used to be accepted (exit 0) or
// reported as findings are usage errors with nothing on stdout.
func TestUsageConsistency(t *testing.T) {
	gh := testhost.Path(t, "gh200")
	for _, args := range [][]string{
		{"completion", "tcsh"},           // printed help, exit 0
		{"--root", gh, "topo", "-o", ""}, // printed a table, exit 0
		{"--root", gh, "audit", "--sample", "-1s"},
		{"--root", gh, "irq", "plan", "--sample", "10m"},
	} {
		code, out, errs := run(t, args...)
		if code != ExitUsage || out != "" {
			t.Errorf("%q: exit %d stdout %q stderr %q, want a usage error", args, code, out, errs)
		}
	}
	if code, _, _ := run(t, "completion", "zsh", "--help"); code != ExitOK {
		t.Errorf("completion zsh --help: exit %d", code)
	}
}

// TestTuneProfilesBroken: a user profile that does not load makes
// 'tune profiles' exit 1 (it listed the error and exited 0).
func TestTuneProfilesBroken(t *testing.T) {
	root := testhost.Copy(t, "gh200")
	dir := filepath.Join(root, "etc/gpunode/profiles")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := run(t, "--root", root, "tune", "profiles"); code != ExitOK {
		t.Fatalf("built-ins only: exit %d", code)
	}
	if err := os.WriteFile(filepath.Join(dir, "broken.yaml"), []byte("name: broken\nsettings:\n  vm.nope: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := run(t, "--root", root, "tune", "profiles")
	if code != ExitFindings || !strings.Contains(out, "broken.yaml:3: settings.vm.nope") {
		t.Errorf("broken profile: exit %d\n%s", code, out)
	}
}

// TestIRQApplyDryRun: irq apply --dry-run prints the plan and writes
// nothing; tune takes --journal-dir (--state-dir still works).
func TestIRQApplyDryRun(t *testing.T) {
	root := testhost.Copy(t, "gh200")
	before, err := testhost.Snapshot(root)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "--root", root, "irq", "apply", "--dry-run")
	if code != ExitOK || !strings.Contains(out, "PLANNED") {
		t.Fatalf("irq apply --dry-run: exit %d\n%s\n%s", code, out, errs)
	}
	after, err := testhost.Snapshot(root)
	if err != nil {
		t.Fatal(err)
	}
	if d := testhost.DiffSnapshots(before, after); len(d) != 0 {
		t.Errorf("dry run changed the tree: %v", d)
	}
	for _, flag := range []string{"--journal-dir", "--state-dir"} {
		if code, _, errs := run(t, "--root", root, "tune", "status", flag, "/var/lib/gpunode"); code != ExitOK && code != ExitFindings {
			t.Errorf("tune status %s: exit %d %s", flag, code, errs)
		}
	}
}
