package hostfs

// Edges of the door read back: ReadInt's zero with every error, ReadDir
// across its batch size, a capture that must replace a link whose target
// only starts like the right one, and a capture whose entry in the way
// cannot be removed.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// ReadInt (of the FS and of a Dir) returns 0 with every error: a missing
// file, a value that is not a decimal integer, one beyond int64.
func TestReadIntZeroWithError(t *testing.T) {
	root, f := mtRoot(t)
	mtWrite(t, filepath.Join(root, "d/ok"), []byte(" -42\n"))
	mtWrite(t, filepath.Join(root, "d/word"), []byte("seven\n"))
	mtWrite(t, filepath.Join(root, "d/big"), []byte("9223372036854775808\n"))
	d := f.Dir("/d")
	defer d.Close()
	if n, err := f.ReadInt("/d/ok"); err != nil || n != -42 {
		t.Errorf("FS.ReadInt(ok) = %d, %v", n, err)
	}
	if n, err := d.ReadInt("ok"); err != nil || n != -42 {
		t.Errorf("Dir.ReadInt(ok) = %d, %v", n, err)
	}
	for _, name := range []string{"missing", "word", "big"} {
		n, err := f.ReadInt("/d/" + name)
		if err == nil || n != 0 || !strings.Contains(err.Error(), "/d/"+name) {
			t.Errorf("FS.ReadInt(%s) = %d, %v; want 0 and an error naming the file", name, n, err)
		}
		n, err = d.ReadInt(name)
		if err == nil || n != 0 || !strings.Contains(err.Error(), "/d/"+name) {
			t.Errorf("Dir.ReadInt(%s) = %d, %v; want 0 and an error naming the file", name, n, err)
		}
	}
}

// ReadDir lists every entry, sorted by name, in directories below, at and
// above its batch of 4096 entries; a missing directory is ErrNotExist.
func TestReadDirAcrossBatches(t *testing.T) {
	// Thousands of files: on a tmpfs when there is one.
	root := t.TempDir()
	if shm, err := os.MkdirTemp("/dev/shm", "hostfs-readdir-"); err == nil {
		root = shm
		t.Cleanup(func() { os.RemoveAll(shm) })
	}
	f, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 3, 4097} {
		dir := filepath.Join(root, fmt.Sprintf("d%d", n))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		want := make([]string, n)
		for i := range n {
			want[i] = fmt.Sprintf("e%05d", n-1-i) // created in reverse order
			if err := os.WriteFile(filepath.Join(dir, want[i]), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		slices.Sort(want)
		ents, err := f.ReadDir(fmt.Sprintf("/d%d", n))
		if err != nil {
			t.Fatalf("%d entries: %v", n, err)
		}
		got := make([]string, len(ents))
		for i, e := range ents {
			got[i] = e.Name()
		}
		if !slices.Equal(got, want) {
			t.Errorf("%d entries: ReadDir gave %d, sorted %v", n, len(got), slices.IsSorted(got))
		}
	}
	if _, err := f.ReadDir("/nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing directory: %v", err)
	}
}

// A link left in the output whose target only begins with the right one
// ("realx" for "real") is not right: the capture replaces it.
func TestCaptureReplacesLinkWithLongerTarget(t *testing.T) {
	root, f := mtRoot(t)
	mtWrite(t, filepath.Join(root, "real/file"), []byte("x"))
	if err := os.Symlink("real", filepath.Join(root, "via")); err != nil {
		t.Fatal(err)
	}
	f.Record()
	if _, err := f.ReadFile("/via/file"); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "out")
	mkdir(t, dst)
	for _, planted := range []string{"realx", "rea", "real/", "REAL"} {
		os.Remove(filepath.Join(dst, "via"))
		if err := os.Symlink(planted, filepath.Join(dst, "via")); err != nil {
			t.Fatal(err)
		}
		if err := f.CopyRecordedWith(dst, CopyOptions{Force: true}); err != nil {
			t.Fatalf("planted %q: %v", planted, err)
		}
		if tg, err := os.Readlink(filepath.Join(dst, "via")); err != nil || tg != "real" {
			t.Errorf("planted %q: link is %q, %v; want real", planted, tg, err)
		}
		if b, err := os.ReadFile(filepath.Join(dst, "real/file")); err != nil || string(b) != "x" {
			t.Errorf("planted %q: real/file %q, %v", planted, b, err)
		}
	}
}

// fsImmutable is FS_IMMUTABLE_FL of linux/fs.h (chattr +i).
const fsImmutable = 0x10

// lock makes p unchangeable for the test: chattr +i as root (root ignores
// permissions), mode perm otherwise (0555: a directory's entries cannot be
// removed; 0444: a file cannot be written), undone at cleanup. As root on
// a filesystem without attribute flags the test is skipped, unless
// GPUNODE_REQUIRE_CHATTR is set (.ci/run sets it as root), where the skip
// would hide the test and is a failure.
func lock(t *testing.T, p string, perm os.FileMode) {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		if err := os.Chmod(p, perm); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(p, fi.Mode().Perm()) })
		return
	}
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	flags, err := unix.IoctlGetInt(fd, unix.FS_IOC_GETFLAGS)
	if err == nil {
		err = unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, flags|fsImmutable)
	}
	if err != nil {
		if os.Getenv("GPUNODE_REQUIRE_CHATTR") != "" {
			t.Fatalf("GPUNODE_REQUIRE_CHATTR: chattr +i %s: %v", p, err)
		}
		t.Skipf("cannot chattr +i %s here (no attribute flags on this filesystem): %v", p, err)
	}
	t.Cleanup(func() {
		if fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
			unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, flags)
			unix.Close(fd)
		}
	})
}

// A capture with --force whose entry in the way cannot be removed fails
// with the unlink error naming that entry, and leaves the entry as it was.
func TestCaptureUnlinkRefused(t *testing.T) {
	src := recordedSource(t)
	dst := filepath.Join(t.TempDir(), "out")
	mtWrite(t, filepath.Join(dst, "proc/cpuinfo"), []byte("planted\n"))
	lock(t, filepath.Join(dst, "proc"), 0o555)
	err := src.CopyRecordedWith(dst, CopyOptions{Force: true})
	// The capture goes on past a failed path and joins the errors: find
	// the one of proc/cpuinfo among them.
	var unlink *fs.PathError
	var walk func(error)
	walk = func(e error) {
		var pe *fs.PathError
		switch {
		case e == nil:
		case errors.As(e, &pe) && strings.HasSuffix(pe.Path, "/proc/cpuinfo"):
			unlink = pe
		default:
			if j, ok := e.(interface{ Unwrap() []error }); ok {
				for _, x := range j.Unwrap() {
					walk(x)
				}
			}
		}
	}
	walk(err)
	if unlink == nil || unlink.Op != "unlink" || !(errors.Is(unlink, syscall.EPERM) || errors.Is(unlink, syscall.EACCES)) {
		t.Fatalf("capture over an unremovable entry: %v; want an unlink error on proc/cpuinfo", err)
	}
	// The directory it could not make below is named too, as its path in
	// the output.
	if msg := err.Error(); !strings.Contains(msg, "mkdir "+filepath.Join(dst, "proc/sys")+": ") {
		t.Errorf("capture error %q does not name %s", msg, filepath.Join(dst, "proc/sys"))
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "proc/cpuinfo")); string(b) != "planted\n" {
		t.Errorf("the entry in the way became %q", b)
	}
}

// CheckOutput and WriteOutput refuse an empty file name, as a write error.
func TestOutputEmptyName(t *testing.T) {
	for what, err := range map[string]error{
		"CheckOutput": CheckOutput("", OutputOptions{}),
		"WriteOutput": WriteOutput("", []byte("x"), 0o644, OutputOptions{Force: true}),
	} {
		var pe *fs.PathError
		if !errors.As(err, &pe) || pe.Op != "write" || !strings.Contains(err.Error(), "empty file name") {
			t.Errorf("%s(\"\") = %v, want a write error for the empty name", what, err)
		}
	}
}

// An FS remembers 64 refused paths; beyond that it counts them.
func TestRefusedAtItsBound(t *testing.T) {
	for _, c := range []struct{ fifos, listed, more int }{{63, 63, 0}, {64, 64, 0}, {65, 64, 1}, {67, 64, 3}} {
		root, f := mtRoot(t)
		for i := range c.fifos {
			if err := unix.Mkfifo(filepath.Join(root, fmt.Sprintf("p%03d", i)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for i := range c.fifos {
			if _, err := f.ReadFile(fmt.Sprintf("/p%03d", i)); !errors.Is(err, ErrNotRegular) {
				t.Fatalf("fifo %d: %v", i, err)
			}
		}
		_, _ = f.ReadFile("/p000") // a path already refused is not counted again
		got := f.Refused()
		want := c.listed
		if c.more > 0 {
			want++
		}
		if len(got) != want {
			t.Fatalf("%d FIFOs: %d lines, want %d", c.fifos, len(got), want)
		}
		if got[0] != "/p000: not a regular file (FIFO)" {
			t.Errorf("%d FIFOs: first line %q", c.fifos, got[0])
		}
		last := got[len(got)-1]
		if c.more > 0 && last != fmt.Sprintf("... and %d more host paths that are not regular files", c.more) {
			t.Errorf("%d FIFOs: last line %q", c.fifos, last)
		}
		if c.more == 0 && strings.HasPrefix(last, "...") {
			t.Errorf("%d FIFOs: %q with nothing beyond the bound", c.fifos, last)
		}
	}
}

// A path whose parent cannot be resolved (a link loop) is a "resolve"
// error naming the path; so is the root, which has no parent.
func TestParentResolveErrors(t *testing.T) {
	root, f := mtRoot(t)
	if err := os.Symlink("/loop", filepath.Join(root, "loop")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/loop/x", "/"} {
		_, err := f.Lstat(p)
		var pe *fs.PathError
		if !errors.As(err, &pe) || pe.Op != "resolve" || pe.Path != p {
			t.Errorf("Lstat(%s) = %v, want a resolve error on %s", p, err, p)
		}
	}
	// Chmod resolves the whole path (it follows links): the loop is a
	// resolve error too, and nothing is counted as a write.
	fl := &Faults{}
	err := f.WithFaults(fl).Chmod("/loop/x", 0o600)
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Op != "resolve" || pe.Path != "/loop/x" || fl.Count() != 0 {
		t.Errorf("Chmod through a loop = %v (%d writes), want a resolve error and no write", err, fl.Count())
	}
}

// Temporary names: a leading dot and ".gpunode-tmp-", both.
func TestIsTempNameLiterals(t *testing.T) {
	for n, want := range map[string]bool{
		".x.gpunode-tmp-1":         true,
		".gpunode-tmp-":            true,
		"x.gpunode-tmp-1":          false,
		".x.gpunode-tmp":           false,
		".x":                       false,
		"x":                        false,
		".a.journal.gpunode-tmp-w": true,
	} {
		if IsTempName(n) != want {
			t.Errorf("IsTempName(%q) = %v", n, !want)
		}
	}
	if got := TempName("/etc/x.conf", "w"); got != "/etc/.x.conf.gpunode-tmp-w" || !IsTempName(filepath.Base(got)) {
		t.Errorf("TempName = %q", got)
	}
}

// SymlinkVia replaces a stale file at its temporary name; a temporary name
// that cannot be removed (a directory with something in it) is an error
// naming it, and the link is not made.
func TestSymlinkViaStaleTemp(t *testing.T) {
	root, f := mtRoot(t)
	mkdir(t, filepath.Join(root, "d"))
	mtWrite(t, filepath.Join(root, "d/.l.tmp"), []byte("stale"))
	if err := f.SymlinkVia("target", "/d/l", "/d/.l.tmp"); err != nil {
		t.Fatal(err)
	}
	if tg, err := os.Readlink(filepath.Join(root, "d/l")); err != nil || tg != "target" {
		t.Errorf("link %q, %v", tg, err)
	}
	if _, err := os.Lstat(filepath.Join(root, "d/.l.tmp")); !os.IsNotExist(err) {
		t.Errorf("temporary name left: %v", err)
	}
	mtWrite(t, filepath.Join(root, "d/.m.tmp/inside"), []byte("x"))
	err := f.SymlinkVia("target", "/d/m", "/d/.m.tmp")
	if err == nil || !strings.Contains(err.Error(), "/d/.m.tmp") {
		t.Errorf("a temporary name in the way: %v, want an error naming it", err)
	}
	if _, err := os.Lstat(filepath.Join(root, "d/m")); !os.IsNotExist(err) {
		t.Errorf("the link was made anyway: %v", err)
	}
}

// The directories of a capture are made with mode 0755 (under umask 0).
func TestCaptureDirMode(t *testing.T) {
	src := recordedSource(t)
	old := unix.Umask(0)
	defer unix.Umask(old)
	dst := filepath.Join(t.TempDir(), "out")
	if err := src.CopyRecordedWith(dst, CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	n := 0
	err := filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || p == dst {
			return err
		}
		n++
		if fi, err := d.Info(); err != nil || fi.Mode().Perm() != 0o755 {
			t.Errorf("%s: %v %v, want mode 0755", p, fi.Mode(), err)
		}
		return nil
	})
	if err != nil || n < 3 {
		t.Fatalf("walked %d directories: %v", n, err)
	}
}

// A file of known size costs one read(2): empty, small, exactly one page,
// big, big with no blocks (sparse), and a short attribute under /sys.
func TestOneReadForAKnownSize(t *testing.T) {
	root, base := mtRoot(t)
	files := map[string][]byte{
		"empty": {},
		"small": []byte(strings.Repeat("s", 100)),
		"page":  []byte(strings.Repeat("p", 4096)),
		"big":   []byte(strings.Repeat("b", 10000)),
	}
	for n, b := range files {
		mtWrite(t, filepath.Join(root, n), b)
	}
	sparse := filepath.Join(root, "sparse")
	mtWrite(t, sparse, nil)
	if err := os.Truncate(sparse, 10000); err != nil {
		t.Fatal(err)
	}
	files["sparse"] = make([]byte, 10000)
	mtWrite(t, filepath.Join(root, "sys/attr"), []byte("42\n"))
	files["sys/attr"] = []byte("42\n")
	reads := map[string]int{}
	f := base.WithFaults(onRead(func(p string) { reads[p]++ }))
	for n, want := range files {
		got, err := f.ReadFile("/" + n)
		if err != nil || string(got) != string(want) {
			t.Errorf("%s: %d bytes, %v; want %d", n, len(got), err, len(want))
		}
		if reads["/"+n] != 1 {
			t.Errorf("%s: %d reads, want 1", n, reads["/"+n])
		}
	}
	var st unix.Stat_t
	if err := unix.Stat(sparse, &st); err == nil && st.Blocks != 0 {
		t.Logf("sparse file has %d blocks here: the no-block case is not covered", st.Blocks)
	}
	// One page with no blocks looks like a sysfs attribute; its full
	// first read is not the end, and it is read whole.
	page := filepath.Join(root, "sparse-page")
	mtWrite(t, page, nil)
	if err := os.Truncate(page, 4096); err != nil {
		t.Fatal(err)
	}
	if got, err := f.ReadFile("/sparse-page"); err != nil || len(got) != 4096 || strings.Trim(string(got), "\x00") != "" {
		t.Errorf("sparse page: %d bytes, %v", len(got), err)
	}
}

// ReadHead reads at most n bytes: none for 0 or less.
func TestReadHeadBounds(t *testing.T) {
	root, f := mtRoot(t)
	mtWrite(t, filepath.Join(root, "f"), []byte("abcdef"))
	for n, want := range map[int]string{-1: "", 0: "", 1: "a", 5: "abcde", 6: "abcdef", 7: "abcdef"} {
		got, err := f.ReadHead("/f", n)
		if err != nil || string(got) != want {
			t.Errorf("ReadHead(%d) = %q, %v; want %q", n, got, err, want)
		}
	}
}

// A listed directory is captured as placeholders of every entry, in any
// order of kinds: directories as empty directories, files as empty files,
// links as links with their targets.
func TestCapturePlaceholders(t *testing.T) {
	root, f := mtRoot(t)
	d := filepath.Join(root, "sys/class/x")
	for _, sub := range []string{"a-dir", "c-dir"} {
		mkdir(t, filepath.Join(d, sub))
	}
	for _, file := range []string{"b-file", "d-file"} {
		mtWrite(t, filepath.Join(d, file), []byte("content"))
	}
	if err := os.Symlink("../y", filepath.Join(d, "e-link")); err != nil {
		t.Fatal(err)
	}
	f.Record()
	if _, err := f.ReadDirNames("/sys/class/x"); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "out")
	if err := f.CopyRecorded(dst); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dst, "sys/class/x")
	for name, want := range map[string]fs.FileMode{"a-dir": fs.ModeDir, "b-file": 0, "c-dir": fs.ModeDir, "d-file": 0, "e-link": fs.ModeSymlink} {
		fi, err := os.Lstat(filepath.Join(out, name))
		if err != nil || fi.Mode().Type() != want {
			t.Errorf("%s: %v %v, want type %v", name, fi, err, want)
			continue
		}
		if want == 0 && fi.Size() != 0 {
			t.Errorf("%s: %d bytes, want an empty placeholder", name, fi.Size())
		}
	}
	if tg, err := os.Readlink(filepath.Join(out, "e-link")); err != nil || tg != "../y" {
		t.Errorf("e-link -> %q, %v", tg, err)
	}
}

// Remove: an existing file goes (one unlink, and the directory is synced);
// a missing one is no error and no write; a faulted directory sync is an
// "fsync dir" error naming the path.
func TestRemoveWritesAndNames(t *testing.T) {
	root, f := mtRoot(t)
	mtWrite(t, filepath.Join(root, "a"), []byte("x"))
	fl := &Faults{}
	g := f.WithFaults(fl)
	if err := g.Remove("/a"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(root, "a")); !os.IsNotExist(err) {
		t.Errorf("a still there: %v", err)
	}
	if log := strings.Join(fl.Log(), "; "); log != "1 unlink /a; 2 fsync /" {
		t.Errorf("operations %q", log)
	}
	if err := g.Remove("/a"); err != nil || fl.Count() != 2 {
		t.Errorf("removing a missing file: %v, %d operations", err, fl.Count())
	}
	// A directory with something in it is not removed: an error.
	mtWrite(t, filepath.Join(root, "d/in"), []byte("x"))
	if err := f.Remove("/d"); err == nil || !strings.Contains(err.Error(), "/d") {
		t.Errorf("removing a non-empty directory: %v", err)
	}
	mtWrite(t, filepath.Join(root, "b"), []byte("x"))
	err := f.WithFaults(&Faults{At: 1, Only: []Op{OpFsync}, Err: syscall.EIO}).Remove("/b")
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Op != "fsync dir" || pe.Path != "/b" || !errors.Is(err, syscall.EIO) {
		t.Errorf("faulted directory sync: %v", err)
	}
}

// Real of the root directory itself is "/".
func TestDirRealOfTheRoot(t *testing.T) {
	_, f := mtRoot(t)
	d := f.Dir("/")
	defer d.Close()
	if r, err := d.Real(); err != nil || r != "/" {
		t.Errorf("Real() = %q, %v", r, err)
	}
}

// A listed directory's placeholder that cannot be made (a directory is in
// the way of a file) fails the capture, naming it.
func TestCapturePlaceholderInTheWay(t *testing.T) {
	src := recordedSource(t)
	dst := filepath.Join(t.TempDir(), "out")
	mkdir(t, filepath.Join(dst, "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/msi_irqs/40/x"))
	err := src.CopyRecordedWith(dst, CopyOptions{Force: true})
	if err == nil || !strings.Contains(err.Error(), "msi_irqs/40") {
		t.Fatalf("capture with a directory in the way of a placeholder: %v", err)
	}
}

// Writable names what is not writable: the directory, or the file itself,
// as a "write access" error on that path.
func TestWritableNamesWhat(t *testing.T) {
	root, f := mtRoot(t)
	mtWrite(t, filepath.Join(root, "d/f"), []byte("x"))
	mtWrite(t, filepath.Join(root, "e/g"), []byte("x"))
	if err := f.Writable("/d/f"); err != nil {
		t.Fatalf("a writable file: %v", err)
	}
	lock(t, filepath.Join(root, "d/f"), 0o444)
	lock(t, filepath.Join(root, "e"), 0o555)
	for p, where := range map[string]string{"/d/f": "/d/f", "/e/g": "/e"} {
		err := f.Writable(p)
		var pe *fs.PathError
		if !errors.As(err, &pe) || pe.Op != "write access" || pe.Path != where {
			t.Errorf("Writable(%s) = %v, want a write access error on %s", p, err, where)
		}
	}
}

// The kinds of recorded accesses are the literals "file", "dir", "link"
// and "stat".
func TestRecordedKinds(t *testing.T) {
	root, f := mtRoot(t)
	mtWrite(t, filepath.Join(root, "d/f"), []byte("x"))
	if err := os.Symlink("f", filepath.Join(root, "d/l")); err != nil {
		t.Fatal(err)
	}
	f.Record()
	if _, err := f.ReadFile("/d/f"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadDirNames("/d"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Readlink("/d/l"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Lstat("/d/s"); err == nil {
		t.Fatal("Lstat of a missing file succeeded")
	}
	got := map[string]string{}
	for _, a := range f.Recorded() {
		got[a.Path] += a.Kind + " "
	}
	for p, want := range map[string]string{"/d/f": "file", "/d": "dir", "/d/l": "link", "/d/s": "stat"} {
		if got[p] != want+" " {
			t.Errorf("%s recorded as %q, want %q", p, got[p], want)
		}
	}
}
