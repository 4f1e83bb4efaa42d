package cli

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var updateREADME = flag.Bool("update-readme", false, "rewrite the README's check id list from 'gpunode audit --list-checks'")

const (
	checksBegin = "<!-- check-ids:begin (go test ./internal/cli -run TestREADMEChecks -update-readme) -->\n"
	checksEnd   = "<!-- check-ids:end -->"
)

// TestREADMEChecks fails when the README's list of check ids differs from
// 'gpunode audit --list-checks'.
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
	want := ChecksMarkdown(ListChecks())
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
