package companion

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/testhost"
)

// Input the API server would refuse is a usage error (exit 2) naming the
// flag or field (issue 28 item 2).
func TestK8sInputJudgedAsTheAPIServer(t *testing.T) {
	place := filepath.Join("..", "..", "k8s", "place", "testdata", "kueue-nofit")
	admit := filepath.Join("..", "..", "k8s", "admit", "testdata", "seed-5.5.4")
	wl, err := os.ReadFile(filepath.Join(place, "workload.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(wl), `nvidia.com/gpu: "8"`) {
		t.Fatal("fixture changed: no GPU request of 8 in kueue-nofit/workload.yaml")
	}
	neg := filepath.Join(t.TempDir(), "neg.yaml")
	if err := os.WriteFile(neg, []byte(strings.ReplaceAll(string(wl), `nvidia.com/gpu: "8"`, `nvidia.com/gpu: "-1"`)), 0o644); err != nil {
		t.Fatal(err)
	}
	dgx := testhost.Path(t, "dgx-h100")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"Pods given as --nodes", []string{"k8s", "place", "--nodes", filepath.Join(place, "pods.yaml"), "--workload", filepath.Join(place, "workload.yaml"), "--topology", filepath.Join(place, "topology.yaml")},
			`kind: this is a v1 Pod "a-0", not a v1 Node (or a List of Nodes)`},
		{"negative GPU request", []string{"k8s", "place", "--nodes", filepath.Join(place, "nodes.yaml"), "--workload", neg, "--topology", filepath.Join(place, "topology.yaml")},
			`Invalid value: "-1": must be greater than or equal to 0`},
		{"invalid --node-name", []string{"--root", dgx, "k8s", "dra", "slices", "--node-name", "Bad_Name!"},
			`--node-name: Invalid value: "Bad_Name!": a lowercase RFC 1123 subdomain`},
		{"unknown --node", []string{"k8s", "dra", "allocate", "--slices", draSeed("slices-dgx-h100.yaml"), "--classes", draSeed("classes.yaml"), "--claims", draSeed("5.3.3-claim.yaml"), "--node", "no-such-node"},
			`--node "no-such-node": Not found: no ResourceSlice is on this node (the slices name dgx-h100)`},
		{"invalid --node", []string{"k8s", "dra", "allocate", "--slices", draSeed("slices-dgx-h100.yaml"), "--classes", draSeed("classes.yaml"), "--claims", draSeed("5.3.3-claim.yaml"), "--node", "DGX_01"},
			`--node: Invalid value: "DGX_01"`},
		{"Pods given as admit --node", []string{"k8s", "admit", "--node", filepath.Join(admit, "pods.yaml"), "-f", filepath.Join(admit, "pods.yaml"), "--kubelet-config", filepath.Join(admit, "kubelet-config.yaml")},
			`this is a v1 Pod`},
		{"Pods given as --kubelet-config", []string{"k8s", "admit", "--node", filepath.Join(admit, "node.yaml"), "-f", filepath.Join(admit, "pods.yaml"), "--kubelet-config", filepath.Join(admit, "pods.yaml")},
			`this is a v1 Pod`},
		{"Pods given to kubelet lint", []string{"k8s", "kubelet", "lint", filepath.Join(admit, "pods.yaml")},
			`this is a v1 Pod`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := run(t, tc.args...)
			if code != 2 || !strings.Contains(errs, tc.want) {
				t.Fatalf("exit %d (want 2)\n%s%s\nwant stderr to contain %s", code, out, errs, tc.want)
			}
			for _, leak := range []string{"json: ", "error unmarshaling", "Go struct", "strconv."} {
				if strings.Contains(errs, leak) {
					t.Errorf("stderr leaks %q: %s", leak, errs)
				}
			}
		})
	}
}
