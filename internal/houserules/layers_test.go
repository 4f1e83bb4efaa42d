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

// k8sHostfsAllowed lists the packages under internal/k8s that may import
// internal/hostfs, with the reason. The simulators (node, topology, the
// three managers, admit, place, dra, lint, objects, kubeletcfg) never touch
// the host: they parse what they are given (the kernel text formats through
// internal/sysfmt) and run on models.
var k8sHostfsAllowed = map[string]string{
	"internal/k8s/podresources/": "the kubelet PodResources client: dials the host's kubelet socket and reads the host's cgroups, both through hostfs",
}

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
// imports internal/hostfs and is not below an allowed prefix.
func hostfsImporters(t *testing.T, files []string, dir string, allowed map[string]string) []string {
	t.Helper()
	fset := token.NewFileSet()
	var out []string
	for _, rel := range files {
		if !strings.HasPrefix(rel, dir) {
			continue
		}
		skip := false
		for prefix := range allowed {
			if strings.HasPrefix(rel, prefix) {
				skip = true
			}
		}
		if skip {
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
// the door to the host, except the allow-listed host clients.
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
	for _, v := range hostfsImporters(t, files, "internal/k8s/", k8sHostfsAllowed) {
		t.Error(v + " (a simulator never touches the host: parse kernel formats with internal/sysfmt, take a model or bytes from the caller)")
	}
	for prefix := range k8sHostfsAllowed {
		if len(hostfsImporters(t, files, prefix, nil)) == 0 {
			t.Errorf("k8sHostfsAllowed: %s no longer imports hostfs; drop the entry", prefix)
		}
	}
}

// The detector finds an import of hostfs in a file under the watched
// directory and none in an allowed one.
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
	files := []string{"internal/k8s/podresources/client.go", "internal/k8s/node/file.go"}
	if got := hostfsImporters(t, files, "internal/k8s/", map[string]string{"internal/k8s/node/": "x", "internal/k8s/podresources/": "y"}); len(got) != 0 {
		t.Errorf("allowed prefixes still reported: %v", got)
	}
	if got := hostfsImporters(t, files, "internal/k8s/", nil); len(got) != 1 || !strings.HasPrefix(got[0], "internal/k8s/podresources/client.go") {
		t.Errorf("without allowances want podresources/client.go only, got %v", got)
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
