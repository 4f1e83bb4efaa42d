package companion

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

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
