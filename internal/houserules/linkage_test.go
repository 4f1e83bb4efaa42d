package houserules

import (
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
)

// depsCache holds 'go list -deps' per package: the tests below list the
// companion and its helper more than once.
var depsCache struct {
	sync.Mutex
	m map[string][]string
}

// goDeps lists the packages pkg links ('go list -deps', in dependency
// order; shared, not to be written into); the test is skipped where there
// is no go tool.
func goDeps(t *testing.T, pkg string) []string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go tool")
	}
	depsCache.Lock()
	defer depsCache.Unlock()
	if d, ok := depsCache.m[pkg]; ok {
		return d
	}
	cmd := exec.Command("go", "list", "-deps", pkg)
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	if depsCache.m == nil {
		depsCache.m = map[string][]string{}
	}
	// Clipped: a caller's append copies rather than writing into the cache.
	depsCache.m[pkg] = slices.Clip(strings.Fields(string(out)))
	return depsCache.m[pkg]
}

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
	// purego (bench's libcuda loader) makes a CGO_ENABLED=0 binary dynamic:
	// its fakecgo brings back the dynamic loader and libc's start-up, which
	// cost more than cgo's (docs/ARCHITECTURE.md, "NVML: cgo or purego").
	"github.com/ebitengine/purego",
	// -o jsonpath is gpunode's own engine (internal/output/jp.go)
	"k8s.io/client-go/",
	"helm.sh/",
	// YAML 1.1 as sigs.k8s.io/yaml reads and writes it is internal/yamljson
	// (on yaml v3, proven equal by conformance/yaml): yaml v2's package
	// initialiser compiles regexps at every start (issue 29 item 5).
	"sigs.k8s.io/yaml",
	"go.yaml.in/yaml/v2",
}

func TestNodeBinaryLinksNoHeavyLibraries(t *testing.T) {
	for _, p := range goDeps(t, "./cmd/gpunode") {
		for _, h := range heavyForNodeBinary {
			if strings.HasPrefix(p, h) {
				t.Errorf("cmd/gpunode links %s: move the command that needs it to internal/cli/companion (gpunode-full)", p)
			}
		}
	}
	// The companion or its helper still has them (else this list is
	// stale).
	full := strings.Join(append(goDeps(t, "./cmd/gpunode-full"), goDeps(t, "./cmd/gpunode-helm")...), "\n")
	for _, h := range heavyForNodeBinary {
		if !strings.Contains(full, "\n"+h) {
			t.Errorf("cmd/gpunode-full and cmd/gpunode-helm link nothing under %s: drop it from heavyForNodeBinary", h)
		}
	}
}

// notForNodeBinary are libraries that cmd/gpunode must not link and that
// no binary of the product links any more, so they are not in
// heavyForNodeBinary (whose second half asks the companion to still have
// them). CDI's pkg/cdi (its spec cache) brings fsnotify, the OCI runtime
// spec and its own copy of Kubernetes' name regexps, compiled at every
// start; 'container check' validates specs with internal/container's own
// rules over CDI's leaf packages (specs-go, pkg/parser), checked against
// pkg/cdi in conformance/ctk (issue 29 item 5).
var notForNodeBinary = []string{
	"tags.cncf.io/container-device-interface/pkg/cdi",
	"tags.cncf.io/container-device-interface/internal/",
	"github.com/fsnotify/fsnotify",
	"github.com/opencontainers/runtime-spec/",
}

func TestNodeBinaryLinksNoCDICache(t *testing.T) {
	deps := goDeps(t, "./cmd/gpunode")
	if !slices.Contains(deps, "github.com/gpunode/gpunode/internal/container") {
		t.Fatal("cmd/gpunode does not link internal/container: this test checks nothing")
	}
	for _, p := range deps {
		for _, h := range notForNodeBinary {
			if strings.HasPrefix(p, h) {
				t.Errorf("cmd/gpunode links %s: validate CDI specs with internal/container's rules (cdi.go), not pkg/cdi", p)
			}
		}
	}
}

// heavyForAgentBinary are libraries the fleet agent's binary
// (cmd/gpunode-agent, what the DaemonSet runs) must not link: their code and
// initialisers become file pages of a process that lives for months (issue
// 24 item 8: RSS at most 30 MB). The agent needs client_golang,
// exporter-toolkit and the kubelet pod-resources client, not these.
var heavyForAgentBinary = []string{
	"k8s.io/client-go/",
	"k8s.io/dynamic-resource-allocation/",
	"k8s.io/apiserver/",
	"k8s.io/component-base/",
	"k8s.io/kube-openapi/",
	"github.com/google/cel-go/",
	"gonum.org/",
	"helm.sh/",
}

// agentMayLink are the small leaves under heavyForAgentBinary that the
// node commands' packages already use (apimachinery's string helpers).
var agentMayLink = []string{
	"k8s.io/kube-openapi/pkg/util",
}

func TestAgentBinaryLinksNoHeavyLibraries(t *testing.T) {
	agent := goDeps(t, "./cmd/gpunode-agent")
	has := map[string]bool{}
	for _, p := range agent {
		has[p] = true
	}
	for _, p := range agent {
		if slices.Contains(agentMayLink, p) {
			continue
		}
		for _, h := range heavyForAgentBinary {
			if strings.HasPrefix(p, h) {
				t.Errorf("cmd/gpunode-agent links %s: keep what needs it out of internal/cli/agentcli and internal/agent", p)
			}
		}
	}
	// The agent's own libraries are there (else this is not the agent).
	for _, p := range []string{"github.com/gpunode/gpunode/internal/agent", "github.com/prometheus/client_golang/prometheus",
		"github.com/prometheus/exporter-toolkit/web", "github.com/gpunode/gpunode/internal/podresources"} {
		if !has[p] {
			t.Errorf("cmd/gpunode-agent does not link %s", p)
		}
	}
	// The companion or its helper still has them (else this list is
	// stale).
	full := strings.Join(append(goDeps(t, "./cmd/gpunode-full"), goDeps(t, "./cmd/gpunode-helm")...), "\n")
	for _, h := range heavyForAgentBinary {
		if !strings.Contains(full, "\n"+h) {
			t.Errorf("cmd/gpunode-full and cmd/gpunode-helm link nothing under %s: drop it from heavyForAgentBinary", h)
		}
	}
}

// heavyForFullBinary are libraries the companion (cmd/gpunode-full, and
// cmd/kubectl-gpunode, the same commands as a kubectl plugin) must not
// link: only one of its commands needs them, rarely, and their package
// initialisers would cost every start, the DRA "answer in a keystroke"
// path included (issue 29 item 2). The Helm SDK's JSON-schema library
// compiles its meta-schemas at init (about 10 ms of CPU and 1.7 MB at
// every start); 'k8s lint' renders charts in the helper gpunode-helm
// instead (internal/k8s/helmexec).
var heavyForFullBinary = []string{
	"helm.sh/",
	"github.com/santhosh-tekuri/jsonschema/",
}

func TestFullBinaryLinksNoHelm(t *testing.T) {
	for _, bin := range []string{"./cmd/gpunode-full", "./cmd/kubectl-gpunode"} {
		for _, p := range goDeps(t, bin) {
			for _, h := range heavyForFullBinary {
				if strings.HasPrefix(p, h) {
					t.Errorf("%s links %s: run what needs it in a helper executable (as k8s lint runs gpunode-helm)", bin, p)
				}
			}
		}
	}
	// The helper has them (else this list is stale), and not the
	// companion's command tree.
	helper := goDeps(t, "./cmd/gpunode-helm")
	all := strings.Join(helper, "\n")
	for _, h := range heavyForFullBinary {
		if !strings.Contains(all, "\n"+h) {
			t.Errorf("cmd/gpunode-helm links nothing under %s: drop it from heavyForFullBinary", h)
		}
	}
	if slices.Contains(helper, "github.com/gpunode/gpunode/internal/cli/companion") {
		t.Error("cmd/gpunode-helm links the companion's commands: it renders charts only")
	}
}

// yamlLibraries are the YAML libraries a node package must not import: it
// reads and writes YAML 1.1 with internal/yamljson (issue 29 item 5).
var yamlLibraries = []string{"sigs.k8s.io/yaml", "go.yaml.in/yaml/v2"}

// importersOf lists the gpunode packages that bin links and that import
// one of libs directly, as "package imports lib".
func importersOf(t *testing.T, bin string, libs []string) []string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go tool")
	}
	cmd := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, bin)
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", bin, err)
	}
	var found []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "github.com/gpunode/gpunode/") {
			continue
		}
		for _, imp := range f[1:] {
			if slices.Contains(libs, imp) {
				found = append(found, f[0]+" imports "+imp)
			}
		}
	}
	return found
}

// TestNodePackagesDoNotImportSigsYAML names the package that brings a YAML
// library back into cmd/gpunode (TestNodeBinaryLinksNoHeavyLibraries only
// says that something links it).
func TestNodePackagesDoNotImportSigsYAML(t *testing.T) {
	for _, f := range importersOf(t, "./cmd/gpunode", yamlLibraries) {
		t.Errorf("%s: cmd/gpunode links it; use internal/yamljson (same semantics, no yaml v2)", f)
	}
	// The scan sees the companion's k8s packages, which keep
	// sigs.k8s.io/yaml (else it would pass by seeing nothing).
	if len(importersOf(t, "./cmd/gpunode-full", yamlLibraries)) == 0 {
		t.Error("no package of cmd/gpunode-full imports sigs.k8s.io/yaml: the scan is broken, or the list is stale")
	}
}

// nodeBinaryMayLink are the only modules outside the standard library that
// cmd/gpunode may link (issue 29 item 5: every package linked runs its
// initialisers at every start of the node binary). A new one needs a
// reason here; yaml v2 (sigs.k8s.io/yaml), CDI's pkg/cdi (fsnotify, the
// OCI runtime spec, CDI's validation regexps), client-go and the
// Kubernetes API types went, and must not come back through a new import.
var nodeBinaryMayLink = []string{
	"github.com/gpunode/gpunode/",
	"github.com/spf13/cobra",          // the command line
	"github.com/spf13/pflag",          // cobra's flags
	"golang.org/x/sys/unix",           // system calls (openat2, sched_setaffinity, mbind)
	"k8s.io/utils/cpuset",             // kubelet's CPU list syntax, as bind and lint parse it
	"go.yaml.in/yaml/v3",              // YAML: -o yaml, tune profiles, mig-parted configs, CDI specs (internal/yamljson on top)
	"github.com/pelletier/go-toml/v2", // containerd's and the container toolkit's config.toml
	// CDI's leaf packages: the spec types and the name rules (no
	// initialisers), under internal/container's own edit rules.
	"tags.cncf.io/container-device-interface/specs-go",
	"tags.cncf.io/container-device-interface/pkg/parser",
	// NVML, in cgo builds only: the node binary is built with
	// CGO_ENABLED=0 (TestNodeBinaryIsStatic) and hands NVML commands to
	// gpunode-agent.
	"github.com/NVIDIA/go-nvml/",
}

func TestNodeBinaryLinksOnlyAllowedModules(t *testing.T) {
	for _, p := range goDeps(t, "./cmd/gpunode") {
		first, _, _ := strings.Cut(p, "/")
		if !strings.Contains(first, ".") {
			continue // the standard library
		}
		ok := false
		for _, m := range nodeBinaryMayLink {
			ok = ok || p == strings.TrimSuffix(m, "/") || strings.HasPrefix(p, m) || strings.HasPrefix(p, m+"/")
		}
		if !ok {
			t.Errorf("cmd/gpunode links %s, which is not in nodeBinaryMayLink: move the command that needs it to gpunode-full (internal/cli/companion), or add it with its reason", p)
		}
	}
}
