package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeMPSControl is the fake nvidia-cuda-mps-control script of the mps tests.
func fakeMPSControl(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "mps", "testdata", "fake-mps-control.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	return p
}

// scrub replaces the temp root in output with <root>.
func scrub(out, root string) string { return strings.ReplaceAll(out, root, "<root>") }

func TestMPSCommands(t *testing.T) {
	ctl := fakeMPSControl(t)
	root := copyGPUHost(t, "h100x8")
	run := func(golden string, code int, args ...string) string {
		t.Helper()
		args = append(args, "--root", root, "--mps-control", ctl)
		out, stderr, got := runGPUCLI(t, args...)
		if got != code {
			t.Fatalf("%v: exit %d, want %d; stderr %s", args, got, code, stderr)
		}
		out = strings.ReplaceAll(scrub(out, root), ctl, "<mps-control>")
		if golden != "" {
			gpuGolden(t, golden, out)
		}
		return out
	}
	run("mps-start-dry-run.txt", 0, "mps", "start", "--gpu", "0,1", "--dry-run")
	run("mps-status-none.txt", 0, "mps", "status")
	out := run("mps-start.json", 0, "mps", "start", "--gpu", "0", "--sm-partitioning", "-o", "json")
	if !strings.Contains(out, `"changed": true`) || !strings.Contains(out, `"journal"`) {
		t.Fatalf("start did not start/journal: %s", out)
	}
	run("mps-status.txt", 0, "mps", "status", "--partitions")
	run("mps-partition-plan.txt", 0, "mps", "partition", "plan", "--gpu", "0", "--chunks", "5,3,2")
	run("mps-partition-plan-infeasible.txt", 1, "mps", "partition", "plan", "--sm-count", "108", "--arch", "ampere", "--chunks", "20,8")
	out = run("", 0, "mps", "partition", "add", "--gpu", "0", "--chunks", "5")
	if !strings.Contains(out, "CUDA_MPS_SM_PARTITION=GPU-5b1a3c2e-7d4f-4e8a-9c1b-0000a0b10000/Dx4AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA") {
		t.Errorf("partition add: %s", out)
	}
	run("mps-stop.txt", 0, "mps", "stop")
	out = run("", 0, "mps", "status", "-o", "json")
	if !strings.Contains(out, `"running": false`) {
		t.Errorf("still running after stop: %s", out)
	}
}

func TestMPSErrors(t *testing.T) {
	ctl := fakeMPSControl(t)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"mps", "start", "--gpu", "1", "--root", gpuHost("a100-mig")}, ExitUsage, "MIG mode"},
		{[]string{"mps", "start", "--mig", "GPU-1", "--dry-run", "--root", gpuHost("a100-mig")}, ExitUsage, "not a MIG device"},
		{[]string{"mps", "start", "--root", gpuHost("nodriver")}, ExitFailure, "no NVIDIA driver"},
		{[]string{"mps", "partition", "plan", "--chunks", "x", "--sm-count", "10"}, ExitUsage, "--chunks"},
		{[]string{"mps", "partition", "plan", "--chunks", "1"}, ExitUsage, "one --gpu"},
		{[]string{"mps", "start", "--mig", "MIG-nonexistent", "--dry-run", "--root", gpuHost("a100-mig")}, ExitUsage, "no such MIG device"},
		{[]string{"mps", "partition", "plan", "--chunks", "1", "--sm-count", "132"}, ExitUsage, "--sm-count needs --arch"},
		{[]string{"mps", "partition", "plan", "--chunks", "1", "--sm-count", "132", "--arch", "tpu"}, ExitUsage, "--arch \"tpu\""},
		{[]string{"mps", "partition", "plan", "--chunks", "1", "--sm-count", "132", "--arch", "hopper", "--gpu", "0", "--root", gpuHost("h100x8")}, ExitUsage, "give one of them"},
		{[]string{"mps", "partition", "add", "--gpu", "0", "--chunks", "2", "--root", gpuHost("h100x8")}, ExitFailure, "no MPS daemon"},
	} {
		_, stderr, code := runGPUCLI(t, append(tc.args, "--mps-control", ctl)...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d stderr %q; want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
	// MIG devices get one daemon each.
	out, stderr, code := runGPUCLI(t, "mps", "start", "--mig", "all", "--dry-run", "--root", gpuHost("a100-mig"))
	if code != 0 || strings.Count(out, "MIG-1a2b3c4d") < 4 {
		t.Errorf("--mig all: exit %d %s %s", code, out, stderr)
	}
}
