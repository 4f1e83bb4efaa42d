package companion

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// k8s lint over a repository (issue 28 item 3): the project's own deploy/
// lints clean, its Helm chart rendered with the Helm SDK (one line in the
// report) beside the plain manifests it renders to, and inputs with no
// objects are a warning (--fail-on warning, the default: exit 1;
// --fail-on error: exit 0).
func TestK8sLintRepository(t *testing.T) {
	deploy := filepath.Join("..", "..", "..", "deploy")
	chart := filepath.Join(deploy, "helm", "gpunode")
	code, out, errs := run(t, "k8s", "lint", "-f", deploy, "--fail-on", "warning")
	if code != 0 {
		t.Fatalf("lint -f deploy/: exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"rendered Helm chart " + chart + " (its values.yaml): ", "no findings ("} {
		if !strings.Contains(out, want) {
			t.Errorf("lint -f deploy/ output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "skipped "+filepath.Join(chart, "Chart.yaml")) {
		t.Errorf("Chart.yaml skipped, not rendered:\n%s", out)
	}
	// Files that are not Kubernetes objects: one line each, saying why;
	// the plain manifests (objects, of kinds lint reads or not) none.
	for _, f := range []string{filepath.Join(deploy, "grafana", "gpunode-dashboard.json"), filepath.Join(deploy, "npd", "gpunode-plugin-monitor.json")} {
		if n := strings.Count(out, "skipped "+f+": no apiVersion and kind, not a config lint reads (keys: "); n != 1 {
			t.Errorf("lint -f deploy/: %d lines for skipped %s, want 1:\n%s", n, f, out)
		}
	}
	if n := strings.Count(out, "\nskipped "); n != 2 {
		t.Errorf("lint -f deploy/: %d skipped files, want 2 (the dashboard and the NPD config):\n%s", n, out)
	}
	// JSON: skippedFiles; a file with one object among non-object
	// documents is linted, not skipped.
	dir := t.TempDir()
	mixed, junk := filepath.Join(dir, "mixed.yaml"), filepath.Join(dir, "junk.json")
	if err := os.WriteFile(mixed, []byte("title: x\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i}]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(junk, []byte(`{"panels": [], "title": "t", "uid": "u", "z": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = run(t, "k8s", "lint", "-f", dir, "-o", "json")
	want := `"skippedFiles": [
    {
      "file": "` + junk + `",
      "reason": "no apiVersion and kind, not a config lint reads (keys: panels, title, ... 4 in all)"
    }
  ]`
	if code != 0 || !strings.Contains(out, want) || strings.Contains(out, mixed) {
		t.Errorf("lint -f %s -o json: exit %d, want 0 and only %s skipped:\n%s%s", dir, code, junk, out, errs)
	}
	// The chart alone: its rendered objects are checked.
	code, out, _ = run(t, "k8s", "lint", "-f", chart, "-o", "json")
	if code != 0 || !strings.Contains(out, `"chart": "`+chart+`"`) || strings.Contains(out, `"objects": 0`) {
		t.Fatalf("chart dir: exit %d\n%s", code, out)
	}
	empty := t.TempDir()
	code, out, _ = run(t, "k8s", "lint", "-f", empty)
	if code != 1 || !strings.Contains(out, "[input.no-objects") || !strings.Contains(out, "no Kubernetes objects found in "+empty) {
		t.Fatalf("empty dir: exit %d\n%s", code, out)
	}
	if code, out, _ = run(t, "k8s", "lint", "-f", empty, "--fail-on", "error"); code != 0 {
		t.Fatalf("empty dir, --fail-on error: exit %d\n%s", code, out)
	}
}

// writeChart makes a chart whose Deployment asks for GPUs in requests only
// unless .Values.limits is set.
func writeChart(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "trainer")
	files := map[string]string{
		"Chart.yaml":             "apiVersion: v2\nname: trainer\nversion: 0.1.0\n",
		"values.yaml":            "gpus: 2\nlimits: false\nreplicas: 1\n",
		"templates/_helpers.tpl": `{{- define "trainer.labels" -}}app: {{ .Release.Name }}{{- end -}}` + "\n",
		"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  namespace: {{ .Release.Namespace }}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {{ "{" }}{{ include "trainer.labels" . }}{{ "}" }}}
  template:
    metadata: {labels: {{ "{" }}{{ include "trainer.labels" . }}{{ "}" }}}
    spec:
      containers:
      - name: train
        image: my-cuda-app:1
        resources:
          {{- if .Values.limits }}
          limits: {nvidia.com/gpu: {{ .Values.gpus | quote }}}
          {{- else }}
          requests: {nvidia.com/gpu: {{ .Values.gpus | quote }}}
          {{- end }}
`,
		"templates/NOTES.txt": "installed {{ .Release.Name }}\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A chart's findings name its template file; --helm-values files are
// merged in order over values.yaml (later wins); the release's name and
// namespace are helm template's unless given.
func TestK8sLintHelmChart(t *testing.T) {
	chart := writeChart(t)
	code, out, errs := run(t, "k8s", "lint", "-f", chart)
	tmpl := filepath.Join(chart, "templates", "deployment.yaml")
	if code != 1 || !strings.Contains(out, "Deployment/default/release-name") || !strings.Contains(out, "at "+tmpl+" document 1") || !strings.Contains(out, "[gpu.limits") {
		t.Fatalf("chart with a request-only GPU: exit %d\n%s%s", code, out, errs)
	}
	fix := filepath.Join(t.TempDir(), "fix.yaml")
	more := filepath.Join(t.TempDir(), "more.yaml")
	if err := os.WriteFile(fix, []byte("limits: true\ngpus: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(more, []byte("gpus: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = run(t, "k8s", "lint", "-f", chart, "--helm-values", fix, "--helm-values", more, "--helm-release", "t1", "--helm-namespace", "ml", "-o", "json")
	if code != 0 || !strings.Contains(out, `"values": [`) || !strings.Contains(out, `"objects": 1`) {
		t.Fatalf("fixed by values: exit %d\n%s%s", code, out, errs)
	}
	// the two objects of a chart are duplicates of each other; a chart's
	// object and a plain manifest of the same name are not
	plain := filepath.Join(t.TempDir(), "plain.yaml")
	if err := os.WriteFile(plain, []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: release-name, namespace: default}\nspec:\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec: {containers: [{name: c, image: i}]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs = run(t, "k8s", "lint", "-f", plain, "-f", chart, "--helm-values", fix); code != 0 {
		t.Fatalf("chart beside its plain manifest: exit %d\n%s%s", code, out, errs)
	}
}

// A broken values file is a usage error (exit 2) naming the file, and
// nothing is reported; so is --helm-values without a chart.
func TestK8sLintHelmBadValues(t *testing.T) {
	chart := writeChart(t)
	bad := filepath.Join(t.TempDir(), "broken-values.yaml")
	if err := os.WriteFile(bad, []byte("gpus: [1, 2\nlimits: {\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "k8s", "lint", "-f", chart, "--helm-values", bad)
	if code != 2 || out != "" || !strings.Contains(errs, "--helm-values "+bad+": not a YAML mapping of values") {
		t.Fatalf("broken values: exit %d\nstdout %q\nstderr %s", code, out, errs)
	}
	list := filepath.Join(t.TempDir(), "list.yaml")
	if err := os.WriteFile(list, []byte("- a\n- b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs = run(t, "k8s", "lint", "-f", chart, "--helm-values", list); code != 2 || !strings.Contains(errs, list) {
		t.Fatalf("values that are a list: exit %d\n%s", code, errs)
	}
	if code, _, errs = run(t, "k8s", "lint", "-f", chart, "--helm-values", filepath.Join(t.TempDir(), "missing.yaml")); code != 2 || !strings.Contains(errs, "missing.yaml") {
		t.Fatalf("missing values file: exit %d\n%s", code, errs)
	}
	plain := filepath.Join("..", "..", "..", "deploy", "daemonset.yaml")
	if code, _, errs = run(t, "k8s", "lint", "-f", plain, "--helm-values", bad); code != 2 || !strings.Contains(errs, "no Helm chart") {
		t.Fatalf("--helm-values without a chart: exit %d\n%s", code, errs)
	}
}
