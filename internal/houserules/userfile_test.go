package houserules

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// User files: every file a user names on the command line (a manifest, a
// node file, a KubeletConfiguration, a profile file, a hints file, an image
// config) is read by internal/userfile under the one --max-input-bytes
// bound (issue 26 item 3). A reader that bypasses it is what this test
// catches: a product file outside internal/hostfs and internal/userfile
// that opens or reads a file, or drains a reader, itself; a caller of
// hostfs.OpenLocal other than userfile; a caller of (*hostfs.FS).OpenUser
// that does not read the file with userfile.ReadOpen.

// userReadCalls are the calls that read a file (or a whole stream) by
// themselves, by import path.
var userReadCalls = map[string][]string{
	"os":                    {"Open", "OpenFile", "ReadFile"},
	"io":                    {"ReadAll"},
	"io/ioutil":             {"ReadFile", "ReadAll"},
	"syscall":               {"Open", "Openat"},
	"golang.org/x/sys/unix": {"Open", "Openat", "Openat2"},
	"github.com/gpunode/gpunode/internal/hostfs": {"OpenLocal"},
}

// readCalls returns the calls of userReadCalls in one Go file ("pkg.Func",
// pkg the import path's last element) with their lines, and whether the
// file calls a method named OpenUser and userfile.ReadOpen.
func readCalls(t *testing.T, fset *token.FileSet, path string) (calls map[string][]int, openUser, readOpen bool) {
	t.Helper()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	names := map[string]string{}
	for _, imp := range f.Imports {
		ip, _ := strconv.Unquote(imp.Path.Value)
		name := ip[strings.LastIndex(ip, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		names[name] = ip
	}
	calls = map[string][]int{}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if sel.Sel.Name == "OpenUser" {
			openUser = true
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		ip, ok := names[id.Name]
		if !ok {
			return true
		}
		if ip == "github.com/gpunode/gpunode/internal/userfile" && sel.Sel.Name == "ReadOpen" {
			readOpen = true
		}
		if slices.Contains(userReadCalls[ip], sel.Sel.Name) {
			key := ip[strings.LastIndex(ip, "/")+1:] + "." + sel.Sel.Name
			calls[key] = append(calls[key], fset.Position(sel.Pos()).Line)
		}
		return true
	})
	return calls, openUser, readOpen
}

func TestUserFilesGoThroughUserfile(t *testing.T) {
	fset := token.NewFileSet()
	files := productGoFiles(t)
	if len(files) < 50 {
		t.Fatalf("only %d product files found; is repoRoot right?", len(files))
	}
	var violations []string
	openLocal := 0
	for _, rel := range files {
		if strings.HasPrefix(rel, "internal/hostfs/") {
			continue
		}
		if key, calls, ok := allowance(rel); ok && calls == nil && strings.HasSuffix(key, "/") {
			continue // test support: fixture trees, never a user's file
		}
		calls, openUser, readOpen := readCalls(t, fset, filepath.Join(repoRoot, filepath.FromSlash(rel)))
		for call, lines := range calls {
			if strings.HasPrefix(rel, "internal/userfile/") && (call == "hostfs.OpenLocal" || call == "io.ReadAll") {
				openLocal += len(lines)
				continue
			}
			for _, l := range lines {
				violations = append(violations, rel+":"+strconv.Itoa(l)+": "+call)
			}
		}
		// userfile.ReadUnder itself opens with OpenUser and reads with its
		// own (unqualified) ReadOpen.
		if openUser && !readOpen && !strings.HasPrefix(rel, "internal/userfile/") {
			violations = append(violations, rel+": opens a user file with OpenUser but does not read it with userfile.ReadOpen")
		}
	}
	sort.Strings(violations)
	for _, v := range violations {
		t.Error(v + ": reads a file outside internal/userfile and internal/hostfs (a file a user names goes through userfile.Read, userfile.ReadAll or userfile.ReadOpen, under --max-input-bytes)")
	}
	if openLocal == 0 {
		t.Error("internal/userfile no longer opens files through hostfs.OpenLocal: is this test still looking at the right calls?")
	}

	// The rule can fail: the readers the node file, the kubelet config and
	// the merge hints used before are caught.
	src := "package x\nimport (\n\"io\"\nstdos \"os\"\n\"github.com/gpunode/gpunode/internal/hostfs\"\n)\n" +
		"func f(fs *hostfs.FS) { stdos.ReadFile(\"n.yaml\"); f, _ := stdos.Open(\"h.json\"); io.ReadAll(f); hostfs.OpenLocal(\"x\"); fs.OpenUser(\"/root/img.json\") }\n"
	tmp := filepath.Join(t.TempDir(), "x.go")
	if err := os.WriteFile(tmp, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	calls, openUser, readOpen := readCalls(t, fset, tmp)
	if len(calls) != 4 || !openUser || readOpen {
		t.Errorf("the check found %v (OpenUser %v, ReadOpen %v) in a sample file; want os.ReadFile, os.Open, io.ReadAll, hostfs.OpenLocal and an OpenUser without ReadOpen", calls, openUser, readOpen)
	}

	// The bound is announced: the README documents the flag and its
	// default (every command's help shows it among the global flags:
	// internal/cli's TestMaxInputBytesEveryUserFile).
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "`--max-input-bytes N`") || !strings.Contains(string(readme), "default `256Mi`") {
		t.Error("README.md does not document --max-input-bytes and its 256Mi default")
	}
}
