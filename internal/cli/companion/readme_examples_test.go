package companion

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/cli"
	"github.com/gpunode/gpunode/internal/testhost"
	"github.com/gpunode/gpunode/internal/tune/tunetest"
)

// TestREADMEExamples (issue 28 item 7): the README's examples are goldens.
// Every `$ ...` line of a code block that runs gpunode on the repository's
// fixtures (a `$ cd DIR` before it in the block, or "Run from `DIR`" in
// the prose, is honoured) is run, and its output must be the text under
// it in the README, up to the next `$ ` or `# exit` line; a `$ echo $?`
// right after it checks its exit status. A plain `gpunode ARGS` runs in
// process; a line with a pipe, `;`, a redirection or `$?` runs under bash
// in a temp directory of the block (links to the fixtures' directory, so
// files it writes stay there for the block's next lines, e.g. `cat`),
// with gpunode on PATH (the test binary) and the README's documented
// variables set (T, the DRA seed manifests). The examples on /tmp/dgx
// run on one copy of the README's demo host (makeDemo), made at the first
// of them, in README order: they are a sequence (audit, tune plan, apply,
// status, rollback), so one of them run alone with -run sees another
// state. Search times ("in 7.79ms") are compared as <time>, a journal's
// time (2026-11-29T09:42:25Z) as <timestamp>. What is still skipped, and
// why, is readmeSkip's answer, logged with -v.
func TestREADMEExamples(t *testing.T) {
	repo, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(repo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	type example struct {
		line, block int
		dir, cmd    string
		want        []string
		echoExit    bool // a `$ echo $?` follows: want ends with it and the code
	}
	var exs []example
	lines := strings.Split(string(b), "\n")
	inBlock, dir, proseDir := false, repo, repo
	runFrom := regexp.MustCompile("Run from `([^`]+)`")
	var cur *example
	flush := func() {
		if cur != nil {
			exs = append(exs, *cur)
			cur = nil
		}
	}
	block := 0
	for i, l := range lines {
		if strings.HasPrefix(l, "```") {
			flush()
			inBlock, dir = !inBlock, proseDir
			block++
			continue
		}
		if !inBlock {
			if m := runFrom.FindStringSubmatch(l); m != nil {
				proseDir = filepath.Join(repo, m[1])
			} else if strings.HasPrefix(l, "#") {
				proseDir = repo
			}
			continue
		}
		switch {
		case strings.HasPrefix(l, "$ cd "):
			flush()
			dir = filepath.Join(repo, strings.TrimSpace(strings.TrimPrefix(l, "$ cd ")))
		case l == "$ echo $?" && cur != nil && !cur.echoExit:
			cur.echoExit = true
			cur.want = append(cur.want, l)
		case strings.HasPrefix(l, "$ "):
			flush()
			cur = &example{line: i + 1, block: block, dir: dir, cmd: strings.TrimPrefix(l, "$ ")}
		case strings.HasPrefix(l, "# exit"):
			flush()
		case cur != nil:
			cur.want = append(cur.want, l)
		}
	}
	times := regexp.MustCompile(`\b\d+(\.\d+)?(ms|µs|s)\b`)
	// a journal's time (tune status, rollback on the demo copy)
	stamps := regexp.MustCompile(`\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\b`)
	mask := func(s string) string {
		return times.ReplaceAllString(stamps.ReplaceAllString(s, "<timestamp>"), "<time>")
	}
	// the demo host of the examples on /tmp/dgx, made at the first one
	// (they are a sequence: audit, tune plan, apply, status, rollback)
	demo := ""
	exitNote := regexp.MustCompile(`\s+\(exit \d+\)$`)
	ran := 0
	fixed := map[int][]string{} // -update: README line of the command -> its new output
	echoFixed := map[int]bool{} // ... whose old output runs over a `$ echo $?`
	// farms: per directory the examples run from, the temp directory
	// the shell lines run in (files an example writes stay there for the
	// next, e.g. kubelet-numa.yaml for 'kubelet lint')
	farms := map[string]string{}
	// a note after a command: "     (amd-8numa, ... alike)", "   # this machine"
	annotation := regexp.MustCompile(`\s{3,}(\(.*\)|#.*)$`)
	var skipped []string
	for _, ex := range exs {
		ex.cmd = annotation.ReplaceAllString(ex.cmd, "")
		shell, why := readmeSkip(ex.cmd, ex.dir, farms[ex.dir], ex.want, ex.echoExit)
		if why != "" {
			if strings.HasPrefix(ex.cmd, "gpunode ") || strings.Contains(ex.cmd, "| gpunode ") {
				skipped = append(skipped, fmt.Sprintf("README.md:%d: %s", ex.line, why))
			}
			continue
		}
		ran++
		cmd := ex.cmd
		if strings.Contains(cmd, demoRoot) {
			if demo == "" {
				demo = makeDemo(t)
			}
			cmd = strings.ReplaceAll(cmd, demoRoot, demo)
		}
		if _, ok := farms[ex.dir]; shell && !ok {
			farms[ex.dir] = linkFarm(t, ex.dir)
		}
		t.Run(ex.cmd, func(t *testing.T) {
			var out, stderr string
			var code int
			var roots []string
			if shell {
				wd := farms[ex.dir]
				code, out, stderr = runShell(t, wd, cmd)
				args, _ := shellWords(cmd)
				roots = rootArgs(wd, args)
			} else {
				args, _ := shellWords(strings.TrimPrefix(cmd, "gpunode "))
				t.Chdir(ex.dir)
				code, out, stderr = run(t, args...)
				roots = rootArgs("", args)
			}
			if demo != "" {
				out, stderr = strings.ReplaceAll(out, demo, demoRoot), strings.ReplaceAll(stderr, demo, demoRoot)
			}
			for _, r := range roots {
				if r != demo {
					out = strings.ReplaceAll(out, r, "<root>")
				}
			}
			// what a person sees: stdout, then stderr, or stderr first (a
			// terminal shows them as they are written); then the exit
			// status that a `$ echo $?` prints
			raw, rawErrFirst := strings.TrimRight(out+stderr, "\n"), strings.TrimRight(stderr+out, "\n")
			if ex.echoExit {
				raw += fmt.Sprintf("\n$ echo $?\n%d", code)
				rawErrFirst += fmt.Sprintf("\n$ echo $?\n%d", code)
			}
			got := mask(raw)
			for i, w := range ex.want {
				ex.want[i] = exitNote.ReplaceAllString(w, "")
			}
			want := mask(strings.TrimRight(strings.Join(ex.want, "\n"), "\n"))
			if stderr != "" && out != "" && matchElided(strings.Split(mask(rawErrFirst), "\n"), strings.Split(want, "\n")) {
				return
			}
			if !matchElided(strings.Split(got, "\n"), strings.Split(want, "\n")) && *update {
				fixed[ex.line] = elide(strings.Split(raw, "\n"), ex.want)
				echoFixed[ex.line] = ex.echoExit
			} else if !matchElided(strings.Split(got, "\n"), strings.Split(want, "\n")) {
				gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
				for n := 0; n < max(len(gl), len(wl)); n++ {
					g, w := "", ""
					if n < len(gl) {
						g = gl[n]
					}
					if n < len(wl) {
						w = wl[n]
					}
					if g != w {
						t.Errorf("README.md:%d: %s: output line %d differs\nREADME: %q\n   got: %q\nstderr: %s", ex.line, ex.cmd, n+1, w, g, stderr)
						break
					}
				}
			}
		})
	}
	for _, s := range skipped {
		t.Logf("skipped %s", s)
	}
	t.Logf("%d README examples ran, %d skipped", ran, len(skipped))
	if len(fixed) > 0 {
		var outLines []string
		for i := 0; i < len(lines); i++ {
			outLines = append(outLines, lines[i])
			if f, ok := fixed[i+1]; ok {
				outLines = append(outLines, f...)
				// skip the old output: up to the next "$ ", "# exit" or block
				// end (past the `$ echo $?` the new output holds)
				echo := echoFixed[i+1]
				for i+1 < len(lines) && (!strings.HasPrefix(lines[i+1], "$ ") || echo && lines[i+1] == "$ echo $?") && !strings.HasPrefix(lines[i+1], "# exit") && !strings.HasPrefix(lines[i+1], "```") {
					if lines[i+1] == "$ echo $?" {
						echo = false
					}
					i++
				}
			}
		}
		if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte(strings.Join(outLines, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if ran < 58 {
		t.Errorf("only %d README examples ran (62 with the /tmp/dgx ones); the extraction is broken", ran)
	}
}

// elide keeps the README's "..." of an example: the lines before the
// first one and as many after the last one as the README had, from the
// new output; a part between two "..." (an excerpt) is found in the new
// output by its first line, and as many lines kept. Output where an
// excerpt's first line is gone is returned whole.
func elide(got, want []string) []string {
	var parts [][]string
	var marks []string // the "..." lines, notes kept
	start := 0
	for i, w := range want {
		if isElision(w) {
			parts = append(parts, want[start:i])
			marks = append(marks, w)
			start = i + 1
		}
	}
	if len(parts) == 0 {
		return got
	}
	parts = append(parts, want[start:])
	head, tail := len(parts[0]), len(parts[len(parts)-1])
	if head+tail > len(got) {
		return got
	}
	out := append([]string{}, got[:head]...)
	at := head
	for i, p := range parts[1 : len(parts)-1] {
		out = append(out, marks[i])
		if len(p) == 0 {
			continue
		}
		k := slices.Index(got[at:len(got)-tail], p[0])
		if k < 0 || at+k+len(p) > len(got)-tail {
			return got
		}
		out = append(out, got[at+k:at+k+len(p)]...)
		at += k + len(p)
	}
	return append(append(out, marks[len(marks)-1]), got[len(got)-tail:]...)
}

// elisionLine is a README line that stands for any number of output
// lines: "...", or "..." with a note of the README's after two or more
// blanks ("...      (208 devices: 26 per GPU, 9 slices)").
var elisionLine = regexp.MustCompile(`^\.\.\.(\s{2,}\(.*\))?$`)

func isElision(w string) bool { return elisionLine.MatchString(w) }

// matchElided compares output lines with the README's, where a README line
// "..." (isElision) stands for any number of lines: one at the start only
// is the end of the output, one at the end only its start, and a part
// between two is an excerpt.
func matchElided(got, want []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if isElision(want[0]) {
		for i := 0; i <= len(got); i++ {
			if matchElided(got[i:], want[1:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && got[0] == want[0] && matchElided(got[1:], want[1:])
}

// filesExist reports whether every argument naming a YAML or JSON file
// exists from dir, or, an absolute one, under the example's --root (a
// fixture's file, as container check's --image-config /root/...): an
// example that reads a file an earlier example wrote is left out.
func filesExist(dir string, args []string) bool {
	root := ""
	for i, a := range args {
		if a == "--root" && i+1 < len(args) {
			root = filepath.Join(dir, args[i+1])
		}
	}
	for _, a := range args {
		if strings.HasSuffix(a, ".yaml") || strings.HasSuffix(a, ".json") || strings.HasSuffix(a, ".yml") {
			_, err := os.Stat(filepath.Join(dir, a))
			if err != nil && root != "" && filepath.IsAbs(a) {
				_, err = os.Stat(filepath.Join(root, a))
			}
			if err != nil {
				return false
			}
		}
	}
	return true
}

// runsOnFixtures reports whether args read only the repository's fixtures:
// a --root under testdata, or a command that reads no host (k8s files,
// mig plan/profiles/validate, mps partition plan --sm-count).
func runsOnFixtures(args []string) bool {
	for i, a := range args {
		if a == "--root" && i+1 < len(args) {
			return strings.Contains(args[i+1], "testdata/") || args[i+1] == demoRoot
		}
	}
	if len(args) < 2 {
		return false
	}
	switch args[0] {
	case "k8s":
		return args[1] != "pods" && !strings.Contains(strings.Join(args, " "), "--kubeconfig") && !strings.Contains(strings.Join(args, " "), "--live")
	case "mig":
		return args[1] == "plan" || args[1] == "profiles" || (args[1] == "validate" && strings.Contains(strings.Join(args, " "), "--model"))
	case "mps":
		return strings.Contains(strings.Join(args, " "), "--sm-count")
	}
	return false
}

// shellWords splits a command line as sh does for the README's examples:
// spaces separate words, single and double quotes group them.
func shellWords(s string) ([]string, bool) {
	var words []string
	var cur strings.Builder
	in, quote, sawWord := false, byte(0), false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(c)
		case c == '"' || c == '\'':
			quote, in, sawWord = c, true, true
		case c == ' ' || c == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in, sawWord = true, true
		}
	}
	if quote != 0 {
		return nil, false
	}
	if in {
		words = append(words, cur.String())
	}
	return words, sawWord
}

// demoRoot is the README's DGX demo host: dgx-h100 with a process
// overlaid (tunetest's TestWriteDemo); the examples on it run on a copy
// made by makeDemo, whose path the output shows as demoRoot again.
const demoRoot = "/tmp/dgx"

// makeDemo makes the README's /tmp/dgx in a temp directory, as the README
// says (GPUNODE_DEMO_DIR=/tmp/dgx go test ./internal/tune/tunetest -run
// WriteDemo).
func makeDemo(t *testing.T) string {
	t.Helper()
	start := time.Now()
	src, err := testhost.HostsDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := testhost.TempDir(t)
	if err := testhost.CopyTree(filepath.Join(src, "dgx-h100"), dir); err != nil {
		t.Fatal(err)
	}
	if err := tunetest.Overlay(dir, tunetest.Options{Process: true}); err != nil {
		t.Fatal(err)
	}
	t.Logf("made the demo host %s in %v", demoRoot, time.Since(start))
	return dir
}

// readmeVars are the variables the README documents for its examples.
func readmeVars() map[string]string { return map[string]string{"T": "internal/k8s/dra/testdata/seed"} }

// readmeSkip says whether a README example runs under bash (shell) and,
// when it cannot run here, why ("" when it runs): each reason is a class
// of example the test leaves out.
func readmeSkip(cmd, dir, farm string, want []string, echoExit bool) (shell bool, why string) {
	first, _, _ := strings.Cut(cmd, " ")
	switch {
	case strings.Contains(strings.ReplaceAll(cmd, demoRoot, ""), "/tmp/"):
		return false, "works on a file in /tmp made by a step that is not gpunode's"
	case strings.Contains(cmd, "jq "):
		return false, "pipes to jq (not a CI tool)"
	case len(want) == 0 && !echoExit && !strings.Contains(cmd, ">"):
		return false, "no output shown"
	case strings.Contains(cmd, "this machine"), strings.Contains(cmd, "--live"), strings.Contains(cmd, "--kubeconfig"):
		return false, "reads this machine or a live cluster"
	case strings.Contains(cmd, "...") || strings.Contains(cmd, "DIR/") || strings.HasSuffix(cmd, "\\"):
		return false, "placeholder arguments or a continued line"
	case first != "gpunode" && first != "sed" && first != "echo" && first != "cat":
		return false, "runs " + first + ", not gpunode on a fixture"
	}
	for _, seg := range regexp.MustCompile(`[|;&><]`).Split(cmd, -1) {
		seg = strings.TrimSpace(seg)
		if !strings.HasPrefix(seg, "gpunode ") {
			continue
		}
		args, ok := shellWords(os.Expand(strings.TrimPrefix(seg, "gpunode "), func(k string) string { return readmeVars()[k] }))
		if !ok || !runsOnFixtures(args) {
			return false, "reads a host other than the fixtures"
		}
		if !filesExist(dir, args) {
			if farm == "" || !filesExist(farm, args) {
				return false, "reads a file whose content the README does not give"
			}
			shell = true // written by an earlier example, in the farm
		}
	}
	rest := regexp.MustCompile(`\$\?|\$\{PIPESTATUS\[0\]\}`).ReplaceAllString(cmd, "")
	for k := range readmeVars() {
		rest = strings.ReplaceAll(rest, "$"+k+"/", "")
	}
	if strings.Contains(rest, "$") {
		return false, "an undocumented variable"
	}
	return shell || strings.ContainsAny(cmd, "|;><$&") || first != "gpunode", ""
}

// linkFarm is a temp directory with a link to every entry of dir: an
// example's relative paths work from it and the files it writes stay in
// it.
func linkFarm(t *testing.T, dir string) string {
	t.Helper()
	wd := t.TempDir()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if err := os.Symlink(filepath.Join(dir, e.Name()), filepath.Join(wd, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	return wd
}

// runShell runs a README command line under bash in wd, with gpunode on
// PATH (the test binary, as TestREADMEGpunodeHelper) and readmeVars set.
func runShell(t *testing.T, wd, cmd string) (int, string, string) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	wrapper := "#!/bin/sh\nexec \"$GPUNODE_README_BIN\" -test.run='^TestREADMEGpunodeHelper$' -- \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "gpunode"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	c := exec.Command(bash, "-c", cmd)
	c.Dir = wd
	c.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "GPUNODE_README_HELPER=1", "GPUNODE_README_BIN=" + self, "HOME=" + wd, "LC_ALL=C"}
	for k, v := range readmeVars() {
		c.Env = append(c.Env, k+"="+v)
	}
	var stdout, stderr strings.Builder
	c.Stdout, c.Stderr = &stdout, &stderr
	err = c.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("%s: %v", cmd, err)
	}
	return c.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// TestREADMEGpunodeHelper is gpunode for runShell's command lines.
func TestREADMEGpunodeHelper(t *testing.T) {
	if os.Getenv("GPUNODE_README_HELPER") != "1" {
		t.Skip("helper process for TestREADMEExamples")
	}
	os.Exit(cli.MainWithSignals(cli.OSEnv(flag.Args()), Commands()...))
}

// rootArgs are the absolute paths of an example's --root values (from wd
// when set, else the current directory), which the output shows as <root>.
func rootArgs(wd string, args []string) []string {
	var roots []string
	for i, a := range args {
		if a == "--root" && i+1 < len(args) {
			p := args[i+1]
			if wd != "" {
				p = filepath.Join(wd, p)
			}
			if abs, err := filepath.Abs(p); err == nil {
				roots = append(roots, abs)
			}
		}
	}
	return roots
}

// TestElide: -update keeps the README's elisions (head, tail, excerpt).
func TestElide(t *testing.T) {
	got := strings.Split("a b c H x y z", " ")
	for _, c := range []struct{ want, out string }{
		{"a ... z", "a ... z"},
		{"A B ...", "a b ..."},
		{"... Y Z", "... y z"},
		{"... H q ...", "... H x ..."},
		{"... gone ...", "a b c H x y z"},
		{"A B C D", "a b c H x y z"},
	} {
		if out := strings.Join(elide(got, strings.Split(c.want, " ")), " "); out != c.out {
			t.Errorf("elide(%q) = %q, want %q", c.want, out, c.out)
		}
	}
	// a "..." with a note of the README's is kept, note and all
	for _, c := range []struct{ want, out string }{
		{"A|...   (note)|Z", "a|...   (note)|z"},
		{"...|H|q|...  (more)", "...|H|x|...  (more)"},
	} {
		if out := strings.Join(elide(got, strings.Split(c.want, "|")), "|"); out != c.out {
			t.Errorf("elide(%q) = %q, want %q", c.want, out, c.out)
		}
	}
}

// TestMatchElided: "..." stands for any lines, with or without a note; a
// leading one only anchors the end, a trailing one only the start.
func TestMatchElided(t *testing.T) {
	got := strings.Split("a b c H x y z", " ")
	for _, c := range []struct {
		want string
		ok   bool
	}{
		{"a|...|z", true},
		{"...|y|z", true},
		{"...|H|x", false},
		{"...|H|x|...", true},
		{"a|b|...  (5 more)", true},
		{"a|...  (5 more)|q", false},
		{"a|...(no blanks)", false},
		{"a|b|c|H|x|y", false},
	} {
		if ok := matchElided(got, strings.Split(c.want, "|")); ok != c.ok {
			t.Errorf("matchElided(%q) = %v, want %v", c.want, ok, c.ok)
		}
	}
}
