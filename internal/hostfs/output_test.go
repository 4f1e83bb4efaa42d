package hostfs

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestWriteOutputRefusesWhatIsNotAFile: a FIFO, a character device, a
// socket and a directory at the output path are refused with
// ErrRefusedOutput and left exactly as they were; nothing else is left in
// the directory.
func TestWriteOutputRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{fifo: "FIFO", sock: "socket", sub: "directory"}
	// A device node like /dev/null (1,3), made in the temp dir: the live
	// /dev/null is never a target of this test.
	null := filepath.Join(dir, "null")
	if err := unix.Mknod(null, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err == nil {
		cases[null] = "character device"
	} else {
		t.Logf("mknod: %v (not root?): the device case uses the host's /dev/null read-only", err)
	}
	for p, kind := range cases {
		before, _ := os.Lstat(p)
		err := WriteOutput(p, []byte("report\n"), 0o644, OutputOptions{Force: true})
		want := "refusing to replace " + p + ": not a regular file"
		var re *RefusedOutputError
		if !errors.Is(err, ErrRefusedOutput) || err.Error() != want || !errors.As(err, &re) || re.Kind != kind {
			t.Errorf("%s: err = %v (%#v), want %q", kind, err, re, want)
		}
		after, lerr := os.Lstat(p)
		if lerr != nil || after.Mode() != before.Mode() || !os.SameFile(before, after) {
			t.Errorf("%s: changed: %v -> %v (%v)", kind, before.Mode(), after, lerr)
		}
	}
	if _, ok := cases[null]; !ok {
		// Without mknod: the refusal happens on the Lstat, before any
		// write, so asking for /dev/null itself is safe; it must stay a
		// character device.
		err := WriteOutput("/dev/null", []byte("x"), 0o644, OutputOptions{})
		if !errors.Is(err, ErrRefusedOutput) || err.Error() != "refusing to replace /dev/null: not a regular file" {
			t.Errorf("/dev/null: %v", err)
		}
		if fi, err := os.Lstat("/dev/null"); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
			t.Fatalf("/dev/null is no longer a device: %v %v", fi, err)
		}
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), "gpunode-tmp") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

// TestWriteOutputSymlink: a link at the path is refused without --force
// (its target untouched); with it the link itself is replaced, never
// followed. A dangling link is refused the same way.
func TestWriteOutputSymlink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "report.html")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, "dangling.html")
	if err := os.Symlink(filepath.Join(dir, "nowhere"), dangling); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{link, dangling} {
		err := WriteOutput(p, []byte("new\n"), 0o644, OutputOptions{})
		if !errors.Is(err, ErrRefusedOutput) || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("%s: err = %v, want a refused link", p, err)
		}
		if fi, err := os.Lstat(p); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s: the link was replaced without --force", p)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "nowhere")); !errors.Is(err, os.ErrNotExist) {
		t.Error("the dangling link was followed")
	}
	if err := WriteOutput(link, []byte("new\n"), 0o644, OutputOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
		t.Errorf("the link was followed: victim = %q", b)
	}
	fi, err := os.Lstat(link)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 {
		t.Fatalf("forced: %v %v, want a regular 0644 file", fi, err)
	}
	if b, _ := os.ReadFile(link); string(b) != "new\n" {
		t.Errorf("forced: content %q", b)
	}
}

// TestWriteOutputRegular: an absent path is created, a regular file
// replaced (a new inode: a reader holding the old one keeps it whole),
// with the mode asked for.
func TestWriteOutputRegular(t *testing.T) {
	old := unix.Umask(0o077)
	defer unix.Umask(old)
	dir := t.TempDir()
	p := filepath.Join(dir, "out.svg")
	if err := WriteOutput(p, []byte("one"), 0o644, OutputOptions{}); err != nil {
		t.Fatal(err)
	}
	first, _ := os.Lstat(p)
	if err := WriteOutput(p, []byte("two"), 0o644, OutputOptions{}); err != nil {
		t.Fatal(err)
	}
	second, _ := os.Lstat(p)
	if b, _ := os.ReadFile(p); string(b) != "two" || second.Mode().Perm() != 0o644 || os.SameFile(first, second) {
		t.Errorf("replace: %q mode %v same inode %v", b, second.Mode(), os.SameFile(first, second))
	}
	// A relative name in the working directory.
	t.Chdir(dir)
	if err := WriteOutput("rel.html", []byte("r"), 0o600, OutputOptions{}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "rel.html")); string(b) != "r" {
		t.Errorf("relative: %q", b)
	}
	// A missing directory is an error, not a refusal.
	if err := WriteOutput(filepath.Join(dir, "no/such/file"), nil, 0o644, OutputOptions{}); err == nil || errors.Is(err, ErrRefusedOutput) {
		t.Errorf("missing directory: %v", err)
	}
}

// TestWriteOutputFileUnderRoot: the FS form refuses a FIFO below the root.
func TestWriteOutputFileUnderRoot(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "var/lib/gpunode/bench"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(root, "var/lib/gpunode/bench/x.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	fsys, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := fsys.WriteOutputFile("/var/lib/gpunode/bench/x.json", []byte("{}"), 0o644, OutputOptions{}); !errors.Is(err, ErrRefusedOutput) {
		t.Errorf("FIFO under the root: %v", err)
	}
	if err := fsys.WriteOutputFile("/var/lib/gpunode/bench/y.json", []byte("{}"), 0o644, OutputOptions{}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "var/lib/gpunode/bench/y.json")); string(b) != "{}" {
		t.Errorf("y.json = %q", b)
	}
}
