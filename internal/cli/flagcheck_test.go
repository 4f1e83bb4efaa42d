package cli

import (
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/testhost"
)

// TestStateDirSplit (issue 28 item 6): --state-dir named three things; each
// command now names what the directory holds (tune --journal-dir, mps and
// gpu rollback --mps-dir, bench and report --bench-dir). The old name still
// works, is out of the help, and warns on stderr (never on stdout, which
// scripts parse).
func TestStateDirSplit(t *testing.T) {
	dgx := testhost.Path(t, "dgx-h100")
	ctl := fakeMPSControl(t)
	h100 := copyGPUHost(t, "h100x8")
	for _, tc := range []struct {
		cmd      []string
		now, dir string
		advice   string
	}{
		{[]string{"--root", dgx, "tune", "status", "-o", "json"}, "--journal-dir", "/var/lib/gpunode", "use --journal-dir"},
		{[]string{"--root", dgx, "tune", "rollback", "--dry-run", "-o", "json"}, "--journal-dir", "/var/lib/gpunode", "use --journal-dir"},
		{[]string{"--root", h100, "--mps-control", ctl, "mps", "status", "-o", "json"}, "--mps-dir", "/run/gpunode/mps", "use --mps-dir"},
		{[]string{"--root", h100, "--mps-control", ctl, "gpu", "rollback", "--dry-run", "-o", "json"}, "--mps-dir", "/run/gpunode/mps", "use --mps-dir"},
	} {
		code, out, stderr := run(t, append(tc.cmd, tc.now, tc.dir)...)
		ocode, old, ostderr := run(t, append(tc.cmd, "--state-dir", tc.dir)...)
		if code > ExitFindings || ocode != code || old != out {
			t.Errorf("%v: %s exit %d, --state-dir exit %d (%s); outputs equal: %v", tc.cmd, tc.now, code, ocode, ostderr, old == out)
		}
		if strings.Contains(stderr, "deprecated") {
			t.Errorf("%v %s: warns: %s", tc.cmd, tc.now, stderr)
		}
		if !strings.Contains(ostderr, "warning: --state-dir is deprecated: "+tc.advice) || strings.Contains(old, "deprecated") {
			t.Errorf("%v --state-dir: no deprecation warning on stderr (or one on stdout): %q", tc.cmd, ostderr)
		}
		// help names the new flag only
		help := append(append([]string{}, tc.cmd[:len(tc.cmd)-2]...), "--help")
		_, h, _ := run(t, help...)
		if !strings.Contains(h, tc.now) || strings.Contains(h, "--state-dir") {
			t.Errorf("%v: help lacks %s or still shows --state-dir", help, tc.now)
		}
	}
}
