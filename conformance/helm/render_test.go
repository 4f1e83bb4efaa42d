package helm

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

const deployDir = "../../deploy"

// render renders the chart as 'helm template gpunode -n gpunode' would.
func render(t *testing.T, values map[string]any) map[string][]byte {
	t.Helper()
	ch, err := loader.Load(filepath.Join(deployDir, "helm", "gpunode"))
	if err != nil {
		t.Fatal(err)
	}
	vals, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{Name: "gpunode", Namespace: "gpunode", IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{} // kind -> manifest
	for name, s := range files {
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		for _, doc := range strings.Split(s, "\n---") {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			var tm struct {
				Kind string `json:"kind"`
			}
			if err := yaml.Unmarshal([]byte(doc), &tm); err != nil || tm.Kind == "" {
				t.Fatalf("%s: not a manifest (%v):\n%s", name, err, doc)
			}
			if _, dup := out[tm.Kind]; dup {
				t.Fatalf("two %s objects", tm.Kind)
			}
			out[tm.Kind] = []byte(doc)
		}
	}
	return out
}

func stripComments(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

func plain(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(deployDir, file))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// same decodes both strictly into a fresh T and compares them.
func same[T any](t *testing.T, kind string, rendered, want []byte) *T {
	t.Helper()
	var a, b T
	if err := yaml.UnmarshalStrict(rendered, &a); err != nil {
		t.Fatalf("rendered %s: %v\n%s", kind, err, rendered)
	}
	if err := yaml.UnmarshalStrict(want, &b); err != nil {
		t.Fatalf("deploy/ %s: %v", kind, err)
	}
	if !reflect.DeepEqual(a, b) {
		ja, _ := yaml.Marshal(a)
		jb, _ := yaml.Marshal(b)
		t.Errorf("rendered %s differs from deploy/:\n%s\n--- want\n%s", kind, ja, jb)
	}
	return &a
}

func TestChartRendersDeploy(t *testing.T) {
	got := render(t, nil)
	kinds := make([]string, 0, len(got))
	for k := range got {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	want := []string{"ConfigMap", "DaemonSet", "NetworkPolicy", "PrometheusRule", "Service", "ServiceAccount", "ServiceMonitor"}
	if !reflect.DeepEqual(kinds, want) {
		t.Fatalf("rendered kinds %v, want %v", kinds, want)
	}
	same[appsv1.DaemonSet](t, "DaemonSet", got["DaemonSet"], plain(t, "daemonset.yaml"))
	same[corev1.Service](t, "Service", got["Service"], plain(t, "service.yaml"))
	same[corev1.ServiceAccount](t, "ServiceAccount", got["ServiceAccount"], plain(t, "serviceaccount.yaml"))
	same[networkingv1.NetworkPolicy](t, "NetworkPolicy", got["NetworkPolicy"], plain(t, "networkpolicy.yaml"))
	same[map[string]any](t, "ServiceMonitor", got["ServiceMonitor"], plain(t, "servicemonitor.yaml"))
	same[map[string]any](t, "PrometheusRule", got["PrometheusRule"], plain(t, "prometheusrule.yaml"))
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict(got["ConfigMap"], &cm); err != nil {
		t.Fatal(err)
	}
	dash := plain(t, "grafana/gpunode-dashboard.json")
	if cm.Data["gpunode-dashboard.json"] != string(bytes.TrimRight(dash, "\n")) || cm.Labels["grafana_dashboard"] != "1" {
		t.Error("dashboard ConfigMap does not carry deploy/grafana/gpunode-dashboard.json")
	}
}

func TestChartValues(t *testing.T) {
	got := render(t, map[string]any{
		"nfd":            map[string]any{"enabled": false},
		"agent":          map[string]any{"port": 19847, "profile": "training"},
		"serviceMonitor": map[string]any{"enabled": false},
		"prometheusRule": map[string]any{"enabled": false},
		"networkPolicy":  map[string]any{"enabled": false},
	})
	for _, k := range []string{"ServiceMonitor", "PrometheusRule", "NetworkPolicy"} {
		if got[k] != nil {
			t.Errorf("%s rendered although disabled", k)
		}
	}
	var ds appsv1.DaemonSet
	if err := yaml.UnmarshalStrict(got["DaemonSet"], &ds); err != nil {
		t.Fatal(err)
	}
	c := ds.Spec.Template.Spec.Containers[0]
	args := strings.Join(c.Args, " ")
	if !strings.Contains(args, "--nfd-features-dir= ") && !strings.HasSuffix(args, "--nfd-features-dir=") {
		t.Errorf("nfd disabled, args %q", args)
	}
	if !strings.Contains(args, "--listen=:19847") || !strings.Contains(args, "--profile=training") || c.Ports[0].ContainerPort != 19847 {
		t.Errorf("values not applied: %q port %d", args, c.Ports[0].ContainerPort)
	}
	for _, v := range ds.Spec.Template.Spec.Volumes {
		if v.Name == "nfd-features" {
			t.Error("nfd volume with nfd disabled")
		}
	}
	var svc corev1.Service
	if err := yaml.UnmarshalStrict(got["Service"], &svc); err != nil || svc.Spec.Ports[0].Port != 19847 {
		t.Errorf("service port: %v %+v", err, svc.Spec.Ports)
	}
}

// TestChartRBACProxy: rbacProxy.enabled puts kube-rbac-proxy in front: the
// agent listens on loopback only, the proxy serves HTTPS on its port (the
// only one the Service, NetworkPolicy and ServiceMonitor name), the probes
// go through it, the pod mounts its token and the proxy may create
// TokenReviews and SubjectAccessReviews. agent.noReportEndpoints adds the
// flag.
func TestChartRBACProxy(t *testing.T) {
	got := render(t, map[string]any{
		"rbacProxy": map[string]any{"enabled": true, "port": 9443},
		"agent":     map[string]any{"noReportEndpoints": true},
	})
	var ds appsv1.DaemonSet
	if err := yaml.UnmarshalStrict(got["DaemonSet"], &ds); err != nil {
		t.Fatal(err)
	}
	spec := ds.Spec.Template.Spec
	if len(spec.Containers) != 2 || spec.Containers[1].Name != "kube-rbac-proxy" {
		t.Fatalf("containers: %d", len(spec.Containers))
	}
	agent, proxy := spec.Containers[0], spec.Containers[1]
	args := strings.Join(agent.Args, " ")
	if !strings.Contains(args, "--listen=127.0.0.1:9847") || !strings.Contains(args, "--no-report-endpoints") || len(agent.Ports) != 0 {
		t.Errorf("agent: args %q ports %v; want loopback only, report endpoints off, no container port", args, agent.Ports)
	}
	pargs := strings.Join(proxy.Args, " ")
	if !strings.Contains(pargs, "--secure-listen-address=0.0.0.0:9443") || !strings.Contains(pargs, "--upstream=http://127.0.0.1:9847/") ||
		len(proxy.Ports) != 1 || proxy.Ports[0].ContainerPort != 9443 || proxy.Ports[0].Name != "https" {
		t.Errorf("proxy: args %q ports %v", pargs, proxy.Ports)
	}
	if p := agent.ReadinessProbe.HTTPGet; p.Port.String() != "https" || p.Scheme != corev1.URISchemeHTTPS {
		t.Errorf("readiness probe %+v: want HTTPS through the proxy", p)
	}
	if spec.AutomountServiceAccountToken == nil || !*spec.AutomountServiceAccountToken {
		t.Error("the pod does not mount its token: the proxy cannot review tokens")
	}
	var svc corev1.Service
	if err := yaml.UnmarshalStrict(got["Service"], &svc); err != nil || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 9443 {
		t.Errorf("service: %v %+v", err, svc.Spec.Ports)
	}
	var np networkingv1.NetworkPolicy
	if err := yaml.UnmarshalStrict(got["NetworkPolicy"], &np); err != nil || np.Spec.Ingress[0].Ports[0].Port.IntValue() != 9443 {
		t.Errorf("network policy: %v %+v", err, np.Spec.Ingress)
	}
	if sm := string(got["ServiceMonitor"]); !strings.Contains(sm, "scheme: https") || !strings.Contains(sm, "bearerTokenFile:") {
		t.Errorf("service monitor does not scrape through the proxy:\n%s", sm)
	}
	var cr rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(got["ClusterRole"], &cr); err != nil {
		t.Fatal(err)
	}
	var res []string
	for _, r := range cr.Rules {
		res = append(res, r.Resources...)
	}
	if strings.Join(res, ",") != "tokenreviews,subjectaccessreviews" {
		t.Errorf("cluster role resources %v", res)
	}
	var crb rbacv1.ClusterRoleBinding
	if err := yaml.UnmarshalStrict(got["ClusterRoleBinding"], &crb); err != nil || crb.Subjects[0].Name != "gpunode" || crb.RoleRef.Name != cr.Name {
		t.Errorf("cluster role binding: %v %+v", err, crb)
	}
}
