package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/journal/journaltest"
	"github.com/gpunode/gpunode/internal/testhost"
)

// tuneHost is a copy of the small "downgraded" fixture (a stock, untuned
// OS).
func tuneHost(t *testing.T) string {
	t.Helper()
	return testhost.Copy(t, "downgraded")
}

func TestAuditAndTuneExitCodes(t *testing.T) {
	root := tuneHost(t)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("name: x\nsettings:\n  vm.swapiness: 1\n"), 0o644)
	tests := []struct {
		args []string
		code int
		out  string // in stdout, or stderr for errors
	}{
		{[]string{"--root", root, "audit", "--profile", "training"}, ExitFindings, "drift"},
		{[]string{"--root", root, "audit", "--profile", "nope"}, ExitUsage, "unknown profile"},
		{[]string{"--root", root, "audit", "--profile", bad}, ExitUsage, "bad.yaml:3: settings.vm.swapiness: unknown setting or check id"},
		{[]string{"--root", root, "audit", "--pid", "999999"}, ExitUsage, "no such process"},
		{[]string{"--root", root, "audit", "--pid", "-1"}, ExitUsage, "--pid"},
		{[]string{"--root", root, "tune", "profiles"}, ExitOK, "inference-isolated"},
		{[]string{"--root", root, "tune", "show", "training"}, ExitOK, "mm.thp.enabled"},
		{[]string{"--root", root, "tune", "show"}, ExitUsage, "want one profile"},
		{[]string{"--root", root, "tune", "plan"}, ExitUsage, "--profile is required"},
		{[]string{"--root", root, "tune", "plan", "--profile", "training"}, ExitOK, "would change"},
		{[]string{"--root", root, "tune", "apply", "--profile", bad}, ExitUsage, "unknown setting or check id"},
		{[]string{"--root", root, "tune", "status"}, ExitOK, "no profile applied"},
		{[]string{"--root", root, "tune", "rollback"}, ExitOK, "nothing to roll back"},
		// plan exits 0 when it computed a plan; 1 only with --exit-code.
		{[]string{"--root", root, "tune", "plan", "--profile", "training", "--exit-code"}, ExitFindings, "would change"},
	}
	before, err := journaltest.Snapshot(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		code, out, errs := run(t, tt.args...)
		if code != tt.code || !strings.Contains(out+errs, tt.out) {
			t.Errorf("%v: exit %d (want %d), output lacks %q:\n%s%s", tt.args, code, tt.code, tt.out, out, errs)
		}
	}
	after, _ := journaltest.Snapshot(root)
	if d := journaltest.Diff(before, after); len(d) > 0 {
		t.Errorf("read-only commands and bad input changed the host:\n%s", strings.Join(d, "\n"))
	}
}

func TestTuneApplyRollbackCLI(t *testing.T) {
	root := tuneHost(t)
	before, _ := journaltest.Snapshot(root)
	if code, out, errs := run(t, "--root", root, "tune", "apply", "--profile", "inference", "--dry-run"); code != ExitOK || !strings.Contains(out, "dry run") {
		t.Fatalf("dry run: %d %s %s", code, out, errs)
	}
	if code, out, errs := run(t, "--root", root, "tune", "apply", "--profile", "inference", "--bootloader", "--state-dir", "/var/lib/gpunode-test"); code != ExitOK || !strings.Contains(out, "journal 000001-tune") {
		t.Fatalf("apply: %d %s %s", code, out, errs)
	}
	if fi, err := os.Stat(filepath.Join(root, "var/lib/gpunode-test/000001-tune.journal")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("journal: %v %v", fi, err)
	}
	code, out, _ := run(t, "--root", root, "-o", "json", "tune", "status", "--state-dir", "/var/lib/gpunode-test")
	var st struct {
		SchemaVersion string `json:"schemaVersion"`
		Applied       bool   `json:"applied"`
		Profile       string `json:"profile"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || !st.Applied || st.Profile != "inference" || st.SchemaVersion != "gpunode.tune.status/v1" {
		t.Fatalf("status: %d %v %+v\n%s", code, err, st, out)
	}
	// Audit after apply: only the checks apply cannot fix may drift.
	_, out, _ = run(t, "--root", root, "-o", "json", "audit", "--profile", "inference")
	var rep struct {
		Checks []struct{ ID, Status string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Checks {
		if c.Status == "drift" && !strings.HasPrefix(c.ID, "pcie.") && !strings.HasPrefix(c.ID, "irq") && !strings.HasPrefix(c.ID, "gpu") && !strings.HasPrefix(c.ID, "container.") {
			t.Errorf("after apply %s drifts", c.ID)
		}
	}
	if code, out, errs := run(t, "--root", root, "tune", "rollback", "--state-dir", "/var/lib/gpunode-test"); code != ExitOK || !strings.Contains(out, "\n000001-tune  tune ") || !strings.Contains(out, "rolled back 1 transaction(s)") {
		t.Fatalf("rollback: %d %s %s", code, out, errs)
	}
	after, _ := journaltest.Snapshot(root, "var/lib/gpunode-test")
	if d := journaltest.Diff(before, after); len(d) > 0 {
		t.Fatalf("tree differs after rollback:\n%s", strings.Join(d, "\n"))
	}
	// A corrupted journal is refused (exit 3) and explained.
	jf := filepath.Join(root, "var/lib/gpunode-test/000001-tune.journal")
	b, _ := os.ReadFile(jf)
	os.WriteFile(jf, append(b[:len(b)-20], []byte("tampered tampered!!")...), 0o600)
	if code, out, errs := run(t, "--root", root, "tune", "rollback", "--state-dir", "/var/lib/gpunode-test"); code != ExitFailure || !strings.Contains(errs, "refusing to roll back") || !strings.Contains(errs, "corrupted") {
		t.Fatalf("corrupted journal: %d %s %s", code, out, errs)
	}
}
