package cluster

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	kubeapiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
	schedulertesting "k8s.io/kubernetes/cmd/kube-scheduler/app/testing"

	"github.com/gpunode/gpunode/internal/cli"
	"github.com/gpunode/gpunode/internal/cli/companion"
)

// gates are the kube-scheduler v1.37.2 feature gates that enable the
// PodGroup API (scheduling.k8s.io/v1beta1, which the scheduler watches;
// v1alpha3 is served too), the GangScheduling plugin
// (GenericWorkload) and the TopologyPlacementGenerator and
// PodGroupPodsCount plugins (TopologyAwareWorkloadScheduling). DRA
// (DynamicResourceAllocation) is GA and on by default.
var gates = map[string]bool{"GenericWorkload": true, "TopologyAwareWorkloadScheduling": true}

func gateFlag() string {
	var s []string
	for k, v := range gates {
		s = append(s, k+"="+strconv.FormatBool(v))
	}
	return "--feature-gates=" + strings.Join(s, ",")
}

// env is one control plane: embedded etcd, kube-apiserver and
// kube-scheduler in this process, and a kubeconfig for both the scheduler
// and gpunode.
type env struct {
	client     kubernetes.Interface
	cfg        *rest.Config
	kubeconfig string
	startup    time.Duration
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startEtcd starts etcd v3.7 in process (no fsync: the data is thrown away).
func startEtcd(t *testing.T) string {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Dir = filepath.Join(t.TempDir(), "etcd")
	cfg.LogLevel = "error"
	cfg.UnsafeNoFsync = true
	cu, _ := url.Parse("http://127.0.0.1:" + strconv.Itoa(freePort(t)))
	pu, _ := url.Parse("http://127.0.0.1:" + strconv.Itoa(freePort(t)))
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("etcd: %v", err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		t.Fatal("etcd not ready within 60s")
	}
	return cu.String()
}

func startEnv(t *testing.T) *env {
	t.Helper()
	start := time.Now()
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(gates); err != nil {
		t.Fatalf("feature gates: %v", err)
	}
	etcdURL := startEtcd(t)
	sc := storagebackend.NewDefaultConfig("/gpunode-conformance/registry", nil)
	sc.Transport.ServerList = []string{etcdURL}
	api, err := kubeapiservertesting.StartTestServer(t, kubeapiservertesting.NewDefaultTestServerOptions(), []string{
		"--endpoint-reconciler-type=none",
		// API priority and fairness bootstraps its objects in a post-start
		// hook that times out on a loaded 2-core machine; nothing here needs it.
		"--enable-priority-and-fairness=false",
		// No controller-manager runs here: no service-account controller,
		// and no node lifecycle controller to lift the not-ready taint
		// TaintNodesByCondition puts on every new Node.
		"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
		"--runtime-config=scheduling.k8s.io/v1beta1=true,scheduling.k8s.io/v1alpha3=true",
		gateFlag(),
	}, sc)
	if err != nil {
		t.Fatalf("kube-apiserver: %v", err)
	}
	t.Cleanup(api.TearDownFn)
	cfg := rest.CopyConfig(api.ClientConfig)
	cfg.QPS, cfg.Burst = 5000, 10000
	e := &env{cfg: cfg, kubeconfig: writeKubeconfig(t, cfg)}
	if e.client, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	sched, err := schedulertesting.StartTestServer(t, ctx, []string{
		"--kubeconfig=" + e.kubeconfig,
		"--authentication-kubeconfig=" + e.kubeconfig,
		"--authorization-kubeconfig=" + e.kubeconfig,
		"--leader-elect=false",
		"--kube-api-qps=5000", "--kube-api-burst=10000",
		gateFlag(),
	})
	if err != nil {
		t.Fatalf("kube-scheduler: %v", err)
	}
	t.Cleanup(sched.TearDownFn)
	e.startup = time.Since(start)
	t.Logf("etcd %s, kube-apiserver %s and kube-scheduler up in %s", etcdURL, cfg.Host, e.startup.Round(time.Millisecond))
	return e
}

// writeKubeconfig writes what kubectl would use to reach the API server.
func writeKubeconfig(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["conformance"] = &clientcmdapi.Cluster{
		Server: cfg.Host, CertificateAuthorityData: cfg.CAData, TLSServerName: cfg.ServerName,
		InsecureSkipTLSVerify: cfg.Insecure,
	}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken,
		ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["conformance"] = &clientcmdapi.Context{Cluster: "conformance", AuthInfo: "admin", Namespace: "default"}
	kc.CurrentContext = "conformance"
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// gpunode runs gpunode-full's command line in this process (the same Main
// as the binary) and returns its exit code, stdout and stderr.
func gpunode(ctx context.Context, args ...string) (int, []byte, string) {
	var out, errb bytes.Buffer
	env := cli.Env{Args: args, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		Getenv: func(string) string { return "" }, Environ: func() []string { return nil },
		Exec: func(string, []string, []string) error { return fmt.Errorf("no exec in tests") }}
	code := cli.Main(ctx, env, companion.Commands()...)
	return code, out.Bytes(), errb.String()
}

// reset deletes the objects of the previous case (pods with grace 0: no
// kubelet confirms a deletion here).
func (e *env) reset(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	zero := int64(0)
	del := metav1.DeleteOptions{GracePeriodSeconds: &zero}
	all := metav1.ListOptions{}
	c := e.client
	must := func(what string, err error) {
		if err != nil {
			t.Fatalf("reset %s: %v", what, err)
		}
	}
	must("pods", c.CoreV1().Pods(ns).DeleteCollection(ctx, del, all))
	must("podgroups", c.SchedulingV1beta1().PodGroups(ns).DeleteCollection(ctx, del, all))
	must("claims", c.ResourceV1().ResourceClaims(ns).DeleteCollection(ctx, del, all))
	// The scheduler puts a finalizer on the claims it allocates, which the
	// resource claim controller (kube-controller-manager, not run here)
	// would lift: lift it.
	cl, err := c.ResourceV1().ResourceClaims(ns).List(ctx, all)
	must("claims", err)
	for i := range cl.Items {
		x := &cl.Items[i]
		if len(x.Finalizers) > 0 {
			x.Finalizers = nil
			_, err := c.ResourceV1().ResourceClaims(ns).Update(ctx, x, metav1.UpdateOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				must("claim finalizer", err)
			}
		}
	}
	must("slices", c.ResourceV1().ResourceSlices().DeleteCollection(ctx, del, all))
	must("classes", c.ResourceV1().DeviceClasses().DeleteCollection(ctx, del, all))
	must("nodes", c.CoreV1().Nodes().DeleteCollection(ctx, del, all))
}

func ensureNamespace(t *testing.T, c kubernetes.Interface, ns string) {
	t.Helper()
	_, err := c.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
}

// writeFile writes a case's file for gpunode.
func writeFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
