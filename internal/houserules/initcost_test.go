package houserules

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Package-level variables of the packages linked into cmd/gpunode are
// initialised at every start of every command ('bind' is on the launch path
// of each rank). A regular expression compiled there costs tens of
// microseconds each; compile it on first use (sync.OnceValue) instead.
func TestNoRegexpCompiledAtStartup(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go tool")
	}
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.Dir}}{{end}}", "./cmd/gpunode")
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range strings.Fields(string(out)) {
		if !strings.HasPrefix(dir, root+string(filepath.Separator)+"internal") {
			continue // third-party packages are what they are
		}
		pkgs, err := parser.ParseDir(token.NewFileSet(), dir, func(fi fs.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(), "_test.go")
		}, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pkgs {
			for name, f := range p.Files {
				for _, d := range f.Decls {
					g, ok := d.(*ast.GenDecl)
					if !ok || g.Tok != token.VAR {
						continue
					}
					for _, s := range g.Specs {
						for _, v := range s.(*ast.ValueSpec).Values {
							c, ok := v.(*ast.CallExpr)
							if !ok {
								continue
							}
							if sel, ok := c.Fun.(*ast.SelectorExpr); ok {
								if id, ok := sel.X.(*ast.Ident); ok && id.Name == "regexp" {
									rel, _ := filepath.Rel(root, name)
									t.Errorf("%s: package-level regexp.%s runs at every start of gpunode: compile it on first use", rel, sel.Sel.Name)
								}
							}
						}
					}
				}
			}
		}
	}
}
