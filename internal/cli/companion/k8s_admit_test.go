package companion

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/testhost"
)

func TestK8sAdmitCommand(t *testing.T) {
	seed := filepath.Join("..", "..", "k8s", "admit", "testdata", "seed-5.5.4")
	nodeFile := filepath.Join(seed, "node.yaml")
	kc := filepath.Join(seed, "kubelet-config.yaml")
	pods := filepath.Join(seed, "pods.yaml")
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	onePod := write("one.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: ok}\nspec:\n  containers:\n  - name: app\n    resources: {limits: {cpu: \"2\", memory: 1Gi, nvidia.com/gpu: 1}}\n")
	badPod := write("bad.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec:\n  containers:\n  - name: app\n    resources: {limits: {nvidia.com/gpu: \"1.5\"}}\n")
	badKC := write("kc.yaml", "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicy: static\n")
	liveKC := write("live-kc.yaml", "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicy: static\nreservedSystemCPUs: \"0\"\ntopologyManagerPolicy: single-numa-node\n")
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"seed example: one rejected", []string{"k8s", "admit", "--node", nodeFile, "--kubelet-config", kc, "-f", pods}, 1, "1 admitted, 1 rejected", ""},
		{"all admitted", []string{"k8s", "admit", "--node", nodeFile, "--kubelet-config", kc, "-f", onePod}, 0, "1 admitted, 0 rejected", ""},
		{"bad pod", []string{"k8s", "admit", "--node", nodeFile, "--kubelet-config", kc, "-f", badPod}, 2, "", `document 1: Pod "bad": spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value`},
		{"kubelet would not start", []string{"k8s", "admit", "--node", nodeFile, "--kubelet-config", badKC, "-f", onePod}, 2, "", "kubelet would not start: [cpumanager] unable to determine reserved CPU resources for static policy"},
		{"node and live", []string{"k8s", "admit", "--node", nodeFile, "--live", "--kubelet-config", kc, "-f", onePod}, 2, "", "exactly one of --node"},
		{"missing node file", []string{"k8s", "admit", "--node", filepath.Join(dir, "nope.yaml"), "--kubelet-config", kc, "-f", onePod}, 2, "", "node file"},
		{"live fixture host", []string{"--root", testhost.Path(t, "dgx-h100"), "k8s", "admit", "--live", "--kubelet-config", liveKC, "-f", onePod}, 0, "1 admitted, 0 rejected", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := run(t, tc.args...)
			if code != tc.code || !strings.Contains(out, tc.stdout) || !strings.Contains(errs, tc.stderr) {
				t.Fatalf("code %d (want %d)\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, errs)
			}
		})
	}
	code, out, _ := run(t, "k8s", "admit", "--node", nodeFile, "--kubelet-config", kc, "-f", pods, "-o", "json")
	var rep struct {
		SchemaVersion string `json:"schemaVersion"`
		Pods          []struct {
			Admitted bool   `json:"admitted"`
			Reason   string `json:"reason"`
		} `json:"pods"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 {
		t.Fatalf("json: %v (code %d)", err, code)
	}
	if rep.SchemaVersion != "gpunode.k8s.admit/v1" || len(rep.Pods) != 2 || rep.Pods[0].Reason != "TopologyAffinityError" || !rep.Pods[1].Admitted {
		t.Errorf("report: %+v", rep)
	}
}
