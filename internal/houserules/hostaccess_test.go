package houserules

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Host access: every read and write of a host path goes through
// internal/hostfs (the --root flag, resolution inside the root, O_NONBLOCK and
// regular-file checks, fault injection). This test parses every non-test Go
// file of the product and fails on a direct file-system call anywhere else.

// fileCalls are the calls that touch a file system by path.
var fileCalls = map[string][]string{
	"os": {
		"Open", "OpenFile", "ReadFile", "WriteFile", "Create", "CreateTemp", "MkdirAll", "Mkdir", "MkdirTemp",
		"Remove", "RemoveAll", "Rename", "Symlink", "Link", "Readlink", "Stat", "Lstat", "ReadDir",
		"Chmod", "Chown", "Lchown", "Chtimes", "Truncate", "DirFS", "CopyFS",
	},
	"io/ioutil":     {"ReadFile", "WriteFile", "ReadDir", "TempFile", "TempDir"},
	"path/filepath": {"Walk", "WalkDir", "EvalSymlinks", "Glob"},
	"syscall":       {"Open", "Openat", "Mkdir", "Unlink", "Rename", "Stat", "Lstat"},
	"golang.org/x/sys/unix": {
		"Open", "Openat", "Openat2", "Creat", "Rename", "Renameat", "Renameat2", "Mkdir", "Mkdirat",
		"Mknod", "Mknodat", "Mkfifo", "Unlink", "Unlinkat", "Rmdir", "Symlink", "Symlinkat", "Link", "Linkat",
		"Truncate", "Chmod", "Fchmodat", "Chown", "Fchownat", "Stat", "Lstat", "Fstatat",
	},
}

// writeCalls are the calls of fileCalls that create, replace or change a
// file. Outside internal/hostfs none of them is allowed in product code
// (TestOutputFilesGoThroughHostfs): a user-named output file (report
// --html, bench --plot, the NFD feature file) is written by
// hostfs.WriteOutput, which refuses FIFOs, devices, sockets, directories
// and links; a file under --root by the FS's writers.
var writeCalls = []string{
	"os.OpenFile", "os.WriteFile", "os.Create", "os.CreateTemp", "os.Rename", "os.Symlink", "os.Link",
	"os.Truncate", "os.Chmod", "os.Chown", "os.Lchown", "os.Chtimes", "os.Mkdir", "os.MkdirAll", "os.MkdirTemp",
	"ioutil.WriteFile", "ioutil.TempFile", "ioutil.TempDir", "syscall.Open", "syscall.Openat", "syscall.Mkdir",
	"syscall.Rename", "unix.Open", "unix.Openat", "unix.Openat2", "unix.Creat", "unix.Rename", "unix.Renameat",
	"unix.Renameat2", "unix.Mkdir", "unix.Mkdirat", "unix.Mknod", "unix.Mknodat", "unix.Mkfifo", "unix.Symlink",
	"unix.Symlinkat", "unix.Link", "unix.Linkat", "unix.Truncate", "unix.Chmod", "unix.Fchmodat", "unix.Chown",
	"unix.Fchownat",
}

// hostAccessAllowed lists the files outside internal/hostfs that may make
// such calls, each with the calls it may make and why they are not host
// paths. Keep it short: a new entry needs a reason a reviewer accepts.
var hostAccessAllowed = map[string]struct {
	calls []string // nil: any call
	why   string
}{
	// Test-support packages, imported only by _test.go files (a key ending in
	// "/" covers a directory): they build, copy and compare fixture trees in
	// testdata/ and t.TempDir(), never a host.
	"internal/goldenfile/":                    {nil, "golden files under testdata/"},
	"internal/testhost/":                      {nil, "writes, copies and snapshots fixture trees"},
	"internal/tune/tunetest/":                 {nil, "overlays a tuning fixture on a test tree"},
	"internal/journal/journaltest/":           {nil, "snapshots and compares test trees byte for byte"},
	"internal/bind/testdata/":                 {nil, "test program exec'd by bind tests"},
	"internal/podresources/podresourcestest/": {nil, "serves a fake kubelet pod-resources socket in a test tree"},
	"internal/k8s/cluster/clustertest/":       {nil, "a fake API server and a kubeconfig for it in t.TempDir()"},
	"scripts/":                                {nil, "benchmark drivers, not shipped"},

	// User input files named on the command line (-f, --node,
	// --kubelet-config, --profile FILE, ...) are read by internal/userfile
	// (through hostfs.OpenLocal), under --max-input-bytes: no entry here
	// reads one (TestUserFilesGoThroughUserfile). k8s lint walks the
	// directories it is given and reads each file through userfile.
	"internal/k8s/lint/load.go":        {[]string{"os.Stat", "filepath.WalkDir"}, "manifest files and directories given to k8s lint"},
	"internal/k8s/lint/repo.go":        {[]string{"os.Stat", "filepath.WalkDir"}, "manifest directories given to k8s lint (Helm charts in them)"},
	"internal/cli/forward_checkout.go": {[]string{"os.Stat"}, "finds the gpunode checkout a go run is in (gpunode's own source, not the host under --root)"},
	"internal/cli/forward.go":          {[]string{"os.Stat", "filepath.EvalSymlinks"}, "finds the gpunode-full companion beside gpunode's own executable or on PATH (gpunode's installation, not the host under --root)"},
	// The agent's NFD feature file goes to its own output directory on the
	// machine it runs on (in the DaemonSet, the hostPath mount of
	// features.d beside, not below, --root /host), like a user output file:
	// hostfs.WriteOutput writes it; the agent only removes the temporary
	// files a killed write of its own left there.
	"internal/agent/nfd.go": {[]string{"os.Remove", "filepath.Glob"}, "stale temporary files of the NFD feature file in --nfd-features-dir"},

	// k8s admit --node takes a node file or a Node name: a stat tells which
	// (the file itself is read by internal/userfile).
	"internal/cli/companion/k8s_admit_live.go": {[]string{"os.Stat"}, "is k8s admit --node's value a user-named node file or a Node name"},

	// bind's exec runs the command on this machine (execve does not know
	// --root), so its PATH lookup stats this machine's files, like execvp.
	"internal/bind/exec.go": {[]string{"os.Stat"}, "PATH lookup for the command bind executes"},
}

// allowance returns the allow-list entry covering file rel, and its key.
func allowance(rel string) (key string, calls []string, ok bool) {
	if a, ok := hostAccessAllowed[rel]; ok {
		return rel, a.calls, true
	}
	for k, a := range hostAccessAllowed {
		if strings.HasSuffix(k, "/") && strings.HasPrefix(rel, k) {
			return k, a.calls, true
		}
	}
	return "", nil, false
}

// productGoFiles returns the module's non-test Go files (slash paths relative
// to the repository root), leaving out nested modules (conformance/).
func productGoFiles(t *testing.T) []string {
	t.Helper()
	return moduleGoFiles(t, false)
}

// moduleGoFiles returns the module's Go files, its tests too when withTests.
func moduleGoFiles(t *testing.T, withTests bool) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch d.Name() {
			case ".git", "vendor", "node_modules":
				return filepath.SkipDir
			}
			if rel != "." && fileExists(filepath.Join(path, "go.mod")) {
				return filepath.SkipDir // another module
			}
			return nil
		}
		if strings.HasSuffix(rel, ".go") && (withTests || !strings.HasSuffix(rel, "_test.go")) {
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// fileSystemCalls returns the direct file-system calls in one Go file as
// "pkg.Func" (pkg is the import path's last element) with their positions.
func fileSystemCalls(t *testing.T, fset *token.FileSet, path string) map[string][]token.Position {
	t.Helper()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	// Local name -> import path, for the packages watched.
	names := map[string]string{}
	for _, imp := range f.Imports {
		ip, _ := strconv.Unquote(imp.Path.Value)
		if _, ok := fileCalls[ip]; !ok {
			continue
		}
		name := ip[strings.LastIndex(ip, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		names[name] = ip
	}
	out := map[string][]token.Position{}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		ip, ok := names[id.Name]
		if !ok || !slices.Contains(fileCalls[ip], sel.Sel.Name) {
			return true
		}
		key := ip[strings.LastIndex(ip, "/")+1:] + "." + sel.Sel.Name
		out[key] = append(out[key], fset.Position(sel.Pos()))
		return true
	})
	return out
}

func TestNoHostFileAccessOutsideHostfs(t *testing.T) {
	fset := token.NewFileSet()
	files := productGoFiles(t)
	if len(files) < 50 {
		t.Fatalf("only %d product files found; is repoRoot right?", len(files))
	}
	used := map[string]bool{}
	var violations []string
	for _, rel := range files {
		if strings.HasPrefix(rel, "internal/hostfs/") {
			continue
		}
		key, calls, listed := allowance(rel)
		for call, pos := range fileSystemCalls(t, fset, filepath.Join(repoRoot, filepath.FromSlash(rel))) {
			if listed && (calls == nil || slices.Contains(calls, call)) {
				used[key+" "+call] = true
				continue
			}
			for _, p := range pos {
				violations = append(violations, rel+":"+strconv.Itoa(p.Line)+": "+call+" outside internal/hostfs")
			}
		}
	}
	sort.Strings(violations)
	for _, v := range violations {
		t.Error(v + " (host paths go through hostfs; a non-host use needs an entry in hostAccessAllowed with its reason)")
	}
	// Entries that no longer match anything should be removed; reported,
	// not failed, so that fixing a call elsewhere does not break this test.
	for rel, a := range hostAccessAllowed {
		for _, c := range a.calls {
			if !used[rel+" "+c] {
				t.Logf("allow-list entry %s %s matches no call any more: remove it", rel, c)
			}
		}
	}
}

// The detector itself: it must see aliased imports and every listed call.
func TestFileSystemCallDetector(t *testing.T) {
	dir := t.TempDir()
	src := `package p
import (
	stdos "os"
	"path/filepath"
)
func f() {
	stdos.ReadFile("/proc/cpuinfo")
	_ = stdos.Getenv("X")
	filepath.WalkDir("/sys", nil)
	_ = filepath.Join("a", "b")
}
`
	p := filepath.Join(dir, "p.go")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got := fileSystemCalls(t, token.NewFileSet(), p)
	if len(got) != 2 || len(got["os.ReadFile"]) != 1 || len(got["filepath.WalkDir"]) != 1 {
		t.Errorf("detector found %v; want os.ReadFile and filepath.WalkDir only", got)
	}
}

// The test-support packages are allowed direct file access only because no
// product code imports them.
func TestTestSupportNotImportedByProduct(t *testing.T) {
	fset := token.NewFileSet()
	for _, rel := range productGoFiles(t) {
		if key, calls, ok := allowance(rel); ok && calls == nil && strings.HasSuffix(key, "/") {
			continue // test support itself
		}
		f, err := parser.ParseFile(fset, filepath.Join(repoRoot, filepath.FromSlash(rel)), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			ip, _ := strconv.Unquote(imp.Path.Value)
			rest, ok := strings.CutPrefix(ip, "github.com/gpunode/gpunode/")
			if !ok {
				continue
			}
			if key, calls, ok := allowance(rest + "/x.go"); ok && calls == nil {
				t.Errorf("%s imports %s, which may touch files directly only as test support (%s)", rel, ip, key)
			}
		}
	}
}

// TestOutputFilesGoThroughHostfs: no product file outside internal/hostfs
// writes a file itself, allow-listed or not (test-support directories
// aside): every user-named output file goes through hostfs.WriteOutput.
func TestOutputFilesGoThroughHostfs(t *testing.T) {
	fset := token.NewFileSet()
	var violations []string
	for _, rel := range productGoFiles(t) {
		if strings.HasPrefix(rel, "internal/hostfs/") {
			continue
		}
		if key, calls, ok := allowance(rel); ok && calls == nil && strings.HasSuffix(key, "/") {
			continue // test support (fixture trees), never shipped as a writer
		}
		for call, pos := range fileSystemCalls(t, fset, filepath.Join(repoRoot, filepath.FromSlash(rel))) {
			if !slices.Contains(writeCalls, call) {
				continue
			}
			for _, p := range pos {
				violations = append(violations, rel+":"+strconv.Itoa(p.Line)+": "+call)
			}
		}
	}
	sort.Strings(violations)
	for _, v := range violations {
		t.Error(v + ": writes a file outside internal/hostfs (a user-named output file goes through hostfs.WriteOutput, a host file through the FS's writers)")
	}
	// The rule can fail: the calls the old report --html writer made are caught.
	src := "package x\nimport \"os\"\nfunc f() { os.CreateTemp(\"\", \"\"); os.Rename(\"a\", \"b\") }\n"
	tmp := filepath.Join(t.TempDir(), "x.go")
	if err := os.WriteFile(tmp, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	n := 0
	for call := range fileSystemCalls(t, fset, tmp) {
		if slices.Contains(writeCalls, call) {
			n++
		}
	}
	if n != 2 {
		t.Errorf("the check found %d of the 2 writes in a sample file", n)
	}
}
