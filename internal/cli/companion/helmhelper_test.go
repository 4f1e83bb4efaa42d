package companion

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gpunode/gpunode/internal/cli"
	"github.com/gpunode/gpunode/internal/k8s/helmexec"
)

// helmHelperDir holds gpunode-helm, built for this package's tests on the
// first lint of a chart (TestMain removes it).
var helmHelperDir string

// buildHelmHelper builds cmd/gpunode-helm once, for the tests' GPUNODE_HELM:
// 'k8s lint' renders charts in that helper, which gpunode-full execs.
var buildHelmHelper = sync.OnceValues(func() (string, error) {
	p := filepath.Join(helmHelperDir, helmexec.HelperName)
	cmd := exec.Command("go", "build", "-o", p, "../../../cmd/gpunode-helm")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/gpunode-helm: %w\n%s", err, out)
	}
	return p, nil
})

// helmHelper is the path of the tests' gpunode-helm.
func helmHelper(t *testing.T) string {
	t.Helper()
	p, err := buildHelmHelper()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gpunode-helm-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	helmHelperDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// Without gpunode-helm (no GPUNODE_HELM, none beside the test binary,
// PATH empty so no go run), a lint of a chart fails (exit 3) and says how
// to install the helper; without a chart among the inputs nothing is
// looked up.
func TestK8sLintChartWithoutHelper(t *testing.T) {
	chart := writeChart(t)
	var out, errb bytes.Buffer
	env := cli.Env{
		Args: []string{"k8s", "lint", "-f", chart}, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		Getenv:  func(string) string { return "" },
		Environ: func() []string { return nil },
	}
	code := mainFull(context.Background(), env)
	if code != cli.ExitFailure || out.Len() != 0 || !strings.Contains(errb.String(), "rendering Helm chart "+chart+": helper executable not found: gpunode-helm") ||
		!strings.Contains(errb.String(), "GPUNODE_HELM") {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
	plain := filepath.Join(t.TempDir(), "pod.yaml")
	if err := os.WriteFile(plain, []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i}]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env.Args = []string{"k8s", "lint", "-f", plain, "--fail-on", "error"}
	errb.Reset()
	if code = mainFull(context.Background(), env); code != cli.ExitOK {
		t.Fatalf("plain manifest: exit %d\n%s", code, errb.String())
	}
}
