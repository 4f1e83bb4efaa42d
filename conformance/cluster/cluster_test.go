package cluster

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/pager"

	gcluster "github.com/gpunode/gpunode/internal/k8s/cluster"
)

var (
	cases     = flag.Int("cases", 200, "random clusters per differential (DRA, gangs)")
	seed      = flag.Uint64("seed", 1, "random seed")
	listNodes = flag.Int("list-nodes", 1200, "nodes for the list differential")
	bigNodes  = flag.Int("speed-nodes", 10240, "nodes for the live place timing (0 skips)")
	strict    = flag.Bool("strict", false, "enforce the 3 s live place target (a benchmark figure; CI gates at 3x)")
)

// TestCluster starts one control plane (etcd, kube-apiserver,
// kube-scheduler in this process) and runs the differentials against it,
// resetting the objects between cases.
func TestCluster(t *testing.T) {
	e := startEnv(t)
	t.Run("lists", func(t *testing.T) { testLists(t, e) })
	t.Run("dra", func(t *testing.T) {
		start := time.Now()
		tl := runDRA(t, e, *cases, *seed)
		for _, u := range tl.unexplained {
			t.Errorf("unexplained: %s", u)
		}
		t.Logf("FIGURES dra: %d cases, %d agree (%d bound by the scheduler, %d not), %d unexplained; %d gpunode allocations checked valid; gpunode %s total, scheduler %s total, wall %s",
			tl.cases, tl.agree, tl.bound, tl.unbound, len(tl.unexplained), tl.gpunodeNodesChecked,
			tl.gpunodeTime.Round(time.Millisecond), tl.schedTime.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
		if tl.cases < *cases || tl.bound == 0 || tl.unbound == 0 {
			t.Errorf("dra: %d cases, %d bound, %d unbound: the generator must produce both outcomes", tl.cases, tl.bound, tl.unbound)
		}
	})
	t.Run("gangs", func(t *testing.T) {
		start := time.Now()
		tl := runGangs(t, e, *cases, *seed)
		for _, u := range tl.unexplained {
			t.Errorf("unexplained: %s", u)
		}
		t.Logf("FIGURES gangs: %d cases, fit agrees in %d (%d placed by the scheduler, %d not); same domain %d; explained differences (scoring policy versus tightest fit: same level, another domain that also holds the gang) %d, of which gpunode's holds more pods (tightest by its free-resource measure) %d; unexplained %d; gpunode %s total (max %s), scheduler %s total, wall %s",
			tl.cases, tl.fitAgree, tl.placed, tl.notPlaced, tl.bothPlacedSameDomain, tl.scoringDiffers, tl.tighterByOwnMeasure, len(tl.unexplained),
			tl.gpunodeTime.Round(time.Millisecond), tl.gpunodeMax.Round(time.Millisecond), tl.schedTime.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
		if tl.cases < *cases || tl.placed == 0 || tl.notPlaced == 0 {
			t.Errorf("gangs: %d cases, %d placed, %d not: the generator must produce both outcomes", tl.cases, tl.placed, tl.notPlaced)
		}
	})
	if *bigNodes > 0 {
		t.Run("speed", func(t *testing.T) { testSpeed(t, e) })
	}
}

// testLists: what gpunode lists (through the kubeconfig, paged by 500)
// equals what a kubectl-style list returns (client-go's pager with
// kubectl's --chunk-size 500, and kubectl itself), for 1,200 nodes and
// their bound pods.
func testLists(t *testing.T, e *env) {
	ctx := context.Background()
	ns := "lists"
	ensureNamespace(t, e.client, ns)
	e.reset(t, ns)
	var nodes []*corev1.Node
	var pods []*corev1.Pod
	for i := range *listNodes {
		n := nodeSpec{name: fmt.Sprintf("l-%04d", i), labels: map[string]string{labelRack: fmt.Sprintf("rack-%d", i%30)},
			cpu: 64, gpu: 8, memGi: 512, pods: 110}
		nodes = append(nodes, n.object())
		if i%4 == 0 {
			pods = append(pods, boundPod(ns, fmt.Sprintf("run-%04d", i), n.name, 2, 1))
		}
	}
	pending := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pending"},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{"no": "such"}, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	t0 := time.Now()
	if err := createNodes(ctx, e.client, nodes, 16); err != nil {
		t.Fatal(err)
	}
	if err := createPods(ctx, e.client, append(pods, pending), 16); err != nil {
		t.Fatal(err)
	}
	t.Logf("created %d nodes and %d pods in %s", len(nodes), len(pods)+1, time.Since(t0).Round(time.Millisecond))

	// gpunode through the kubeconfig file.
	f := gcluster.Flags{Kubeconfig: e.kubeconfig, RequestTimeout: 10 * time.Second}
	c, err := f.New()
	if err != nil {
		t.Fatal(err)
	}
	gn, err := c.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gp, err := c.BoundPods(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	// The same client on a counted transport: the pages it asks for.
	var pages, bad atomic.Int32
	cfg := rest.CopyConfig(e.cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if strings.HasSuffix(r.URL.Path, "/nodes") {
				pages.Add(1)
				if r.URL.Query().Get("limit") != "500" || r.Method != http.MethodGet {
					bad.Add(1)
				}
			}
			return rt.RoundTrip(r)
		})
	}
	cc, err := gcluster.NewForConfig(cfg, "default", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cc.Nodes(ctx); err != nil {
		t.Fatal(err)
	}
	if want := int32((*listNodes + 499) / 500); pages.Load() != want || bad.Load() != 0 {
		t.Errorf("gpunode listed %d nodes in %d pages (%d without limit=500 or not GET), want %d pages", *listNodes, pages.Load(), bad.Load(), want)
	}

	// kubectl-style: client-go's pager, page size 500.
	var kn []corev1.Node
	np := pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return e.client.CoreV1().Nodes().List(ctx, o)
	})
	np.PageSize = 500
	if err := np.EachListItem(ctx, metav1.ListOptions{}, func(o runtime.Object) error {
		kn = append(kn, *o.(*corev1.Node))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var kp []corev1.Pod
	pp := pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return e.client.CoreV1().Pods("").List(ctx, o)
	})
	pp.PageSize = 500
	if err := pp.EachListItem(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"}, func(o runtime.Object) error {
		kp = append(kp, *o.(*corev1.Pod))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	compareNodes(t, "client-go pager", gn, kn)
	comparePods(t, gp, kp)
	if len(gn) != *listNodes || len(gp) != len(pods) {
		t.Errorf("gpunode listed %d nodes and %d bound pods, want %d and %d", len(gn), len(gp), *listNodes, len(pods))
	}

	// kubectl itself (Debian kubernetes-client in CI; required there).
	if kubectl, err := exec.LookPath("kubectl"); err == nil {
		out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", e.kubeconfig, "get", "nodes", "-o", "json", "--chunk-size=500").Output()
		if err != nil {
			t.Fatalf("kubectl get nodes: %v", err)
		}
		var l corev1.NodeList
		if err := json.Unmarshal(out, &l); err != nil {
			t.Fatal(err)
		}
		compareNodes(t, "kubectl get nodes --chunk-size=500", gn, l.Items)
		t.Logf("kubectl (%s) lists the same %d nodes", kubectl, len(l.Items))
	} else if os.Getenv("CONFORMANCE_REQUIRE_KUBECTL") == "1" {
		t.Fatal("kubectl not found (CONFORMANCE_REQUIRE_KUBECTL=1)")
	}
	t.Logf("FIGURES lists: %d nodes (%d pages of 500) and %d bound pods listed by gpunode equal the kubectl-style lists", len(gn), pages.Load(), len(gp))
	e.reset(t, ns)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type nodeKey struct {
	Name, RV    string
	Labels      map[string]string
	Allocatable corev1.ResourceList
	Unsched     bool
}

func compareNodes(t *testing.T, what string, g []*corev1.Node, k []corev1.Node) {
	t.Helper()
	gk := make([]nodeKey, 0, len(g))
	for _, n := range g {
		gk = append(gk, nodeKey{n.Name, n.ResourceVersion, n.Labels, n.Status.Allocatable, n.Spec.Unschedulable})
	}
	kk := make([]nodeKey, 0, len(k))
	for _, n := range k {
		kk = append(kk, nodeKey{n.Name, n.ResourceVersion, n.Labels, n.Status.Allocatable, n.Spec.Unschedulable})
	}
	sort.Slice(gk, func(i, j int) bool { return gk[i].Name < gk[j].Name })
	sort.Slice(kk, func(i, j int) bool { return kk[i].Name < kk[j].Name })
	if len(gk) != len(kk) {
		t.Fatalf("%s: gpunode lists %d nodes, %s %d", what, len(gk), what, len(kk))
	}
	for i := range gk {
		if !reflect.DeepEqual(gk[i].Labels, kk[i].Labels) || gk[i].Name != kk[i].Name || gk[i].RV != kk[i].RV ||
			!gk[i].Allocatable.Cpu().Equal(*kk[i].Allocatable.Cpu()) || len(gk[i].Allocatable) != len(kk[i].Allocatable) {
			t.Fatalf("%s: node %d differs: gpunode %+v, %s %+v", what, i, gk[i], what, kk[i])
		}
	}
}

func comparePods(t *testing.T, g []*corev1.Pod, k []corev1.Pod) {
	t.Helper()
	var gs, ks []string
	for _, p := range g {
		gs = append(gs, p.Namespace+"/"+p.Name+"@"+p.Spec.NodeName+"#"+p.ResourceVersion)
	}
	for _, p := range k {
		ks = append(ks, p.Namespace+"/"+p.Name+"@"+p.Spec.NodeName+"#"+p.ResourceVersion)
	}
	sort.Strings(gs)
	sort.Strings(ks)
	if !reflect.DeepEqual(gs, ks) {
		t.Fatalf("bound pods differ: gpunode %d, pager %d", len(gs), len(ks))
	}
}
