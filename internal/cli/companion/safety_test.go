package companion

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOutputFileRefusedBeforeWork: report --html and bench --plot refuse
// an output path that is not a regular file with exit 2 and the rule's
// message, before any work, and leave it as it was; a symlink needs
// --force and is then replaced, not followed.
func TestOutputFileRefusedBeforeWork(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "out.html")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	root := "../../../testdata/hosts/dgx-h100"
	code, _, stderr := run(t, "--root", root, "report", "--html", fifo)
	if code != 2 || !strings.Contains(stderr, "refusing to replace "+fifo+": not a regular file\n") {
		t.Errorf("report --html FIFO: exit %d, stderr %q", code, stderr)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v %v", fi, err)
	}
	_ = os.Mkdir(filepath.Join(dir, "d.svg"), 0o755)
	code, _, stderr = run(t, "bench", "numa", "--plot", filepath.Join(dir, "d.svg"), "--duration", "1ms")
	if code != 2 || !strings.Contains(stderr, ": not a regular file\n") {
		t.Errorf("bench --plot DIR: exit %d, stderr %q", code, stderr)
	}
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.html")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = run(t, "--root", root, "report", "--html", link)
	if code != 2 || !strings.Contains(stderr, "symbolic link") {
		t.Errorf("report --html LINK: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = run(t, "--root", root, "report", "--html", link, "--force")
	if code != 0 {
		t.Fatalf("report --html LINK --force: exit %d, %s", code, stderr)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Error("--force followed the link")
	}
	if fi, err := os.Lstat(link); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("--force: %v %v, want the link replaced by the report", fi, err)
	}
}

// TestAgentFlagRanges: a negative --enforce-min-interval and a web
// configuration that cannot be used are usage errors (exit 2) before the
// agent listens.
func TestAgentFlagRanges(t *testing.T) {
	root := "../../../testdata/hosts/dgx-h100"
	code, _, stderr := run(t, "--root", root, "agent", "--enforce-min-interval", "-5m", "--listen", "127.0.0.1:0")
	if code != 2 || !strings.Contains(stderr, "--enforce-min-interval -5m0s") {
		t.Errorf("--enforce-min-interval -5m: exit %d, %q", code, stderr)
	}
	bad := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(bad, []byte("basic_auth_users:\n  prometheus: plain\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = run(t, "--root", root, "agent", "--web.config.file", bad, "--listen", "127.0.0.1:0")
	if code != 2 || !strings.Contains(stderr, bad) {
		t.Errorf("bad --web.config.file: exit %d, %q", code, stderr)
	}
}
