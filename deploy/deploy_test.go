// Package deploy holds gpunode's Kubernetes manifests, Helm chart, NPD
// configuration, Grafana dashboard and Dockerfile; its tests decode every
// manifest strictly.
package deploy

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/gpunode/gpunode/internal/agent"
	"github.com/gpunode/gpunode/internal/k8s/cluster"
)

// ServiceMonitor and PrometheusRule are prometheus-operator CRDs, not in
// k8s.io/api; these are the fields of monitoring.coreos.com/v1 the
// manifests use, decoded strictly (an unknown or misspelt field fails).
type serviceMonitor struct {
	APIVersion string             `json:"apiVersion"`
	Kind       string             `json:"kind"`
	Metadata   objectMeta         `json:"metadata"`
	Spec       serviceMonitorSpec `json:"spec"`
}

type objectMeta struct {
	Name      string            `json:"name"`
	Namespace string            `json:"namespace"`
	Labels    map[string]string `json:"labels"`
}

type serviceMonitorSpec struct {
	Selector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	} `json:"selector"`
	NamespaceSelector struct {
		MatchNames []string `json:"matchNames"`
	} `json:"namespaceSelector"`
	Endpoints []struct {
		Port          string `json:"port"`
		Path          string `json:"path"`
		Interval      string `json:"interval"`
		ScrapeTimeout string `json:"scrapeTimeout"`
		Relabelings   []struct {
			SourceLabels []string `json:"sourceLabels"`
			TargetLabel  string   `json:"targetLabel"`
		} `json:"relabelings"`
	} `json:"endpoints"`
}

type prometheusRule struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   objectMeta `json:"metadata"`
	Spec       ruleSpec   `json:"spec"`
}

type ruleSpec struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Expr        string            `json:"expr"`
			For         string            `json:"for"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func strict(t *testing.T, name string, v any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(read(t, name), v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func TestManifestsDecodeStrictly(t *testing.T) {
	files, _ := filepath.Glob("*.yaml")
	sort.Strings(files)
	want := []string{"clusterrole.yaml", "daemonset.yaml", "namespace.yaml", "networkpolicy.yaml", "prometheusrule.yaml", "service.yaml", "serviceaccount.yaml", "servicemonitor.yaml"}
	if !reflect.DeepEqual(files, want) {
		t.Fatalf("manifests %v, want %v (a new one needs a decode here)", files, want)
	}
	var ns corev1.Namespace
	strict(t, "namespace.yaml", &ns)
	var sa corev1.ServiceAccount
	strict(t, "serviceaccount.yaml", &sa)
	var svc corev1.Service
	strict(t, "service.yaml", &svc)
	var np networkingv1.NetworkPolicy
	strict(t, "networkpolicy.yaml", &np)
	var ds appsv1.DaemonSet
	strict(t, "daemonset.yaml", &ds)
	var sm serviceMonitor
	strict(t, "servicemonitor.yaml", &sm)
	var pr prometheusRule
	strict(t, "prometheusrule.yaml", &pr)

	for _, o := range []struct{ kind, got, wantKind string }{{"Namespace", ns.Kind, "Namespace"}, {"ServiceAccount", sa.Kind, "ServiceAccount"},
		{"Service", svc.Kind, "Service"}, {"NetworkPolicy", np.Kind, "NetworkPolicy"}, {"DaemonSet", ds.Kind, "DaemonSet"},
		{"ServiceMonitor", sm.Kind, "ServiceMonitor"}, {"PrometheusRule", pr.Kind, "PrometheusRule"}} {
		if o.got != o.wantKind {
			t.Errorf("%s: kind %q", o.kind, o.got)
		}
	}
	var cr rbacv1.ClusterRole
	strict(t, "clusterrole.yaml", &cr)
	checkClusterRole(t, &cr)
	checkDaemonSet(t, &ds)
	port := ds.Spec.Template.Spec.Containers[0].Ports[0]
	if svc.Spec.Ports[0].Port != port.ContainerPort || svc.Spec.Ports[0].TargetPort.StrVal != port.Name ||
		!reflect.DeepEqual(svc.Spec.Selector, ds.Spec.Template.Labels) || !reflect.DeepEqual(sm.Spec.Selector.MatchLabels, svc.Labels) ||
		sm.Spec.Endpoints[0].Port != svc.Spec.Ports[0].Name || np.Spec.Ingress[0].Ports[0].Port.IntVal != port.ContainerPort {
		t.Error("DaemonSet port, Service, ServiceMonitor and NetworkPolicy do not line up")
	}
	checkRules(t, pr.Spec)
}

func checkDaemonSet(t *testing.T, ds *appsv1.DaemonSet) {
	t.Helper()
	pod := ds.Spec.Template.Spec
	c := pod.Containers[0]
	if !reflect.DeepEqual(ds.Spec.Selector.MatchLabels, ds.Spec.Template.Labels) {
		t.Error("selector does not match the pod labels")
	}
	if !strings.HasSuffix(agent.DefaultListen, ":"+itoa(int(c.Ports[0].ContainerPort))) || c.Ports[0].ContainerPort == 9400 || c.Ports[0].ContainerPort == 9100 {
		t.Errorf("port %d, agent default %s", c.Ports[0].ContainerPort, agent.DefaultListen)
	}
	if len(c.Args) < 3 || c.Args[0] != "--root=/host" || c.Args[1] != "--live-root" || c.Args[2] != "agent" {
		t.Errorf("args %v: want --root=/host --live-root agent ...", c.Args)
	}
	// The NVIDIA container toolkit injects libnvidia-ml.so.1 and nvidia-smi
	// only into containers of its runtime class that ask for them.
	if pod.RuntimeClassName == nil || *pod.RuntimeClassName != "nvidia" {
		t.Errorf("runtimeClassName %v: want nvidia", pod.RuntimeClassName)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if env["NVIDIA_VISIBLE_DEVICES"] != "all" || env["NVIDIA_DRIVER_CAPABILITIES"] != "utility" {
		t.Errorf("env %v: want NVIDIA_VISIBLE_DEVICES=all and NVIDIA_DRIVER_CAPABILITIES=utility", env)
	}
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.Privileged == nil || *sc.Privileged ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("container securityContext %+v: want read-only root, unprivileged, no escalation, drop ALL", sc)
	}
	if pod.HostNetwork || pod.HostPID || pod.HostIPC {
		t.Error("host namespaces are not needed")
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Error("resource requests and limits missing")
	}
	hasGPUToleration := false
	for _, tol := range pod.Tolerations {
		hasGPUToleration = hasGPUToleration || tol.Key == "nvidia.com/gpu"
	}
	if !hasGPUToleration {
		t.Error("no toleration for the nvidia.com/gpu taint")
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m
	}
	for _, p := range []string{"/host/sys", "/host/proc", "/host/etc", "/host/var/lib/kubelet/pod-resources"} {
		if m, ok := mounts[p]; !ok || !m.ReadOnly {
			t.Errorf("%s: want a read-only mount, got %+v", p, m)
		}
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Error("probes must use /readyz and /healthz")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

var metricRE = regexp.MustCompile(`\bgpunode_[a-z_]+\b`)

// exported are the metric names the agent serves (series names of
// histograms would carry suffixes; the agent has none).
func exported() map[string]bool {
	return map[string]bool{agent.MetricCheckStatus: true, agent.MetricChecks: true, agent.MetricGPUInfo: true, agent.MetricNUMANodes: true,
		agent.MetricPCIeWidth: true, agent.MetricPCIeMaxWidth: true, agent.MetricPCIeSpeed: true, agent.MetricPCIeMaxSpeed: true,
		agent.MetricPCIeDowngraded: true, agent.MetricGPULocalNICs: true, agent.MetricGPUNearestNIC: true, agent.MetricIRQs: true,
		agent.MetricIRQsOffNode: true, agent.MetricAuditDuration: true, agent.MetricAudits: true, agent.MetricAuditErrors: true,
		agent.MetricAuditUp: true, agent.MetricLastSuccess: true, agent.MetricBuildInfo: true, agent.MetricPodNUMAAligned: true}
}

func checkExpr(t *testing.T, where, expr string) {
	t.Helper()
	names := metricRE.FindAllString(expr, -1)
	if len(names) == 0 && !strings.Contains(expr, "up{") {
		t.Errorf("%s: %q uses no gpunode metric", where, expr)
	}
	for _, n := range names {
		if !exported()[n] {
			t.Errorf("%s: %q uses %s, which the agent does not export", where, expr, n)
		}
	}
}

func checkRules(t *testing.T, spec ruleSpec) {
	t.Helper()
	alerts := map[string]bool{}
	for _, g := range spec.Groups {
		for _, r := range g.Rules {
			alerts[r.Alert] = true
			checkExpr(t, "rule "+r.Alert, r.Expr)
			if r.For == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("rule %s: want for, severity and a summary", r.Alert)
			}
		}
	}
	for _, a := range []string{"GPUNodeTuningDrift", "GPUNodeAuditFailing", "GPUNICMisaligned", "PCIeLinkDowngraded", "GPUPodNUMAMisaligned"} {
		if !alerts[a] {
			t.Errorf("no alert %s", a)
		}
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Log("promtool not installed: rules not checked by promtool")
		return
	}
	b, err := yaml.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "check", "rules", f).CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("SUCCESS: 8 rules found")) {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
}

func TestDashboard(t *testing.T) {
	var d struct {
		Title  string `json:"title"`
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(read(t, "grafana/gpunode-dashboard.json"), &d); err != nil {
		t.Fatal(err)
	}
	if d.UID == "" || len(d.Panels) < 8 {
		t.Fatalf("dashboard: uid %q, %d panels", d.UID, len(d.Panels))
	}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			checkExpr(t, "panel "+p.Title, q.Expr)
		}
	}
}

// The chart carries copies of the rules and the dashboard (Helm reads only
// files inside the chart): they must not drift from deploy/'s.
func TestChartCopies(t *testing.T) {
	if !bytes.Equal(read(t, "grafana/gpunode-dashboard.json"), read(t, "helm/gpunode/files/gpunode-dashboard.json")) {
		t.Error("helm/gpunode/files/gpunode-dashboard.json differs from grafana/gpunode-dashboard.json")
	}
	var pr prometheusRule
	strict(t, "prometheusrule.yaml", &pr)
	var spec ruleSpec
	strict(t, "helm/gpunode/files/rules.yaml", &spec)
	if !reflect.DeepEqual(pr.Spec, spec) {
		t.Error("helm/gpunode/files/rules.yaml differs from prometheusrule.yaml's spec")
	}
}

// The NPD custom-plugin-monitor configuration, decoded strictly; every
// rule runs 'gpunode agent npd-check' with checks that parse.
func TestNPDConfig(t *testing.T) {
	var c struct {
		Plugin       string `json:"plugin"`
		PluginConfig struct {
			InvokeInterval  string `json:"invoke_interval"`
			Timeout         string `json:"timeout"`
			MaxOutputLength int    `json:"max_output_length"`
			Concurrency     int    `json:"concurrency"`
			MessageChange   bool   `json:"enable_message_change_based_condition_update"`
		} `json:"pluginConfig"`
		Source           string `json:"source"`
		MetricsReporting bool   `json:"metricsReporting"`
		Conditions       []struct {
			Type, Reason, Message string
		} `json:"conditions"`
		Rules []struct {
			Type      string   `json:"type"`
			Condition string   `json:"condition"`
			Reason    string   `json:"reason"`
			Path      string   `json:"path"`
			Args      []string `json:"args"`
			Timeout   string   `json:"timeout"`
		} `json:"rules"`
	}
	dec := json.NewDecoder(bytes.NewReader(read(t, "npd/gpunode-plugin-monitor.json")))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		t.Fatal(err)
	}
	if c.Plugin != "custom" || c.PluginConfig.MaxOutputLength != 80 || len(c.Rules) == 0 {
		t.Fatalf("config %+v", c)
	}
	conds := map[string]bool{}
	for _, x := range c.Conditions {
		conds[x.Type] = true
	}
	for _, r := range c.Rules {
		if !conds[r.Condition] || r.Type != "permanent" {
			t.Errorf("rule %s: condition not declared or not permanent", r.Condition)
		}
		i := indexOf(r.Args, "npd-check")
		if i < 0 || i+1 >= len(r.Args) || r.Args[i-1] != "agent" {
			t.Errorf("rule %s: args %v do not run 'agent npd-check CHECK...'", r.Condition, r.Args)
		}
	}
}

func indexOf(s []string, x string) int {
	for i, v := range s {
		if v == x {
			return i
		}
	}
	return -1
}

// checkClusterRole: the what-if ClusterRole grants get, list and watch on
// exactly the resources package cluster reads, and no other verb.
func checkClusterRole(t *testing.T, cr *rbacv1.ClusterRole) {
	t.Helper()
	if cr.Kind != "ClusterRole" || cr.APIVersion != "rbac.authorization.k8s.io/v1" {
		t.Errorf("clusterrole.yaml: %s %s", cr.APIVersion, cr.Kind)
	}
	got := map[string][]string{}
	for i, r := range cr.Rules {
		if !reflect.DeepEqual(r.Verbs, []string{"get", "list", "watch"}) {
			t.Errorf("rule %d: verbs %v, want [get list watch]", i, r.Verbs)
		}
		if len(r.APIGroups) != 1 || len(r.NonResourceURLs) > 0 || len(r.ResourceNames) > 0 {
			t.Errorf("rule %d: one API group, resources only: %+v", i, r)
			continue
		}
		got[r.APIGroups[0]] = append(got[r.APIGroups[0]], r.Resources...)
	}
	for g := range got {
		sort.Strings(got[g])
	}
	if want := cluster.Resources(); !reflect.DeepEqual(got, want) {
		t.Errorf("clusterrole.yaml grants %v\nwant (what gpunode reads) %v", got, want)
	}
}

// krewPlugin is the part of krew's Plugin (v1alpha2) the manifest uses,
// decoded strictly.
type krewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		Homepage         string `json:"homepage"`
		ShortDescription string `json:"shortDescription"`
		Description      string `json:"description"`
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			Sha256 string `json:"sha256"`
			Bin    string `json:"bin"`
			Files  []struct {
				From string `json:"from"`
				To   string `json:"to"`
			} `json:"files"`
		} `json:"platforms"`
	} `json:"spec"`
}

// TestKrewManifest: the plugin is named gpunode (kubectl gpunode), ships
// the kubectl-gpunode binary built from cmd/kubectl-gpunode with the
// helper gpunode-helm beside it, and every
// field scripts/krew-archive.sh fills is a placeholder it knows.
func TestKrewManifest(t *testing.T) {
	var p krewPlugin
	strict(t, filepath.Join("krew", "gpunode.yaml"), &p)
	if p.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || p.Kind != "Plugin" || p.Metadata.Name != "gpunode" || p.Spec.Version != "RELEASE" {
		t.Errorf("manifest header %+v", p)
	}
	if len(p.Spec.ShortDescription) == 0 || len(p.Spec.ShortDescription) > 50 {
		t.Errorf("shortDescription %q: krew wants 1-50 characters", p.Spec.ShortDescription)
	}
	if _, err := os.Stat(filepath.Join("..", "cmd", "kubectl-gpunode", "main.go")); err != nil {
		t.Error(err)
	}
	for _, pl := range p.Spec.Platforms {
		arch := pl.Selector.MatchLabels["arch"]
		if pl.Bin != "kubectl-gpunode" || pl.Selector.MatchLabels["os"] != "linux" || pl.Sha256 != "SHA256_LINUX_"+strings.ToUpper(arch) ||
			!strings.HasSuffix(pl.URI, "/RELEASE/kubectl-gpunode-linux-"+arch+".tar.gz") {
			t.Errorf("platform %+v", pl)
		}
		// k8s lint renders Helm charts in gpunode-helm, found beside the
		// plugin: the archive ships it (scripts/krew-archive.sh).
		helper := false
		for _, f := range pl.Files {
			helper = helper || (f.From == "gpunode-helm" && f.To == ".")
		}
		if !helper {
			t.Errorf("platform %s does not ship gpunode-helm beside kubectl-gpunode", arch)
		}
	}
	if len(p.Spec.Platforms) != 2 {
		t.Errorf("%d platforms", len(p.Spec.Platforms))
	}
}
