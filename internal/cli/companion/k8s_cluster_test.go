package companion

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/k8s/cluster/clustertest"
	"github.com/gpunode/gpunode/internal/k8s/objects"
	"github.com/gpunode/gpunode/internal/userfile"
)

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := objects.ReadFile(p, userfile.DefaultMaxBytes)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// serveObjects lists a file's objects at path (as JSON items).
func serveObjects(t *testing.T, f *clustertest.Server, path, file string) {
	t.Helper()
	objs, err := objects.Objects(file, mustRead(t, file))
	if err != nil {
		t.Fatal(err)
	}
	var items []any
	for _, o := range objs {
		items = append(items, json.RawMessage(o.JSON))
	}
	f.List(path, items...)
}

// TestK8sPlaceLiveEqualsFiles: 'k8s place' with the nodes, pods and
// topology listed from an API server prints what it prints from the same
// objects as files, for Volcano HyperNodes, a KAI Topology and a Kueue
// Topology reached through LocalQueue, ClusterQueue and ResourceFlavor.
func TestK8sPlaceLiveEqualsFiles(t *testing.T) {
	td := filepath.Join("..", "..", "k8s", "place", "testdata")
	for _, tc := range []struct {
		dir  string
		topo string // where the topology objects are listed
		code int
		more func(f *clustertest.Server)
	}{
		{"seed-5.7.3-volcano", "/apis/topology.volcano.sh/v1alpha1/hypernodes", 0, nil},
		{"seed-5.7.2-kai", "/apis/kai.scheduler/v1alpha1/topologies/cluster-topology", 0, nil},
		{"kueue-nofit", "/apis/kueue.x-k8s.io/v1beta2/topologies/default", 1, func(f *clustertest.Server) {
			f.Object("/apis/kueue.x-k8s.io/v1beta2/namespaces/default/localqueues/tas-user-queue", map[string]any{"spec": map[string]any{"clusterQueue": "tas-cq"}})
			f.Object("/apis/kueue.x-k8s.io/v1beta2/clusterqueues/tas-cq", map[string]any{"spec": map[string]any{"resourceGroups": []any{map[string]any{"flavors": []any{map[string]any{"name": "tas-flavor"}}}}}})
			f.List("/apis/kueue.x-k8s.io/v1beta2/resourceflavors",
				map[string]any{"metadata": map[string]any{"name": "tas-flavor"}, "spec": map[string]any{"topologyName": "default"}},
				map[string]any{"metadata": map[string]any{"name": "other"}, "spec": map[string]any{"topologyName": "elsewhere"}})
		}},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			in := func(n string) string { return filepath.Join(td, tc.dir, n) }
			wantCode, want, _ := run(t, "k8s", "place", "--nodes", in("nodes.yaml"), "--pods", in("pods.yaml"), "--topology", in("topology.yaml"), "--workload", in("workload.yaml"), "-o", "json")
			if wantCode != tc.code {
				t.Fatalf("files: exit %d", wantCode)
			}
			f := clustertest.New(t)
			serveObjects(t, f, "/api/v1/nodes", in("nodes.yaml"))
			serveObjects(t, f, "/api/v1/pods", in("pods.yaml"))
			if strings.HasSuffix(tc.topo, "hypernodes") {
				serveObjects(t, f, tc.topo, in("topology.yaml"))
			} else {
				objs, err := objects.Objects(in("topology.yaml"), mustRead(t, in("topology.yaml")))
				if err != nil {
					t.Fatal(err)
				}
				f.Object(tc.topo, json.RawMessage(objs[0].JSON))
			}
			if tc.more != nil {
				tc.more(f)
			}
			code, got, errs := run(t, "k8s", "place", "--kubeconfig", f.Kubeconfig(t, "default"), "--workload", in("workload.yaml"), "-o", "json")
			if code != wantCode || got != want {
				t.Fatalf("live: exit %d (want %d)\n%s\nwant\n%s\nstderr: %s", code, wantCode, got, want, errs)
			}
			if !strings.Contains(errs, "bound pods from "+f.URL()) || !strings.Contains(errs, "topology:") {
				t.Errorf("stderr does not say what came from the cluster: %s", errs)
			}
			for _, v := range f.Verbs() {
				if v != "GET" {
					t.Errorf("%s request", v)
				}
			}
		})
	}
}

func TestK8sClusterErrors(t *testing.T) {
	f := clustertest.New(t)
	f.List("/api/v1/pods")
	f.Fault("/api/v1/nodes", "403")
	wl := filepath.Join("..", "..", "k8s", "place", "testdata", "seed-5.7.2-kai", "workload.yaml")
	kc := f.Kubeconfig(t, "default")
	code, _, errs := run(t, "k8s", "place", "--kubeconfig", kc, "--levels", "rack", "--workload", wl)
	if code != 3 || !strings.Contains(errs, "cannot list nodes at the cluster scope: forbidden") || !strings.Contains(errs, f.URL()) {
		t.Errorf("403: exit %d: %s", code, errs)
	}
	f.Fault("/api/v1/nodes", "slow")
	code, _, errs = run(t, "k8s", "place", "--kubeconfig", kc, "--request-timeout", "200ms", "--levels", "rack", "--workload", wl)
	if code != 3 || !strings.Contains(errs, "no answer within 200ms (--request-timeout)") {
		t.Errorf("slow: exit %d: %s", code, errs)
	}
	code, _, errs = run(t, "k8s", "place", "--kubeconfig", filepath.Join(t.TempDir(), "none"), "--levels", "rack", "--workload", wl)
	if code != 2 || !strings.Contains(errs, "--kubeconfig") {
		t.Errorf("missing kubeconfig: exit %d: %s", code, errs)
	}
	code, _, errs = run(t, "k8s", "place", "--kubeconfig", kc, "--from-cluster", "deployment/x")
	if code != 2 || !strings.Contains(errs, "unsupported kind") {
		t.Errorf("bad --from-cluster: exit %d: %s", code, errs)
	}
	f.Fault("/api/v1/nodes", "")
	f.Fault("/apis/resource.k8s.io/v1/resourceslices", "500")
	code, _, errs = run(t, "k8s", "dra", "allocate", "--kubeconfig", kc, "-n", "team-a", "--from-cluster", "pod/p")
	if code != 3 || !strings.Contains(errs, "cannot get pods \"p\" in the namespace \"team-a\": not found") {
		t.Errorf("dra missing pod: exit %d: %s", code, errs)
	}
	f.Fault("/api/v1/nodes", "truncated")
	code, _, errs = run(t, "k8s", "lint", "--cluster", "--kubeconfig", kc)
	if code != 3 || !strings.Contains(errs, "cannot list nodes at the cluster scope: unreadable answer") {
		t.Errorf("lint truncated: exit %d: %s", code, errs)
	}
}
