package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

func migLiveConfig() string {
	return filepath.Join("..", "miglive", "testdata", "mig-config.yaml")
}

func TestMIGLiveCommands(t *testing.T) {
	cfg := migLiveConfig()
	for _, tc := range []struct {
		golden string
		args   []string
		code   int
	}{
		{"mig-apply-dry-run.txt", []string{"mig", "apply", "-f", cfg, "-c", "all-balanced", "--dry-run", "--root", gpuHost("a100-mig")}, 0},
		{"mig-apply-dry-run-h100.json", []string{"mig", "apply", "-f", cfg, "-c", "all-balanced", "--dry-run", "--root", gpuHost("h100x8"), "-o", "json"}, 0},
		{"mig-assert-fail.txt", []string{"mig", "assert", "-f", cfg, "-c", "all-balanced", "--root", gpuHost("a100-mig")}, 1},
		{"mig-export.txt", []string{"mig", "export", "--root", gpuHost("a100-mig")}, 0},
		{"mig-export-h100.txt", []string{"mig", "export", "--root", gpuHost("h100x8")}, 0},
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

func TestMIGLiveApplyJournaled(t *testing.T) {
	root := copyGPUHost(t, "h100x8")
	out, stderr, code := runGPUCLI(t, "mig", "apply", "-f", migLiveConfig(), "-c", "all-balanced", "--root", root, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, `"journal": "000001-mig"`) || strings.Count(out, `"status": "applied"`) != 8 {
		t.Errorf("apply: %s", out)
	}
}

func TestMIGLiveErrors(t *testing.T) {
	cfg := migLiveConfig()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"mig", "apply", "-f", cfg, "-c", "all-3g.20gb-plus-1g", "--root", gpuHost("a100-mig")}, ExitUsage, "does not fit"},
		{[]string{"mig", "apply", "-f", cfg, "-c", "unknown-profile", "--root", gpuHost("a100-mig")}, ExitUsage, "4g.25gb"},
		{[]string{"mig", "apply", "-f", cfg, "-c", "too-many", "--root", gpuHost("a100-mig")}, ExitUsage, "1g.5gb"},
		{[]string{"mig", "apply", "-f", cfg, "-c", "nope", "--root", gpuHost("a100-mig")}, ExitUsage, "selected mig-config not present"},
		{[]string{"mig", "apply", "-f", cfg, "--root", gpuHost("a100-mig")}, ExitUsage, "-c LABEL"},
		{[]string{"mig", "apply", "-f", "/nonexistent.yaml", "-c", "x", "--root", gpuHost("a100-mig")}, ExitUsage, "nonexistent"},
		{[]string{"mig", "apply", "-f", cfg, "-c", "all-balanced", "--root", gpuHost("nodriver")}, ExitFailure, "no NVIDIA driver"},
		{[]string{"mig", "export", "--gpu-backend", "nvidia-smi", "--root", gpuHost("a100-mig")}, ExitUsage, "--gpu-smi-live"},
		{[]string{"mig", "apply", "-f", cfg, "-c", "all-balanced", "--gpu-backend", "none", "--root", gpuHost("a100-mig")}, ExitFailure, "no NVIDIA driver"},
	} {
		_, stderr, code := runGPUCLI(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d stderr %q; want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}
