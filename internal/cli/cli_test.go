package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/testhost"
)

// run executes gpunode with args and returns the exit code, stdout and stderr.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := Env{
		Args: args, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		Getenv:  func(string) string { return "" },
		Environ: func() []string { return nil },
		Exec: func(string, []string, []string) error {
			t.Fatal("unexpected exec")
			return nil
		},
	}
	code := Main(context.Background(), env)
	return code, out.String(), errb.String()
}

func TestExitCodes(t *testing.T) {
	dgx := testhost.Path(t, "dgx-h100")
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"version"}, ExitOK, ""},
		{[]string{"topo", "--root", dgx}, ExitOK, ""},
		{[]string{"topo", "--root", filepath.Join(dgx, "missing")}, ExitUsage, "--root"},
		{[]string{"topo", "--root", file}, ExitUsage, "not a directory"},
		{[]string{"topo", "-o", "xml", "--root", dgx}, ExitUsage, "unknown output format"},
		{[]string{"nosuchcommand"}, ExitUsage, "unknown command"},
		{[]string{"topo", "extra"}, ExitUsage, "unknown command"},
		{[]string{"topo", "--bogus"}, ExitUsage, "unknown flag"},
		{[]string{"topo", "capture"}, ExitUsage, "--out DIR is required"},
		{[]string{"topo", "--root", t.TempDir()}, ExitFailure, "read CPU topology"},
		// README's table: a bad input file is a usage error, 2 (was 1)
		{[]string{"--root", dgx, "container", "check", "--container-spec", "/nonexistent.json"}, ExitUsage, "--container-spec"},
		{[]string{"--root", dgx, "container", "check", "--image-config", "/etc/fstab"}, ExitUsage, "--image-config"},
		{[]string{"--root", dgx, "container", "check", "--container-spec", "/etc/fstab"}, ExitUsage, "--container-spec"},
		{[]string{"--root", dgx, "container", "check", "--cuda", "bogus"}, ExitUsage, "--cuda"},
		{[]string{"--root", dgx, "audit", "--profile", "nosuch"}, ExitUsage, "nosuch"},
	} {
		code, _, stderr := run(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("gpunode %v: exit %d stderr %q; want exit %d with %q", tc.args, code, stderr, tc.code, tc.stderr)
		}
	}
}

func TestTopoJSON(t *testing.T) {
	code, out, stderr := run(t, "topo", "--root", testhost.Path(t, "dgx-h100"), "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var doc struct {
		SchemaVersion string `json:"schemaVersion"`
		NUMANodes     []struct {
			ID            int    `json:"id"`
			CPUs          string `json:"cpus"`
			MemTotalBytes uint64 `json:"memTotalBytes"`
			Distances     []int  `json:"distances"`
		} `json:"numaNodes"`
		CPUs []struct {
			ID, Core, Socket, NUMANode int
		} `json:"cpus"`
		GPUs []struct {
			Index        int    `json:"index"`
			BDF          string `json:"bdf"`
			NUMANode     int    `json:"numaNode"`
			LocalCPUs    string `json:"localCPUs"`
			LinkWidth    int    `json:"linkWidth"`
			MaxLinkWidth int    `json:"maxLinkWidth"`
			LinkSpeed    string `json:"linkSpeed"`
			MaxLinkSpeed string `json:"maxLinkSpeed"`
		} `json:"gpus"`
		NICs []struct {
			Name string `json:"name"`
		} `json:"nics"`
		Links []struct{ A, B, Class string } `json:"links"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.SchemaVersion != "gpunode.topo/v1" || len(doc.NUMANodes) != 2 || doc.NUMANodes[1].CPUs != "56-111,168-223" ||
		doc.NUMANodes[0].MemTotalBytes == 0 || len(doc.NUMANodes[0].Distances) != 2 || len(doc.CPUs) != 224 {
		t.Errorf("bad document header: %+v", doc.NUMANodes)
	}
	if len(doc.GPUs) != 8 || doc.GPUs[3].Index != 3 || doc.GPUs[3].LocalCPUs != "0-55,112-167" || doc.GPUs[3].LinkWidth != 16 || doc.GPUs[3].MaxLinkSpeed == "" {
		t.Errorf("bad gpus: %+v", doc.GPUs)
	}
	if len(doc.NICs) != 12 || len(doc.Links) != 20*19/2 {
		t.Errorf("nics=%d links=%d", len(doc.NICs), len(doc.Links))
	}
	// The fixture's fake GPU backend upgrades GPU pairs to NVLink classes;
	// GPU-NIC links keep their PCIe class.
	classes := map[string]string{}
	for _, l := range doc.Links {
		classes[l.A+"-"+l.B] = l.Class
	}
	if classes["GPU0-GPU7"] != "NV18" || classes["GPU0-GPU1"] != "NV18" || classes["GPU0-mlx5_0"] != "PIX" || classes["GPU0-mlx5_4"] != "SYS" {
		t.Errorf("link classes: GPU0-GPU7=%s GPU0-GPU1=%s GPU0-mlx5_0=%s GPU0-mlx5_4=%s",
			classes["GPU0-GPU7"], classes["GPU0-GPU1"], classes["GPU0-mlx5_0"], classes["GPU0-mlx5_4"])
	}
	// Without a GPU backend the PCIe class stays.
	_, out, _ = run(t, "topo", "--root", testhost.Path(t, "dgx-h100"), "-o", "json", "--gpu-backend", "none")
	if !strings.Contains(out, `"a": "GPU0",
      "b": "GPU1",
      "class": "PIX"`) {
		t.Error("--gpu-backend none: GPU0-GPU1 is not PIX")
	}
}

func TestTopoWithoutDriverWarns(t *testing.T) {
	code, out, _ := run(t, "topo", "--root", testhost.Path(t, "amd-8numa"))
	if code != 0 || !strings.Contains(out, "NVLink classes not shown (PCIe classes only): no NVIDIA driver") {
		t.Errorf("exit %d, output lacks the no-driver warning:\n%s", code, out)
	}
}

func TestTopoYAMLAndTableAgree(t *testing.T) {
	root := testhost.Path(t, "gh200")
	_, y, _ := run(t, "topo", "--root", root, "-o", "yaml")
	_, tbl, _ := run(t, "topo", "--root", root)
	if !strings.Contains(y, "schemaVersion: gpunode.topo/v1") || !strings.Contains(y, "memoryNumaNode: 1") {
		t.Errorf("yaml: %s", y[:200])
	}
	if !strings.Contains(tbl, "- (GPU0 memory)") || !strings.Contains(tbl, "GPU0  X") {
		t.Errorf("table: %s", tbl)
	}
}

func TestCaptureCommandRoundTrip(t *testing.T) {
	src := testhost.Path(t, "amd-8numa")
	out := filepath.Join(testhost.TempDir(t), "cap")
	code, msg, stderr := run(t, "topo", "capture", "--root", src, "--out", out)
	if code != 0 || !strings.Contains(msg, "replay with: gpunode topo --root "+out) {
		t.Fatalf("capture: exit %d %s %s", code, msg, stderr)
	}
	_, a, _ := run(t, "topo", "--root", src, "-o", "json")
	_, b, _ := run(t, "topo", "--root", out, "-o", "json")
	if a != b {
		t.Error("topo on the capture differs from topo on the source")
	}
}

func TestVersionJSON(t *testing.T) {
	_, out, _ := run(t, "version", "-o", "json")
	var v VersionInfo
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.SchemaVersion != "gpunode.version/v1" || v.GoVersion == "" {
		t.Fatalf("version: %q %v", out, err)
	}
}

// TestBindUsesDriverCPUAffinity: with a GPU backend that reports the GPU's
// CPU affinity (NVML's nvmlDeviceGetCpuAffinity; here the fake backend), bind
// takes the NUMA node from it and says so.
func TestBindUsesDriverCPUAffinity(t *testing.T) {
	root := testhost.Copy(t, "amd-8numa")
	fake, err := os.ReadFile(filepath.Join("testdata", "amd-8numa-fake-gpus.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "etc/gpunode"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/gpunode/fake-gpus.yaml"), fake, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := run(t, "bind", "--root", root, "--gpu", "2", "--gpu-backend", "fake", "--dry-run", "-o", "json", "--", "true")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var plan struct {
		NUMANode   int    `json:"numaNode"`
		NUMASource string `json:"numaSource"`
		CPUs       string `json:"cpus"`
	}
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatal(err)
	}
	if plan.NUMANode != 5 || plan.NUMASource != "fake-cpu-affinity" || plan.CPUs != "40-47,104-111" {
		t.Errorf("plan = %+v, want node 5 from the driver's CPU affinity", plan)
	}
}

// TestMIGPlanOnNodeGPU plans for a GPU of the node (fake backend under
// --root) instead of a --model.
func TestMIGPlanOnNodeGPU(t *testing.T) {
	root := filepath.Join("..", "gpu", "testdata", "hosts", "a100-mig")
	for _, tc := range []struct {
		args   []string
		code   int
		output string
	}{
		{[]string{"--gpu", "0", "--want", "3g.20gb=1,1g.5gb=2"}, ExitOK, "result   feasible"},
		{[]string{"--gpu", "0", "--want", "3g.20gb=2,1g.5gb=1"}, ExitFindings, "3g.20gb x2 uses all 8 memory slices"},
		{[]string{"--gpu", "9", "--want", "3g.20gb=1"}, ExitUsage, `--gpu "9" matches no GPU`},
		{[]string{"--gpu", "0", "--model", "A100-40GB", "--want", "3g.20gb=1"}, ExitUsage, "only one of --model or --gpu"},
	} {
		args := append([]string{"mig", "plan", "--root", root}, tc.args...)
		code, out, stderr := run(t, args...)
		if code != tc.code || !strings.Contains(out+stderr, tc.output) {
			t.Errorf("gpunode %v: exit %d, want %d with %q:\n%s%s", args, code, tc.code, tc.output, out, stderr)
		}
	}
}

// topo capture refuses a non-empty --out unless --force, and never writes
// through a link planted in it (issue 10, defect 1).
func TestCaptureCommandContainsOutput(t *testing.T) {
	src := testhost.Path(t, "vm-2vcpu")
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if err := os.MkdirAll(filepath.Join(out, "proc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(out, "proc/cpuinfo")); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := run(t, "topo", "capture", "--root", src, "--out", out)
	if code != ExitUsage || !strings.Contains(stderr, "not empty") || !strings.Contains(stderr, "--force") {
		t.Errorf("capture into a non-empty dir: exit %d, %q; want exit 2 naming --force", code, stderr)
	}
	code, _, stderr = run(t, "topo", "capture", "--root", src, "--out", out, "--force")
	if code != ExitOK {
		t.Fatalf("--force: exit %d %s", code, stderr)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
		t.Fatalf("capture wrote through the planted link: victim now %q", b)
	}
	_, a, _ := run(t, "topo", "--root", src, "-o", "json")
	_, b, _ := run(t, "topo", "--root", out, "-o", "json")
	if a != b {
		t.Error("topo on the forced capture differs from topo on the source")
	}
	_, help, _ := run(t, "topo", "capture", "--help")
	if !strings.Contains(help, "--force") {
		t.Error("topo capture --help does not mention --force")
	}
}

// TestGPUTimeoutRange: --gpu-timeout is more than 0 and at most 10m; 0, a
// negative value and 11m are usage errors.
func TestGPUTimeoutRange(t *testing.T) {
	root := "../../testdata/hosts/dgx-h100"
	for _, tc := range []struct {
		v    string
		code int
	}{{"-1s", 2}, {"0s", 2}, {"1ns", 0}, {"10m", 0}, {"10m1s", 2}} {
		code, _, stderr := run(t, "--root", root, "--gpu-timeout", tc.v, "topo")
		if code != tc.code || (tc.code == 2 && !strings.Contains(stderr, "--gpu-timeout")) {
			t.Errorf("--gpu-timeout %s: exit %d (%q), want %d", tc.v, code, stderr, tc.code)
		}
	}
}

// TestRootHelpExitCodes: the root help lists every row of README's
// exit-code table, 130 and 143 included.
func TestRootHelpExitCodes(t *testing.T) {
	_, out, _ := run(t, "--help")
	for _, want := range []string{"  0  success", "  1  the command worked", "  2  usage error", "  3  failure", "  130, 143  stopped by SIGINT (Ctrl-C) or SIGTERM"} {
		if !strings.Contains(out, want) {
			t.Errorf("root help lacks %q", want)
		}
	}
}
