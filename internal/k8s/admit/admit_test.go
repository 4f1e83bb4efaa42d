package admit

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/goldenfile"

	"github.com/gpunode/gpunode/internal/k8s/kubeletcfg"
	"github.com/gpunode/gpunode/internal/k8s/node"
	"github.com/gpunode/gpunode/internal/output"
)

var update = flag.Bool("update", false, "rewrite golden files")

func runDir(t *testing.T, dir string) *Report {
	t.Helper()
	n, err := node.Load(filepath.Join(dir, "node.yaml"), 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubeletcfg.Load(filepath.Join(dir, "kubelet-config.yaml"), 0)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "pods.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pods, err := ParsePods(f, "pods.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sim, err := New(n, &c.KC, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return sim.Run(pods)
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	goldenfile.Check(t, path, got, *update)
}

func TestSeedExample(t *testing.T) {
	dir := "testdata/seed-5.5.4"
	rep := runDir(t, dir)
	if rep.Admitted != 1 || rep.Rejected != 1 {
		t.Fatalf("admitted %d rejected %d", rep.Admitted, rep.Rejected)
	}
	rej, ok := rep.Pods[0], rep.Pods[1]
	if rej.Admitted || rej.Reason != ReasonTopologyAffinity || rej.Message != TopologyAffinityMessage {
		t.Errorf("8-GPU pod: %+v", rej)
	}
	if !strings.Contains(strings.Join(rej.Explanation, "\n"), "no single NUMA node has 8 nvidia.com/gpu free") {
		t.Errorf("explanation: %q", rej.Explanation)
	}
	c := ok.Containers[0]
	if !ok.Admitted || c.CPUs != "2-17" || c.MergedHint.String() != "{0} preferred" {
		t.Errorf("4-GPU pod: %+v", ok)
	}
	if got := strings.Join(c.Devices["nvidia.com/gpu"], ","); got != "gpu0,gpu1,gpu2,gpu3" {
		t.Errorf("gpus = %s", got)
	}
	if len(c.Memory) != 1 || c.Memory[0].Size != "128Gi" || len(c.Memory[0].NUMANodes) != 1 || c.Memory[0].NUMANodes[0] != 0 {
		t.Errorf("memory = %+v", c.Memory)
	}
	var tbl, js bytes.Buffer
	if err := output.Write(&tbl, output.Table, rep, output.Options{}); err != nil {
		t.Fatal(err)
	}
	golden(t, filepath.Join(dir, "report.txt"), tbl.Bytes())
	if err := output.Write(&js, output.JSON, rep, output.Options{}); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.SchemaVersion != SchemaVersion {
		t.Fatalf("json: %v %q", err, back.SchemaVersion)
	}
	golden(t, filepath.Join(dir, "report.json"), js.Bytes())
}
