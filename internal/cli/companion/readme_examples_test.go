package companion

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestREADMEExamples (issue 28 item 7): the README's examples are goldens.
// Every `$ gpunode ...` line of a code block that runs on the repository's
// fixtures (no pipe, redirection, variable or temp directory; a `$ cd DIR`
// before it in the block is honoured) is run, and its output must be the
// text under it in the README, up to the next `$ ` or `# exit` line.
// Search times ("in 7.79ms") are compared as <time>. Examples that measure
// this machine or need a temp copy are left out by the same rules.
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
		line     int
		dir, cmd string
		want     []string
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
	for i, l := range lines {
		if strings.HasPrefix(l, "```") {
			flush()
			inBlock, dir = !inBlock, proseDir
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
		case strings.HasPrefix(l, "$ gpunode "):
			flush()
			cur = &example{line: i + 1, dir: dir, cmd: strings.TrimPrefix(l, "$ gpunode ")}
		case strings.HasPrefix(l, "$ ") || strings.HasPrefix(l, "# exit"):
			flush()
		case cur != nil:
			cur.want = append(cur.want, l)
		}
	}
	times := regexp.MustCompile(`\b\d+(\.\d+)?(ms|µs|s)\b`)
	exitNote := regexp.MustCompile(`\s+\(exit \d+\)$`)
	ran := 0
	fixed := map[int][]string{} // -update: README line of the command -> its new output
	for _, ex := range exs {
		if strings.ContainsAny(ex.cmd, "|;><$#(") || strings.Contains(ex.cmd, "/tmp/") || len(ex.want) == 0 || ex.want[0] == "..." {
			continue
		}
		args, ok := shellWords(ex.cmd)
		if !ok || !runsOnFixtures(args) || !filesExist(ex.dir, args) {
			continue
		}
		ran++
		t.Run(ex.cmd, func(t *testing.T) {
			t.Chdir(ex.dir)
			_, out, stderr := run(t, args...)
			for i, a := range args {
				if a == "--root" && i+1 < len(args) {
					if abs, err := filepath.Abs(args[i+1]); err == nil {
						out = strings.ReplaceAll(out, abs, "<root>")
					}
				}
			}
			// what a person sees: stdout, then stderr
			got := times.ReplaceAllString(strings.TrimRight(out+stderr, "\n"), "<time>")
			for i, w := range ex.want {
				ex.want[i] = exitNote.ReplaceAllString(w, "")
			}
			want := times.ReplaceAllString(strings.TrimRight(strings.Join(ex.want, "\n"), "\n"), "<time>")
			if !matchElided(strings.Split(got, "\n"), strings.Split(want, "\n")) && *update {
				fixed[ex.line] = elide(strings.Split(strings.TrimRight(out+stderr, "\n"), "\n"), ex.want)
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
						t.Errorf("README.md:%d: gpunode %s: output line %d differs\nREADME: %q\n   got: %q\nstderr: %s", ex.line, ex.cmd, n+1, w, g, stderr)
						break
					}
				}
			}
		})
	}
	if len(fixed) > 0 {
		var outLines []string
		for i := 0; i < len(lines); i++ {
			outLines = append(outLines, lines[i])
			if f, ok := fixed[i+1]; ok {
				outLines = append(outLines, f...)
				// skip the old output: up to the next "$ ", "# exit" or block end
				for i+1 < len(lines) && !strings.HasPrefix(lines[i+1], "$ ") && !strings.HasPrefix(lines[i+1], "# exit") && !strings.HasPrefix(lines[i+1], "```") {
					i++
				}
			}
		}
		if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte(strings.Join(outLines, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if ran < 20 {
		t.Errorf("only %d README examples ran; the extraction is broken", ran)
	}
}

// elide keeps the README's "..." of an example: the lines before it and
// as many after it as the README had, from the new output.
func elide(got, want []string) []string {
	k := -1
	for i, w := range want {
		if w == "..." {
			k = i
			break
		}
	}
	if k < 0 || len(got) < len(want) {
		return got
	}
	tail := len(want) - k - 1
	return append(append(append([]string{}, got[:k]...), "..."), got[len(got)-tail:]...)
}

// matchElided compares output lines with the README's, where a README line
// "..." stands for any number of lines.
func matchElided(got, want []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if want[0] == "..." {
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
// exists from dir (an example that reads a file an earlier example wrote
// is left out).
func filesExist(dir string, args []string) bool {
	for _, a := range args {
		if strings.HasSuffix(a, ".yaml") || strings.HasSuffix(a, ".json") || strings.HasSuffix(a, ".yml") {
			if _, err := os.Stat(filepath.Join(dir, a)); err != nil {
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
			return strings.Contains(args[i+1], "testdata/")
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
