package hostfs

// More edges made observable by the fault hooks: the operation each of a
// capture's output-side errors names, a directory refused before any
// read(2), a file that changes between two reads, a Dir that resolves its
// path once, and the live FS holding no root descriptor.

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Each output-side call of a capture failing is a *fs.PathError naming
// the operation and the path below the output directory.
func TestCaptureFaultOps(t *testing.T) {
	src := recordedSource(t)
	for _, c := range []struct {
		call, at, op string
		force        bool
	}{
		{"dup", "/", "open", false},
		{"mkdirat", "/sys", "mkdir", false},
		{"openat", "/sys", "open", false},
		{"openat", "/proc/cpuinfo", "create", false},
		{"write", "/proc/cpuinfo", "write", false},
		{"close", "/proc/cpuinfo", "close", false},
		{"symlinkat", "/etc/abs", "symlink", false},
		{"fstatat", "/proc/cpuinfo", "lstat", false},
		{"unlinkat", "/etc", "unlink", true},
	} {
		out := filepath.Join(t.TempDir(), "out")
		if c.force {
			mtWrite(t, filepath.Join(out, "etc"), []byte("a file in the way"))
		}
		err := src.WithFaults(sysFail(c.call, c.at, syscall.EIO)).CopyRecordedWith(out, CopyOptions{Force: c.force})
		var pe *fs.PathError
		want := filepath.Join(out, c.at)
		if !errors.As(err, &pe) || pe.Op != c.op || pe.Path != want || !errors.Is(err, syscall.EIO) {
			t.Errorf("%s of %s failing: %v; want a *fs.PathError{Op: %q, Path: %q} wrapping EIO", c.call, c.at, err, c.op, want)
		}
	}
}

// A directory read as a file is EISDIR before any read(2) of it (the type
// check comes first, as for a FIFO), from the FS and from a Dir.
func TestDirectoryReadNoRead(t *testing.T) {
	root, f := mtRoot(t)
	mkdir(t, filepath.Join(root, "etc/d"))
	reads := 0
	ff := f.WithFaults(onRead(func(string) { reads++ }))
	_, err := ff.ReadFile("/etc/d")
	wantErr(t, "ReadFile(dir)", err, syscall.EISDIR, "read", "/etc/d")
	_, err = ff.ReadHead("/etc/d", 10)
	wantErr(t, "ReadHead(dir)", err, syscall.EISDIR, "read", "/etc/d")
	d := ff.Dir("/etc")
	_, err = d.ReadFile("d")
	d.Close()
	wantErr(t, "Dir.ReadFile(dir)", err, syscall.EISDIR, "read", "/etc/d")
	if reads != 0 {
		t.Errorf("%d read(2) of a directory; want none", reads)
	}
}

// A file that shrinks after its size was taken and grows again between
// two reads (as a procfs file may) is read to its end: a short first read
// that is not the size taken does not end the file.
func TestReadFollowsAChangingFile(t *testing.T) {
	root, f := mtRoot(t)
	p := filepath.Join(root, "etc/changing")
	mtWrite(t, p, []byte("0123456789"))
	n := 0
	ff := f.WithFaults(onRead(func(string) {
		n++
		switch n {
		case 1: // after the fstat: shrink to 5 bytes
			if err := os.Truncate(p, 5); err != nil {
				t.Error(err)
			}
		case 2: // after the first read: 3 bytes more
			appendTo(t, p, "XYZ")
		}
	}))
	b, err := ff.ReadFile("/etc/changing")
	if err != nil || string(b) != "01234XYZ" {
		t.Errorf("ReadFile of a changing file = %q, %v; want 01234XYZ", b, err)
	}
}

// A sysfs-like file (one page, no blocks) that grew after its fstat: the
// full first read does not end it.
func TestReadSparsePageThatGrew(t *testing.T) {
	root, f := mtRoot(t)
	p := filepath.Join(root, "etc/page")
	mtWrite(t, p, nil)
	if err := os.Truncate(p, int64(os.Getpagesize())); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil || st.Blocks != 0 {
		t.Skipf("no sparse page here (%v, %d blocks)", err, st.Blocks)
	}
	n := 0
	ff := f.WithFaults(onRead(func(string) {
		if n++; n == 1 {
			appendTo(t, p, "tail")
		}
	}))
	b, err := ff.ReadFile("/etc/page")
	if err != nil || len(b) != os.Getpagesize()+4 || !strings.HasSuffix(string(b), "tail") {
		t.Errorf("ReadFile of a page that grew: %d bytes, %v; want %d ending in tail", len(b), err, os.Getpagesize()+4)
	}
}

// A Dir resolves its path once: its reads open names beneath its own
// descriptor, not through the root (the Open hook sees every openat2 below
// the root).
func TestDirResolvesOnce(t *testing.T) {
	root, f := mtRoot(t)
	if f.rootFD < 0 {
		t.Skip("no openat2 here")
	}
	for _, n := range []string{"a", "b", "c"} {
		mtWrite(t, filepath.Join(root, "sys/d", n), []byte(n))
	}
	opens := 0
	ff := f.WithFaults(&Faults{Open: func(string, int) error { opens++; return nil }})
	d := ff.Dir("/sys/d")
	defer d.Close()
	for _, n := range []string{"a", "b", "c"} {
		if b, err := d.ReadFile(n); err != nil || string(b) != n {
			t.Errorf("Dir.ReadFile(%s) = %q, %v", n, b, err)
		}
	}
	if opens != 1 {
		t.Errorf("%d opens through the root for a Dir and three reads; want 1", opens)
	}
}

// The live FS (root /) resolves with plain opens and holds no root
// descriptor; any other root holds one.
func TestLiveHoldsNoRootFD(t *testing.T) {
	live, err := New("/")
	if err != nil {
		t.Fatal(err)
	}
	if live.rootFD != -1 || !live.IsLive() {
		t.Errorf("New(/): rootFD %d, IsLive %v; want -1, true", live.rootFD, live.IsLive())
	}
	_, f := mtRoot(t)
	if f.IsLive() {
		t.Error("a temporary root is live")
	}
}

// Resolve through a component that is a file is ENOTDIR, not a path.
func TestResolveThroughAFile(t *testing.T) {
	root, f := mtRoot(t)
	mtWrite(t, filepath.Join(root, "etc/f"), []byte("x"))
	for _, fsys := range []*FS{f, {root: root, rootFD: -1}} {
		got, err := fsys.Resolve("/etc/f/x")
		if !errors.Is(err, syscall.ENOTDIR) {
			t.Errorf("Resolve(/etc/f/x) = %q, %v; want ENOTDIR", got, err)
		}
	}
}

// ReadString answers every read error (a missing file, a directory) with
// that error, from the FS and from a Dir: never "" without one.
func TestReadStringErrors(t *testing.T) {
	root, f := mtRoot(t)
	mkdir(t, filepath.Join(root, "etc/d"))
	d := f.Dir("/etc")
	defer d.Close()
	for _, c := range []struct {
		name  string
		errno syscall.Errno
	}{{"missing", syscall.ENOENT}, {"d", syscall.EISDIR}} {
		s, err := f.ReadString("/etc/" + c.name)
		if !errors.Is(err, c.errno) || s != "" {
			t.Errorf("FS.ReadString(%s) = %q, %v; want %v", c.name, s, err, c.errno)
		}
		s, err = d.ReadString(c.name)
		if !errors.Is(err, c.errno) || s != "" {
			t.Errorf("Dir.ReadString(%s) = %q, %v; want %v", c.name, s, err, c.errno)
		}
	}
}
