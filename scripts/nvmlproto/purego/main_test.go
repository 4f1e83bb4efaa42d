package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// needBuilds builds the stub (cc) and this prototype with CGO_ENABLED=0
// (go) into a temporary directory. Without cc or go the test is skipped,
// except in CI (CI set), where that is a failure.
func needBuilds(t *testing.T) (stubDir, bin string) {
	t.Helper()
	for _, tool := range []string{"cc", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("CI: %s not found: %v", tool, err)
			}
			t.Skipf("%s not found", tool)
		}
	}
	dir := t.TempDir()
	if out, err := exec.Command("sh", "../../../testdata/nvml-stub/build.sh", dir).CombinedOutput(); err != nil {
		t.Fatalf("build.sh: %v\n%s", err, out)
	}
	bin = filepath.Join(dir, "nvml-purego")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build: %v\n%s", err, out)
	}
	return dir, bin
}

func runProto(t *testing.T, bin, stubDir string, env ...string) (string, string, error) {
	t.Helper()
	stub, err := filepath.Abs("../../../testdata/nvml-stub/dgx-h100.json")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = append([]string{"LD_LIBRARY_PATH=" + stubDir, "GPUNODE_NVML_STUB=" + stub}, env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), errb.String(), err
}

// TestPuregoAgainstStub: built without cgo, the prototype reads through
// dlopen what the stub serves for the dgx-h100 fixture: the driver version
// and every GPU's bus id, UUID and name, in index order (the PCI info
// struct's layout is right, or the bus ids would be garbage).
func TestPuregoAgainstStub(t *testing.T) {
	stubDir, bin := needBuilds(t)
	var spec struct {
		DriverVersion string `json:"driverVersion"`
		GPUs          []struct {
			Name, UUID, BusID string
		} `json:"gpus"`
	}
	b, err := os.ReadFile("../../../testdata/nvml-stub/dgx-h100.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &spec); err != nil {
		t.Fatal(err)
	}
	want := []string{"driver " + spec.DriverVersion}
	for i, g := range spec.GPUs {
		want = append(want, fmt.Sprintf("%d %s %s %s", i, g.BusID, g.UUID, g.Name))
	}
	out, errOut, err := runProto(t, bin, stubDir)
	if err != nil {
		t.Fatalf("%v: %s", err, errOut)
	}
	if got := strings.Split(strings.TrimSpace(out), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") || len(want) != 9 {
		t.Fatalf("got\n%s\nwant (8 GPUs)\n%s", out, strings.Join(want, "\n"))
	}
	// A driver that is not loaded is NVML's error string, exit 3.
	_, errOut, err = runProto(t, bin, stubDir, "GPUNODE_NVML_STUB_INIT=DRIVER_NOT_LOADED")
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(errOut, "nvmlInit_v2") {
		t.Fatalf("init failure: %v %q", err, errOut)
	}
	// No library: the loading error, never a crash.
	cmd := exec.Command(bin)
	cmd.Env = []string{"LD_LIBRARY_PATH=" + t.TempDir()}
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "libnvidia-ml.so.1 not found") {
		t.Fatalf("no library: %v %s", err, out)
	}
}
