package companion

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/cli"
	"github.com/gpunode/gpunode/internal/goldenfile"
	"github.com/gpunode/gpunode/internal/podresources"
	"github.com/gpunode/gpunode/internal/podresources/podresourcestest"
	"github.com/gpunode/gpunode/internal/testhost"
)

var update = flag.Bool("update", false, "rewrite golden files")

// The test server's scenario on a copy of dgx-h100: the table is the
// README's fleet section example (testdata/k8s-pods.txt).
func TestK8sPods(t *testing.T) {
	root := testhost.Copy(t, "dgx-h100")
	podresourcestest.Serve(t, root, podresources.DefaultSocket, podresourcestest.DGXH100(t, root))

	code, out, stderr := run(t, "--root", root, "k8s", "pods", "--pod-resources-socket", podresources.DefaultSocket)
	if code != cli.ExitFindings {
		t.Fatalf("exit %d, want 1 (ml/infer-7 drifts)\n%s\n%s", code, out, stderr)
	}
	goldenfile.Check(t, "testdata/k8s-pods.txt", []byte(out), *update)
	if readme, err := os.ReadFile("../../../README.md"); err != nil || !strings.Contains(string(readme), "k8s pods --pod-resources-socket /var/lib/kubelet/pod-resources/kubelet.sock    # ROOT: a copy of testdata/hosts/dgx-h100 with the test kubelet's socket\n"+out+"```") {
		t.Errorf("README's fleet section does not show this output of 'k8s pods' (%v)", err)
	}
	for _, w := range []string{
		"k8s.pod.numa/ml/infer-7/server: drift: GPU 4 on NUMA 1; CPUs 32-39 on NUMA 0; memory on NUMA 0",
		"fix: # kubelet: topologyManagerPolicy single-numa-node, topologyManagerScope pod, cpuManagerPolicy static (full-pcpus-only=true), memoryManagerPolicy Static",
		"fix: gpunode k8s kubelet recommend --profile inference > kubelet-numa.yaml",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("table lacks %q", w)
		}
	}

	code, out, stderr = run(t, "--root", root, "k8s", "pods", "--pod-resources-socket", podresources.DefaultSocket, "-o", "json")
	if code != cli.ExitFindings {
		t.Fatalf("json: exit %d\n%s", code, stderr)
	}
	var r struct {
		SchemaVersion string `json:"schemaVersion"`
		Pods          []struct {
			Namespace, Name string
			Containers      []struct {
				Name            string `json:"name"`
				CPUs            string `json:"cpus"`
				CPUSource       string `json:"cpuSource"`
				CPUsExclusive   bool   `json:"cpusExclusive"`
				Cgroup          string `json:"cgroup"`
				Aligned         *bool  `json:"aligned"`
				MemoryNUMANodes []int  `json:"memoryNumaNodes"`
				GPUs            []struct {
					DeviceID string `json:"deviceId"`
					BDF      string `json:"bdf"`
					Replica  *int   `json:"replica"`
				} `json:"gpus"`
			} `json:"containers"`
		} `json:"pods"`
		Checks []struct{ ID, Subject, Status string } `json:"checks"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.SchemaVersion != "gpunode.pods/v1" || len(r.Pods) != 4 || len(r.Checks) != 3 {
		t.Fatalf("schema %q, %d pods, %d checks", r.SchemaVersion, len(r.Pods), len(r.Checks))
	}
	nb := r.Pods[3].Containers[0]
	if r.Pods[3].Name != "notebook-2" || nb.CPUs != "40-223" || nb.CPUSource != "cgroup" || nb.CPUsExclusive ||
		!strings.HasSuffix(nb.Cgroup, "cri-containerd-"+podresourcestest.NotebookID+".scope") || nb.Aligned == nil || !*nb.Aligned {
		t.Errorf("notebook from its cgroup: %+v", nb)
	}
	if g := nb.GPUs[0]; g.BDF != "0000:9b:00.0" || g.Replica == nil || *g.Replica != 1 {
		t.Errorf("time-sliced GPU: %+v", g)
	}
	// The agent's audit has the same checks (NPD plugin protocol: exit 1).
	code, out, stderr = run(t, "--root", root, "agent", "npd-check", "--pod-resources-socket", podresources.DefaultSocket, "--max-output", "200", "k8s.pod.numa/ml/*/*", "k8s.pod.numa/research/*/*")
	if code != 1 || strings.TrimSpace(out) != "1 of 3 failing: k8s.pod.numa/ml/infer-7/server drift" {
		t.Errorf("npd-check: exit %d %q\n%s", code, out, stderr)
	}
	want := map[string]string{"ml/infer-7/server": "drift", "ml/train-0/trainer": "ok", "research/notebook-2/jupyter": "ok"}
	for _, c := range r.Checks {
		if c.ID != "k8s.pod.numa" || want[c.Subject] != c.Status {
			t.Errorf("check %+v", c)
		}
	}
}

func TestK8sPodsNoSocket(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "sys/devices/system/cpu"), 0o755)
	code, out, stderr := run(t, "--root", root, "k8s", "pods", "--pod-resources-socket", podresources.DefaultSocket)
	if code != cli.ExitOK || !strings.Contains(out, "k8s.pod.numa: info kubelet pod-resources socket not mounted") {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, _ = run(t, "--root", root, "k8s", "pods", "--pod-resources-socket", podresources.DefaultSocket, "-o", "json")
	if code != cli.ExitOK || !strings.Contains(out, `"state": "not-mounted"`) || !strings.Contains(out, `"status": "info"`) {
		t.Fatalf("json: exit %d\n%s", code, out)
	}
}

func TestK8sPodsSilentKubelet(t *testing.T) {
	root := t.TempDir()
	podresourcestest.Serve(t, root, podresources.DefaultSocket, &podresourcestest.Kubelet{Block: true})
	start := time.Now()
	code, out, stderr := run(t, "--root", root, "k8s", "pods", "--pod-resources-socket", podresources.DefaultSocket, "--pod-resources-timeout", "200ms", "-o", "json")
	if code != cli.ExitFailure || !strings.Contains(out, `"state": "unreachable"`) || !strings.Contains(stderr, "no answer within 200ms") {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("took %s", took)
	}
}

func TestK8sPodsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"k8s", "pods", "--pod-resources-timeout", "0s"},
		{"k8s", "pods", "--pod-resources-socket", "relative.sock"},
		{"k8s", "pods", "extra"},
	} {
		if code, _, stderr := run(t, args...); code != cli.ExitUsage {
			t.Errorf("%v: exit %d, want 2\n%s", args, code, stderr)
		}
	}
}

// A captured root (--root DIR without --live-root) is not this host: its
// socket is not dialled unless --pod-resources-socket names it (a kubelet
// that never answers would hang the read); with --live-root it is read.
func TestK8sPodsCapturedRootNotDialled(t *testing.T) {
	root := t.TempDir()
	podresourcestest.Serve(t, root, podresources.DefaultSocket, &podresourcestest.Kubelet{Block: true})
	start := time.Now()
	code, out, stderr := run(t, "--root", root, "k8s", "pods", "--pod-resources-timeout", "2s", "-o", "json")
	if code != cli.ExitOK || !strings.Contains(out, `"state": "captured"`) || !strings.Contains(out, `"status": "info"`) ||
		!strings.Contains(out, "captured tree: the kubelet pod-resources socket is read only on a live host") {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("took %s: the socket was dialled", took)
	}
	// the same tree as a live root is read (and this kubelet never answers)
	code, out, _ = run(t, "--root", root, "--live-root", "k8s", "pods", "--pod-resources-timeout", "200ms", "-o", "json")
	if code != cli.ExitFailure || !strings.Contains(out, `"state": "unreachable"`) {
		t.Fatalf("--live-root: exit %d\n%s", code, out)
	}
}
