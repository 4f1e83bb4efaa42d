package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// migGolden reads a golden file of internal/mig (rewritten there with
// go test ./internal/mig -update); the CLI must print exactly the same.
func migGolden(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "mig", "testdata", "golden", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestMIGGolden(t *testing.T) {
	cfg := filepath.Join("..", "mig", "testdata", "mig-parted.yaml")
	for _, tc := range []struct {
		golden string
		code   int
		args   []string
	}{
		{"plan-h100-feasible.txt", 0, []string{"mig", "plan", "--model", "H100-80GB", "--want", "3g.40gb=1,2g.20gb=1,1g.10gb=2"}},
		{"plan-h100-feasible.json", 0, []string{"mig", "plan", "--model", "h100-80gb", "--want", "3g.40gb=1,2g.20gb=1,1g.10gb=2", "-o", "json"}},
		{"plan-h100-ci.txt", 0, []string{"mig", "plan", "--model", "NVIDIA H100 80GB HBM3", "--want", "3g.40gb=1,4g.40gb=1", "--compute-instances"}},
		{"plan-a100-infeasible.txt", 1, []string{"mig", "plan", "--model", "A100-SXM4-40GB", "--want", "3g.20gb=2,1g.5gb=1"}},
		{"plan-a100-infeasible.json", 1, []string{"mig", "plan", "--model", "0x20B0", "--want", "3g.20gb=2,1g.5gb=1", "-o", "json"}},
		{"plan-h100-8gpus.txt", 0, []string{"mig", "plan", "--model", "H100-80GB", "--want", "3g.40gb=6,4g.40gb=3,2g.20gb=5,1g.10gb=9", "--gpus", "8"}},
		{"plan-a30-infeasible-2gpus.txt", 1, []string{"mig", "plan", "--model", "A30-24GB", "--want", "4g.24gb=1,2g.12gb=2,1g.6gb+me=1,2g.12gb+me=1", "--gpus", "2"}},
		{"plan-h100-ci-forms.txt", 0, []string{"mig", "plan", "--model", "H100-80GB", "--want", "1c.3g.40gb=4,2c.3g.40gb=1"}},
		{"profiles-h100.txt", 0, []string{"mig", "profiles", "--model", "H100-80GB"}},
		{"profiles-all.txt", 0, []string{"mig", "profiles"}},
		{"profiles-a30.json", 0, []string{"mig", "profiles", "--model", "NVIDIA A30", "-o", "json"}},
	} {
		code, out, stderr := run(t, tc.args...)
		if code != tc.code {
			t.Errorf("gpunode %v: exit %d (stderr %q), want %d", tc.args, code, stderr, tc.code)
		}
		if want := migGolden(t, tc.golden); out != want {
			t.Errorf("gpunode %v: output differs from %s:\n%s", tc.args, tc.golden, out)
		}
	}
	// validate prints the file name it was given; the golden uses the
	// internal/mig relative path.
	code, out, _ := run(t, "mig", "validate", "-f", cfg, "--device-id", "0x2330,0x2330,0x2330,0x2330", "--device-id", "0x233010DE,0x2330,0x2330,0x2330")
	want := strings.ReplaceAll(migGolden(t, "validate-h100x8.txt"), "testdata/mig-parted.yaml", cfg)
	if code != 1 || out != want {
		t.Errorf("mig validate --device-id x8: exit %d\n%s", code, out)
	}
	code, out, _ = run(t, "mig", "validate", "-f", cfg, "--model", "H100-80GB", "--gpus", "8")
	if code != 1 || out != want {
		t.Errorf("mig validate --model: exit %d\n%s", code, out)
	}
	// The file as the one argument, as 'k8s kubelet lint FILE' takes it.
	code, out, _ = run(t, "mig", "validate", cfg, "--model", "H100-80GB", "--gpus", "8")
	if code != 1 || out != want {
		t.Errorf("mig validate FILE --model: exit %d\n%s", code, out)
	}
}

func TestMIGExitCodes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.yaml", "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {\"3g.40gb\": 2}\n")
	bad := write("bad.yaml", "version: v1\nmig-configs:\n  a:\n    - mig-enabled: false\n")
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"mig"}, ExitOK, ""},
		{[]string{"mig", "plan", "--want", "1g.10gb=1"}, ExitUsage, "--model is required"},
		{[]string{"mig", "plan", "--model", "H100-80GB"}, ExitUsage, "--want is required"},
		{[]string{"mig", "plan", "--model", "H100-80GB", "--want", "3g.20gb=1"}, ExitUsage, "belongs to A100-40GB, not H100-80GB; on H100-80GB did you mean 3g.40gb?"},
		{[]string{"mig", "plan", "--model", "H100-80GB", "--want", "3g.41gb=1"}, ExitUsage, "did you mean 3g.40gb?"},
		// Above the per-GPU maximum: an infeasible plan (exit 1), not a usage error.
		{[]string{"mig", "plan", "--model", "H100-80GB", "--want", "1g.10gb=8"}, ExitFindings, ""},
		{[]string{"mig", "plan", "--model", "H100-80GB", "--want", "1g.10gb=8", "--gpus", "2"}, ExitOK, ""},
		{[]string{"mig", "plan", "--model", "H100-80GB", "--want", "1g.10gb=x"}, ExitUsage, "is not a number"},
		{[]string{"mig", "plan", "--model", "NVIDIA L40S", "--want", "1g.10gb=1"}, ExitUsage, "has no MIG support"},
		{[]string{"mig", "plan", "--model", "H100-81GB", "--want", "1g.10gb=1"}, ExitUsage, "did you mean H100-80GB?"},
		{[]string{"mig", "plan", "--model", "H100-80GB", "--want", "1g.10gb=1", "--gpus", "0"}, ExitUsage, "--gpus must be at least 1"},
		{[]string{"mig", "validate"}, ExitUsage, "missing required flags 'config-file'"},
		{[]string{"mig", "validate", "-f", filepath.Join(dir, "none.yaml")}, ExitUsage, "read error"},
		{[]string{"mig", "validate", "-f", bad}, ExitUsage, "bad.yaml:4: error parsing config file: mig-configs.a[0]: missing required field: devices"},
		{[]string{"mig", "validate", "-f", good, "-c", "b"}, ExitUsage, "selected mig-config not present: b"},
		{[]string{"mig", "validate", "-f", good, "--device-id", "0x2330"}, ExitOK, ""},
		{[]string{"mig", "validate", "-f", good, "--device-id", "0x20B7"}, ExitFindings, ""},
		{[]string{"mig", "validate", good, "--device-id", "0x2330"}, ExitOK, ""},
		{[]string{"mig", "validate", "-f", good, good}, ExitOK, ""},
		{[]string{"mig", "validate", "-f", good, bad}, ExitUsage, "the file is given twice"},
		{[]string{"mig", "validate", good, bad}, ExitUsage, "accepts at most 1 arg"},
		{[]string{"mig", "validate", "-f", good, "--device-id", "zz"}, ExitUsage, "invalid PCI device id"},
		{[]string{"mig", "validate", "-f", good, "--gpus", "2"}, ExitUsage, "--gpus needs --model"},
		{[]string{"mig", "validate", "-f", good, "--model", "H100-80GB", "--device-id", "0x2330"}, ExitUsage, "mutually exclusive"},
		{[]string{"mig", "profiles", "--model", "T4"}, ExitUsage, "has no MIG support"},
	} {
		code, _, stderr := run(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("gpunode %v: exit %d stderr %q; want exit %d with %q", tc.args, code, stderr, tc.code, tc.stderr)
		}
	}
}
