package houserules

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// A name declared in a function, or at package level, hides the built-in of
// the same name (any, max, len, new, copy, ...) for the rest of its scope, and
// a local named like an imported package hides the package: the next reader
// (or the next edit, calling fs.ReadFile under a parameter fs) trips on it.
// TestNoShadowedNames type-checks every Go file of the module on its own and
// fails on either kind of declaration. Struct fields and methods are selected
// through their value and shadow nothing, so they are allowed.

// shadowAllowed lists, per file, names the file may still declare, each with
// why. An entry that no longer matches fails the test, so the list only
// shrinks.
var shadowAllowed = map[string]struct {
	names  []string
	reason string
}{}

// importNames maps every import path the module's packages and tests use to
// its package name (the name a file that imports it without an alias sees),
// as 'go list' reports it.
func importNames(t *testing.T) map[string]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-test", "-f", "{{.ImportPath}} {{.Name}}", "./...")
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	names := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, name, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		// A test variant is listed as "p [p.test]": the path is p.
		path, _, _ = strings.Cut(path, " ")
		if _, seen := names[path]; !seen {
			names[path] = name
		}
	}
	return names
}

// namedImporter gives each import an empty package with its real name: the
// check needs the names a file imports, not what they hold, so every use of
// an imported identifier is an error the checker reports and goes past.
type namedImporter map[string]string

func (m namedImporter) Import(path string) (*types.Package, error) {
	if path == "unsafe" {
		return types.Unsafe, nil
	}
	name, ok := m[path]
	if !ok {
		name = filepath.Base(path)
	}
	p := types.NewPackage(path, name)
	p.MarkComplete()
	return p, nil
}

// shadowed lists the declarations in src (one file) that hide a built-in or
// a package the file imports, as "line: name (what it hides)".
func shadowed(fset *token.FileSet, name string, src []byte, imp types.Importer) ([]string, error) {
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	info := &types.Info{Defs: map[*ast.Ident]types.Object{}, Scopes: map[ast.Node]*types.Scope{}}
	conf := types.Config{Importer: imp, Error: func(error) {}, FakeImportC: true}
	_, _ = conf.Check(f.Name.Name, fset, []*ast.File{f}, info) // errors: uses of the empty imports
	fileScope := info.Scopes[f]
	var hits []string
	for id, obj := range info.Defs {
		if obj == nil || obj.Parent() == nil || id.Name == "_" {
			continue // package name, field, method, label
		}
		if _, ok := obj.(*types.Label); ok {
			continue
		}
		line := fset.Position(id.Pos()).Line
		if types.Universe.Lookup(id.Name) != nil {
			hits = append(hits, fmtHit(line, id.Name, "built-in"))
			continue
		}
		if fileScope == nil || obj.Parent() == fileScope {
			continue
		}
		if pn, ok := fileScope.Lookup(id.Name).(*types.PkgName); ok {
			hits = append(hits, fmtHit(line, id.Name, "package "+pn.Imported().Path()))
		}
	}
	sort.Strings(hits)
	return hits, nil
}

// hitName is the name in a hit made by fmtHit.
func hitName(h string) string {
	_, rest, _ := strings.Cut(h, ": ")
	name, _, _ := strings.Cut(rest, " ")
	return name
}

// fmtHit zero-pads the line so that hits sort by it.
func fmtHit(line int, name, what string) string {
	return fmt.Sprintf("%05d: %s (hides the %s)", line, name, what)
}

func TestNoShadowedNames(t *testing.T) {
	imp := namedImporter(importNames(t))
	fset := token.NewFileSet()
	var bad []string
	pending := maps.Clone(shadowAllowed)
	for _, rel := range moduleGoFiles(t, true) {
		src, err := os.ReadFile(filepath.Join(repoRoot, rel))
		if err != nil {
			t.Fatal(err)
		}
		hits, err := shadowed(fset, rel, src, imp)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		allowed, used := shadowAllowed[rel], false
		for _, h := range hits {
			if slices.Contains(allowed.names, hitName(h)) {
				used = true
				continue
			}
			bad = append(bad, rel+":"+strings.TrimLeft(h, "0"))
		}
		if len(allowed.names) > 0 && !used {
			t.Errorf("%s: shadowAllowed entry matches nothing: drop it", rel)
		}
		delete(pending, rel)
	}
	for rel := range pending {
		t.Errorf("%s: shadowAllowed names a file that is gone: drop it", rel)
	}
	for _, b := range bad {
		t.Errorf("%s: rename the declaration", b)
	}
	if len(bad) > 0 {
		t.Logf("%d shadowing declarations", len(bad))
	}
}

func TestShadowDetector(t *testing.T) {
	src := `package p

import (
	"io/fs"
	yml "gopkg.in/yaml.v3"
	"strings"
)

type T struct{ len int }       // a field: fine
func (T) max() int { return 0 } // a method: fine

func f(fs fs.FS, n int) {   // parameter fs hides package fs
	max := n                 // hides built-in max
	var any = max            // hides built-in any
	yml := any               // hides the package under its alias
	_ = yml
	strings := 1             // hides package strings
	_ = strings
}

func g() { new := 1; _ = new } // hides built-in new

func h(yaml int) int { return yaml } // not imported under that name: fine

func copy() {} // a package-level func hides built-in copy
`
	imp := namedImporter{"io/fs": "fs", "gopkg.in/yaml.v3": "yaml", "strings": "strings"}
	hits, err := shadowed(token.NewFileSet(), "p.go", []byte(src), imp)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"00012: fs (hides the package io/fs)",
		"00013: max (hides the built-in)",
		"00014: any (hides the built-in)",
		"00015: yml (hides the package gopkg.in/yaml.v3)",
		"00017: strings (hides the package strings)",
		"00021: new (hides the built-in)",
		"00025: copy (hides the built-in)",
	}
	if strings.Join(hits, "\n") != strings.Join(want, "\n") {
		t.Errorf("hits:\n%s\nwant:\n%s", strings.Join(hits, "\n"), strings.Join(want, "\n"))
	}
}
