package companion

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The two executables as installed: gpunode execs gpunode-full beside it
// for the companion's commands, and the answer is the one gpunode-full
// gives in-process; a node command runs without the companion.
func TestGpunodeForwardsToGpunodeFull(t *testing.T) {
	if testing.Short() {
		t.Skip("builds both executables")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go tool")
	}
	dir := t.TempDir()
	for _, b := range []string{"gpunode", "gpunode-full"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, b), "./cmd/"+b)
		cmd.Dir = filepath.Join("..", "..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", b, err, out)
		}
	}
	const hints = `{"policy":"restricted","numaNodes":[0,1],"providers":[{"cpu":[{"affinity":[1],"preferred":true}]}]}`
	args := []string{"-o", "json", "k8s", "merge", "-f", "-"}
	cmd := exec.Command(filepath.Join(dir, "gpunode"), args...)
	cmd.Env = []string{"PATH=/nonexistent"}
	cmd.Stdin = strings.NewReader(hints)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	got, err := cmd.Output()
	if err != nil {
		t.Fatalf("gpunode %v: %v, stderr %s", args, err, stderr.String())
	}
	code, want, errs := runStdin(t, hints, args...)
	if code != 0 || string(got) != want || !strings.Contains(want, `"admit": true`) {
		t.Fatalf("forwarded:\n%s\nin-process (exit %d, stderr %s):\n%s", got, code, errs, want)
	}
	// Exit codes come through the exec: a usage error is 2.
	cmd = exec.Command(filepath.Join(dir, "gpunode"), "k8s", "merge", "--no-such-flag")
	cmd.Env = []string{"PATH=/nonexistent"}
	if err := cmd.Run(); err == nil || cmd.ProcessState.ExitCode() != 2 {
		t.Fatalf("gpunode k8s merge --no-such-flag: %v, want exit 2", err)
	}
	// Alone, gpunode runs its node commands and names what is missing.
	alone := t.TempDir()
	cp := exec.Command("cp", filepath.Join(dir, "gpunode"), alone)
	if out, err := cp.CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	if out, err := exec.Command(filepath.Join(alone, "gpunode"), "version").Output(); err != nil || !strings.HasPrefix(string(out), "gpunode ") {
		t.Fatalf("gpunode version alone: %q, %v", out, err)
	}
	cmd = exec.Command(filepath.Join(alone, "gpunode"), "k8s", "admit")
	cmd.Env = []string{"PATH=/nonexistent"}
	out, err := cmd.CombinedOutput()
	if err == nil || cmd.ProcessState.ExitCode() != 3 || !strings.Contains(string(out), "gpunode-full not found") {
		t.Fatalf("gpunode k8s admit without the companion: %v, %s", err, out)
	}
}
