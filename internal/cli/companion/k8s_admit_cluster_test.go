package companion

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/k8s/cluster/clustertest"
)

// admitTopo is an agent /topo: 2 NUMA nodes of 4 CPUs and 16Gi, GPU 0 on
// NUMA 0 and GPU 1 on NUMA 1.
func admitTopo() json.RawMessage {
	var cpus []string
	for i := 0; i < 8; i++ {
		cpus = append(cpus, fmt.Sprintf(`{"id":%d,"core":%d,"socket":%d,"numaNode":%d,"l3":%d,"siblings":"%d","online":true}`, i, i, i/4, i/4, i/4, i))
	}
	return json.RawMessage(`{"schemaVersion":"gpunode.topo/v1","hostname":"host-a","sockets":[],"numaNodes":[` +
		`{"id":0,"cpus":"0-3","memTotalBytes":17179869184,"memFreeBytes":0,"distances":[10,21]},` +
		`{"id":1,"cpus":"4-7","memTotalBytes":17179869184,"memFreeBytes":0,"distances":[21,10]}],` +
		`"cpus":[` + strings.Join(cpus, ",") + `],"onlineCPUs":"0-7","isolatedCPUs":"","nohzFullCPUs":"","smtActive":false,"l3Caches":[],` +
		`"gpus":[{"kind":"gpu","index":0,"name":"g0","bdf":"0000:01:00.0","vendorId":"10de","deviceId":"2330","class":"0302","numaNode":0,"numaSource":"sysfs"},` +
		`{"kind":"gpu","index":1,"name":"g1","bdf":"0000:81:00.0","vendorId":"10de","deviceId":"2330","class":"0302","numaNode":1,"numaSource":"sysfs"}],"nics":[]}`)
}

func admitNode(labels map[string]any) map[string]any {
	res := map[string]any{"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "2", "pods": "110"}
	return map[string]any{"metadata": map[string]any{"name": "gpu-a", "labels": labels},
		"status": map[string]any{"capacity": res, "allocatable": res}}
}

func admitPod(ns, name, phase string, labels map[string]any, gpus int) map[string]any {
	lim := map[string]any{"cpu": "1", "memory": "1Gi"}
	if gpus > 0 {
		lim["nvidia.com/gpu"] = fmt.Sprint(gpus)
	}
	c := map[string]any{"name": "c", "image": "x", "resources": map[string]any{"limits": lim, "requests": lim}}
	if labels != nil {
		c["ports"] = []any{map[string]any{"name": "metrics", "containerPort": 9847}}
	}
	return map[string]any{"metadata": map[string]any{"name": name, "namespace": ns, "labels": labels},
		"spec": map[string]any{"nodeName": "gpu-a", "containers": []any{c}}, "status": map[string]any{"phase": phase}}
}

// TestK8sAdmitClusterNode: 'k8s admit --node NAME' reads the Node, its bound
// pods (admitted first as state) and the NUMA layout from the agent's
// /topo or its NFD label, says which, and fails clearly otherwise; every
// request is a GET.
func TestK8sAdmitClusterNode(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	kcFile := write("kc.yaml", "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n")
	// Two GPUs: fits the empty node, not the node where "busy" holds one.
	pods := write("pods.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: two}\nspec:\n  containers:\n  - name: app\n    resources: {limits: {nvidia.com/gpu: 2}}\n")
	agentLabels := map[string]any{"app.kubernetes.io/name": "gpunode", "app.kubernetes.io/component": "agent"}
	proxy := "/api/v1/namespaces/gpunode/pods/gpunode-x1:9847/proxy/topo"

	setup := func(t *testing.T, nodeLabels map[string]any, agent bool) (*clustertest.Server, string) {
		f := clustertest.New(t)
		f.Object("/api/v1/nodes/gpu-a", admitNode(nodeLabels))
		items := []any{admitPod("team", "busy", "Running", nil, 1), admitPod("team", "done", "Succeeded", nil, 2)}
		if agent {
			items = append(items, admitPod("gpunode", "gpunode-x1", "Running", agentLabels, 0))
		}
		f.List("/api/v1/pods", items...)
		f.Object(proxy, admitTopo())
		return f, f.Kubeconfig(t, "default")
	}
	type report struct {
		Node struct {
			NUMASource  string            `json:"numaSource"`
			Allocatable map[string]string `json:"allocatable"`
			NUMANodes   []struct {
				CPUs    string         `json:"cpus"`
				Devices map[string]int `json:"devices"`
			} `json:"numaNodes"`
		} `json:"node"`
		BoundPods []struct {
			Name     string `json:"name"`
			Admitted bool   `json:"admitted"`
		} `json:"boundPods"`
		Pods []struct {
			Admitted bool   `json:"admitted"`
			Reason   string `json:"reason"`
		} `json:"pods"`
	}
	checkGET := func(t *testing.T, f *clustertest.Server) {
		t.Helper()
		for _, v := range f.Verbs() {
			if v != "GET" {
				t.Errorf("%s request", v)
			}
		}
		sel := false
		for _, r := range f.Requests() {
			if strings.HasPrefix(r, "GET /api/v1/pods?") && strings.Contains(r, "fieldSelector=spec.nodeName%3Dgpu-a") && strings.Contains(r, "limit=500") {
				sel = true
			}
		}
		if !sel {
			t.Errorf("no paginated pod list with spec.nodeName=gpu-a: %q", f.Requests())
		}
	}

	for _, tc := range []struct {
		name       string
		labels     map[string]any
		agent      bool
		proxyFault string
		source     string
		cpus0      string
	}{
		{"agent-topo", nil, true, "", "agent-topo", "0-3"},
		{"nfd-labels", map[string]any{"gpunode.io/numa.nodes": "2"}, false, "", "nfd-labels", "0-3"},
		{"nfd-labels when /topo is forbidden", map[string]any{"gpunode.io/numa.nodes": "4"}, true, "403", "nfd-labels", "0-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, kc := setup(t, tc.labels, tc.agent)
			if tc.proxyFault != "" {
				f.Fault(proxy, tc.proxyFault)
			}
			code, out, errs := run(t, "k8s", "admit", "--kubeconfig", kc, "--node", "gpu-a", "--kubelet-config", kcFile, "-f", pods, "-o", "json")
			var rep report
			if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 {
				t.Fatalf("exit %d (want 1), %v\n%s\nstderr: %s", code, err, out, errs)
			}
			if rep.Node.NUMASource != tc.source || rep.Node.NUMANodes[0].CPUs != tc.cpus0 || rep.Node.Allocatable["nvidia.com/gpu"] != "2" {
				t.Errorf("node: %+v", rep.Node)
			}
			if len(rep.Node.NUMANodes) < 2 || rep.Node.NUMANodes[0].Devices["nvidia.com/gpu"] != 1 || rep.Node.NUMANodes[len(rep.Node.NUMANodes)/2].Devices["nvidia.com/gpu"] != 1 {
				t.Errorf("GPUs per NUMA node: %+v", rep.Node.NUMANodes)
			}
			want := 1 // busy
			if tc.agent {
				want = 2 // and the agent
			}
			if len(rep.BoundPods) != want || rep.BoundPods[0].Name != "busy" || !rep.BoundPods[0].Admitted {
				t.Errorf("bound pods: %+v", rep.BoundPods)
			}
			if len(rep.Pods) != 1 || rep.Pods[0].Admitted || rep.Pods[0].Reason != "UnexpectedAdmissionError" {
				t.Errorf("pod two should be rejected, one GPU is held by busy: %+v", rep.Pods)
			}
			if !strings.Contains(errs, "bound pods from "+f.URL()) || !strings.Contains(errs, "NUMA layout: "+tc.source) {
				t.Errorf("stderr: %s", errs)
			}
			if tc.proxyFault == "403" && !strings.Contains(errs, `cannot get pods/proxy "gpunode-x1:9847/topo" in the namespace "gpunode": forbidden`) {
				t.Errorf("stderr does not say why /topo was not used: %s", errs)
			}
			checkGET(t, f)
			// The table says the source too.
			_, out, _ = run(t, "k8s", "admit", "--kubeconfig", kc, "--node", "gpu-a", "--kubelet-config", kcFile, "-f", pods)
			if !strings.Contains(out, "NUMA layout: "+tc.source+" (numaSource)") || !strings.Contains(out, "Bound pods: ") {
				t.Errorf("table:\n%s", out)
			}
		})
	}

	t.Run("no NUMA source", func(t *testing.T) {
		f, kc := setup(t, nil, false)
		code, out, errs := run(t, "k8s", "admit", "--kubeconfig", kc, "--node", "gpu-a", "--kubelet-config", kcFile, "-f", pods)
		if code != 2 || out != "" || !strings.Contains(errs, `node "gpu-a": no NUMA layout: no running gpunode agent pod`) || !strings.Contains(errs, "--node-file NODE.yaml") || !strings.Contains(errs, "gpunode.io/numa.nodes") {
			t.Errorf("exit %d\n%s\nstderr: %s", code, out, errs)
		}
		checkGET(t, f)
	})
	t.Run("node not found", func(t *testing.T) {
		f, kc := setup(t, nil, true)
		code, _, errs := run(t, "k8s", "admit", "--kubeconfig", kc, "--node", "gpu-b", "--kubelet-config", kcFile, "-f", pods)
		if code != 3 || !strings.Contains(errs, `cannot get nodes "gpu-b" at the cluster scope: not found (API server `+f.URL()+`)`) {
			t.Errorf("exit %d: %s", code, errs)
		}
		checkGETOnly(t, f)
	})
	t.Run("403", func(t *testing.T) {
		f, kc := setup(t, nil, true)
		f.Fault("/api/v1/nodes/gpu-a", "403")
		code, _, errs := run(t, "k8s", "admit", "--kubeconfig", kc, "--node", "gpu-a", "--kubelet-config", kcFile, "-f", pods)
		if code != 3 || !strings.Contains(errs, `cannot get nodes "gpu-a" at the cluster scope: forbidden`) || !strings.Contains(errs, f.URL()) {
			t.Errorf("exit %d: %s", code, errs)
		}
		f.Fault("/api/v1/nodes/gpu-a", "")
		f.Fault("/api/v1/pods", "403")
		code, _, errs = run(t, "k8s", "admit", "--kubeconfig", kc, "--node", "gpu-a", "--kubelet-config", kcFile, "-f", pods)
		if code != 3 || !strings.Contains(errs, "cannot list pods at the cluster scope: forbidden") {
			t.Errorf("pods 403: exit %d: %s", code, errs)
		}
		checkGETOnly(t, f)
	})
	t.Run("unreachable", func(t *testing.T) {
		_, kc := setup(t, nil, true)
		code, _, errs := run(t, "k8s", "admit", "--kubeconfig", kc, "--context", "two", "--node", "gpu-a", "--kubelet-config", kcFile, "-f", pods)
		if code != 3 || !strings.Contains(errs, "unreachable") || !strings.Contains(errs, "127.0.0.2:1") {
			t.Errorf("exit %d: %s", code, errs)
		}
	})
	t.Run("file behaviour kept", func(t *testing.T) {
		seed := filepath.Join("..", "..", "k8s", "admit", "testdata", "seed-5.5.4")
		for _, flag := range []string{"--node", "--node-file"} {
			code, out, errs := run(t, "k8s", "admit", flag, filepath.Join(seed, "node.yaml"), "--kubelet-config", filepath.Join(seed, "kubelet-config.yaml"), "-f", filepath.Join(seed, "pods.yaml"))
			if code != 1 || !strings.Contains(out, "1 admitted, 1 rejected") || strings.Contains(out, "NUMA layout") {
				t.Errorf("%s file: exit %d\n%s\n%s", flag, code, out, errs)
			}
		}
		code, _, errs := run(t, "k8s", "admit", "--node", "Bad_Name", "--kubelet-config", kcFile, "-f", pods)
		if code != 2 || !strings.Contains(errs, `--node "Bad_Name": not a node file (no such file) and not a Node name`) {
			t.Errorf("bad name: exit %d: %s", code, errs)
		}
		code, _, errs = run(t, "k8s", "admit", "--node", "gpu-a", "--node-file", filepath.Join(seed, "node.yaml"), "--kubelet-config", kcFile, "-f", pods)
		if code != 2 || !strings.Contains(errs, "exactly one of") {
			t.Errorf("name and file: exit %d: %s", code, errs)
		}
	})
}

func checkGETOnly(t *testing.T, f *clustertest.Server) {
	t.Helper()
	if len(f.Verbs()) == 0 {
		t.Error("no request reached the server")
	}
	for _, v := range f.Verbs() {
		if v != "GET" {
			t.Errorf("%s request", v)
		}
	}
}
