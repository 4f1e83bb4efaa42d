package companion

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/bench"
	"github.com/gpunode/gpunode/internal/cli"
	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/testhost"
)

func TestBenchMeasuresOnlyThisMachine(t *testing.T) {
	root := testhost.Path(t, "dgx-h100")
	for _, sub := range []string{"numa", "h2d", "alloc"} {
		code, _, stderr := run(t, "bench", sub, "--root", root)
		if code != cli.ExitUsage || !strings.Contains(stderr, "bench measures this machine") {
			t.Errorf("%s --root: exit %d, stderr %q", sub, code, stderr)
		}
	}
	if code, _, stderr := run(t, "bench", "numa", "--plot", "x.pdf"); code != cli.ExitUsage || !strings.Contains(stderr, ".svg or .png") {
		t.Errorf("--plot x.pdf: exit %d %q", code, stderr)
	}
	if code, _, _ := run(t, "bench", "compare", "a"); code != cli.ExitUsage {
		t.Errorf("compare with one name: exit %d", code)
	}
}

func TestBenchCompareAndList(t *testing.T) {
	root := t.TempDir()
	fs, err := hostfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	mk := func(wall []float64) *bench.AllocResult {
		return &bench.AllocResult{SchemaVersion: bench.AllocSchema, Repeats: len(wall), Runs: []bench.AllocRun{{Allocator: bench.Glibc,
			WallSeconds: wall, UserSeconds: wall, SysSeconds: []float64{0, 0, 0}, MaxRSSBytes: []uint64{1 << 20, 1 << 20, 1 << 20},
			MedianWallSeconds: bench.Median(wall), MedianUserSeconds: bench.Median(wall), MedianMaxRSSBytes: 1 << 20}}}
	}
	if _, err := bench.Save(fs, "/state/bench", "before", mk([]float64{2, 2.02, 1.98})); err != nil {
		t.Fatal(err)
	}
	if _, err := bench.Save(fs, "/state/bench", "after", mk([]float64{1, 1.01, 0.99})); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := run(t, "bench", "compare", "before", "after", "--root", root, "--state-dir", "/state", "-o", "json")
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var c bench.Comparison
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatal(err)
	}
	if c.SchemaVersion != bench.CompareSchema || c.Kind != bench.KindAlloc || len(c.Metrics) != 4 || c.Metrics[0].Name != "glibc wall" || c.Metrics[0].ChangePct != -50 || !c.Metrics[0].Better || c.Metrics[0].WithinNoise {
		t.Errorf("comparison %+v", c)
	}
	code, out, _ = run(t, "bench", "list", "--root", root, "--state-dir", "/state")
	if code != cli.ExitOK || !strings.Contains(out, "before") || !strings.Contains(out, "after") || !strings.Contains(out, "alloc") {
		t.Errorf("list: exit %d\n%s", code, out)
	}
	if code, _, stderr := run(t, "bench", "compare", "before", "nothing", "--root", root, "--state-dir", "/state"); code != cli.ExitUsage || !strings.Contains(stderr, `no saved result "nothing"`) {
		t.Errorf("missing: exit %d %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(root, "state", "bench", "before.json")); err != nil {
		t.Errorf("saved file: %v", err)
	}
}

// TestBenchDirSplit: bench and report name the results directory
// --bench-dir; --state-dir DIR still works as --bench-dir DIR/bench, with
// a deprecation warning on stderr, and is out of the help.
func TestBenchDirSplit(t *testing.T) {
	root := t.TempDir()
	fs, err := hostfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	r := &bench.AllocResult{SchemaVersion: bench.AllocSchema, Repeats: 1, Runs: []bench.AllocRun{{Allocator: bench.Glibc, WallSeconds: []float64{1}}}}
	if _, err := bench.Save(fs, "/state/bench", "one", r); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := run(t, "bench", "list", "--root", root, "--bench-dir", "/state/bench", "-o", "json")
	ocode, old, ostderr := run(t, "bench", "list", "--root", root, "--state-dir", "/state", "-o", "json")
	if code != 0 || ocode != 0 || out != old || !strings.Contains(out, `"name": "one"`) {
		t.Errorf("--bench-dir: exit %d %s\n--state-dir: exit %d %s", code, out, ocode, old)
	}
	if strings.Contains(stderr, "deprecated") || !strings.Contains(ostderr, "warning: --state-dir is deprecated: use --bench-dir DIR/bench") {
		t.Errorf("warnings: --bench-dir %q, --state-dir %q", stderr, ostderr)
	}
	for _, c := range [][]string{{"bench", "list", "--help"}, {"report", "--help"}} {
		_, h, _ := run(t, c...)
		if !strings.Contains(h, "--bench-dir") || strings.Contains(h, "--state-dir") {
			t.Errorf("%v: help lacks --bench-dir or still shows --state-dir", c)
		}
	}
}
