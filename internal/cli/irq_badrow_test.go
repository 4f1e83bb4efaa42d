package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/testhost"
)

// One bad /proc/interrupts row made 'irq plan' exit 3 (issue 10, item 9): it
// is skipped with a warning naming the line.
func TestIRQPlanSkipsBadInterruptsRow(t *testing.T) {
	root := testhost.Copy(t, "dgx-h100")
	p := filepath.Join(root, "proc/interrupts")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	header, rest, _ := strings.Cut(string(b), "\n")
	if err := os.WriteFile(p, []byte(header+"\n 77: not-a-count\n"+rest), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "irq", "plan", "--root", root, "--devices", "gpu")
	if code >= ExitFailure || !strings.Contains(out+errs, "/proc/interrupts line 2") {
		t.Errorf("irq plan with one bad row: exit %d; want a plan (exit 0 or 1) and a warning naming line 2:\n%s%s", code, out, errs)
	}
}
