package cli

import (
	"path/filepath"
	"testing"

	"github.com/gpunode/gpunode/internal/output/tabletest"
	"github.com/gpunode/gpunode/internal/testhost"
)

// TestTableOptionsEveryCommand (issue 28 item 1): every command of
// gpunode with table output, over the fixtures, with the default table,
// --no-headers, -o wide, -o jsonpath= and -o custom-columns= (what each
// must do: internal/output/tabletest). The k8s and bench commands are in
// companion's TestTableOptionsEveryCommand.
func TestTableOptionsEveryCommand(t *testing.T) {
	dgx := testhost.Path(t, "dgx-h100")
	h100, a100 := gpuHost("h100x8"), gpuHost("a100-mig")
	migCfg := filepath.Join("..", "mig", "testdata", "mig-parted.yaml")
	liveCfg := migLiveConfig()
	ctl := fakeMPSControl(t)
	mpsRoot := copyGPUHost(t, "h100x8")
	runner := func(t *testing.T, args ...string) (int, string, string) {
		out, stderr, code := runGPUCLI(t, args...)
		return code, out, stderr
	}
	for _, c := range []tabletest.Case{
		{Args: []string{"--root", dgx, "version"}},
		{Args: []string{"--root", dgx, "topo"}},
		{Args: []string{"--root", dgx, "audit"}, List: "checks"},
		{Args: []string{"--root", dgx, "audit", "--profile", "training"}, List: "checks"},
		{Args: []string{"--root", dgx, "audit", "--list-checks"}, List: "checks"},
		{Args: []string{"--root", dgx, "tune", "plan", "--profile", "inference-isolated"}},
		{Args: []string{"--root", dgx, "tune", "status"}},
		{Args: []string{"--root", dgx, "tune", "show", "training"}, List: "settings"},
		{Args: []string{"--root", dgx, "tune", "profiles"}, List: "profiles"},
		{Args: []string{"--root", dgx, "tune", "rollback", "--dry-run"}, List: "transactions"},
		{Args: []string{"--root", dgx, "irq", "plan"}},
		{Args: []string{"--root", dgx, "irq", "rollback", "--dry-run"}, List: "transactions"},
		{Args: []string{"--root", dgx, "bind", "--gpu", "0", "--dry-run", "--", "true"}},
		{Args: []string{"--root", dgx, "container", "check"}, List: "checks"},
		{Args: []string{"--root", dgx, "container", "flags", "--runtime", "docker", "--gpu", "0"}},
		{Args: []string{"--root", h100, "gpu", "status"}, List: "gpus"},
		{Args: []string{"--root", h100, "gpu", "audit", "--cuda-runtime", "12.4"}, List: "checks"},
		{Args: []string{"--root", h100, "gpu", "persistence", "on", "--dry-run"}, List: "changes"},
		{Args: []string{"--root", h100, "gpu", "clocks", "lock", "--mhz", "1410", "--gpu", "0,5", "--dry-run"}, List: "changes"},
		{Args: []string{"--root", h100, "gpu", "rollback", "--dry-run"}, List: "transactions"},
		{Args: []string{"mig", "profiles", "--model", "H100-80GB"}},
		{Args: []string{"mig", "plan", "--model", "H100-80GB", "--want", "3g.40gb=1,2g.20gb=1,1g.10gb=2"}},
		{Args: []string{"mig", "plan", "--model", "A100-SXM4-40GB", "--want", "3g.20gb=2,1g.5gb=1"}},
		{Args: []string{"mig", "validate", "-f", migCfg, "--model", "H100-80GB", "--gpus", "8"}},
		{Args: []string{"--root", a100, "mig", "live-profiles"}},
		{Args: []string{"--root", a100, "mig", "export"}},
		{Args: []string{"--root", a100, "mig", "apply", "-f", liveCfg, "-c", "all-balanced", "--dry-run"}, List: "devices"},
		{Args: []string{"--root", a100, "mig", "assert", "-f", liveCfg, "-c", "all-balanced"}, List: "devices"},
		{Args: []string{"--root", mpsRoot, "--mps-control", ctl, "mps", "status"}, List: "daemons"},
		{Args: []string{"--root", mpsRoot, "--mps-control", ctl, "mps", "partition", "plan", "--gpu", "0", "--chunks", "5,3,2"}, List: "partitions"},
	} {
		t.Run(c.String(), func(t *testing.T) { tabletest.Check(t, runner, c) })
	}
}
