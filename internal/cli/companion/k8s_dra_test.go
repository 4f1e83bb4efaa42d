package companion

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func draSeed(name string) string {
	return filepath.Join("..", "..", "k8s", "dra", "testdata", "seed", name)
}

func TestDRAAllocateJSONContract(t *testing.T) {
	code, out, errs := run(t, "k8s", "dra", "allocate", "--slices", draSeed("slices-dgx-h100-dynamic-mig.yaml"), "--classes", draSeed("classes.yaml"),
		"--claims", draSeed("5.3.4-claim.yaml"), "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep struct {
		SchemaVersion string `json:"schemaVersion"`
		Nodes         []struct {
			Node        string `json:"node"`
			Fits        bool   `json:"fits"`
			Allocations []struct {
				Claim   string `json:"claim"`
				Results []struct{ Request, Driver, Pool, Device string }
			} `json:"allocations"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.SchemaVersion != "gpunode.k8s.dra.allocate/v1" || len(rep.Nodes) != 1 || !rep.Nodes[0].Fits || rep.Nodes[0].Node != "dgx-h100" {
		t.Fatalf("report: %s", out)
	}
	a := rep.Nodes[0].Allocations[0]
	if a.Claim != "dynamic-mig-test/mig-4-2-1" || len(a.Results) != 3 || a.Results[0].Request != "mig-1g" || a.Results[0].Pool != "dgx-h100" {
		t.Fatalf("allocation: %+v", a)
	}
	// The three MIG devices are on one GPU (matchAttribute parentUUID).
	for _, r := range a.Results {
		if !strings.HasPrefix(r.Device, "gpu-0-mig-") {
			t.Fatalf("device %s not on gpu-0", r.Device)
		}
	}
}

func TestDRAAllocateNoFitExit1(t *testing.T) {
	code, out, _ := run(t, "k8s", "dra", "allocate", "--slices", draSeed("slices-dgx-h100.yaml"), "--classes", draSeed("classes.yaml"),
		"--claims", draSeed("5.5.5-claim.yaml"), "--explain")
	if code != 1 || !strings.Contains(out, "the largest group (pci0000:15) has 2 free, 3 needed") || !strings.Contains(out, "count 2 instead of 3 fits") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

func TestDRABadInputExit2(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "claim.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c}\nspec:\n  devices:\n    requests:\n    - name: r\n      exactly: {deviceClassName: missing}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "k8s", "dra", "allocate", "--slices", draSeed("slices-dgx-h100.yaml"), "--classes", draSeed("classes.yaml"), "--claims", bad, "-o", "json")
	if code != 2 || out != "" || !strings.Contains(errs, `ResourceClaim "default/c": spec.devices.requests[0].exactly.deviceClassName: Not found`) {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

func TestDRASlicesFixtures(t *testing.T) {
	code, out, errs := run(t, "--root", filepath.Join("..", "..", "..", "testdata", "hosts", "dgx-h100"), "k8s", "dra", "slices", "--node-name", "dgx-h100", "--mig", "dynamic", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	want, err := os.ReadFile(draSeed("slices-dgx-h100-dynamic-mig.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"resourceSliceCount": 9`) || !strings.Contains(string(want), "resourceSliceCount: 9") || !strings.Contains(out, "gpu-7-mig-7g80gb-0-0") {
		t.Fatalf("slices:\n%.2000s", out)
	}
}

// TestDRAAllocateTimeoutExit3: a decision past --timeout is undecided,
// named in the JSON (undecided, explain.reason) and on stderr, exit 3; the
// command returns at the deadline, not minutes later.
func TestDRAAllocateTimeoutExit3(t *testing.T) {
	args := []string{"k8s", "dra", "allocate", "--slices", draSeed("../hard-distinct-slices.yaml"), "--classes", draSeed("../hard-distinct-classes.yaml"),
		"--claims", draSeed("../hard-distinct-claim.yaml"), "-o", "json", "--timeout", "300ms"}
	t0 := time.Now()
	code, out, errs := run(t, args...)
	if took := time.Since(t0); took > 5*time.Second {
		t.Fatalf("took %s past a 300ms timeout", took)
	}
	var rep struct {
		Nodes []struct {
			Node      string `json:"node"`
			Fits      bool   `json:"fits"`
			Undecided bool   `json:"undecided"`
			Explain   struct {
				Reason string `json:"reason"`
			} `json:"explain"`
		} `json:"nodes"`
	}
	if code != 3 || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Nodes) != 1 || rep.Nodes[0].Fits || !rep.Nodes[0].Undecided ||
		!strings.HasPrefix(rep.Nodes[0].Explain.Reason, "undecided within 300ms: gpunode's search had explored ") ||
		!strings.Contains(rep.Nodes[0].Explain.Reason, "was at claim default/c0, request r") ||
		!strings.Contains(errs, "no node fits and n1 undecided within 300ms (--timeout)") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
}

// TestDRAAllocateTimeoutRange: --timeout above 0 and at most 10s (the
// scheduler's filter timeout), else exit 2.
func TestDRAAllocateTimeoutRange(t *testing.T) {
	base := []string{"k8s", "dra", "allocate", "--slices", draSeed("slices-dgx-h100.yaml"), "--classes", draSeed("classes.yaml"), "--claims", draSeed("5.3.3-claim.yaml")}
	for _, c := range []struct {
		v    string
		code int
	}{{"0s", 2}, {"-1s", 2}, {"10001ms", 2}, {"1m", 2}, {"10s", 1}, {"9999ms", 1}} {
		// 5.3.3's claim does not fit the full-GPU slices: a decided no (1).
		code, _, errs := run(t, append(base, "--timeout", c.v)...)
		if code != c.code || (c.code == 2 && !strings.Contains(errs, "at most 10s (kube-scheduler's DRA filter timeout)")) {
			t.Fatalf("--timeout %s: exit %d (want %d): %s", c.v, code, c.code, errs)
		}
	}
}
