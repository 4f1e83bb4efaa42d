package irq

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/testhost"
	"github.com/gpunode/gpunode/internal/topo"
)

// One bad /proc/interrupts row is skipped with a warning naming its line; it
// no longer makes the whole table (and 'irq plan') fail (issue 10, item 9).
func TestParseInterruptsSkipsBadRows(t *testing.T) {
	for bad, why := range map[string]string{
		" 5: 1\n":                             "1 counts for 3 CPU columns",
		"no colon here\n":                     `want "<irq>: counts..."`,
		" 7: 99999999999999999999999 0 0 x\n": "count",
		" 0: 1 2 3 dup\n":                     "0 listed twice",
		"-4: 1 2 3 x\n":                       "negative IRQ",
	} {
		// The bad row is line 4, between two good ones.
		lines := strings.SplitAfter(sample, "\n")
		in := strings.Join(lines[:3], "") + bad + strings.Join(lines[3:], "")
		table, err := ParseInterrupts([]byte(in))
		if err != nil {
			t.Errorf("bad row %q: %v; want it skipped", bad, err)
			continue
		}
		if len(table.Rows) != 12 {
			t.Errorf("bad row %q: %d rows; want the 12 good ones", bad, len(table.Rows))
		}
		if len(table.Warnings) != 1 || !strings.Contains(table.Warnings[0], "/proc/interrupts line 4") || !strings.Contains(table.Warnings[0], why) {
			t.Errorf("bad row %q: warnings %q; want one naming line 4 and %q", bad, table.Warnings, why)
		}
		if r := table.Row(33); r == nil || r.Counts[1] != 5 {
			t.Errorf("bad row %q: IRQ 33 lost or replaced: %+v", bad, r)
		}
	}
}

func TestParseInterruptsBoundsWarnings(t *testing.T) {
	in := "CPU0\n" + strings.Repeat("garbage\n", 1000) + " 1: 5 IR-PCI-MSIX-0000:00:01.0 0-edge x\n"
	table, err := ParseInterrupts([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(table.Rows) != 1 || len(table.Warnings) > maxRowWarnings+1 || !strings.Contains(table.Warnings[len(table.Warnings)-1], "more") {
		t.Errorf("%d rows, %d warnings (last %q); want 1 row and at most %d warnings ending in a count", len(table.Rows), len(table.Warnings), table.Warnings[len(table.Warnings)-1], maxRowWarnings+1)
	}
}

func TestAnalyzeWarnsAboutBadRow(t *testing.T) {
	root := testhost.Copy(t, "dgx-h100")
	p := filepath.Join(root, "proc/interrupts")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	bad := append(append(append([]string{}, lines[:2]...), " 9999: garbage\n"), lines[2:]...)
	if err := os.WriteFile(p, []byte(strings.Join(bad, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	fsys, err := hostfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := topo.Discover(context.Background(), fsys)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Analyze(context.Background(), fsys, tp, Options{})
	if err != nil {
		t.Fatalf("Analyze with one bad row: %v", err)
	}
	found := false
	for _, w := range rep.Warnings {
		found = found || strings.Contains(w, "/proc/interrupts line 3")
	}
	if !found || len(rep.Devices) == 0 {
		t.Errorf("warnings %q, %d devices; want a warning naming line 3 and the devices planned", rep.Warnings, len(rep.Devices))
	}
}
