package tune

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestAuditGoldensFitTerminal: every fixture's default audit table (the
// goldens TestAuditGolden compares) fits a 160-column terminal, and a fix
// several checks share is printed once. The commands of the Fixes section
// are the one exception: each is printed whole on one line, so that it
// works when pasted (wrapping one inside a quoted string changes what it
// writes); TestAuditFixesPrintedWhole checks that.
func TestAuditGoldensFitTerminal(t *testing.T) {
	files, err := filepath.Glob("testdata/golden/audit-*.txt")
	if err != nil || len(files) < 8 {
		t.Fatalf("audit goldens: %v %v", files, err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		inFixes := false
		for n, l := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(l, "Fixes") {
				inFixes = true
			} else if !strings.HasPrefix(l, " ") {
				inFixes = false
			}
			if inFixes && strings.HasPrefix(l, "    ") {
				continue // a command, printed whole
			}
			if w := utf8.RuneCountInString(l); w > 160 {
				t.Errorf("%s:%d: %d columns", f, n+1, w)
			}
		}
		if strings.Contains(f, "dgx-h100-base") {
			if n := strings.Count(string(data), "> /etc/sysctl.d/90-gpunode.conf"); n != 1 {
				t.Errorf("%s: the sysctl fix is printed %d times, want once", f, n)
			}
		}
	}
}

// TestAuditFixesPrintedWhole: every fix of the JSON form of an audit is one
// whole line of its table form, each printed once, in the order of the
// checks that first need it.
func TestAuditFixesPrintedWhole(t *testing.T) {
	data, err := os.ReadFile("testdata/golden/audit-dgx-h100-training.json")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Checks []struct {
			Status string   `json:"status"`
			Fix    []string `json:"fix"`
		} `json:"checks"`
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	table, err := os.ReadFile("testdata/golden/audit-dgx-h100-training.txt")
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]int{}
	var order []string
	for _, l := range strings.Split(string(table), "\n") {
		if strings.HasPrefix(l, "    ") {
			cmd := strings.TrimPrefix(l, "    ")
			lines[cmd]++
			order = append(order, cmd)
		}
	}
	want := 0
	for _, c := range rep.Checks {
		if c.Status == "ok" || c.Status == "info" {
			continue
		}
		for _, f := range c.Fix {
			if lines[f] != 1 {
				t.Errorf("fix %q: %d whole lines in the table, want 1", f, lines[f])
			}
			want++
		}
	}
	if want == 0 || len(order) == 0 {
		t.Fatalf("no fixes to compare (%d in JSON, %d in the table)", want, len(order))
	}
}
