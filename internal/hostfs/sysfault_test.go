package hostfs

// Faults.Sys at work: the errors of system calls on descriptors the FS
// holds (fstat, getdents), of WriteOutput's calls and of a capture's output
// side are returned, wrapped and naming the path, and leave nothing behind;
// the races of a check-then-act (an entry appearing or vanishing between
// two calls) are decided as the doc says. Also Dir's names cleaned as FS's.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// sysFail returns Faults whose Sys hook answers errno to call on path p
// (any path when p is ""), every time.
func sysFail(call, p string, errno syscall.Errno) *Faults {
	return &Faults{Sys: func(c, q string) error {
		if c == call && (p == "" || q == p) {
			return errno
		}
		return nil
	}}
}

// eintrs returns Faults whose Sys hook answers EINTR to the first k
// calls named call, and lets every other call through.
func eintrs(call string, k int) *Faults {
	n := 0
	return &Faults{Sys: func(c, _ string) error {
		if c == call && n < k {
			n++
			return syscall.EINTR
		}
		return nil
	}}
}

// appendTo appends s to the file at p (a test's file, grown under a read).
func appendTo(t *testing.T, p, s string) {
	t.Helper()
	fh, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = fh.WriteString(s)
		if cerr := fh.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		t.Error(err)
	}
}

// onRead returns Faults whose Sys hook calls fn with the host path before
// each read(2) of a file's contents, and lets the read through.
func onRead(fn func(p string)) *Faults {
	return &Faults{Sys: func(call, p string) error {
		if call == "read" {
			fn(p)
		}
		return nil
	}}
}

// wantErr checks that err wraps errno, is (or wraps) a *fs.PathError of op
// when op is set, and names p.
func wantErr(t *testing.T, what string, err error, errno syscall.Errno, op, p string) {
	t.Helper()
	if !errors.Is(err, errno) {
		t.Errorf("%s: %v; want an error wrapping %v", what, err, errno)
		return
	}
	if !strings.Contains(err.Error(), p) {
		t.Errorf("%s: %q does not name %s", what, err, p)
	}
	if op != "" {
		var pe *fs.PathError
		if !errors.As(err, &pe) || pe.Op != op || pe.Path != p {
			t.Errorf("%s: %#v; want a *fs.PathError{Op: %q, Path: %q}", what, err, op, p)
		}
	}
}

// The read side's fstat and getdents fail with the injected errno, in
// every reader that makes them.
func TestSysFaultsReadSide(t *testing.T) {
	root, f := mtRoot(t)
	mtWrite(t, filepath.Join(root, "etc/f"), []byte("value\n"))
	mtWrite(t, filepath.Join(root, "sys/empty"), nil)
	mtWrite(t, filepath.Join(root, "sys/d/a"), []byte("1\n"))
	mtWrite(t, filepath.Join(root, "var/lock/l"), nil)

	ff := f.WithFaults(sysFail("fstat", "", syscall.EIO))
	_, err := ff.ReadFile("/etc/f")
	wantErr(t, "ReadFile", err, syscall.EIO, "fstat", "/etc/f")
	_, err = ff.ReadHead("/etc/f", 3)
	wantErr(t, "ReadHead", err, syscall.EIO, "fstat", "/etc/f")
	// A short read of a /sys file needs no fstat; an empty one does.
	if b, err := ff.ReadFile("/sys/d/a"); err != nil || string(b) != "1\n" {
		t.Errorf("ReadFile(/sys/d/a) with fstat failing = %q, %v; want it read without fstat", b, err)
	}
	_, err = ff.ReadFile("/sys/empty")
	wantErr(t, "ReadFile(/sys/empty)", err, syscall.EIO, "fstat", "/sys/empty")
	d := ff.Dir("/etc")
	_, err = d.ReadFile("f")
	d.Close()
	wantErr(t, "Dir.ReadFile", err, syscall.EIO, "fstat", "/etc/f")
	lk, err := ff.OpenLock("/var/lock/l")
	if lk != nil {
		lk.Close()
	}
	wantErr(t, "OpenLock", err, syscall.EIO, "stat", "/var/lock/l")

	fg := f.WithFaults(sysFail("getdents", "", syscall.EIO))
	_, err = fg.ReadDirNames("/sys/d")
	wantErr(t, "ReadDirNames", err, syscall.EIO, "readdirent", "/sys/d")
	d = fg.Dir("/sys")
	_, err = d.ReadDirNames("d")
	d.Close()
	wantErr(t, "Dir.ReadDirNames", err, syscall.EIO, "readdirent", "/sys/d")
}

// A getdents interrupted by a signal is repeated: 64 times in a row
// (maxEINTR) still lists the directory, 65 times is the EINTR error.
func TestGetdentsEINTRBound(t *testing.T) {
	root, f := mtRoot(t)
	mtWrite(t, filepath.Join(root, "sys/d/a"), nil)
	mtWrite(t, filepath.Join(root, "sys/d/b"), nil)
	for _, c := range []struct {
		eintr int
		ok    bool
	}{{1, true}, {64, true}, {65, false}} {
		ff := f.WithFaults(eintrs("getdents", c.eintr))
		names, err := ff.ReadDirNames("/sys/d")
		if c.ok && (err != nil || strings.Join(names, ",") != "a,b") {
			t.Errorf("%d EINTRs: %q, %v; want a,b", c.eintr, names, err)
		}
		if !c.ok {
			wantErr(t, "65 EINTRs", err, syscall.EINTR, "readdirent", "/sys/d")
		}
	}
}

// dirNames lists dir, for "nothing left behind".
func dirNames(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return strings.Join(out, ",")
}

// Each of WriteOutput's calls failing is its error, naming the file, and
// leaves the directory as it was: no temporary file, no new file, an old
// file unchanged.
func TestWriteOutputSysFaults(t *testing.T) {
	for _, call := range []string{"open", "write", "fchmod", "fsync", "close", "renameat2"} {
		dir := t.TempDir()
		name := filepath.Join(dir, "out.html")
		err := WriteOutput(name, []byte("new"), 0o644, OutputOptions{Faults: sysFail(call, name, syscall.EIO)})
		wantErr(t, call, err, syscall.EIO, "", name)
		if got := dirNames(t, dir); got != "" {
			t.Errorf("%s failed: left %q behind", call, got)
		}
	}
	// Over an existing file the rename is the plain one.
	for _, call := range []string{"open", "write", "fchmod", "fsync", "close", "rename"} {
		dir := t.TempDir()
		name := filepath.Join(dir, "out.html")
		mtWrite(t, name, []byte("old"))
		err := WriteOutput(name, []byte("new"), 0o644, OutputOptions{Faults: sysFail(call, name, syscall.EIO)})
		wantErr(t, call+" over a file", err, syscall.EIO, "", name)
		if got := dirNames(t, dir); got != "out.html" {
			t.Errorf("%s failed over a file: directory holds %q", call, got)
		}
		checkUnchanged(t, name, []byte("old"))
	}
	// The directory's fsync comes after the rename: its error is
	// returned, the file is in place; EINVAL (a filesystem that cannot
	// fsync a directory) is no error.
	for _, c := range []struct {
		errno syscall.Errno
		fails bool
	}{{syscall.EIO, true}, {syscall.EINVAL, false}} {
		dir := t.TempDir()
		name := filepath.Join(dir, "out.html")
		// The directory as WriteOutput splits it off the name.
		err := WriteOutput(name, []byte("new"), 0o644, OutputOptions{Faults: sysFail("fsync", dir+string(filepath.Separator), c.errno)})
		if c.fails {
			wantErr(t, "fsync of the directory", err, c.errno, "", name)
		} else if err != nil {
			t.Errorf("directory fsync %v: %v; want no error", c.errno, err)
		}
		checkUnchanged(t, name, []byte("new"))
	}
}

// The answers of renameat2: EINVAL and ENOSYS (no RENAME_NOREPLACE) fall
// back to a plain rename; any other error is the write's error.
func TestWriteOutputRenameat2Answers(t *testing.T) {
	for _, c := range []struct {
		errno syscall.Errno
		ok    bool
	}{{syscall.EINVAL, true}, {syscall.ENOSYS, true}, {syscall.EPERM, false}, {syscall.EXDEV, false}} {
		dir := t.TempDir()
		name := filepath.Join(dir, "out")
		err := WriteOutput(name, []byte("new"), 0o640, OutputOptions{Faults: sysFail("renameat2", name, c.errno)})
		if c.ok {
			if err != nil {
				t.Errorf("renameat2 %v: %v; want the plain rename", c.errno, err)
			}
			checkUnchanged(t, name, []byte("new"))
			if fi, err := os.Stat(name); err != nil || fi.Mode().Perm() != 0o640 {
				t.Errorf("renameat2 %v: mode %v, %v; want 0640", c.errno, fi.Mode(), err)
			}
			continue
		}
		wantErr(t, "renameat2", err, c.errno, "", name)
		if got := dirNames(t, dir); got != "" {
			t.Errorf("renameat2 %v: left %q behind", c.errno, got)
		}
	}
}

// Something appears at the path between WriteOutput's look and its
// rename: a regular file is replaced, a FIFO refused and left alone, a
// link refused unless forced and then replaced, never followed.
func TestWriteOutputRaceAtRename(t *testing.T) {
	for _, c := range []struct {
		what  string
		plant func(string) error
		force bool
		ok    bool
	}{
		{"file", func(p string) error { return os.WriteFile(p, []byte("theirs"), 0o644) }, false, true},
		{"fifo", func(p string) error { return unix.Mkfifo(p, 0o644) }, false, false},
		{"link", func(p string) error { return os.Symlink("elsewhere", p) }, false, false},
		{"forced link", func(p string) error { return os.Symlink("elsewhere", p) }, true, true},
	} {
		dir := t.TempDir()
		name := filepath.Join(dir, "out")
		planted := 0
		fl := &Faults{Sys: func(call, p string) error {
			if call == "renameat2" {
				planted++
				return c.plant(name)
			}
			return nil
		}}
		err := WriteOutput(name, []byte("new"), 0o644, OutputOptions{Force: c.force, Faults: fl})
		if planted != 1 {
			t.Errorf("%s: renameat2 made %d times; want once", c.what, planted)
		}
		if got := dirNames(t, dir); got != "out" {
			t.Errorf("%s: directory holds %q; want only out", c.what, got)
		}
		fi, lerr := os.Lstat(name)
		if c.ok {
			if err != nil || lerr != nil || !fi.Mode().IsRegular() {
				t.Errorf("%s appeared: %v (%v, %v); want it replaced by the file", c.what, err, fi, lerr)
			}
			checkUnchanged(t, name, []byte("new"))
			continue
		}
		if !errors.Is(err, ErrRefusedOutput) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s appeared: %v; want ErrRefusedOutput naming %s", c.what, err, name)
		}
		if lerr != nil || fi.Mode().IsRegular() {
			t.Errorf("%s appeared: replaced (%v, %v)", c.what, fi, lerr)
		}
	}
}

// A file at the path before the write is checked again right before the
// plain rename: a FIFO swapped in meanwhile is refused.
func TestWriteOutputSwapBeforeRename(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "out")
	mtWrite(t, name, []byte("old"))
	fl := &Faults{Sys: func(call, p string) error {
		if call == "close" {
			if err := os.Remove(name); err != nil {
				return err
			}
			return unix.Mkfifo(name, 0o644)
		}
		return nil
	}}
	err := WriteOutput(name, []byte("new"), 0o644, OutputOptions{Faults: fl})
	var re *RefusedOutputError
	if !errors.As(err, &re) || re.Kind != "FIFO" {
		t.Errorf("a FIFO swapped in before the rename: %v; want it refused", err)
	}
	if got := dirNames(t, dir); got != "out" {
		t.Errorf("directory holds %q; want only out", got)
	}
}

// treeOf describes every entry below dir: type, link target, contents.
func treeOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			out[rel] = "link " + l
			return err
		case e.IsDir():
			out[rel] = "dir"
		default:
			b, err := os.ReadFile(p)
			out[rel] = "file " + string(b)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Every system call of a capture's output side failing, one at a time
// (each call on each path at its first occurrence):
// the capture either fails with that error, naming a path in the output
// directory, or (where the call only looked) completes exactly as a
// capture without faults. Into a new directory, and with --force into one
// where links and files stand in the way.
func TestCaptureSysFaultSweep(t *testing.T) {
	src := recordedSource(t)
	plant := func(t *testing.T, out string) {
		mkdir(t, filepath.Join(out, "proc/sys"))
		if err := os.Symlink(t.TempDir(), filepath.Join(out, "proc/sys/vm")); err != nil {
			t.Fatal(err)
		}
		mtWrite(t, filepath.Join(out, "etc"), []byte("a file in the way"))
		mkdir(t, filepath.Join(out, "proc/cpuinfo"))
		mtWrite(t, filepath.Join(out, "proc/cpuinfo/x"), nil)
	}
	for _, force := range []bool{false, true} {
		base := t.TempDir()
		ref := filepath.Join(base, "ref")
		var calls []string
		counter := &Faults{Sys: func(call, p string) error {
			calls = append(calls, call+" "+p)
			return nil
		}}
		if force {
			plant(t, ref)
		}
		if err := src.WithFaults(counter).CopyRecordedWith(ref, CopyOptions{Force: force}); err != nil {
			// A directory in place of a recorded file is an error even
			// with force: take it out of the reference.
			if !force {
				t.Fatal(err)
			}
		}
		want := treeOf(t, ref)
		if len(calls) < 20 {
			t.Fatalf("force=%v: %d output-side calls seen; want them all (%q)", force, len(calls), calls)
		}
		seen := map[string]bool{}
		first := map[string]bool{}
		for k := range calls {
			// Each call on each path once, at its first occurrence: a
			// repeat is the same code on the same entry.
			if first[calls[k]] {
				continue
			}
			first[calls[k]] = true
			out := filepath.Join(base, fmt.Sprintf("out%d", k))
			if force {
				plant(t, out)
			}
			n := 0
			fl := &Faults{Sys: func(call, p string) error {
				if n++; n == k+1 {
					return syscall.EIO
				}
				return nil
			}}
			err := src.WithFaults(fl).CopyRecordedWith(out, CopyOptions{Force: force})
			seen[strings.Fields(calls[k])[0]] = true
			if err != nil && errors.Is(err, syscall.EIO) {
				// The first call opens the directory above the output.
				named := out
				if k == 0 {
					named = base
				}
				if !strings.Contains(err.Error(), named) {
					t.Errorf("force=%v, call %d (%s) failing: %q does not name the output %s", force, k+1, calls[k], err, out)
				}
				continue
			}
			got := treeOf(t, out)
			if err != nil && !force || !sameTree(got, want) {
				t.Errorf("force=%v, call %d (%s) failing: %v, and the capture differs from one without faults:\n got %v\nwant %v", force, k+1, calls[k], err, got, want)
			}
		}
		need := []string{"close", "dup", "fstatat", "mkdirat", "open", "openat", "readlinkat", "symlinkat", "write"}
		if force {
			need = append(need, "unlinkat")
		}
		for _, c := range need {
			if !seen[c] {
				t.Errorf("force=%v: no %s among the output-side calls %q", force, c, calls)
			}
		}
	}
}

func sameTree(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// The output directory made by the capture vanishes, or is replaced by a
// link, between its mkdir and its open: an error naming it, nothing
// written anywhere.
func TestCaptureOutputDirRace(t *testing.T) {
	src := recordedSource(t)
	for _, link := range []bool{false, true} {
		base := t.TempDir()
		out := filepath.Join(base, "out")
		elsewhere := t.TempDir()
		fl := &Faults{Sys: func(call, p string) error {
			if call == "openat" && p == out {
				if err := os.Remove(out); err != nil {
					return err
				}
				if link {
					return os.Symlink(elsewhere, out)
				}
			}
			return nil
		}}
		err := src.WithFaults(fl).CopyRecordedWith(out, CopyOptions{Force: true})
		if link {
			if !errors.Is(err, ErrOutputDir) || !strings.Contains(err.Error(), out) {
				t.Errorf("a link planted at the output: %v; want ErrOutputDir naming %s", err, out)
			}
			if got := dirNames(t, elsewhere); got != "" {
				t.Errorf("written through the planted link: %q", got)
			}
			continue
		}
		wantErr(t, "the output vanished", err, syscall.ENOENT, "open", out)
		if got := dirNames(t, base); got != "" {
			t.Errorf("the output vanished: %q left", got)
		}
	}
}

// The output directory exists: it is read to check it is empty; that read
// failing is the capture's error, naming it.
func TestCaptureOutputDirReadFails(t *testing.T) {
	src := recordedSource(t)
	out := t.TempDir()
	err := src.WithFaults(sysFail("getdents", out, syscall.EIO)).CopyRecorded(out)
	wantErr(t, "readdir of the output", err, syscall.EIO, "readdir", out)
	if got := dirNames(t, out); got != "" {
		t.Errorf("%q written", got)
	}
}

// A relative root or output directory needs the working directory; when
// it is gone (filepath.Abs fails) New and CopyRecorded fail naming the
// name given, and create nothing.
func TestAbsFails(t *testing.T) {
	src := recordedSource(t)
	gone := t.TempDir()
	t.Chdir(gone)
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Getwd(); err == nil {
		t.Skip("getcwd answers in a removed directory here")
	}
	_, err := New("rel")
	if err == nil || !strings.Contains(err.Error(), "rel") || !errors.Is(err, syscall.ENOENT) {
		t.Errorf("New(rel) without a working directory: %v", err)
	}
	err = src.CopyRecorded("out")
	if err == nil || !strings.HasPrefix(err.Error(), "out: ") || !errors.Is(err, syscall.ENOENT) {
		t.Errorf("CopyRecorded(out) without a working directory: %v", err)
	}
}

// Dir's names are cleaned as FS.ReadFile cleans DIR/NAME: "x/../name"
// reads name even when x does not exist, "name/" reads name; and
// Readlink and ReadDirNames likewise. The answers of Dir and FS agree,
// both below a root and on the recording path.
func TestDirCleansNames(t *testing.T) {
	root, f := mtRoot(t)
	mtWrite(t, filepath.Join(root, "sys/d/name"), []byte("v\n"))
	mtWrite(t, filepath.Join(root, "sys/d/sub/f"), nil)
	if err := os.Symlink("sub/f", filepath.Join(root, "sys/d/link")); err != nil {
		t.Fatal(err)
	}
	rec, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	rec.Record()
	for _, fsys := range []*FS{f, rec} {
		d := fsys.Dir("/sys/d")
		for _, name := range []string{"name", "x/../name", "name/", "./name", "sub/../name", "name/.", "sub/./../name/"} {
			want, werr := fsys.ReadFile("/sys/d/" + name)
			got, gerr := d.ReadFile(name)
			if string(want) != "v\n" || werr != nil || string(got) != string(want) || gerr != nil {
				t.Errorf("rec=%v: Dir.ReadFile(%q) = %q, %v; FS = %q, %v; want both v", fsys.rec != nil, name, got, gerr, want, werr)
			}
		}
		for _, name := range []string{"link", "link/", "x/../link", "./link"} {
			got, err := d.Readlink(name)
			if err != nil || got != "sub/f" {
				t.Errorf("rec=%v: Dir.Readlink(%q) = %q, %v; want sub/f", fsys.rec != nil, name, got, err)
			}
		}
		for _, name := range []string{"sub", "sub/", "x/../sub", "sub/."} {
			got, err := d.ReadDirNames(name)
			if err != nil || strings.Join(got, ",") != "f" {
				t.Errorf("rec=%v: Dir.ReadDirNames(%q) = %q, %v; want f", fsys.rec != nil, name, got, err)
			}
		}
		// Names that leave the directory are the FS's answer too.
		for _, name := range []string{"../d/name", "/name"} {
			want, werr := fsys.ReadFile(path.Join("/sys/d", name))
			got, gerr := d.ReadFile(name)
			if string(got) != string(want) || (gerr == nil) != (werr == nil) {
				t.Errorf("rec=%v: Dir.ReadFile(%q) = %q, %v; FS = %q, %v", fsys.rec != nil, name, got, gerr, want, werr)
			}
		}
		d.Close()
	}
}
