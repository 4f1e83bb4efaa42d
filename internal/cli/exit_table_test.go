package cli

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/testhost"
)

// exitRow is one command against the rows of README's exit-code table:
// the arguments that give each code, nil where the row does not apply (a
// command that reports no findings has no 1; one that reads nothing it
// can fail on has no 3).
type exitRow struct {
	name                      string
	ok, findings, usage, fail []string
}

// TestExitCodeTableEveryCommand (issue 28 item 4): every command of
// gpunode against every row of README's exit-code table that applies to
// it: 0 success, 1 findings, 2 usage (an unknown flag, and a bad value or
// input), 3 failure (a --root that is not a host: no CPU topology to
// read; for the commands that judge the host, none of /proc, /sys, /etc,
// /usr and /var: nothing to check). 130/143 are TestSignalStopsBlockedCommand's and companion's
// TestExitCodeSignals.
func TestExitCodeTableEveryCommand(t *testing.T) {
	dgx := testhost.Path(t, "dgx-h100")
	empty := t.TempDir() // a directory, but no host in it
	h100, nodrv, a100 := gpuHost("h100x8"), gpuHost("nodriver"), gpuHost("a100-mig")
	migCfg := filepath.Join("..", "mig", "testdata", "mig-parted.yaml")
	liveCfg := migLiveConfig()
	ctl := fakeMPSControl(t)
	mpsRoot := copyGPUHost(t, "h100x8")
	r := func(root string, args ...string) []string { return append([]string{"--root", root}, args...) }
	rows := []exitRow{
		{"version", []string{"version"}, nil, []string{"version", "extra"}, nil},
		{"topo", r(dgx, "topo"), nil, r(dgx, "topo", "--gpu-backend", "banana"), r(empty, "topo")},
		{"topo capture", nil, nil, r(dgx, "topo", "capture"), nil},
		{"audit", r(dgx, "audit", "--list-checks"), r(dgx, "audit"), r(dgx, "audit", "--profile", "nosuch"), r(empty, "audit")},
		// a flag's bad value is a usage error on every path, --list-checks too
		// --gpu-backend is checked as it is parsed: 2 on every command
		// (it was a gpu.driver error, exit 1, in audit; 0 in tune status
		// and container check)
		{"audit --gpu-backend", nil, nil, r(dgx, "audit", "--gpu-backend", "banana"), nil},
		{"tune status --gpu-backend", nil, nil, r(dgx, "tune", "status", "--gpu-backend", "banana"), nil},
		{"container check --gpu-backend", nil, nil, r(dgx, "container", "check", "--gpu-backend", "banana"), nil},
		{"container flags --runtime", nil, nil, r(empty, "container", "flags", "--runtime", "banana", "--gpu", "0"), nil},
		{"audit --list-checks", r(empty, "audit", "--list-checks"), nil, r(dgx, "audit", "--list-checks", "--cuda-runtime", "banana"), nil},
		{"tune plan", r(dgx, "tune", "plan", "--profile", "training"), nil, r(dgx, "tune", "plan", "--profile", "nosuch"), nil},
		{"tune status", r(dgx, "tune", "status"), nil, r(dgx, "tune", "status", "extra"), r(empty, "tune", "status")},
		{"tune show", r(dgx, "tune", "show", "training"), nil, r(dgx, "tune", "show", "nosuch"), nil},
		{"tune profiles", r(dgx, "tune", "profiles"), nil, r(dgx, "tune", "profiles", "extra"), nil},
		{"tune rollback", r(dgx, "tune", "rollback", "--dry-run"), nil, r(dgx, "tune", "rollback", "--skip", "nonsense"), nil},
		{"irq plan", r(dgx, "irq", "plan"), nil, r(dgx, "irq", "plan", "--sample", "banana"), r(empty, "irq", "plan")},
		{"irq rollback", r(dgx, "irq", "rollback", "--dry-run"), nil, r(dgx, "irq", "rollback", "extra"), nil},
		{"bind", r(dgx, "bind", "--gpu", "0", "--dry-run", "--", "true"), nil, r(dgx, "bind", "--gpu", "99", "--dry-run", "--", "true"), r(empty, "bind", "--gpu", "0", "--dry-run", "--", "true")},
		{"container check", r(dgx, "container", "check"), nil, r(dgx, "container", "check", "--cuda", "bogus"), r(empty, "container", "check")},
		{"container flags", r(dgx, "container", "flags", "--runtime", "docker", "--gpu", "0"), nil, r(dgx, "container", "flags", "--runtime", "banana", "--gpu", "0"), r(empty, "container", "flags", "--runtime", "docker", "--gpu", "0")},
		{"gpu status", r(h100, "gpu", "status"), nil, r(h100, "gpu", "status", "--gpu", "99"), nil},
		{"gpu audit", r(nodrv, "gpu", "audit"), r(h100, "gpu", "audit", "--cuda-runtime", "12.4"), r(h100, "gpu", "audit", "--cuda-runtime", "banana"), r(empty, "gpu", "audit")},
		{"gpu persistence", r(h100, "gpu", "persistence", "on", "--dry-run"), nil, r(h100, "gpu", "persistence", "maybe", "--dry-run"), nil},
		{"gpu clocks", r(h100, "gpu", "clocks", "reset", "--dry-run"), nil, r(h100, "gpu", "clocks", "lock", "--mhz", "-5", "--dry-run"), nil},
		{"gpu rollback", r(h100, "gpu", "rollback", "--dry-run"), nil, r(h100, "gpu", "rollback", "--owner", "nosuch"), nil},
		{"mig profiles", []string{"mig", "profiles"}, nil, []string{"mig", "profiles", "--model", "nosuch"}, nil},
		{"mig plan", []string{"mig", "plan", "--model", "H100-80GB", "--want", "3g.40gb=1"}, []string{"mig", "plan", "--model", "A100-SXM4-40GB", "--want", "3g.20gb=3"}, []string{"mig", "plan", "--model", "H100-80GB", "--want", "bogus"}, nil},
		{"mig validate", nil, []string{"mig", "validate", "-f", migCfg, "--model", "H100-80GB", "--gpus", "8"}, []string{"mig", "validate", "-f", filepath.Join(empty, "none.yaml")}, nil},
		{"mig live-profiles", r(a100, "mig", "live-profiles"), nil, r(a100, "mig", "live-profiles", "extra"), nil},
		{"mig export", r(a100, "mig", "export"), nil, r(a100, "mig", "export", "extra"), nil},
		{"mig apply", r(a100, "mig", "apply", "-f", liveCfg, "-c", "all-balanced", "--dry-run"), nil, r(a100, "mig", "apply", "-f", liveCfg, "-c", "nosuch", "--dry-run"), nil},
		{"mig assert", nil, r(a100, "mig", "assert", "-f", liveCfg, "-c", "all-balanced"), r(a100, "mig", "assert", "-f", liveCfg, "-c", "nosuch"), nil},
		{"mps status", r(mpsRoot, "--mps-control", ctl, "mps", "status"), nil, r(mpsRoot, "--mps-control", ctl, "mps", "status", "--gpu", "99"), nil},
		{"mps partition plan", r(mpsRoot, "--mps-control", ctl, "mps", "partition", "plan", "--gpu", "0", "--chunks", "5,3,2"),
			r(mpsRoot, "--mps-control", ctl, "mps", "partition", "plan", "--sm-count", "108", "--arch", "ampere", "--chunks", "20,8"),
			r(mpsRoot, "--mps-control", ctl, "mps", "partition", "plan", "--gpu", "0", "--chunks", "-1"), nil},
	}
	for _, row := range rows {
		for _, c := range []struct {
			args []string
			code int
		}{{row.ok, ExitOK}, {row.findings, ExitFindings}, {row.usage, ExitUsage}, {row.fail, ExitFailure}} {
			if c.args == nil {
				continue
			}
			t.Run(fmt.Sprintf("%s/%d", row.name, c.code), func(t *testing.T) {
				out, stderr, code := runGPUCLI(t, c.args...)
				if code != c.code {
					t.Errorf("gpunode %v: exit %d, want %d\nstdout: %.300s\nstderr: %s", c.args, code, c.code, out, stderr)
				}
				// usage help follows only usage errors (issue 28 item 6)
				if code != ExitUsage && strings.Contains(stderr, "for usage.") {
					t.Errorf("gpunode %v: exit %d points to the help: %s", c.args, code, stderr)
				}
			})
		}
		// every command: an unknown flag is a usage error
		if row.ok != nil || row.findings != nil {
			args := row.ok
			if args == nil {
				args = row.findings
			}
			args = append(append([]string{}, args...), "--no-such-flag")
			if dash := slices.Index(args, "--"); dash >= 0 {
				args = append(append(append([]string{}, args[:dash]...), "--no-such-flag"), args[dash:len(args)-1]...)
			}
			if _, stderr, code := runGPUCLI(t, args...); code != ExitUsage || !strings.Contains(stderr, "--help' for usage.") {
				t.Errorf("gpunode %v: exit %d, want 2 (%s)", args, code, stderr)
			}
		}
	}
}
