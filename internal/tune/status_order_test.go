package tune

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/output"
)

// TestStatusUnreadableJournalFirst: with an unreadable journal (it may be
// the one that records an applied profile), status says so first and
// never "no profile applied", and it is a finding.
func TestStatusUnreadableJournalFirst(t *testing.T) {
	ctx := context.Background()
	cat := NewCatalogue()
	root, fsys := stockHost(t, "vm-2vcpu")
	dir := filepath.Join(root, "var/lib/gpunode")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "000001-tune.journal"), []byte("gpunode-journal v1\ngarbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := GetStatus(ctx, newHost(t, fsys), cat, stateDir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := st.WriteTable(&b, output.Options{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if !strings.HasPrefix(lines[0], "UNREADABLE journal: /var/lib/gpunode/000001-tune.journal") {
		t.Errorf("first line %q, want the unreadable journal", lines[0])
	}
	if strings.Contains(b.String(), "no profile applied") || !strings.Contains(b.String(), "applied profile: UNKNOWN") {
		t.Errorf("status with an unreadable journal:\n%s", b.String())
	}
	if !st.Drifted() {
		t.Error("an unreadable journal is not a finding")
	}
}
