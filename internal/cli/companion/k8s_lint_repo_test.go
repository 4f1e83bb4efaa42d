package companion

import (
	"path/filepath"
	"strings"
	"testing"
)

// k8s lint over a repository (issue 28 item 3): the project's own deploy/
// lints clean, its Helm chart's files are skipped with one line each, and
// inputs with no objects are a warning (--fail-on warning, the default:
// exit 1; --fail-on error: exit 0).
func TestK8sLintRepository(t *testing.T) {
	deploy := filepath.Join("..", "..", "..", "deploy")
	code, out, errs := run(t, "k8s", "lint", "-f", deploy)
	if code != 0 {
		t.Fatalf("lint -f deploy/: exit %d\n%s%s", code, out, errs)
	}
	chart := filepath.Join(deploy, "helm", "gpunode")
	for _, want := range []string{
		"skipped " + filepath.Join(chart, "Chart.yaml") + ": Helm chart metadata, not a Kubernetes object\n",
		"skipped " + filepath.Join(chart, "values.yaml") + ": Helm chart values, not a Kubernetes object\n",
		"skipped " + filepath.Join(chart, "templates", "daemonset.yaml") + ": Helm template: lint the rendered chart",
		"no findings (",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lint -f deploy/ output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "skipped "+filepath.Join(chart, "Chart.yaml")); n != 1 {
		t.Errorf("Chart.yaml skipped %d times, want once", n)
	}
	empty := t.TempDir()
	code, out, _ = run(t, "k8s", "lint", "-f", empty)
	if code != 1 || !strings.Contains(out, "[input.no-objects") || !strings.Contains(out, "no Kubernetes objects found in "+empty) {
		t.Fatalf("empty dir: exit %d\n%s", code, out)
	}
	if code, out, _ = run(t, "k8s", "lint", "-f", empty, "--fail-on", "error"); code != 0 {
		t.Fatalf("empty dir, --fail-on error: exit %d\n%s", code, out)
	}
	// A chart named alone holds no objects gpunode can read without rendering.
	if code, out, _ = run(t, "k8s", "lint", "-f", chart); code != 1 || !strings.Contains(out, "input.no-objects") {
		t.Fatalf("chart dir: exit %d\n%s", code, out)
	}
}
