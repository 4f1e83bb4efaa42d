package hostfs

// The read(2) errors of every read path (Faults.Sys "read"), and edges of
// links, capture modes and refusals that a mutant of their literals would
// change.

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

// A read(2) failing is the read's error, a *fs.PathError{Op: "read"}
// naming the file: the first read of a small and of a big file of known
// size (one read: its size and a byte), of a /sys file, a later read of
// a /sys file longer than one buffer,
// and ReadHead's one read.
func TestSysReadFaults(t *testing.T) {
	root, f := mtRoot(t)
	mtWrite(t, filepath.Join(root, "etc/small"), []byte("small\n"))
	mtWrite(t, filepath.Join(root, "etc/big"), []byte(strings.Repeat("b", 3*oneRead)))
	mtWrite(t, filepath.Join(root, "sys/attr"), []byte("1\n"))
	mtWrite(t, filepath.Join(root, "sys/long"), []byte(strings.Repeat("l", oneRead+100)))
	for _, c := range []struct {
		p  string
		at int // the read that fails, from 1
	}{{"/etc/small", 1}, {"/etc/big", 1}, {"/sys/attr", 1}, {"/sys/long", 1}, {"/sys/long", 2}} {
		n := 0
		ff := f.WithFaults(&Faults{Sys: func(call, p string) error {
			if call == "read" {
				if n++; n == c.at {
					return syscall.EIO
				}
			}
			return nil
		}})
		b, err := ff.ReadFile(c.p)
		if b != nil {
			t.Errorf("%s, read %d failing: %d bytes returned beside the error", c.p, c.at, len(b))
		}
		wantErr(t, c.p, err, syscall.EIO, "read", c.p)
	}
	_, err := f.WithFaults(sysFail("read", "", syscall.EIO)).ReadHead("/etc/small", 3)
	wantErr(t, "ReadHead", err, syscall.EIO, "read", "/etc/small")
}

// Readlink of a name whose directory is missing is ErrNotExist naming the
// name, below a root and on the live FS.
func TestReadlinkMissingParent(t *testing.T) {
	root, f := mtRoot(t)
	live, err := New("/")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		fsys *FS
		p    string
	}{{f, "/missing/x"}, {&FS{root: root, rootFD: noFD}, "/missing/x"}, {live, filepath.Join(root, "missing/x")}} {
		got, err := c.fsys.Readlink(c.p)
		if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), c.p) || got != "" {
			t.Errorf("Readlink(%s) = %q, %v; want ErrNotExist naming it", c.p, got, err)
		}
	}
}

// A capture's files are created with mode 0644 (less the umask), whatever
// the source's mode.
func TestCaptureFileMode(t *testing.T) {
	src := recordedSource(t)
	out := filepath.Join(t.TempDir(), "out")
	if err := src.CopyRecorded(out); err != nil {
		t.Fatal(err)
	}
	mask := syscall.Umask(0)
	syscall.Umask(mask)
	fi, err := os.Lstat(filepath.Join(out, "proc/cpuinfo"))
	if err != nil || fi.Mode() != fs.FileMode(0o644&^mask) {
		t.Errorf("captured file: %v, %v; want mode %v", fi.Mode(), err, fs.FileMode(0o644&^mask))
	}
}

// With --force, a file in the way of a captured file is unlinked first;
// that unlink failing is a *fs.PathError{Op: "unlink"} naming it.
func TestCaptureClearUnlinkFails(t *testing.T) {
	src := recordedSource(t)
	out := filepath.Join(t.TempDir(), "out")
	mtWrite(t, filepath.Join(out, "proc/cpuinfo"), []byte("old"))
	err := src.WithFaults(sysFail("unlinkat", "/proc/cpuinfo", syscall.EIO)).CopyRecordedWith(out, CopyOptions{Force: true})
	var pe *fs.PathError
	want := filepath.Join(out, "proc/cpuinfo")
	if !errors.As(err, &pe) || pe.Op != "unlink" || pe.Path != want || !errors.Is(err, syscall.EIO) {
		t.Errorf("unlink in the way failing: %v; want a *fs.PathError{Op: unlink, Path: %s}", err, want)
	}
	checkUnchanged(t, want, []byte("old"))
}

// A FIFO read as a file is refused at open: *fs.PathError{Op: "open"}
// wrapping ErrNotRegular; and a FIFO stays refused as an output with
// --force (force replaces links only).
func TestFIFORefusalOps(t *testing.T) {
	root, f := mtRoot(t)
	mkdir(t, filepath.Join(root, "etc"))
	fifo := filepath.Join(root, "etc/fifo")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Skip(err)
	}
	_, err := f.ReadFile("/etc/fifo")
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Op != "open" || pe.Path != "/etc/fifo" || !errors.Is(err, ErrNotRegular) {
		t.Errorf("ReadFile(fifo) = %v; want *fs.PathError{Op: open} wrapping ErrNotRegular", err)
	}
	var re *RefusedOutputError
	if err := CheckOutput(fifo, OutputOptions{Force: true}); !errors.As(err, &re) || re.Kind != "FIFO" {
		t.Errorf("CheckOutput(fifo, force) = %v; want it refused as a FIFO", err)
	}
	if err := WriteOutput(fifo, []byte("x"), 0o644, OutputOptions{Force: true}); !errors.As(err, &re) {
		t.Errorf("WriteOutput(fifo, force) = %v; want it refused", err)
	}
}

// A read(2) interrupted by a signal is repeated: 64 times in a row
// (maxEINTR) still reads the file, 65 times is the EINTR error.
func TestReadEINTRBound(t *testing.T) {
	root, f := mtRoot(t)
	mtWrite(t, filepath.Join(root, "etc/f"), []byte("value\n"))
	for _, c := range []struct {
		eintr int
		ok    bool
	}{{1, true}, {64, true}, {65, false}} {
		ff := f.WithFaults(eintrs("read", c.eintr))
		b, err := ff.ReadFile("/etc/f")
		if c.ok && (err != nil || string(b) != "value\n") {
			t.Errorf("%d EINTRs: %q, %v; want the file", c.eintr, b, err)
		}
		if !c.ok {
			wantErr(t, "65 EINTRs", err, syscall.EINTR, "read", "/etc/f")
		}
	}
}
