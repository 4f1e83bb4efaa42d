package cli

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/goldenfile"
	"github.com/gpunode/gpunode/internal/testhost"
)

var updateGPU = flag.Bool("update-gpu", false, "rewrite the golden files of the gpu/mps/mig live commands")

// gpuHost is a fixture host of the gpu package.
func gpuHost(name string) string {
	return filepath.Join("..", "gpu", "testdata", "hosts", name)
}

// copyGPUHost copies a fixture host to a temp dir for commands that write.
func copyGPUHost(t *testing.T, name string) string {
	t.Helper()
	dst := testhost.TempDir(t)
	if err := testhost.CopyTree(gpuHost(name), dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

// runGPUCLI runs gpunode with args and returns stdout, stderr and the exit code.
func runGPUCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	env := Env{Args: args, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		Getenv: func(string) string { return "" }, Environ: func() []string { return nil }}
	code := Main(context.Background(), env)
	return out.String(), errb.String(), code
}

func gpuGolden(t *testing.T, name, got string) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", "gpu", name), []byte(got), *updateGPU)
}

func TestGPUCommands(t *testing.T) {
	for _, tc := range []struct {
		golden string
		args   []string
		code   int
	}{
		{"status-h100x8.txt", []string{"gpu", "status", "--root", gpuHost("h100x8")}, 0},
		{"status-a100-mig-gpu0.json", []string{"gpu", "status", "--root", gpuHost("a100-mig"), "--gpu", "0", "-o", "json"}, 0},
		{"status-nodriver.txt", []string{"gpu", "status", "--root", gpuHost("nodriver")}, 0},
		{"audit-h100x8.txt", []string{"gpu", "audit", "--root", gpuHost("h100x8"), "--cuda-runtime", "12.4"}, 1},
		{"audit-a100-mig.txt", []string{"gpu", "audit", "--root", gpuHost("a100-mig"), "--cuda-runtime", "12.4"}, 1},
		{"audit-nodriver.txt", []string{"gpu", "audit", "--root", gpuHost("nodriver")}, 0},
		{"persistence-dry-run.txt", []string{"gpu", "persistence", "on", "--dry-run", "--root", gpuHost("h100x8")}, 0},
		{"clocks-lock-dry-run.txt", []string{"gpu", "clocks", "lock", "--mhz", "1410", "--gpu", "0,5", "--dry-run", "--root", gpuHost("h100x8")}, 0},
		{"clocks-reset-dry-run.txt", []string{"gpu", "clocks", "reset", "--dry-run", "--root", gpuHost("h100x8")}, 0},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			out, stderr, code := runGPUCLI(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.code, stderr)
			}
			gpuGolden(t, tc.golden, out)
		})
	}
}

func TestGPUUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"gpu", "status", "--gpu-backend", "rocm", "--root", gpuHost("h100x8")}, ExitUsage, "unknown GPU backend"},
		{[]string{"gpu", "status", "--gpu", "9", "--root", gpuHost("h100x8")}, ExitUsage, "unknown GPU \"9\""},
		{[]string{"gpu", "persistence", "maybe", "--root", gpuHost("h100x8")}, ExitUsage, "want on or off"},
		{[]string{"gpu", "clocks", "lock", "--root", gpuHost("h100x8")}, ExitUsage, "--mhz"},
		{[]string{"gpu", "clocks", "lock", "--mhz", "2500", "--dry-run", "--root", gpuHost("h100x8")}, ExitUsage, "clock out of range"},
		{[]string{"gpu", "clocks", "lock", "--mhz", "fast", "--root", gpuHost("h100x8")}, ExitUsage, "want a clock"},
		{[]string{"gpu", "status", "--gpu-backend", "fake", "--root", gpuHost("nodriver")}, ExitUsage, "fake-gpus.yaml"},
		{[]string{"gpu", "persistence", "on", "--root", gpuHost("nodriver")}, ExitFailure, "no NVIDIA driver"},
	} {
		_, stderr, code := runGPUCLI(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d stderr %q; want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}

// TestGPUPersistenceApply: without --dry-run the change is journaled under
// --root; the fake backend keeps changes in memory only, so the file is
// unchanged.
func TestGPUPersistenceApply(t *testing.T) {
	root := copyGPUHost(t, "h100x8")
	before, err := os.ReadFile(filepath.Join(root, "etc/gpunode/fake-gpus.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runGPUCLI(t, "gpu", "persistence", "on", "--root", root, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, `"applied": true`) || !strings.Contains(out, `"journal": "`) {
		t.Fatalf("not applied/journaled: %s", out)
	}
	entries, err := os.ReadDir(filepath.Join(root, "var/lib/gpunode"))
	if err != nil || len(entries) == 0 {
		t.Fatalf("no journal written: %v", err)
	}
	after, _ := os.ReadFile(filepath.Join(root, "etc/gpunode/fake-gpus.yaml"))
	if !bytes.Equal(before, after) {
		t.Error("the fake backend rewrote its file")
	}
}

// TestGPURollback: changes of the gpu, mps and mig owners are rolled back by
// 'gpunode gpu rollback' (the fake backend keeps state per process, so the
// test checks the journal side: reverted steps, then nothing left).
func TestGPURollback(t *testing.T) {
	root := copyGPUHost(t, "h100x8")
	ctl := fakeMPSControl(t)
	for _, args := range [][]string{
		{"gpu", "persistence", "on"},
		{"gpu", "clocks", "lock", "--mhz", "1410", "--gpu", "0"},
		{"mps", "start", "--gpu", "1", "--mps-control", ctl},
		{"mig", "apply", "-f", migLiveConfig(), "-c", "all-balanced", "--gpu-backend", "fake"},
	} {
		if _, stderr, code := runGPUCLI(t, append(args, "--root", root)...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
	}
	out, stderr, code := runGPUCLI(t, "gpu", "rollback", "--dry-run", "--root", root)
	if code != 0 || !strings.Contains(out, "would roll back 4 transaction(s)") {
		t.Fatalf("dry run: exit %d %s %s", code, out, stderr)
	}
	out, stderr, code = runGPUCLI(t, "gpu", "rollback", "--root", root, "--mps-control", ctl)
	if code != 0 {
		t.Fatalf("rollback: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"gpu.persistence", "gpu.clocks", "mps.daemon", "mig.layout", "mig.mode", "rolled back 4 transaction(s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("rollback output lacks %q:\n%s", want, out)
		}
	}
	out, _, _ = runGPUCLI(t, "gpu", "rollback", "--root", root)
	if !strings.Contains(out, "nothing to roll back") {
		t.Errorf("second rollback: %s", out)
	}
	if _, stderr, code := runGPUCLI(t, "gpu", "rollback", "--owner", "tune", "--root", root); code != ExitUsage {
		t.Errorf("--owner tune: exit %d %s", code, stderr)
	}
}
