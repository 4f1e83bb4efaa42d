package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/gpunode/gpunode/internal/k8s/cluster/clustertest"
	"github.com/gpunode/gpunode/internal/k8s/objects"
)

const (
	pathNodes  = "/api/v1/nodes"
	pathPods   = "/api/v1/pods"
	pathSlices = "/apis/resource.k8s.io/v1/resourceslices"
	pathClass  = "/apis/resource.k8s.io/v1/deviceclasses"
	pathClaims = "/apis/resource.k8s.io/v1/resourceclaims"
	pathTmpl   = "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaimtemplates"
	pathHyper  = "/apis/topology.volcano.sh/v1alpha1/hypernodes"
	pathJob    = "/apis/batch/v1/namespaces/team-a/jobs/train"
)

func seed(f *clustertest.Server, nodes int) {
	f.List(pathNodes)
	for i := 0; i < nodes; i++ {
		f.Append(pathNodes, clustertest.Node(fmt.Sprintf("n%04d", i), map[string]string{"rack": fmt.Sprint(i / 8)}))
	}
	f.List(pathPods, clustertest.Pod("a", "run", "n0000", "Running"), clustertest.Pod("a", "done", "n0001", "Succeeded"), clustertest.Pod("a", "fail", "n0001", "Failed"), clustertest.Pod("a", "pend", "", "Pending"))
	f.List(pathSlices)
	f.List(pathClass)
	f.List(pathClaims)
	f.List(pathTmpl)
	f.List(pathHyper, map[string]any{"apiVersion": objects.GroupVersionHyperNode, "kind": "HyperNode", "metadata": map[string]any{"name": "s0"},
		"spec": map[string]any{"tier": 1, "members": []any{map[string]any{"type": "Node", "selector": map[string]any{"exactMatch": map[string]any{"name": "n0000"}}}}}})
	f.Object(pathJob, map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": "train", "namespace": "team-a"},
		"spec": map[string]any{"parallelism": 2, "completions": 2, "template": map[string]any{"spec": map[string]any{"restartPolicy": "Never",
			"containers": []any{map[string]any{"name": "c", "image": "x"}}}}}})
}

// readPaths are every live read, each with the path that serves it.
func readPaths() []struct {
	name, path string
	read       func(context.Context, *Client) error
} {
	return []struct {
		name, path string
		read       func(context.Context, *Client) error
	}{
		{"nodes", pathNodes, func(ctx context.Context, c *Client) error { _, err := c.Nodes(ctx); return err }},
		{"pods", pathPods, func(ctx context.Context, c *Client) error { _, err := c.BoundPods(ctx, ""); return err }},
		{"slices", pathSlices, func(ctx context.Context, c *Client) error { _, err := c.DRAObjects(ctx, true, ""); return err }},
		{"classes", pathClass, func(ctx context.Context, c *Client) error { _, err := c.DRAObjects(ctx, true, ""); return err }},
		{"claims", pathClaims, func(ctx context.Context, c *Client) error { _, err := c.DRAObjects(ctx, true, ""); return err }},
		{"templates", pathTmpl, func(ctx context.Context, c *Client) error { _, err := c.DRAObjects(ctx, true, ""); return err }},
		{"hypernodes", pathHyper, func(ctx context.Context, c *Client) error {
			_, _, err := c.Topology(ctx, &objects.Workload{VolcanoJobs: []objects.VolcanoJobObject{{}}})
			return err
		}},
		{"workload", pathJob, func(ctx context.Context, c *Client) error { _, err := c.Workload(ctx, "job/train"); return err }},
		{"lint", pathNodes, func(ctx context.Context, c *Client) error { _, _, err := c.LintSources(ctx); return err }},
	}
}

func TestEveryReadPathHealthy(t *testing.T) {
	f := clustertest.New(t)
	seed(f, 3)
	c := client(t, f, 2*time.Second)
	for _, p := range readPaths() {
		if err := p.read(context.Background(), c); err != nil {
			t.Errorf("%s: %v", p.name, err)
		}
	}
	pods, err := c.BoundPods(context.Background(), "")
	if err != nil || len(pods) != 1 || pods[0].Name != "run" {
		t.Errorf("bound pods %v, %v: want only a/run (bound, not terminal)", pods, err)
	}
	pp, err := c.PlannerPods(context.Background(), "")
	if err != nil || len(pp) != 1 || pp[0].Name != "run" || pp[0].NodeName != pods[0].Spec.NodeName {
		t.Errorf("planner pods %v, %v: want only a/run, as BoundPods", pp, err)
	}
	nodes, err := c.Nodes(context.Background())
	pn, perr := c.PlannerNodes(context.Background())
	if err != nil || perr != nil || len(pn) != len(nodes) || len(nodes) == 0 {
		t.Errorf("planner nodes %d (%v), nodes %d (%v)", len(pn), perr, len(nodes), err)
	}
	for i := range pn {
		if pn[i].Name != nodes[i].Name || !reflect.DeepEqual(pn[i].Labels, nodes[i].Labels) {
			t.Errorf("planner node %d: %+v, want %s", i, pn[i], nodes[i].Name)
		}
	}
	found := false
	for _, r := range f.Requests() {
		if strings.HasPrefix(r, "GET /api/v1/pods?") && strings.Contains(r, "fieldSelector=spec.nodeName%21%3D%2Cstatus.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed") {
			found = true
		}
	}
	if !found {
		t.Errorf("no pod list with the bound, non-terminal field selector in %v", f.Requests())
	}
	w, err := c.Workload(context.Background(), "job/train")
	if err != nil || len(w.Jobs) != 1 || w.Jobs[0].Name != "train" {
		t.Errorf("workload %+v, %v", w, err)
	}
	topo, note, err := c.Topology(context.Background(), &objects.Workload{VolcanoJobs: []objects.VolcanoJobObject{{}}})
	if err != nil || len(topo.HyperNodes) != 1 || !strings.Contains(note, "1 Volcano HyperNodes") {
		t.Errorf("topology %+v %q %v", topo, note, err)
	}
}

// TestOnlyReads drives every read path and checks that the server saw
// GETs only, and that the client refuses a write before sending it.
func TestOnlyReads(t *testing.T) {
	f := clustertest.New(t)
	seed(f, 3)
	c := client(t, f, 2*time.Second)
	for _, p := range readPaths() {
		_ = p.read(context.Background(), c)
	}
	verbs := f.Verbs()
	if len(verbs) < len(readPaths()) {
		t.Fatalf("only %d requests", len(verbs))
	}
	for i, v := range verbs {
		if v != "GET" {
			t.Errorf("request %s: %s is not a read", f.Requests()[i], v)
		}
	}
	n := len(f.Requests())
	err := c.cs.CoreV1().RESTClient().Delete().Resource("nodes").Name("n0000").Do(context.Background()).Error()
	if !errors.Is(err, ErrWrite) {
		t.Errorf("delete: %v, want ErrWrite", err)
	}
	err = c.raw.Post().AbsPath("/api/v1/namespaces/a/pods").Body([]byte("{}")).Do(context.Background()).Error()
	if !errors.Is(err, ErrWrite) {
		t.Errorf("post: %v, want ErrWrite", err)
	}
	if len(f.Requests()) != n {
		t.Errorf("a write reached the server: %v", f.Requests()[n:])
	}
}

// TestFaults: each read path against a 403, a 401, a 500, a truncated body
// and an answer slower than the timeout: a clear error naming the server,
// the verb and the resource, quickly.
func TestFaults(t *testing.T) {
	const timeout = 300 * time.Millisecond
	for _, fault := range []string{"403", "401", "500", "truncated", "slow"} {
		for _, p := range readPaths() {
			t.Run(fault+"/"+p.name, func(t *testing.T) {
				f := clustertest.New(t)
				seed(f, 3)
				f.Fault(p.path, fault)
				c := client(t, f, timeout)
				start := time.Now()
				err := p.read(context.Background(), c)
				took := time.Since(start)
				if err == nil {
					t.Fatal("no error")
				}
				if took > 5*timeout+2*time.Second {
					t.Errorf("took %s", took)
				}
				msg := err.Error()
				verb := "list"
				if p.name == "workload" {
					verb = "get"
				}
				if !strings.Contains(msg, f.URL()) || !strings.Contains(msg, "cannot "+verb+" ") {
					t.Errorf("%q: does not name the server %s and the verb %s", msg, f.URL(), verb)
				}
				want := map[string]string{"403": "forbidden", "401": "unauthorized", "500": "the server answered 500", "truncated": "unreadable", "slow": "no answer within 300ms (--request-timeout)"}[fault]
				if !strings.Contains(msg, want) {
					t.Errorf("%q: want %q", msg, want)
				}
			})
		}
	}
}

func TestForbiddenMessage(t *testing.T) {
	f := clustertest.New(t)
	seed(f, 1)
	f.Fault(pathNodes, "403")
	_, err := client(t, f, time.Second).Nodes(context.Background())
	if err == nil || !strings.HasPrefix(err.Error(), "cannot list nodes at the cluster scope: forbidden") {
		t.Errorf("%v", err)
	}
	f.Fault(pathTmpl, "403")
	f.Fault(pathNodes, "")
	_, err = client(t, f, time.Second).DRAObjects(context.Background(), true, "")
	if err == nil || !strings.HasPrefix(err.Error(), `cannot list resourceclaimtemplates.resource.k8s.io in the namespace "team-a": forbidden`) {
		t.Errorf("%v", err)
	}
}

// TestPagination: 1,200 nodes come in pages of 500 (500, 500, 200), in
// order, each once.
func TestPagination(t *testing.T) {
	for _, n := range []int{0, 499, 500, 501, 1200} {
		f := clustertest.New(t)
		seed(f, n)
		nodes, err := client(t, f, time.Second).Nodes(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(nodes) != n {
			t.Fatalf("%d nodes, want %d", len(nodes), n)
		}
		for i, nd := range nodes {
			if nd.Name != fmt.Sprintf("n%04d", i) {
				t.Fatalf("node %d is %s", i, nd.Name)
			}
		}
		wantPages := (n + PageSize - 1) / PageSize
		if wantPages == 0 {
			wantPages = 1
		}
		if f.Pages(pathNodes) != wantPages {
			t.Errorf("%d nodes: %d pages, want %d", n, f.Pages(pathNodes), wantPages)
		}
		for _, r := range f.Requests() {
			if strings.HasPrefix(r, "GET /api/v1/nodes") && !strings.Contains(r, "limit=500") {
				t.Errorf("%s: no limit=500", r)
			}
		}
	}
}

func TestRepeatedContinueIsAnError(t *testing.T) {
	f := clustertest.New(t)
	seed(f, 600)
	// A server handing out the same token forever.
	f.SetHandler(loopHandler{})
	_, err := client(t, f, time.Second).Nodes(context.Background())
	if err == nil || !strings.Contains(err.Error(), "repeated its continue token") {
		t.Errorf("%v", err)
	}
}

type loopHandler struct{}

func (loopHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"kind":"NodeList","apiVersion":"v1","metadata":{"continue":"same"},"items":[{"metadata":{"name":"x"}}]}`))
}

func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := "https://" + l.Addr().String()
	l.Close()
	kc := clustertest.WriteKubeconfig(t, addr, "")
	fl := Flags{Kubeconfig: kc, RequestTimeout: DefaultRequestTimeout}
	c, err := fl.New()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = c.Nodes(context.Background())
	if err == nil || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("%v: want unreachable naming %s", err, addr)
	}
	if time.Since(start) > 15*time.Second {
		t.Errorf("took %s", time.Since(start))
	}
}

func TestKubeconfigFlags(t *testing.T) {
	f := clustertest.New(t)
	seed(f, 2)
	kc := clustertest.WriteKubeconfig(t, f.URL(), "ns-from-context")
	t.Setenv("KUBECONFIG", kc)
	c, err := (&Flags{}).New()
	if err != nil {
		t.Fatal(err)
	}
	if c.Server() != f.URL() || c.Namespace() != "ns-from-context" {
		t.Errorf("KUBECONFIG: server %s ns %s", c.Server(), c.Namespace())
	}
	if nodes, err := c.Nodes(context.Background()); err != nil || len(nodes) != 2 {
		t.Errorf("%v %v", nodes, err)
	}
	c, err = (&Flags{Context: "two", Namespace: "explicit"}).New()
	if err != nil {
		t.Fatal(err)
	}
	if c.Server() != "http://127.0.0.2:1" || c.Namespace() != "explicit" {
		t.Errorf("--context two -n explicit: server %s ns %s", c.Server(), c.Namespace())
	}
	if _, err := (&Flags{Context: "nope"}).New(); err == nil {
		t.Error("unknown context: no error")
	}
	if _, err := (&Flags{Kubeconfig: filepath.Join(t.TempDir(), "missing")}).New(); err == nil || !strings.Contains(err.Error(), "--kubeconfig") {
		t.Errorf("missing --kubeconfig: %v", err)
	}
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	_, err = (&Flags{}).New()
	var ce *ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "no cluster") {
		t.Errorf("no config: %v", err)
	}
}

func TestCancelStops(t *testing.T) {
	f := clustertest.New(t)
	seed(f, 1)
	f.Fault(pathNodes, "slow")
	c := client(t, f, 30*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := c.Nodes(ctx)
	if !errors.Is(err, context.Canceled) || time.Since(start) > time.Second {
		t.Errorf("%v after %s", err, time.Since(start))
	}
}

func client(t *testing.T, f *clustertest.Server, timeout time.Duration) *Client {
	t.Helper()
	c, err := NewForConfig(&rest.Config{Host: f.URL()}, "team-a", timeout)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
