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

// TestPipelineIsolation: when the host's isolation is the split gpunode's
// inference-isolated profile sets (topo.PipelineSplit), bind puts the rank
// on its node's pipeline CPUs, off the housekeeping CPUs IRQs go to, and
// exports OpenMP pinning; before, it skipped them and gave the rank the
// 1-2 housekeeping cores. --skip-isolated keeps the old placement; too few
// pipeline cores left (here by --exclude-cpus) share the whole node with a
// warning.
func TestPipelineIsolation(t *testing.T) {
	tp := discover(t, "downgraded")
	hk, pipe, err := tp.PipelineSplit()
	if err != nil {
		t.Fatal(err)
	}
	tp.IsolatedCPUs = topo.NewCPUList(pipe)
	tp.NohzFullCPUs = topo.NewCPUList(pipe)
	if _, ok := tp.PipelineIsolation(); !ok {
		t.Fatal("PipelineIsolation does not recognise the split")
	}
	getenv := func(string) string { return "" }
	req := Request{GPU: "0", Command: []string{"python", "serve.py"}, Getenv: getenv}
	p, err := Resolve(context.Background(), tp, req, Sources{})
	if err != nil {
		t.Fatal(err)
	}
	node := tp.NodeByID(p.NUMANode).CPUs
	if want := node.Intersection(pipe); !p.CPUs.Equals(want) || p.Isolation == nil || p.Isolation.Mode != IsolationPipeline {
		t.Errorf("rank CPUs %s (isolation %+v), want the node's pipeline CPUs %s", p.CPUs, p.Isolation, want)
	}
	if !p.Excluded.Housekeeping.Equals(node.Intersection(hk)) || p.CPUs.Intersection(hk).Size() > 0 {
		t.Errorf("housekeeping excluded %s, want %s and none of it in the rank's CPUs %s", p.Excluded.Housekeeping, node.Intersection(hk), p.CPUs)
	}
	if hasWarning(p, "are isolated") {
		t.Errorf("gpunode's own isolation warns: %q", p.Warnings)
	}
	env := map[string]string{}
	for _, e := range p.Env {
		env[e.Name] = e.Value
	}
	if env[EnvOMPBind] != "close" || env[EnvOMPPlaces] != "cores" {
		t.Errorf("env %v: want OpenMP pinned per core on isolated CPUs", env)
	}
	// --skip-isolated: the housekeeping CPUs, as before, and no warning
	// (asked for).
	req.SkipIsolated = true
	p, err = Resolve(context.Background(), tp, req, Sources{})
	if err != nil {
		t.Fatal(err)
	}
	if !p.CPUs.Equals(node.Intersection(hk)) || p.Isolation.Mode != IsolationSkip || hasWarning(p, "are isolated") {
		t.Errorf("--skip-isolated: CPUs %s %+v %q, want the housekeeping CPUs %s", p.CPUs, p.Isolation, p.Warnings, node.Intersection(hk))
	}
	// Too few pipeline CPUs left: the whole node, with a warning.
	req.SkipIsolated = false
	req.ExcludeCPUs = pipe
	p, err = Resolve(context.Background(), tp, req, Sources{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Isolation.Mode != IsolationWholeNode || !hasWarning(p, "too few for 1 local ranks") || !p.CPUs.Equals(node.Intersection(hk)) {
		t.Errorf("no pipeline CPUs left: CPUs %s %+v %q, want the whole node's rest with a warning", p.CPUs, p.Isolation, p.Warnings)
	}
	// An isolation gpunode did not set (nohz_full differs): skipped, and
	// the warning says why.
	tp.NohzFullCPUs = topo.NewCPUList(pipe.Difference(cpuset.New(pipe.List()[0])))
	p, err = Resolve(context.Background(), tp, Request{GPU: "0", Command: []string{"x"}, Getenv: getenv}, Sources{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Isolation.Mode != IsolationSkip || !hasWarning(p, "not the pipeline split of gpunode's inference-isolated profile") {
		t.Errorf("foreign isolation: %+v %q, want skip with the warning", p.Isolation, p.Warnings)
	}
}
