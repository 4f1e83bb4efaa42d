package houserules

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// nodeBuild is how the node binary is built wherever it is installed: no
// cgo, so a static executable (issue 29 item 5: no dynamic loader or libc
// start-up at each run). Commands that need NVML hand over to gpunode-agent
// (internal/cli/nvmlforward.go).
var nodeBuild = regexp.MustCompile(`(?m)CGO_ENABLED=0 go build [^\n]*-o "?[^\s"]*/gpunode"? \./cmd/gpunode(\s|$)`)

// anyNodeBuild is a build of cmd/gpunode into a file named gpunode.
var anyNodeBuild = regexp.MustCompile(`go build [^\n]*-o "?[^\s"]*/gpunode"? \./cmd/gpunode(\s|$)`)

// The README's install commands, the image's Dockerfile, CI's bench step
// and scripts/bench.sh build cmd/gpunode as nodeBuild says, and that build
// is a static ELF executable (no program interpreter, no shared libraries)
// that links no NVML binding.
func TestNodeBinaryIsStatic(t *testing.T) {
	for _, f := range []string{"README.md", "deploy/Dockerfile", ".ci/run", "scripts/bench.sh"} {
		b, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		if !nodeBuild.Match(b) {
			t.Errorf("%s does not build cmd/gpunode with CGO_ENABLED=0 (want a line matching %s)", f, nodeBuild)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if anyNodeBuild.MatchString(line) && !strings.Contains(line, "CGO_ENABLED=0") {
				t.Errorf("%s: %q builds the node binary with cgo", f, strings.TrimSpace(line))
			}
		}
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go tool")
	}
	out := filepath.Join(t.TempDir(), "gpunode")
	cmd := exec.Command("go", "build", "-o", out, "./cmd/gpunode")
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build ./cmd/gpunode: %v\n%s", err, b)
	}
	f, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the node binary has a %v program header: it is not static", p.Type)
		}
	}
	if libs, err := f.ImportedLibraries(); err == nil && len(libs) > 0 {
		t.Errorf("the node binary needs shared libraries %v", libs)
	}
	list := exec.Command("go", "list", "-deps", "./cmd/gpunode")
	list.Dir = repoRoot
	list.Env = cmd.Env
	deps, err := list.Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range strings.Fields(string(deps)) {
		if p == "runtime/cgo" || strings.HasPrefix(p, "github.com/NVIDIA/go-nvml/") {
			t.Errorf("the static node binary links %s", p)
		}
	}
}
