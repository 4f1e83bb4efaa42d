// Command mutate is a small mutation tester: it applies one-line mutants of
// decision logic to a package's non-test files, one at a time, runs that
// package's own tests against each and reports how many mutants the tests
// catch.
//
//	go run ./scripts/mutate [-n 30] [-seed 1] [-timeout 120s] [-v] ./internal/journal ...
//
// Each run is 'go test -count=1 -vet=off -failfast' of the whole package
// (-run and -short narrow it only when asked). -carry FILE.json takes an
// earlier run's caught and invalid mutants as they were and runs only its
// survivors again: valid after tests were added and the non-test files did
// not change (a caught mutant stays caught when tests are only added).
//
// Mutant kinds (every mutant changes one token or one expression):
//
//	cmp     a comparison flipped (== and !=, < and >=, <= and >) or moved off
//	        its edge (< to <=, > to >=, and back)
//	logic   && and || swapped
//	not     an if or for condition negated
//	const   an integer literal +1 or -1
//	string  a string literal changed (error texts and format strings are left
//	        alone: they are messages, not decisions)
//	err     a returned error dropped (the error result replaced by nil)
//
// Mutants are sampled deterministically (the seed), stratified by kind: the
// sample takes kinds round robin, so that every kind present in the package
// is represented. The mutated file is given to 'go test -overlay', so the
// working tree is never changed and an interrupted run leaves nothing behind.
// A mutant that does not compile is reported as invalid and not counted. A
// mutant is caught when the tests fail or time out.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

type mutant struct {
	Kind   string `json:"kind"`
	File   string `json:"file"`
	Line   int    `json:"line"`
	From   string `json:"from"`
	To     string `json:"to"`
	start  int
	end    int
	repl   string // the replacement text in full (To is shortened for display)
	Result string `json:"result"` // caught, survived, invalid
}

func (m *mutant) key() string {
	return fmt.Sprintf("%s:%d:%s:%s:%s", m.File, m.Line, m.Kind, m.From, m.To)
}

func main() {
	n := flag.Int("n", 30, "mutants sampled per package (0: all)")
	seed := flag.Uint64("seed", 1, "sampling seed")
	timeout := flag.Duration("timeout", 120*time.Second, "time limit of one test run")
	verbose := flag.Bool("v", false, "print every mutant, not only survivors")
	list := flag.Bool("list", false, "list the sampled mutants without running them")
	jsonOut := flag.String("json", "", "write the results as JSON to this file")
	run := flag.String("run", "", "passed to go test -run")
	short := flag.Bool("short", false, "pass -short to go test")
	carry := flag.String("carry", "", "a -json file of an earlier run: its caught and invalid mutants are taken as they were, only its survivors (and mutants it lacks) are run again; valid while the non-test files are unchanged and tests were only added")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: go run ./scripts/mutate [flags] ./internal/pkg ...")
		os.Exit(2)
	}
	type pkgResult struct {
		Package  string   `json:"package"`
		Sites    int      `json:"sites"`
		Caught   int      `json:"caught"`
		Survived int      `json:"survived"`
		Invalid  int      `json:"invalid"`
		Mutants  []mutant `json:"mutants"`
	}
	var results []pkgResult
	earlier := map[string]string{}
	if *carry != "" {
		b, err := os.ReadFile(*carry)
		if err != nil {
			fmt.Fprintln(os.Stderr, "mutate:", err)
			os.Exit(3)
		}
		var prev []pkgResult
		if err := json.Unmarshal(b, &prev); err != nil {
			fmt.Fprintf(os.Stderr, "mutate: %s: %v\n", *carry, err)
			os.Exit(3)
		}
		for _, r := range prev {
			for _, m := range r.Mutants {
				earlier[m.key()] = m.Result
			}
		}
	}
	exit := 0
	for _, pkg := range flag.Args() {
		all, err := sites(pkg)
		if err != nil {
			fmt.Fprintln(os.Stderr, "mutate:", err)
			os.Exit(3)
		}
		sample := pick(all, *n, *seed)
		r := pkgResult{Package: pkg, Sites: len(all)}
		fmt.Printf("== %s: %d mutation sites, %d sampled (seed %d)\n", pkg, len(all), len(sample), *seed)
		if *list {
			for _, m := range sample {
				fmt.Printf("   %-6s %s:%d  %s -> %s\n", m.Kind, m.File, m.Line, m.From, m.To)
			}
			continue
		}
		// The unmutated package must pass first: otherwise every mutant
		// would count as caught.
		if res, out := runTests(pkg, "", *timeout, *run, *short); res != "survived" {
			fmt.Fprintf(os.Stderr, "mutate: %s fails without mutation (%s):\n%s\n", pkg, res, tail(out, 40))
			os.Exit(3)
		}
		for i := range sample {
			m := &sample[i]
			if res := earlier[m.key()]; res == "caught" || res == "invalid" {
				m.Result = res
			} else {
				m.Result = try(pkg, m, *timeout, *run, *short)
			}
			switch m.Result {
			case "caught":
				r.Caught++
			case "survived":
				r.Survived++
			default:
				r.Invalid++
			}
			if *verbose || m.Result == "survived" {
				fmt.Printf("   %-8s %-6s %s:%d  %s -> %s\n", m.Result, m.Kind, m.File, m.Line, m.From, m.To)
			}
		}
		r.Mutants = sample
		results = append(results, r)
		valid := r.Caught + r.Survived
		pct := 0.0
		if valid > 0 {
			pct = 100 * float64(r.Caught) / float64(valid)
		}
		fmt.Printf("%s: %d of %d caught (%.0f%%), %d invalid\n", pkg, r.Caught, valid, pct, r.Invalid)
		if r.Survived > 0 {
			exit = 1
		}
	}
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(results, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "mutate:", err)
			os.Exit(3)
		}
	}
	os.Exit(exit)
}

// sites lists every mutation site in the package's non-test Go files (the
// files 'go list' builds on this platform).
func sites(pkg string) ([]mutant, error) {
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}\x1f{{join .GoFiles \"\\x1f\"}}", pkg).Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %w", pkg, err)
	}
	parts := strings.Split(strings.TrimSpace(string(out)), "\x1f")
	dir := parts[0]
	var all []mutant
	for _, f := range parts[1:] {
		if f == "" {
			continue
		}
		ms, err := fileSites(filepath.Join(dir, f))
		if err != nil {
			return nil, err
		}
		all = append(all, ms...)
	}
	return all, nil
}

var cmpSwap = map[token.Token][]token.Token{
	token.EQL: {token.NEQ},
	token.NEQ: {token.EQL},
	token.LSS: {token.LEQ, token.GEQ},
	token.LEQ: {token.LSS, token.GTR},
	token.GTR: {token.GEQ, token.LEQ},
	token.GEQ: {token.GTR, token.LSS},
}

func fileSites(path string) ([]mutant, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	rel := path
	if wd, err := os.Getwd(); err == nil {
		if r, err := filepath.Rel(wd, path); err == nil {
			rel = r
		}
	}
	var out []mutant
	add := func(kind string, start, end token.Pos, to string) {
		s, e := fset.Position(start).Offset, fset.Position(end).Offset
		from := string(src[s:e])
		if from == to {
			return
		}
		out = append(out, mutant{Kind: kind, File: rel, Line: fset.Position(start).Line, From: short(from), To: short(to), start: s, end: e, repl: to})
	}
	// Literals that are messages, not decisions: format strings and
	// error texts.
	skip := map[*ast.BasicLit]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ImportSpec, *ast.Field:
			// import paths and struct tags
			ast.Inspect(n, func(m ast.Node) bool {
				if b, ok := m.(*ast.BasicLit); ok {
					skip[b] = true
				}
				return true
			})
		case *ast.CallExpr:
			if isMessageCall(n) {
				ast.Inspect(n, func(m ast.Node) bool {
					if b, ok := m.(*ast.BasicLit); ok && b.Kind == token.STRING {
						skip[b] = true
					}
					return true
				})
			}
		}
		return true
	})
	// Functions whose last result is an error.
	var errResult func(ast.Node) bool
	var stack []ast.Node
	errResult = func(fn ast.Node) bool {
		var ft *ast.FuncType
		switch fn := fn.(type) {
		case *ast.FuncDecl:
			ft = fn.Type
		case *ast.FuncLit:
			ft = fn.Type
		}
		if ft == nil || ft.Results == nil || len(ft.Results.List) == 0 {
			return false
		}
		last := ft.Results.List[len(ft.Results.List)-1]
		id, ok := last.Type.(*ast.Ident)
		return ok && id.Name == "error"
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		stack = append(stack, n)
		switch n := n.(type) {
		case *ast.BinaryExpr:
			if to, ok := cmpSwap[n.Op]; ok {
				for _, t := range to {
					add("cmp", n.OpPos, n.OpPos+token.Pos(len(n.Op.String())), t.String())
				}
			}
			if n.Op == token.LAND || n.Op == token.LOR {
				t := token.LOR
				if n.Op == token.LOR {
					t = token.LAND
				}
				add("logic", n.OpPos, n.OpPos+2, t.String())
			}
		case *ast.IfStmt:
			add("not", n.Cond.Pos(), n.Cond.End(), "!("+string(src[fset.Position(n.Cond.Pos()).Offset:fset.Position(n.Cond.End()).Offset])+")")
		case *ast.ForStmt:
			if n.Cond != nil {
				add("not", n.Cond.Pos(), n.Cond.End(), "!("+string(src[fset.Position(n.Cond.Pos()).Offset:fset.Position(n.Cond.End()).Offset])+")")
			}
		case *ast.BasicLit:
			if skip[n] {
				return true
			}
			switch n.Kind {
			case token.INT:
				v, err := strconv.ParseInt(n.Value, 0, 64)
				if err != nil {
					return true
				}
				add("const", n.Pos(), n.End(), strconv.FormatInt(v+1, 10))
				if v > 0 {
					add("const", n.Pos(), n.End(), strconv.FormatInt(v-1, 10))
				}
			case token.STRING:
				s, err := strconv.Unquote(n.Value)
				if err != nil || s == "" || strings.ContainsAny(s, "%\n") || len(s) > 80 {
					return true
				}
				add("string", n.Pos(), n.End(), strconv.Quote(s+"X"))
			}
		case *ast.ReturnStmt:
			if len(n.Results) == 0 {
				return true
			}
			var fn ast.Node
			for i := len(stack) - 2; i >= 0; i-- {
				switch stack[i].(type) {
				case *ast.FuncDecl, *ast.FuncLit:
					fn = stack[i]
				}
				if fn != nil {
					break
				}
			}
			if fn == nil || !errResult(fn) {
				return true
			}
			last := n.Results[len(n.Results)-1]
			if id, ok := last.(*ast.Ident); ok && id.Name == "nil" {
				return true
			}
			add("err", last.Pos(), last.End(), "nil")
		}
		return true
	})
	return out, nil
}

// isMessageCall reports whether a call's string arguments are a message
// (an error text, a format string or a log line).
func isMessageCall(c *ast.CallExpr) bool {
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok {
		if id, ok := c.Fun.(*ast.Ident); ok {
			return id.Name == "panic" || strings.HasSuffix(id.Name, "f") && strings.Contains(strings.ToLower(id.Name), "err")
		}
		return false
	}
	name := sel.Sel.Name
	if x, ok := sel.X.(*ast.Ident); ok {
		switch x.Name {
		case "errors":
			return name == "New"
		case "fmt":
			return name == "Errorf" || strings.HasSuffix(name, "f")
		case "log", "slog":
			return true
		}
	}
	return strings.HasSuffix(name, "f") || name == "Wrap" || name == "Wrapf"
}

func short(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

// pick samples n mutants, stratified by kind: kinds are taken round robin,
// each kind's sites in a seeded random order.
func pick(all []mutant, n int, seed uint64) []mutant {
	if n <= 0 || n >= len(all) {
		return append([]mutant(nil), all...)
	}
	byKind := map[string][]mutant{}
	for _, m := range all {
		byKind[m.Kind] = append(byKind[m.Kind], m)
	}
	kinds := make([]string, 0, len(byKind))
	for k := range byKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	r := rand.New(rand.NewPCG(seed, 0x6d757461))
	for _, k := range kinds {
		ms := byKind[k]
		r.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
	}
	var out []mutant
	for len(out) < n {
		for _, k := range kinds {
			if len(out) == n {
				break
			}
			if ms := byKind[k]; len(ms) > 0 {
				out = append(out, ms[0])
				byKind[k] = ms[1:]
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].start < out[j].start
	})
	return out
}

// try writes the mutated file to a temporary directory, points an overlay
// at it and runs the package's tests.
func try(pkg string, m *mutant, timeout time.Duration, run string, short bool) string {
	src, err := os.ReadFile(m.File)
	if err != nil {
		return "invalid"
	}
	mut := append(append(append([]byte(nil), src[:m.start]...), m.repl...), src[m.end:]...)
	if bytes.Equal(mut, src) {
		return "invalid"
	}
	dir, err := os.MkdirTemp("", "mutate-")
	if err != nil {
		return "invalid"
	}
	defer os.RemoveAll(dir)
	abs, _ := filepath.Abs(m.File)
	mf := filepath.Join(dir, filepath.Base(m.File))
	if err := os.WriteFile(mf, mut, 0o644); err != nil {
		return "invalid"
	}
	ov, _ := json.Marshal(map[string]map[string]string{"Replace": {abs: mf}})
	ovf := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(ovf, ov, 0o644); err != nil {
		return "invalid"
	}
	res, _ := runTests(pkg, ovf, timeout, run, short)
	return res
}

// runTests runs the package's tests and classifies the result: survived
// (the tests pass), caught (a test failed or the run timed out) or invalid
// (the package did not build).
func runTests(pkg, overlay string, timeout time.Duration, run string, short bool) (string, string) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout+30*time.Second)
	defer cancel()
	args := []string{"test", "-count=1", "-vet=off", "-failfast", "-timeout", timeout.String()}
	if short {
		args = append(args, "-short")
	}
	if overlay != "" {
		args = append(args, "-overlay", overlay)
	}
	if run != "" {
		args = append(args, "-run", run)
	}
	args = append(args, pkg)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.WaitDelay = 5 * time.Second
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	out := buf.String()
	if err == nil {
		return "survived", out
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "caught", out
	}
	if strings.Contains(out, "[build failed]") || strings.Contains(out, "[setup failed]") {
		return "invalid", out
	}
	return "caught", out
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
