package houserules

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const modulePath = "github.com/gpunode/gpunode/"

// fileImports returns the import paths of one Go file.
func fileImports(t *testing.T, fset *token.FileSet, path string) []string {
	t.Helper()
	f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []string
	for _, imp := range f.Imports {
		ip, _ := strconv.Unquote(imp.Path.Value)
		out = append(out, ip)
	}
	return out
}

// hostfsImporters returns "file: import" for each product file below dir
// (a slash path relative to the repository root, ending in "/") that
// imports internal/hostfs.
func hostfsImporters(t *testing.T, files []string, dir string) []string {
	t.Helper()
	fset := token.NewFileSet()
	var out []string
	for _, rel := range files {
		if !strings.HasPrefix(rel, dir) {
			continue
		}
		for _, ip := range fileImports(t, fset, filepath.Join(repoRoot, filepath.FromSlash(rel))) {
			if ip == modulePath+"internal/hostfs" {
				out = append(out, rel+": imports "+ip)
			}
		}
	}
	return out
}

// TestK8sSimulatorsDoNotImportHostfs: no package under internal/k8s imports
// the door to the host. The simulators (node, topology, the three managers,
// admit, place, dra, lint, objects, kubeletcfg) never touch the host: they
// parse what they are given (the kernel text formats through internal/sysfmt)
// and run on models. The live readers live outside internal/k8s (the kubelet
// PodResources client and its cgroup reads in internal/podresources; the API
// server client in internal/k8s/cluster uses the network, not hostfs).
func TestK8sSimulatorsDoNotImportHostfs(t *testing.T) {
	files := productGoFiles(t)
	n := 0
	for _, rel := range files {
		if strings.HasPrefix(rel, "internal/k8s/") {
			n++
		}
	}
	if n < 50 {
		t.Fatalf("only %d product files under internal/k8s; is repoRoot right?", n)
	}
	for _, v := range hostfsImporters(t, files, "internal/k8s/") {
		t.Error(v + " (a simulator never touches the host: parse kernel formats with internal/sysfmt, take a model or bytes from the caller)")
	}
}

// The detector finds an import of hostfs in a file under the watched
// directory and none outside it.
func TestHostfsImportDetector(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, src string) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a/bad.go", "package a\nimport h \""+modulePath+"internal/hostfs\"\nvar _ = h.New\n")
	fset := token.NewFileSet()
	if got := fileImports(t, fset, filepath.Join(dir, "a", "bad.go")); len(got) != 1 || got[0] != modulePath+"internal/hostfs" {
		t.Fatalf("fileImports = %v", got)
	}
	// hostfsImporters reads below repoRoot: give it a list of real files.
	files := []string{"internal/podresources/client.go", "internal/k8s/node/file.go"}
	if got := hostfsImporters(t, files, "internal/k8s/"); len(got) != 0 {
		t.Errorf("files outside the watched directory reported: %v", got)
	}
	if got := hostfsImporters(t, files, "internal/"); len(got) != 1 || !strings.HasPrefix(got[0], "internal/podresources/client.go") {
		t.Errorf("want podresources/client.go only, got %v", got)
	}
}

// TestSysfmtImportsNothingOfTheHost: the kernel-format parsers import only
// the standard library's text packages and k8s.io/utils/cpuset: no os,
// syscall, x/sys or hostfs.
func TestSysfmtImportsNothingOfTheHost(t *testing.T) {
	fset := token.NewFileSet()
	allowed := map[string]bool{"bufio": true, "bytes": true, "errors": true, "fmt": true, "math/bits": true,
		"strconv": true, "strings": true, "k8s.io/utils/cpuset": true}
	n := 0
	for _, rel := range productGoFiles(t) {
		if !strings.HasPrefix(rel, "internal/sysfmt/") {
			continue
		}
		n++
		for _, ip := range fileImports(t, fset, filepath.Join(repoRoot, filepath.FromSlash(rel))) {
			if !allowed[ip] {
				t.Errorf("%s imports %s (sysfmt parses text; reading the host is hostfs's)", rel, ip)
			}
		}
	}
	if n == 0 {
		t.Fatal("no files in internal/sysfmt")
	}
}
