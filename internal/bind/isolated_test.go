package bind

import (
	"context"
	"strings"
	"testing"

	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/topo"
)

// TestMostlyIsolatedNodeWarns: with inference-isolated's boot isolation
// (7 of 8 cores isolated for pinned threads) bind skipped the isolated CPUs
// silently and gave the rank the housekeeping CPUs all IRQs go to; it warns
// now and says how to use the isolated CPUs.
func TestMostlyIsolatedNodeWarns(t *testing.T) {
	tp := discover(t, "downgraded")
	node := tp.NodeByID(0)
	if node == nil || node.CPUs.Size() < 8 {
		t.Fatal("fixture node 0 too small")
	}
	cpus := node.CPUs.List()
	iso := cpuset.New(cpus[len(cpus)/8:]...)
	tp.IsolatedCPUs = topo.NewCPUList(iso)
	tp.NohzFullCPUs = topo.NewCPUList(iso)
	req := Request{GPU: "0", Command: []string{"python", "serve.py"}}
	p, err := Resolve(context.Background(), tp, req, Sources{})
	if err != nil {
		t.Fatal(err)
	}
	if !hasWarning(p, "are isolated") || !hasWarning(p, "--include-isolated") {
		t.Errorf("warnings %q: want the isolated-CPU conflict and --include-isolated", p.Warnings)
	}
	req.IncludeIsolated = true
	p, err = Resolve(context.Background(), tp, req, Sources{})
	if err != nil {
		t.Fatal(err)
	}
	if hasWarning(p, "are isolated") {
		t.Errorf("--include-isolated still warns: %q", p.Warnings)
	}
	// The stock fixture isolates a quarter of node 0: no warning.
	p, err = Resolve(context.Background(), discover(t, "downgraded"), Request{GPU: "0", Command: []string{"x"}}, Sources{})
	if err != nil {
		t.Fatal(err)
	}
	if hasWarning(p, "are isolated") {
		t.Errorf("quarter isolated warns: %q", p.Warnings)
	}
}

func hasWarning(p *Plan, s string) bool {
	for _, w := range p.Warnings {
		if strings.Contains(w, s) {
			return true
		}
	}
	return false
}
