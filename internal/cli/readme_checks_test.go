package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/testhost"
	"github.com/gpunode/gpunode/internal/tune/tunetest"
)

var updateREADME = flag.Bool("update-readme", false, "rewrite the README's check id list from 'gpunode audit --list-checks'")

const (
	checksBegin = "<!-- check-ids:begin (go test ./internal/cli -run TestREADMEChecks -update-readme) -->\n"
	checksEnd   = "<!-- check-ids:end -->"
)

// readmeSection returns the README's section that starts with the heading
// line head, up to the next heading of the same or a higher level.
func readmeSection(t *testing.T, head string) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "\n"+head+"\n")
	if i < 0 {
		t.Fatalf("README.md has no %q section", head)
	}
	s = s[i+1+len(head):]
	level := strings.Repeat("#", strings.IndexByte(head, ' '))
	// The next heading of this level or higher, outside code blocks.
	inCode := false
	off := 0
	for _, l := range strings.SplitAfter(s, "\n") {
		if strings.HasPrefix(l, "```") {
			inCode = !inCode
		}
		if !inCode && strings.HasPrefix(l, "#") {
			h := strings.TrimLeft(l, "#")
			if len(l)-len(h) <= len(level) && strings.HasPrefix(h, " ") {
				return s[:off]
			}
		}
		off += len(l)
	}
	return s
}

// listedChecks is what 'gpunode audit --list-checks -o json' prints.
func listedChecks(t *testing.T) ChecksList {
	t.Helper()
	code, out, errs := run(t, "audit", "--list-checks", "-o", "json")
	var l ChecksList
	if err := json.Unmarshal([]byte(out), &l); code != ExitOK || err != nil {
		t.Fatalf("audit --list-checks: exit %d, %v: %s", code, err, errs)
	}
	return l
}

// TestREADMEChecks fails when the README's list of check ids differs from
// what 'gpunode audit --list-checks' prints (every id, its layer, what it
// runs once per, seed section and title).
func TestREADMEChecks(t *testing.T) {
	const file = "../../README.md"
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, checksBegin), strings.Index(s, checksEnd)
	if i < 0 || j < i {
		t.Fatalf("README.md lacks the check-ids markers %q ... %q", checksBegin, checksEnd)
	}
	l := listedChecks(t)
	if len(l.Checks) != len(ListChecks().Checks) {
		t.Fatalf("--list-checks prints %d checks, ListChecks has %d", len(l.Checks), len(ListChecks().Checks))
	}
	want := ChecksMarkdown(l)
	got := s[i+len(checksBegin) : j]
	if got == want {
		return
	}
	if *updateREADME {
		if err := os.WriteFile(file, []byte(s[:i+len(checksBegin)]+want+s[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README.md's check id list is stale (run go test ./internal/cli -run TestREADMEChecks -update-readme):\n--- want ---\n%s--- got ---\n%s", want, got)
}

// TestREADMEAlerting: the "Alerting on audit" section's status table has
// one row per status --list-checks prints, in its order; the exit codes it
// states are the ones audit uses; the per-subject keys it names as
// examples (ID/SUBJECT) are of checks that run per subject; and its example
// profile (ids, id/subject, patterns) loads.
func TestREADMEAlerting(t *testing.T) {
	sec := readmeSection(t, "## Alerting on audit")
	l := listedChecks(t)

	const tableHead = "| status | meaning | alert? |\n"
	ti := strings.Index(sec, tableHead)
	if ti < 0 {
		t.Fatalf("the section has no status table (%q)", tableHead)
	}
	table, _, _ := strings.Cut(sec[ti:], "\n\n")
	var rows []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z-]+)` \\|").FindAllStringSubmatch(table, -1) {
		rows = append(rows, m[1])
	}
	var statuses []string
	for _, st := range l.Statuses {
		statuses = append(statuses, string(st))
	}
	if strings.Join(rows, " ") != strings.Join(statuses, " ") {
		t.Errorf("status table rows %v, --list-checks statuses %v", rows, statuses)
	}

	for _, c := range []struct {
		code int
		word string
	}{{ExitOK, "nothing drifts"}, {ExitFindings, "drift"}, {ExitUsage, "usage"}, {ExitFailure, "failure"}} {
		if !regexp.MustCompile(fmt.Sprintf("(?s)`%d` [^.;]*?%s", c.code, c.word)).MatchString(sec) {
			t.Errorf("exit code %d (%s) not stated as `%d` ... %s", c.code, c.word, c.code, c.word)
		}
	}

	perSubject := map[string]bool{}
	for _, d := range l.Checks {
		perSubject[d.ID] = d.Subject != ""
	}
	examples := regexp.MustCompile("`([a-z][a-z0-9_-]*\\.[a-z0-9_.-]+)/([^`*/ ]+)`").FindAllStringSubmatch(sec, -1)
	if len(examples) < 3 {
		t.Errorf("the section names %d ID/SUBJECT examples, want the GPU, IRQ and process forms", len(examples))
	}
	for _, m := range examples {
		if ps, ok := perSubject[m[1]]; !ok || !ps {
			t.Errorf("example key %s/%s: %s is not a per-subject check of --list-checks", m[1], m[2], m[1])
		}
	}

	yml := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindStringSubmatch(sec)
	if yml == nil {
		t.Fatal("the section has no example profile")
	}
	file := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(file, []byte(yml[1]), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run(t, "--root", testhost.Path(t, "vm-2vcpu"), "audit", "--profile", file); code == ExitUsage || code >= ExitFailure {
		t.Errorf("the README's example profile: exit %d: %s\n%s", code, errs, yml[1])
	}
}

// TestPrintedKeysAreSelectable: every check audit prints on every fixture
// (with a process for --pid) has a subject only when --list-checks says it
// runs per subject (a per-subject check that cannot run per subject prints
// one row without: gpu.health.xid absent), and its key ID/SUBJECT has no
// blank, so the key the table prints is one a profile or a shell argument
// can name as it is.
func TestPrintedKeysAreSelectable(t *testing.T) {
	l := listedChecks(t)
	perSubject := map[string]bool{}
	for _, d := range l.Checks {
		perSubject[d.ID] = d.Subject != ""
	}
	for _, host := range []string{"dgx-h100", "amd-8numa", "gh200", "downgraded", "mixed-pcie", "vm-2vcpu"} {
		root := testhost.Path(t, host)
		args := []string{"--root", root, "audit", "--profile", "inference-isolated"}
		if host == "dgx-h100" {
			root = testhost.Copy(t, host)
			if err := tunetest.Overlay(root, tunetest.Options{Process: true}); err != nil {
				t.Fatal(err)
			}
			args = []string{"--root", root, "audit", "--profile", "inference-isolated", "--pid", "4242"}
		}
		_, r, _ := auditOf(t, args...)
		for _, c := range r.Checks {
			ps, ok := perSubject[c.ID]
			switch {
			case !ok:
				t.Errorf("%s: %s printed but not in --list-checks", host, c.ID)
			case c.Subject != "" && !ps:
				t.Errorf("%s: %s printed with subject %q, --list-checks says per-subject %v", host, c.ID, c.Subject, ps)
			case strings.ContainsAny(c.Key(), " \t"):
				t.Errorf("%s: key %q has a blank", host, c.Key())
			}
		}
	}
}
