package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/testhost"
)

// envSubprocessMain makes the test binary run gpunode's Main on its
// arguments instead of the tests (see TestMain): the NVML stub is found by
// the dynamic loader through LD_LIBRARY_PATH, which only a new process reads.
const envSubprocessMain = "GPUNODE_CLI_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envSubprocessMain) == "1" {
		os.Exit(Main(context.Background(), OSEnv(os.Args[1:])))
	}
	os.Exit(m.Run())
}

// needStub builds testdata/nvml-stub into a temporary directory and returns
// it. Without cc or cgo the test is skipped, except in CI (CI set), where a
// missing compiler is a failure.
func needStub(t *testing.T) string {
	t.Helper()
	if _, err := gpu.OpenNVML(); err != nil && strings.Contains(err.Error(), "without cgo") {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI: the test binary was built without cgo, so the NVML backend cannot be tested: %v", err)
		}
		t.Skip("built without cgo: no NVML backend")
	}
	if _, err := exec.LookPath("cc"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI: cc not found, the NVML stub cannot be built: %v", err)
		}
		t.Skip("cc not found: cannot build the NVML stub")
	}
	dir := t.TempDir()
	out, err := exec.Command("sh", "../../testdata/nvml-stub/build.sh", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("build.sh: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "libnvidia-ml.so.1")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// stubJSON is the stub's description of the dgx-h100 fixture.
func stubJSON(t *testing.T) string {
	p, err := filepath.Abs("../../testdata/nvml-stub/dgx-h100.json")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// runSub runs gpunode ARGS in a new process (this test binary) with env on
// top of a minimal environment, and returns exit code, stdout, stderr.
func runSub(t *testing.T, timeout time.Duration, env []string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append([]string{envSubprocessMain + "=1", "PATH=/nonexistent", "HOME=" + t.TempDir()}, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("gpunode %v: no exit within %s\nstderr: %s", args, timeout, errb.String())
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

type statusGPU struct {
	Index    int    `json:"index"`
	UUID     string `json:"uuid"`
	BDF      string `json:"bdf"`
	NUMANode *int   `json:"numaNode"`
	Name     string `json:"name"`
}

type statusDoc struct {
	Backend string      `json:"backend"`
	GPUs    []statusGPU `json:"gpus"`
}

// TestNVMLStubStatusMatchesFakeFile drives the real NVML backend (go-nvml
// dlopens libnvidia-ml.so.1) against the stub: under --live-root it gives
// the same GPUs, bus ids and NUMA nodes as the fixture's fake file.
func TestNVMLStubStatusMatchesFakeFile(t *testing.T) {
	lib := needStub(t)
	dgx := testhost.Path(t, "dgx-h100")
	code, out, stderr := run(t, "--root", dgx, "gpu", "status", "-o", "json")
	if code != ExitOK {
		t.Fatalf("fake: exit %d: %s", code, stderr)
	}
	var fake statusDoc
	if err := json.Unmarshal([]byte(out), &fake); err != nil {
		t.Fatal(err)
	}
	env := []string{"LD_LIBRARY_PATH=" + lib, "GPUNODE_NVML_STUB=" + stubJSON(t)}
	for _, args := range [][]string{
		{"--root", dgx, "--live-root", "--gpu-backend", "nvml", "gpu", "status", "-o", "json"},
		{"--root", dgx, "--live-root", "gpu", "status", "-o", "json"}, // auto: NVML first, never the fake file
	} {
		code, out, stderr = runSub(t, 30*time.Second, env, args...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		var live statusDoc
		if err := json.Unmarshal([]byte(out), &live); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		if live.Backend != "nvml" {
			t.Errorf("%v: backend %q, want nvml", args, live.Backend)
		}
		if len(live.GPUs) != 8 || len(fake.GPUs) != 8 {
			t.Fatalf("%v: %d GPUs through NVML, %d in the fake file; want 8", args, len(live.GPUs), len(fake.GPUs))
		}
		for i, g := range live.GPUs {
			f := fake.GPUs[i]
			if g.Index != f.Index || g.UUID != f.UUID || g.BDF != f.BDF || g.Name != f.Name {
				t.Errorf("GPU %d: nvml %+v, fake %+v", i, g, f)
			}
			if g.NUMANode == nil || f.NUMANode == nil || *g.NUMANode != *f.NUMANode {
				t.Errorf("GPU %d (%s): NUMA node nvml %v, fake %v", i, g.BDF, g.NUMANode, f.NUMANode)
			}
		}
		if *live.GPUs[0].NUMANode != 0 || *live.GPUs[7].NUMANode != 1 || live.GPUs[4].BDF != "0000:9a:00.0" {
			t.Errorf("GPU 0 NUMA %d, GPU 7 NUMA %d, GPU 4 %s; want 0, 1, 0000:9a:00.0", *live.GPUs[0].NUMANode, *live.GPUs[7].NUMANode, live.GPUs[4].BDF)
		}
	}
}

type auditDoc struct {
	Backend string `json:"backend"`
	Checks  []struct {
		ID      string   `json:"id"`
		Subject string   `json:"subject"`
		Status  string   `json:"status"`
		Current string   `json:"current"`
		Detail  string   `json:"detail"`
		Fix     []string `json:"fix"`
	} `json:"checks"`
}

func parseAudit(t *testing.T, out string) auditDoc {
	t.Helper()
	var d auditDoc
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return d
}

// TestNVMLStubBlockedCall: a call that never returns (a wedged GPU) ends
// within --gpu-timeout as the gpu.backend.call error naming the GPU and the
// call; the other GPUs are still read.
func TestNVMLStubBlockedCall(t *testing.T) {
	lib := needStub(t)
	dgx := testhost.Path(t, "dgx-h100")
	for _, tc := range []struct {
		block, subject, call string
	}{
		{"nvmlDeviceGetPowerUsage:3", "gpu3", "nvmlDeviceGetPowerUsage"},
		{"nvmlDeviceGetCount", "all", "nvmlDeviceGetCount"},
	} {
		env := []string{"LD_LIBRARY_PATH=" + lib, "GPUNODE_NVML_STUB=" + stubJSON(t), "GPUNODE_NVML_STUB_BLOCK=" + tc.block}
		start := time.Now()
		code, out, stderr := runSub(t, 20*time.Second, env,
			"--root", dgx, "--live-root", "--gpu-backend", "nvml", "--gpu-timeout", "400ms", "gpu", "audit", "-o", "json")
		took := time.Since(start)
		if code != ExitFindings {
			t.Fatalf("block %s: exit %d, want 1: %s\n%s", tc.block, code, stderr, out)
		}
		// One abandoned call of 400ms plus process start and eight
		// GPUs' reads: far less than the 5 s default timeout.
		if took > 4*time.Second {
			t.Errorf("block %s: took %s with --gpu-timeout 400ms", tc.block, took)
		}
		d := parseAudit(t, out)
		found := false
		for _, c := range d.Checks {
			if c.ID == "gpu.backend.call" && c.Status == "error" && c.Subject == tc.subject {
				found = strings.Contains(c.Current, tc.call) && strings.Contains(c.Current, "400ms")
				if !found {
					t.Errorf("block %s: gpu.backend.call says %q, want the call %s and 400ms", tc.block, c.Current, tc.call)
				}
			}
		}
		if !found {
			t.Errorf("block %s: no gpu.backend.call error with subject %q:\n%s", tc.block, tc.subject, out)
		}
		if tc.subject == "gpu3" {
			ok := 0
			for _, c := range d.Checks {
				if c.ID == "gpu.persistence" && c.Subject != "gpu3" {
					ok++
				}
			}
			if ok != 7 {
				t.Errorf("block %s: %d other GPUs audited, want 7", tc.block, ok)
			}
		}
	}
}

// TestNVMLStubInitFailure: a library that loads but whose nvmlInit fails
// with NVML_ERROR_DRIVER_NOT_LOADED is the host's driver problem
// (gpu.driver), not a missing library (gpu.backend).
func TestNVMLStubInitFailure(t *testing.T) {
	lib := needStub(t)
	dgx := testhost.Path(t, "dgx-h100")
	env := []string{"LD_LIBRARY_PATH=" + lib, "GPUNODE_NVML_STUB=" + stubJSON(t), "GPUNODE_NVML_STUB_INIT=DRIVER_NOT_LOADED"}
	code, out, stderr := runSub(t, 20*time.Second, env, "--root", dgx, "--live-root", "gpu", "audit", "-o", "json")
	if code != ExitFindings {
		t.Fatalf("exit %d, want 1: %s\n%s", code, stderr, out)
	}
	d := parseAudit(t, out)
	if len(d.Checks) != 1 || d.Checks[0].ID != "gpu.driver" || d.Checks[0].Status != "error" {
		t.Fatalf("checks %+v, want one gpu.driver error", d.Checks)
	}
	if !strings.Contains(d.Checks[0].Detail, "Driver Not Loaded") || !strings.Contains(d.Checks[0].Current, "8 NVIDIA GPU functions") {
		t.Errorf("gpu.driver: current %q detail %q; want the 8 functions and NVML's Driver Not Loaded", d.Checks[0].Current, d.Checks[0].Detail)
	}
	// Explicit --gpu-backend nvml: the command fails naming the error.
	code, _, stderr = runSub(t, 20*time.Second, env, "--root", dgx, "--live-root", "--gpu-backend", "nvml", "gpu", "status")
	if code == ExitOK || !strings.Contains(stderr, "Driver Not Loaded") {
		t.Errorf("gpu status --gpu-backend nvml: exit %d stderr %q; want a failure naming Driver Not Loaded", code, stderr)
	}
}

// TestLiveRootMissingLibrary: under --live-root without libnvidia-ml.so.1
// or nvidia-smi (a pod run without the NVIDIA runtime), the audit says the
// library is missing in this container and how to fix it, never that no
// driver answers and never a word about the fake file; without --live-root
// the same root is a captured tree read through its fake file.
func TestLiveRootMissingLibrary(t *testing.T) {
	needStub(t) // needs the cgo NVML backend (the stub itself is not put on the path)
	dgx := testhost.Path(t, "dgx-h100")
	for _, env := range [][]string{
		{"LD_LIBRARY_PATH=" + t.TempDir()},
		{"LD_LIBRARY_PATH=" + t.TempDir(), "GPUNODE_LIVE_ROOT=1"},
	} {
		args := []string{"--root", dgx, "gpu", "audit"}
		if len(env) == 1 {
			args = append([]string{"--live-root"}, args...)
		}
		code, out, stderr := runSub(t, 20*time.Second, env, args...)
		if code != ExitFindings {
			t.Fatalf("%v %v: exit %d, want 1: %s\n%s", env, args, code, stderr, out)
		}
		for _, want := range []string{"gpu.backend", "NVML library libnvidia-ml.so.1 not found in this container", "runtimeClassName: nvidia",
			"NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_DRIVER_CAPABILITIES=utility"} {
			if !strings.Contains(out, want) {
				t.Errorf("%v: output lacks %q:\n%s", env, want, out)
			}
		}
		for _, bad := range []string{"no driver answers", "fake", "gpu.driver"} {
			if strings.Contains(out+stderr, bad) {
				t.Errorf("%v: output says %q:\n%s\n%s", env, bad, out, stderr)
			}
		}
		code, out, stderr = runSub(t, 20*time.Second, env, append([]string{"-o", "json"}, args...)...)
		d := parseAudit(t, out)
		if code != ExitFindings || len(d.Checks) != 1 || d.Checks[0].ID != "gpu.backend" || d.Checks[0].Status != "error" ||
			d.Checks[0].Current != "NVML library libnvidia-ml.so.1 not found in this container" {
			t.Errorf("%v -o json: exit %d checks %+v (%s)", env, code, d.Checks, stderr)
		}
		code, _, stderr = runSub(t, 20*time.Second, env, "--root", dgx, "--live-root", "gpu", "status")
		if code != ExitFindings || !strings.Contains(stderr, "not found in this container") || strings.Contains(stderr, "no driver answers") {
			t.Errorf("gpu status: exit %d stderr %q", code, stderr)
		}
	}
	// Without --live-root the root is a captured tree: the fake file.
	code, out, stderr := runSub(t, 20*time.Second, []string{"LD_LIBRARY_PATH=" + t.TempDir()}, "--root", dgx, "gpu", "status", "-o", "json")
	var st statusDoc
	if code != ExitOK || json.Unmarshal([]byte(out), &st) != nil || st.Backend != "fake" || len(st.GPUs) != 8 {
		t.Errorf("captured root: exit %d backend %q %d GPUs (%s)", code, st.Backend, len(st.GPUs), stderr)
	}
}

// TestLiveRootRefusesFakeBackend: --gpu-backend fake describes a captured
// tree; under --live-root it is a usage error.
func TestLiveRootRefusesFakeBackend(t *testing.T) {
	dgx := testhost.Path(t, "dgx-h100")
	code, _, stderr := run(t, "--root", dgx, "--live-root", "--gpu-backend", "fake", "gpu", "status")
	if code != ExitUsage || !strings.Contains(stderr, "--live-root") {
		t.Errorf("exit %d stderr %q; want 2 naming --live-root", code, stderr)
	}
	code, _, stderr = run(t, "--root", dgx, "--gpu-backend", "fake", "gpu", "status")
	if code != ExitOK {
		t.Errorf("without --live-root: exit %d stderr %q", code, stderr)
	}
}
