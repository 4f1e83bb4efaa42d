package hostfs

// Last edges: openat2's answers, a big file that changes between reads,
// the names of counted operations, the modes of a lock file and of
// WriteOutput's temporary file, and MissingDirs through a file.

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// openat2 below a root: ENOSYS and EPERM (no openat2, or a seccomp filter
// refusing it) fall back to resolving by hand; any other answer is the
// open's error.
func TestOpenat2Answers(t *testing.T) {
	root, f := mtRoot(t)
	if f.rootFD == noFD {
		t.Skip("no openat2 here")
	}
	mtWrite(t, filepath.Join(root, "etc/f"), []byte("v"))
	for _, c := range []struct {
		errno syscall.Errno
		ok    bool
	}{{syscall.ENOSYS, true}, {syscall.EPERM, true}, {syscall.EIO, false}, {syscall.EACCES, false}} {
		ff := f.WithFaults(&Faults{Open: func(string, int) error { return c.errno }})
		b, err := ff.ReadFile("/etc/f")
		if c.ok && (err != nil || string(b) != "v") {
			t.Errorf("openat2 %v: %q, %v; want the file read by hand", c.errno, b, err)
		}
		if !c.ok {
			wantErr(t, "openat2 "+c.errno.Error(), err, c.errno, "open", "/etc/f")
		}
	}
}

// A big file (one buffer of its size) that shrinks after its fstat and
// grows again between two reads is read to its end.
func TestReadFollowsAChangingBigFile(t *testing.T) {
	root, f := mtRoot(t)
	p := filepath.Join(root, "etc/big")
	mtWrite(t, p, []byte(strings.Repeat("b", 3*oneRead)))
	n := 0
	ff := f.WithFaults(onRead(func(string) {
		n++
		switch n {
		case 1:
			if err := os.Truncate(p, 5000); err != nil {
				t.Error(err)
			}
		case 2:
			appendTo(t, p, "XYZ")
		}
	}))
	b, err := ff.ReadFile("/etc/big")
	if err != nil || len(b) != 5003 || !strings.HasSuffix(string(b), "bXYZ") {
		t.Errorf("ReadFile of a changing big file: %d bytes, %v; want 5003 ending in XYZ", len(b), err)
	}
}

// The log of counted operations names each by its literal name.
func TestFaultLogNames(t *testing.T) {
	root, f := mtRoot(t)
	mkdir(t, filepath.Join(root, "etc"))
	mtWrite(t, filepath.Join(root, "sys/knob"), []byte("0"))
	fl := &Faults{NoSync: true}
	ff := f.WithFaults(fl)
	steps := []error{
		ff.WriteFileAtomic("/etc/a", []byte("x"), 0o644),
		ff.Mkdir("/etc/d", 0o755),
		ff.Symlink("a", "/etc/l"),
		ff.Chmod("/etc/a", 0o600),
		ff.Lchown("/etc/a", os.Getuid(), os.Getgid()),
		ff.Remove("/etc/l"),
		ff.WriteString("/sys/knob", "1"),
	}
	for i, err := range steps {
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	log := strings.Join(fl.Log(), "\n")
	for _, want := range []string{" open-for-write /etc/", " write /etc/", " chmod /etc/", " fsync /etc", " rename /etc/a", " mkdir /etc/d", " symlink /etc/", " chown /etc/a", " unlink /etc/l", " open-for-write /sys/knob", " write /sys/knob"} {
		if !strings.Contains(log, want) {
			t.Errorf("no %q in the log:\n%s", want, log)
		}
	}
}

// A lock file is created with mode 0600 (less the umask); a FIFO in its
// place is refused, not opened for the lock.
func TestOpenLockModeAndFIFO(t *testing.T) {
	root, f := mtRoot(t)
	mkdir(t, filepath.Join(root, "run"))
	mask := syscall.Umask(0)
	syscall.Umask(mask)
	lk, err := f.OpenLock("/run/lock")
	if err != nil {
		t.Fatal(err)
	}
	lk.Close()
	if fi, err := os.Lstat(filepath.Join(root, "run/lock")); err != nil || fi.Mode() != fs.FileMode(0o600&^mask) {
		t.Errorf("lock file: %v, %v; want mode %v", fi.Mode(), err, fs.FileMode(0o600&^mask))
	}
	if err := unix.Mkfifo(filepath.Join(root, "run/fifo"), 0o600); err != nil {
		t.Skip(err)
	}
	lk, err = f.OpenLock("/run/fifo")
	if lk != nil {
		lk.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "/run/fifo") || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("OpenLock(fifo) = %v; want it refused naming it", err)
	}
}

// WriteOutput's temporary file is private (0600, less the umask) until
// the final mode is applied.
func TestWriteOutputTempPrivate(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "out")
	mask := syscall.Umask(0)
	syscall.Umask(mask)
	checked := false
	fl := &Faults{Sys: func(call, p string) error {
		if call != "write" {
			return nil
		}
		m, err := filepath.Glob(filepath.Join(dir, ".out.gpunode-tmp-*"))
		if err != nil || len(m) != 1 {
			t.Errorf("temporary files %q, %v; want one", m, err)
			return nil
		}
		fi, err := os.Lstat(m[0])
		if err != nil || fi.Mode() != fs.FileMode(0o600&^mask) {
			t.Errorf("temporary file %s: %v, %v; want mode %v", m[0], fi.Mode(), err, fs.FileMode(0o600&^mask))
		}
		checked = true
		return nil
	}}
	if err := WriteOutput(name, []byte("x"), 0o644, OutputOptions{Faults: fl}); err != nil || !checked {
		t.Fatalf("WriteOutput: %v (temporary file checked: %v)", err, checked)
	}
}

// MkdirAll of a file: a *fs.PathError{Op: "mkdir"} naming it.
func TestMissingDirsThroughAFile(t *testing.T) {
	root, f := mtRoot(t)
	mtWrite(t, filepath.Join(root, "etc/f"), []byte("x"))
	_, err := f.MkdirAll("/etc/f", 0o755)
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Op != "mkdir" || pe.Path != "/etc/f" {
		t.Errorf("MkdirAll of a file: %v; want *fs.PathError{Op: mkdir, Path: /etc/f}", err)
	}
}

// WriteString's counted operations failing name the system call: the
// open and the write of a kernel file.
func TestWriteStringFaultOps(t *testing.T) {
	root, f := mtRoot(t)
	mtWrite(t, filepath.Join(root, "sys/knob"), []byte("0"))
	for _, c := range []struct {
		op   Op
		name string
	}{{OpOpenWrite, "open"}, {OpWrite, "write"}} {
		err := f.WithFaults(&Faults{At: 1, Only: []Op{c.op}, Err: syscall.EIO}).WriteString("/sys/knob", "1")
		var pe *fs.PathError
		if !errors.As(err, &pe) || pe.Op != c.name || pe.Path != "/sys/knob" || !errors.Is(err, syscall.EIO) {
			t.Errorf("faulted %s: %v; want *fs.PathError{Op: %s, Path: /sys/knob} wrapping EIO", c.op, err, c.name)
		}
	}
}

// Making the output directory failing (mkdirat) is a *fs.PathError{Op:
// "mkdir"} naming it; nothing is created.
func TestCaptureOutputMkdirFails(t *testing.T) {
	src := recordedSource(t)
	base := t.TempDir()
	out := filepath.Join(base, "out")
	err := src.WithFaults(sysFail("mkdirat", out, syscall.EIO)).CopyRecorded(out)
	wantErr(t, "mkdirat of the output", err, syscall.EIO, "mkdir", out)
	if got := dirNames(t, base); got != "" {
		t.Errorf("%q created", got)
	}
}

// A path accessed several ways keeps its strongest record, in either
// order: a file read over a listing over a link read over a stat.
func TestRecordStrongestKind(t *testing.T) {
	root, _ := mtRoot(t)
	mkdir(t, filepath.Join(root, "d"))
	access := map[string]func(*FS){
		AccessFile: func(f *FS) { f.ReadFile("/d") },
		AccessDir:  func(f *FS) { f.ReadDirNames("/d") },
		AccessLink: func(f *FS) { f.Readlink("/d") },
		AccessStat: func(f *FS) { f.Exists("/d") },
	}
	order := []string{AccessStat, AccessLink, AccessDir, AccessFile}
	for i, weak := range order {
		for _, strong := range order[i:] {
			for _, seq := range [][2]string{{weak, strong}, {strong, weak}} {
				f, err := New(root)
				if err != nil {
					t.Fatal(err)
				}
				f.Record()
				access[seq[0]](f)
				access[seq[1]](f)
				rec := f.Recorded()
				if len(rec) != 1 || rec[0].Path != "/d" || rec[0].Kind != strong {
					t.Errorf("%s then %s: recorded %v; want /d as %s", seq[0], seq[1], rec, strong)
				}
			}
		}
	}
}

// A stale temporary file (left by a killed run) is removed and the write
// goes on: the file holds the new bytes, and the temporary is gone.
func TestWriteFileViaStaleTempThenWrites(t *testing.T) {
	fsys, root := newWriteFS(t)
	stale := filepath.Join(root, "etc/.s.conf.gpunode-tmp-9")
	if err := os.WriteFile(stale, []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := fsys.WriteFileVia("/etc/s.conf", TempName("/etc/s.conf", "9"), []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	checkUnchanged(t, filepath.Join(root, "etc/s.conf"), []byte("new"))
	if _, err := os.Lstat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale temporary file still there: %v", err)
	}
}

// nextFD is the number the next open gets: the lowest free descriptor.
func nextFD(t *testing.T) int {
	t.Helper()
	fd, err := unix.Open(os.DevNull, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	return fd
}

// Resolve, the fast path and the slow, holds no descriptor once it has
// answered: the next free descriptor is the same after a hundred calls.
func TestResolveLeaksNoDescriptor(t *testing.T) {
	root, f := mtRoot(t)
	mtWrite(t, filepath.Join(root, "real/f"), nil)
	if err := os.Symlink("/real", filepath.Join(root, "l")); err != nil {
		t.Fatal(err)
	}
	before := nextFD(t)
	for range 100 {
		for _, p := range []string{"/l/f", "/missing/x"} {
			if _, err := f.Resolve(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	if after := nextFD(t); after != before {
		t.Errorf("next descriptor %d after 200 Resolve calls, %d before: a descriptor leaks", after, before)
	}
}

// A root named through a symbolic link: the kernel's answer for the fast
// path names the real directory, which does not start with the root as
// given; Resolve still answers host paths.
func TestResolveUnderALinkedRoot(t *testing.T) {
	base := t.TempDir()
	mtWrite(t, filepath.Join(base, "real/real/f"), nil)
	if err := os.Symlink("/real", filepath.Join(base, "real/l")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(base, "root")); err != nil {
		t.Fatal(err)
	}
	f, err := New(filepath.Join(base, "root"))
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"/l/f": "/real/f", "/real": "/real", "/": "/"} {
		if got, err := f.Resolve(p); err != nil || got != want {
			t.Errorf("Resolve(%s) below a linked root = %q, %v; want %s", p, got, err, want)
		}
	}
}
