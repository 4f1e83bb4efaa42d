package companion

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestK8sPlaceCommand(t *testing.T) {
	td := filepath.Join("..", "..", "k8s", "place", "testdata")
	seed := func(c, f string) string { return filepath.Join(td, c, f) }
	dir := t.TempDir()
	badNodes := filepath.Join(dir, "nodes.json")
	if err := os.WriteFile(badNodes, []byte(`{"apiVersion":"v1","kind":"List","items":[{"metadata":{"name":"a"},"status":{"allocatable":{"nvidia.com/gpu":"eight"}}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	v := "seed-5.7.3-volcano"
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"volcano fits", []string{"k8s", "place", "--nodes", seed(v, "nodes.yaml"), "--pods", seed(v, "pods.yaml"), "--topology", seed(v, "topology.yaml"), "--workload", seed(v, "workload.yaml")}, 0, "FITS: tier-1=s1", ""},
		{"kueue does not fit", []string{"k8s", "place", "--nodes", seed("kueue-nofit", "nodes.yaml"), "--pods", seed("kueue-nofit", "pods.yaml"), "--topology", seed("kueue-nofit", "topology.yaml"), "--workload", seed("kueue-nofit", "workload.yaml")}, 1, "DOES NOT FIT", ""},
		{"three tasks fit", []string{"k8s", "place", "--nodes", seed("volcano-80-40-40", "nodes.yaml"), "--levels", "kubernetes.io/hostname", "--workload", seed("volcano-80-40-40", "workload.yaml")}, 0, "FITS: cluster=cluster holds all 160 pods on 2 nodes", ""},
		{"undecided is exit 3", []string{"k8s", "place", "--nodes", seed("undecided-5-tasks", "nodes.yaml"), "--levels", "kubernetes.io/hostname", "--workload", seed("undecided-5-tasks", "workload.yaml"), "-o", "json"}, 3, `"verdict": "undecided"`, "place: undecided"},
		{"bad nodes file", []string{"k8s", "place", "--nodes", badNodes, "--workload", seed(v, "workload.yaml")}, 2, "", `nodes.json:1: document 1: items[0]: Node "a": status.allocatable[nvidia.com/gpu]: Invalid value: "eight"`},
		{"missing flags", []string{"k8s", "place", "--nodes", badNodes}, 2, "", "give --workload FILE or --from-cluster KIND/NAME"},
		{"both topology and levels", []string{"k8s", "place", "--nodes", badNodes, "--workload", badNodes, "--topology", badNodes, "--levels", "a"}, 2, "", "not both"},
		{"missing file", []string{"k8s", "place", "--nodes", filepath.Join(dir, "nope"), "--workload", seed(v, "workload.yaml")}, 2, "", "nope"},
		{"volcano without topology", []string{"k8s", "place", "--nodes", seed(v, "nodes.yaml"), "--workload", seed(v, "workload.yaml")}, 2, "", "HyperNodes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := run(t, tc.args...)
			if code != tc.code || !strings.Contains(out, tc.stdout) || !strings.Contains(errs, tc.stderr) {
				t.Fatalf("code %d (want %d)\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, errs)
			}
		})
	}
	code, out, _ := run(t, "k8s", "place", "--nodes", seed(v, "nodes.yaml"), "--pods", seed(v, "pods.yaml"), "--topology", seed(v, "topology.yaml"), "--workload", seed(v, "workload.yaml"), "-o", "json")
	var rep struct {
		SchemaVersion string `json:"schemaVersion"`
		Fits          bool   `json:"fits"`
		Domain        struct {
			Level, Name string
		} `json:"domain"`
		Placements []struct{ Pod, Task, Node string } `json:"placements"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
		t.Fatalf("json: %v (code %d)", err, code)
	}
	if rep.SchemaVersion != "gpunode.k8s.place/v1" || !rep.Fits || rep.Domain.Level != "tier-1" || rep.Domain.Name != "s1" ||
		len(rep.Placements) != 2 || rep.Placements[0].Pod != "training-job-worker-0" || rep.Placements[0].Task != "worker" || rep.Placements[0].Node != "node2" {
		t.Errorf("report: %+v", rep)
	}
}
