package hostfs

// The door's decisions at their edges: the read size limit, reads that
// need more than one buffer, long link targets, idempotent captures, refusals and the operation names of its errors.

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func mtRoot(t *testing.T) (string, *FS) {
	t.Helper()
	root := t.TempDir()
	f, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	return root, f
}

func mtWrite(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A file under /sys of a captured tree bigger than one read buffer is read
// whole; 64 MiB is the limit: at it read, one byte above refused.
func TestReadSizeEdges(t *testing.T) {
	root, f := mtRoot(t)
	big := bytes.Repeat([]byte("0123456789abcdef"), 1000) // 16000 bytes: four reads
	mtWrite(t, filepath.Join(root, "sys/class/x/attr"), big)
	mtWrite(t, filepath.Join(root, "etc/x"), big)
	for _, p := range []string{"/sys/class/x/attr", "/etc/x"} {
		b, err := f.ReadFile(p)
		if err != nil || !bytes.Equal(b, big) {
			t.Errorf("%s: %d bytes, %v; want %d", p, len(b), err, len(big))
		}
	}
	if testing.Short() {
		return
	}
	for _, c := range []struct {
		size int
		ok   bool
	}{{64<<20 - 1, true}, {64 << 20, true}, {64<<20 + 1, false}} {
		for _, p := range []string{"/sys/big", "/etc/big"} {
			mtWrite(t, filepath.Join(root, p), make([]byte, c.size))
			b, err := f.ReadFile(p)
			if c.ok && (err != nil || len(b) != c.size) {
				t.Errorf("%s of %d bytes: %d, %v", p, c.size, len(b), err)
			}
			if !c.ok {
				var pe *fs.PathError
				if err == nil || !errors.As(err, &pe) || pe.Op != "read" || pe.Path != p || !strings.Contains(err.Error(), "file larger than 64 MiB") {
					t.Errorf("%s of %d bytes: %v, want a read error: file larger than 64 MiB", p, c.size, err)
				}
			}
		}
	}
	os.Remove(filepath.Join(root, "sys/big"))
	os.Remove(filepath.Join(root, "etc/big"))
}

// A link target longer than Dir.Readlink's first buffer (256 bytes) is
// read whole: 255, 256 and 257 bytes, and a long one.
func TestDirReadlinkLongTargets(t *testing.T) {
	root, f := mtRoot(t)
	if err := os.MkdirAll(filepath.Join(root, "sys/d"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{255, 256, 257, 1000} {
		target := "../" + strings.Repeat("a", n-3)
		name := filepath.Join(root, "sys/d", "l"+string(rune('a'+n%26)))
		os.Remove(name)
		if err := os.Symlink(target, name); err != nil {
			t.Fatal(err)
		}
		d := f.Dir("/sys/d")
		got, err := d.Readlink(filepath.Base(name))
		d.Close()
		if err != nil || got != target {
			t.Errorf("%d-byte target: %d bytes, %v", n, len(got), err)
		}
	}
}

// Capturing twice into the same directory (--force) leaves a link that is
// already right alone (its time unchanged), and rewrites one that is wrong.
func TestCaptureKeepsRightLinks(t *testing.T) {
	root, f := mtRoot(t)
	mtWrite(t, filepath.Join(root, "real/file"), []byte("x"))
	if err := os.Symlink("real", filepath.Join(root, "via")); err != nil {
		t.Fatal(err)
	}
	f.Record()
	if _, err := f.Readlink("/via"); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "out")
	if err := f.CopyRecorded(dst); err != nil {
		t.Fatal(err)
	}
	// Date the link back (an inode number can be reused at once; a
	// recreated link has a new time).
	old := []unix.Timespec{{Sec: 946684800}, {Sec: 946684800}}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, filepath.Join(dst, "via"), old, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		t.Fatal(err)
	}
	if err := f.CopyRecordedWith(dst, CopyOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(dst, "via")); err != nil || fi.ModTime().Unix() != 946684800 {
		t.Errorf("a link already right was recreated (%v)", err)
	}
	os.Remove(filepath.Join(dst, "via"))
	if err := os.Symlink("elsewhere", filepath.Join(dst, "via")); err != nil {
		t.Fatal(err)
	}
	if err := f.CopyRecordedWith(dst, CopyOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if tg, err := os.Readlink(filepath.Join(dst, "via")); err != nil || tg != "real" {
		t.Errorf("wrong link not rewritten: %q, %v", tg, err)
	}
}

// A file with a second name is refused below a root (that name may lie
// outside it) and written on the live root "/".
func TestHardLinkRefusedOnlyBelowARoot(t *testing.T) {
	root, f := mtRoot(t)
	a := filepath.Join(root, "a")
	mtWrite(t, a, []byte("1"))
	if err := os.Link(a, filepath.Join(root, "b")); err != nil {
		t.Fatal(err)
	}
	if err := f.WriteString("/a", "2"); err == nil {
		t.Error("a hard-linked file below a root was written")
	}
	live, err := New("/")
	if err != nil {
		t.Fatal(err)
	}
	if err := live.WriteString(a, "3"); err != nil {
		t.Errorf("live root refused a hard-linked file: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "b")); string(b) != "3" {
		t.Errorf("b = %q, want 3", b)
	}
}

// SymlinkVia's temporary link must be a sibling of the link and not the
// link itself.
func TestSymlinkViaSibling(t *testing.T) {
	root, f := mtRoot(t)
	if err := os.MkdirAll(filepath.Join(root, "d/e"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tmp := range []string{"/d/l", "/d/e/l.tmp", "/l.tmp"} {
		err := f.SymlinkVia("x", "/d/l", tmp)
		if err == nil || !strings.Contains(err.Error(), "is not a sibling") {
			t.Errorf("tmp %s: %v", tmp, err)
		}
	}
	if err := f.SymlinkVia("x", "/d/l", "/d/.l.tmp"); err != nil {
		t.Fatal(err)
	}
	if tg, err := os.Readlink(filepath.Join(root, "d/l")); err != nil || tg != "x" {
		t.Errorf("link %q, %v", tg, err)
	}
}

// A faulted operation's error names the operation as the system call does.
func TestFaultedOpNames(t *testing.T) {
	root, f := mtRoot(t)
	mtWrite(t, filepath.Join(root, "f"), []byte("x"))
	for _, c := range []struct {
		op   Op
		do   func(*FS) error
		name string
	}{
		{OpChmod, func(g *FS) error { return g.Chmod("/f", 0o600) }, "chmod"},
		{OpChown, func(g *FS) error { return g.Lchown("/f", 0, 0) }, "lchown"},
		{OpMkdir, func(g *FS) error { return g.Mkdir("/nd", 0o755) }, "mkdir"},
		{OpSymlink, func(g *FS) error { return g.Symlink("x", "/nl") }, "symlink"},
	} {
		g := f.WithFaults(&Faults{At: 1, Only: []Op{c.op}, Err: syscall.EIO})
		err := c.do(g)
		var pe *fs.PathError
		if !errors.As(err, &pe) || pe.Op != c.name || !errors.Is(err, syscall.EIO) {
			t.Errorf("faulted %s: %v, want a %s error wrapping EIO", c.op, err, c.name)
		}
	}
}
