package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/sysfmt"
	"github.com/gpunode/gpunode/internal/testhost"
	"github.com/gpunode/gpunode/internal/tune/tunetest"
)

// TestBindAgreesWithInferenceIsolated: the kernel parameters 'tune plan
// --profile inference-isolated' computes, booted (written to sysfs's
// isolated and nohz_full), make 'bind' put the rank on the node's pipeline
// CPUs, none of them an irqaffinity (housekeeping) CPU. Before, bind
// skipped every isolated CPU and the rank got the housekeeping cores that
// every IRQ is steered to.
func TestBindAgreesWithInferenceIsolated(t *testing.T) {
	root := testhost.Copy(t, "downgraded")
	if err := tunetest.Overlay(root, tunetest.Options{}); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "--root", root, "tune", "plan", "--profile", "inference-isolated", "-o", "json")
	if code != ExitOK {
		t.Fatalf("tune plan: exit %d %s", code, errs)
	}
	var plan struct{ Boot []string }
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatal(err)
	}
	params := map[string]string{}
	for _, kv := range plan.Boot {
		k, v, _ := strings.Cut(kv, "=")
		params[k] = v
	}
	if params["isolcpus"] == "" || params["irqaffinity"] == "" {
		t.Fatalf("plan boot parameters %v: want isolcpus and irqaffinity", plan.Boot)
	}
	for f, k := range map[string]string{"isolated": "isolcpus", "nohz_full": "nohz_full"} {
		if err := os.WriteFile(filepath.Join(root, "sys/devices/system/cpu", f), []byte(params[k]+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs = run(t, "--root", root, "bind", "--gpu", "0", "--dry-run", "-o", "json", "--", "python", "serve.py")
	if code != ExitOK {
		t.Fatalf("bind: exit %d %s", code, errs)
	}
	var p struct {
		CPUs      string   `json:"cpus"`
		NodeCPUs  string   `json:"nodeCPUs"`
		Warnings  []string `json:"warnings"`
		Isolation struct{ Mode string }
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	cpus, err := sysfmt.ParseCPUList(p.CPUs)
	if err != nil {
		t.Fatal(err)
	}
	iso, _ := sysfmt.ParseCPUList(params["isolcpus"])
	hk, _ := sysfmt.ParseCPUList(params["irqaffinity"])
	node, _ := sysfmt.ParseCPUList(p.NodeCPUs)
	if p.Isolation.Mode != "pipeline" || !cpus.Equals(node.Intersection(iso)) || cpus.Intersection(hk).Size() > 0 || len(p.Warnings) > 0 {
		t.Errorf("bind on inference-isolated: cpus %s (mode %q, warnings %q), want node %s's pipeline CPUs %s, none of irqaffinity %s",
			p.CPUs, p.Isolation.Mode, p.Warnings, p.NodeCPUs, node.Intersection(iso), hk)
	}
	// The two isolation flags conflict.
	if code, _, _ := run(t, "--root", root, "bind", "--gpu", "0", "--dry-run", "--include-isolated", "--skip-isolated", "--", "true"); code != ExitUsage {
		t.Errorf("--include-isolated --skip-isolated: exit %d, want %d", code, ExitUsage)
	}
}
