package dra

import (
	"bufio"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// adapterTest is gpunode's test file added to a temporary copy of the
// upstream module (it is not upstream code): it runs the upstream table
// with the upstream allocator wrapped so that every Allocate is also
// decided by gpunode's exact search (adapter.Compare); the verdicts go to
// the test log.
const adapterTest = `package structured_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	. "k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/dynamic-resource-allocation/structured/internal"
	"k8s.io/dynamic-resource-allocation/structured/internal/allocatortesting"

	"github.com/gpunode/gpunode/conformance/dra/adapter"
)

type gpunodeWrapped struct {
	t        *testing.T
	up       internal.Allocator
	features Features
	state    AllocatedState
	classes  []*resourceapi.DeviceClass
	slices   []*resourceapi.ResourceSlice
}

func (w *gpunodeWrapped) Allocate(ctx context.Context, node *v1.Node, claims []*resourceapi.ResourceClaim) ([]resourceapi.AllocationResult, error) {
	res, err := w.up.Allocate(ctx, node, claims)
	var cp []*resourceapi.ResourceClaim
	for _, c := range claims {
		cp = append(cp, c.DeepCopy())
	}
	var sl []*resourceapi.ResourceSlice
	for _, s := range w.slices {
		sl = append(sl, s.DeepCopy())
	}
	verdict, detail := adapter.Compare(ctx, w.features, w.state, w.classes, sl, node, cp, res, err)
	fmt.Printf("GPUNODE-VERDICT\t%s\t%s\n", verdict, strings.ReplaceAll(detail, "\n", " "))
	return res, err
}

func (w *gpunodeWrapped) Channel() internal.AllocatorChannel { return w.up.Channel() }

func (w *gpunodeWrapped) GetStats() internal.Stats {
	if e, ok := w.up.(internal.AllocatorExtended); ok {
		return e.GetStats()
	}
	return internal.Stats{}
}

func TestGpunodeAgainstUpstreamTable(t *testing.T) {
	allocatortesting.TestAllocator(t, internal.FeaturesAll, func(ctx context.Context, features Features, state AllocatedState,
		lister DeviceClassLister, slices []*resourceapi.ResourceSlice, celCache *cel.Cache) (allocatortesting.Allocator, error) {
		up, err := NewAllocator(ctx, features, state, lister, slices, celCache)
		if err != nil {
			return nil, err
		}
		classes, _ := lister.List()
		var cc []*resourceapi.DeviceClass
		for _, c := range classes {
			cc = append(cc, c.DeepCopy())
		}
		return &gpunodeWrapped{t: t, up: up.(internal.Allocator), features: features, state: state, classes: cc, slices: slices}, nil
	})
}
`

// TestUpstreamAllocatorTable runs the upstream allocator's own test table
// (structured/internal/allocatortesting, k8s.io/dynamic-resource-allocation
// v0.37.2, reached in a temporary copy of the module from the module cache)
// and counts the Allocate calls where gpunode's exact search gives the same
// fits as the upstream allocator.
func TestUpstreamAllocatorTable(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	modcache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(strings.TrimSpace(string(modcache)), "k8s.io", "dynamic-resource-allocation@v0.37.2")
	if _, err := os.Stat(src); err != nil {
		t.Skipf("upstream module not in the module cache: %v", err)
	}
	dst := filepath.Join(t.TempDir(), "dra")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	_ = filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			mode := os.FileMode(0o644)
			if d.IsDir() {
				mode = 0o755
			}
			_ = os.Chmod(p, mode)
		}
		return nil
	})
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	adapterDir, _ := filepath.Abs("adapter")
	if err := os.WriteFile(filepath.Join(dst, "structured", "gpunode_table_test.go"), []byte(adapterTest), 0o644); err != nil {
		t.Fatal(err)
	}
	// The copy becomes the main module k8s.io/dynamic-resource-allocation
	// with this module's requirements (all in the module cache), so no
	// download is needed.
	own, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	var gomod []string
	for _, l := range strings.Split(string(own), "\n") {
		switch {
		case strings.HasPrefix(l, "module "):
			l = "module k8s.io/dynamic-resource-allocation"
		case strings.Contains(l, "k8s.io/dynamic-resource-allocation"):
			continue
		case strings.HasPrefix(l, "replace github.com/gpunode/gpunode =>"):
			l = "replace github.com/gpunode/gpunode => " + root
		}
		gomod = append(gomod, l)
	}
	gomod = append(gomod, "require github.com/gpunode/gpunode/conformance/dra/adapter v0.0.0",
		"replace github.com/gpunode/gpunode/conformance/dra/adapter => "+adapterDir)
	if err := os.WriteFile(filepath.Join(dst, "go.mod"), []byte(strings.Join(gomod, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var sums []byte
	for _, f := range []string{"go.sum", filepath.Join(root, "go.sum")} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sums = append(sums, b...)
	}
	if err := os.WriteFile(filepath.Join(dst, "go.sum"), sums, 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "GOFLAGS=-mod=mod", "GOSUMDB=off", "GOWORK=off", "GOPROXY=off")
	cmd := exec.Command("go", "test", "-count=1", "-run", "^TestGpunodeAgainstUpstreamTable$", "-v", "./structured/")
	cmd.Dir, cmd.Env = dst, append(env, "GOPROXY=off")
	out, err := cmd.CombinedOutput()
	if err != nil && !strings.Contains(string(out), "--- ") {
		t.Fatalf("go test in the module copy: %v\n%s", err, out)
	}
	var pass, fail, skip int
	verdicts := map[string]int{}
	casesWith := map[string]map[string]bool{}
	sub := regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): TestGpunodeAgainstUpstreamTable/(\S+)`)
	vre := regexp.MustCompile(`GPUNODE-VERDICT\t([^\t]+)\t(.*)`)
	run := regexp.MustCompile(`^=== RUN\s+TestGpunodeAgainstUpstreamTable/(\S+)`)
	current := ""
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if m := run.FindStringSubmatch(line); m != nil {
			current = m[1]
		}
		if m := sub.FindStringSubmatch(line); m != nil {
			switch m[1] {
			case "PASS":
				pass++
			case "FAIL":
				fail++
			case "SKIP":
				skip++
			}
		}
		if m := vre.FindStringSubmatch(line); m != nil {
			verdicts[m[1]]++
			if casesWith[m[1]] == nil {
				casesWith[m[1]] = map[string]bool{}
			}
			casesWith[m[1]][current] = true
			if m[1] != "agree" && m[1] != "unmodelled-agree" {
				t.Logf("%s %s: %s", current, m[1], m[2])
			}
		}
	}
	t.Logf("upstream table: %d cases pass, %d fail, %d skipped (the table checks the upstream allocator's answers)", pass, fail, skip)
	for _, v := range []string{"agree", "disagree", "gpunode-error", "unmodelled-agree", "unmodelled-disagree", "unmodelled-gpunode-error"} {
		t.Logf("gpunode's fits: %-29s %3d Allocate calls in %3d cases", v, verdicts[v], len(casesWith[v]))
	}
	if pass+fail+skip == 0 {
		t.Fatalf("no upstream cases ran:\n%.4000s", out)
	}
}
