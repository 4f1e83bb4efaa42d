package houserules

import (
	"os/exec"
	"strings"
	"testing"
)

// gpunode (cmd/gpunode) runs the node commands and must start in a few
// milliseconds (issue 12: 'bind -- true' within 3 ms of 'true'). Every
// package linked into a Go binary runs its initialisers at every start, so
// the libraries below, which only the companion's commands (k8s, bench,
// agent, report) need, must be linked into cmd/gpunode-full only.
var heavyForNodeBinary = []string{
	"k8s.io/api/",
	"k8s.io/apimachinery/",
	"k8s.io/apiserver/",
	"k8s.io/component-base/",
	"k8s.io/dynamic-resource-allocation/",
	"k8s.io/kube-openapi/",
	"github.com/google/cel-go/",
	"github.com/prometheus/",
	"gonum.org/",
	"google.golang.org/protobuf/",
	"google.golang.org/grpc/",
	"k8s.io/kubelet/",
}

func TestNodeBinaryLinksNoHeavyLibraries(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go tool")
	}
	deps := func(pkg string) []string {
		cmd := exec.Command("go", "list", "-deps", pkg)
		cmd.Dir = repoRoot
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		return strings.Fields(string(out))
	}
	for _, p := range deps("./cmd/gpunode") {
		for _, h := range heavyForNodeBinary {
			if strings.HasPrefix(p, h) {
				t.Errorf("cmd/gpunode links %s: move the command that needs it to internal/cli/companion (gpunode-full)", p)
			}
		}
	}
	// The companion still has them (else this list is stale).
	full := strings.Join(deps("./cmd/gpunode-full"), "\n")
	for _, h := range heavyForNodeBinary {
		if !strings.Contains(full, "\n"+h) {
			t.Errorf("cmd/gpunode-full links nothing under %s: drop it from heavyForNodeBinary", h)
		}
	}
}
