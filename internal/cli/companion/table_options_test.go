package companion

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gpunode/gpunode/internal/bench"
	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/output/tabletest"
	"github.com/gpunode/gpunode/internal/podresources"
	"github.com/gpunode/gpunode/internal/podresources/podresourcestest"
	"github.com/gpunode/gpunode/internal/testhost"
)

// TestTableOptionsEveryCommand (issue 28 item 1): every gpunode-full
// command with table output (k8s, bench) with the default table,
// --no-headers, -o wide, -o jsonpath= and -o custom-columns= (what each
// must do: internal/output/tabletest); the node commands are in cli's.
func TestTableOptionsEveryCommand(t *testing.T) {
	adm := filepath.Join("..", "..", "k8s", "admit", "testdata", "seed-5.5.4")
	place := func(c, f string) string { return filepath.Join("..", "..", "k8s", "place", "testdata", c, f) }
	nodeFile := filepath.Join("..", "..", "k8s", "node", "testdata", "seed-5.5.4.yaml")
	kc := filepath.Join("..", "..", "k8s", "kubeletcfg", "testdata")
	merge := filepath.Join(t.TempDir(), "merge.json")
	if err := os.WriteFile(merge, []byte(`{"policy":"single-numa-node","numaNodes":[0,1],"providers":[
	  {"cpu":[{"affinity":[0],"preferred":true},{"affinity":[0,1],"preferred":false}]},
	  {"nvidia.com/gpu":[{"affinity":[0],"preferred":true}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	// saved bench results to list and compare
	benchRoot := t.TempDir()
	fs, err := hostfs.New(benchRoot)
	if err != nil {
		t.Fatal(err)
	}
	mk := func(wall []float64) *bench.AllocResult {
		return &bench.AllocResult{SchemaVersion: bench.AllocSchema, Repeats: len(wall), Runs: []bench.AllocRun{{Allocator: bench.Glibc,
			WallSeconds: wall, UserSeconds: wall, SysSeconds: []float64{0, 0, 0}, MaxRSSBytes: []uint64{1 << 20, 1 << 20, 1 << 20},
			MedianWallSeconds: bench.Median(wall), MedianUserSeconds: bench.Median(wall), MedianMaxRSSBytes: 1 << 20}}}
	}
	for name, wall := range map[string][]float64{"before": {2, 2.02, 1.98}, "after": {1, 1.01, 0.99}} {
		if _, err := bench.Save(fs, "/state/bench", name, mk(wall)); err != nil {
			t.Fatal(err)
		}
	}
	// a kubelet's pod-resources socket on a copy of dgx-h100
	podsRoot := testhost.Copy(t, "dgx-h100")
	podresourcestest.Serve(t, podsRoot, podresources.DefaultSocket, podresourcestest.DGXH100(t, podsRoot))
	v := "seed-5.7.3-volcano"
	for _, c := range []tabletest.Case{
		{Args: []string{"k8s", "place", "--nodes", place(v, "nodes.yaml"), "--pods", place(v, "pods.yaml"), "--topology", place(v, "topology.yaml"), "--workload", place(v, "workload.yaml")}, List: "placements"},
		{Args: []string{"k8s", "place", "--nodes", place("kueue-nofit", "nodes.yaml"), "--pods", place("kueue-nofit", "pods.yaml"), "--topology", place("kueue-nofit", "topology.yaml"), "--workload", place("kueue-nofit", "workload.yaml")}, List: "placements"},
		{Args: []string{"k8s", "dra", "allocate", "--slices", draSeed("slices-dgx-h100.yaml"), "--classes", draSeed("classes.yaml"), "--claims", draSeed("5.3.3-claim.yaml")}, List: "nodes"},
		{Args: []string{"k8s", "dra", "slices", "--root", testhost.Path(t, "dgx-h100"), "--node-name", "dgx-h100", "--gpu-backend", "fake"}, List: "items"},
		{Args: []string{"k8s", "admit", "--node", filepath.Join(adm, "node.yaml"), "--kubelet-config", filepath.Join(adm, "kubelet-config.yaml"), "-f", filepath.Join(adm, "pods.yaml")}, List: "pods"},
		{Args: []string{"k8s", "lint", "-f", filepath.Join("..", "..", "..", "testdata", "manifests", "seed")}, List: "findings"},
		{Args: []string{"k8s", "lint", "--rules"}, List: "rules"},
		{Args: []string{"k8s", "kubelet", "lint", filepath.Join(kc, "broken.yaml"), "--node", nodeFile}, List: "findings"},
		{Args: []string{"k8s", "kubelet", "recommend", "--profile", "training", "--node", filepath.Join(kc, "node-2numa-smt.yaml")}},
		{Args: []string{"k8s", "merge", "-f", merge}},
		{Args: []string{"--root", podsRoot, "k8s", "pods", "--pod-resources-socket", podresources.DefaultSocket}, List: "pods"},
		{Args: []string{"bench", "list", "--root", benchRoot, "--bench-dir", "/state/bench"}, List: "results"},
		{Args: []string{"bench", "compare", "before", "after", "--root", benchRoot, "--bench-dir", "/state/bench"}, List: "metrics"},
	} {
		t.Run(c.String(), func(t *testing.T) { tabletest.Check(t, run, c) })
	}
}
