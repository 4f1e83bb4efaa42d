package tune

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestAuditGoldensFitTerminal: every fixture's default audit table (the
// goldens TestAuditGolden compares) fits a 160-column terminal, and a fix
// several checks share is printed once.
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
		for n, l := range strings.Split(string(data), "\n") {
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
