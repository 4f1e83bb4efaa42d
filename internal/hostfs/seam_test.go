package hostfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestMain runs the package's tests in a fresh temporary working directory,
// removed afterwards, never in the source tree: a test (or a mutant of
// WriteOutput's directory split) that writes to a relative name cannot
// leave files in internal/hostfs.
func TestMain(m *testing.M) {
	os.Exit(inTempDir(m))
}

func inTempDir(m *testing.M) int {
	dir, err := os.MkdirTemp("", "hostfs-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	defer os.RemoveAll(dir)
	if err := os.Chdir(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	return m.Run()
}

// The tests run outside the source tree (see TestMain).
func TestRunsInTempDir(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(wd, "seam_test.go")); err == nil {
		t.Errorf("tests run in the source directory %s", wd)
	}
}

// Each openat2 attempt of a Dir's entry goes through Faults.Sys: an EINTR
// is retried, at most maxEINTR (64) times; ENOENT is the entry's error.
func TestDirOpenEINTR(t *testing.T) {
	root, base := mtRoot(t)
	mtWrite(t, filepath.Join(root, "sys/d/a"), []byte("1\n"))
	const p = "/sys/d/a"
	for _, c := range []struct {
		eintr int // attempts answered EINTR before the real call is made
		tries int // openat2 attempts of the Dir expected
	}{
		{0, 1}, {1, 2}, {63, 64}, {64, 65},
		{65, 65}, // the 65th EINTR ends the loop: the FS then reads by whole path
		{1000, 65},
	} {
		n := 0
		f := base.WithFaults(&Faults{Sys: func(call, q string) error {
			if call != "openat2" || q != p {
				return nil
			}
			if n++; n <= c.eintr {
				return syscall.EINTR
			}
			return nil
		}})
		d := f.Dir("/sys/d")
		b, err := d.ReadFile("a")
		d.Close()
		if err != nil || string(b) != "1\n" {
			t.Errorf("%d EINTRs: %q, %v; want the value", c.eintr, b, err)
		}
		if n != c.tries {
			t.Errorf("%d EINTRs: %d openat2 attempts, want %d", c.eintr, n, c.tries)
		}
	}
	d := base.WithFaults(sysFail("openat2", p, syscall.ENOENT)).Dir("/sys/d")
	defer d.Close()
	_, err := d.ReadFile("a")
	wantErr(t, "openat2 ENOENT", err, syscall.ENOENT, "open", p)
}

// The pauses between openat2 attempts that answered EAGAIN: none before
// the fifth retry, then 10 µs doubling up to 1 ms.
func TestEAGAINBackoff(t *testing.T) {
	base, _ := linkedRoot(t)
	us := time.Microsecond
	all := []time.Duration{10 * us, 20 * us, 40 * us, 80 * us, 160 * us, 320 * us, 640 * us}
	for len(all) < 60 { // retries 5 to 64 pause: 60 pauses
		all = append(all, time.Millisecond)
	}
	for _, c := range []struct {
		fails int // attempts answered EAGAIN; 0: every one
		want  []time.Duration
	}{
		{1, nil}, {4, nil}, {5, all[:1]}, {6, all[:2]}, {12, all[:8]}, {0, all},
	} {
		var slept []time.Duration
		f := base.WithFaults(&Faults{
			Open: func(_ string, try int) error {
				if c.fails == 0 || try < c.fails {
					return unix.EAGAIN
				}
				return nil
			},
			Sleep: func(d time.Duration) { slept = append(slept, d) },
		})
		s, err := f.ReadString(governor)
		if c.fails == 0 {
			if !errors.Is(err, unix.EAGAIN) {
				t.Errorf("persistent EAGAIN: %q, %v; want EAGAIN", s, err)
			}
		} else if err != nil || s != "performance" {
			t.Errorf("%d EAGAINs: %q, %v; want the value", c.fails, s, err)
		}
		if !reflect.DeepEqual(slept, c.want) {
			t.Errorf("%d EAGAINs: pauses %v, want %v", c.fails, slept, c.want)
		}
	}
}

// A directory listing is bounded: 1<<20 entries by default; at the bound
// and below it the listing is whole, one entry above it is refused.
func TestDirEntriesBound(t *testing.T) {
	root, f := mtRoot(t)
	if f.maxDir != 1<<20 || f.WithFaults(&Faults{}).maxDir != 1<<20 {
		t.Fatalf("default bound %d, want %d", f.maxDir, 1<<20)
	}
	want := []string{"a", "b", "c"}
	for _, n := range want {
		mtWrite(t, filepath.Join(root, "sys/d", n), nil)
	}
	for _, limit := range []int{2, 3, 4} {
		f.maxDir = limit
		g := f.WithFaults(&Faults{}) // a copy keeps the bound
		for _, fsys := range []*FS{f, g} {
			names, nerr := fsys.ReadDirNames("/sys/d")
			ents, eerr := fsys.ReadDir("/sys/d")
			if limit >= len(want) {
				got := []string{}
				for _, e := range ents {
					got = append(got, e.Name())
				}
				if nerr != nil || eerr != nil || !reflect.DeepEqual(names, want) || !reflect.DeepEqual(got, want) {
					t.Errorf("bound %d: %q, %v; %q, %v; want %q", limit, names, nerr, got, eerr, want)
				}
				continue
			}
			for op, err := range map[string]error{"readdirent": nerr, "readdir": eerr} {
				var pe *fs.PathError
				if !errors.As(err, &pe) || pe.Op != op || pe.Path != "/sys/d" || !strings.Contains(err.Error(), "more than 2 entries") {
					t.Errorf("bound %d, %s: %v; want more than 2 entries in /sys/d", limit, op, err)
				}
			}
		}
	}
}

// A small file of known size s is first read with a buffer of s+1 bytes:
// a file that grew after fstat then costs that read, one for the rest and
// one that sees EOF (a buffer of a page would take it all in the first).
func TestReadGrownSmallFile(t *testing.T) {
	root, base := mtRoot(t)
	for _, size := range []int{1, 2, 100} {
		host := filepath.Join(root, "etc", fmt.Sprintf("f%d", size))
		mtWrite(t, host, []byte(strings.Repeat("a", size)))
		reads := 0
		f := base.WithFaults(onRead(func(string) {
			if reads++; reads == 1 {
				appendTo(t, host, "0123456789")
			}
		}))
		b, err := f.ReadFile(fmt.Sprintf("/etc/f%d", size))
		if want := strings.Repeat("a", size) + "0123456789"; err != nil || string(b) != want {
			t.Errorf("size %d, grown: %q, %v; want %q", size, b, err, want)
		}
		if reads != 3 {
			t.Errorf("size %d, grown by 10 bytes: %d reads, want 3 (s+1 bytes, the rest, EOF)", size, reads)
		}
	}
}

// ReadFileNoFollow refuses anything but a regular file: a link, a FIFO, a
// directory.
func TestReadFileNoFollowRefuses(t *testing.T) {
	root, f := mtRoot(t)
	mtWrite(t, filepath.Join(root, "etc/real"), []byte("x"))
	if err := os.Symlink("real", filepath.Join(root, "etc/link")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(root, "etc/fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := f.ReadFileNoFollow("/etc/real"); err != nil || string(b) != "x" {
		t.Errorf("regular file: %q, %v", b, err)
	}
	for _, p := range []string{"/etc/link", "/etc/fifo", "/etc"} {
		b, err := f.ReadFileNoFollow(p)
		var pe *fs.PathError
		if b != nil || !errors.As(err, &pe) || pe.Op != "read" || pe.Path != p || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("%s: %q, %v; want a read error: not a regular file", p, b, err)
		}
	}
}

// OpenLock refuses a FIFO at the lock's path: an open error naming it.
func TestOpenLockRefusesFIFO(t *testing.T) {
	root, f := mtRoot(t)
	if err := os.MkdirAll(filepath.Join(root, "run"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(root, "run/lock"), 0o644); err != nil {
		t.Fatal(err)
	}
	fh, err := f.OpenLock("/run/lock")
	var pe *fs.PathError
	if fh != nil || !errors.As(err, &pe) || pe.Op != "open" || pe.Path != "/run/lock" || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("OpenLock on a FIFO: %v, %v; want an open error: not a regular file", fh, err)
	}
}

// WriteOutput's temporary file is ".BASE.gpunode-tmp-PID-NANOS" beside the
// target, NANOS the time in base 36: seen while it is written.
func TestWriteOutputTempName(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "out.json")
	var seen []string
	before := time.Now().UnixNano()
	fl := &Faults{Sys: func(call, p string) error {
		if call == "write" && p == name {
			ents, err := os.ReadDir(dir)
			if err != nil {
				return err
			}
			for _, e := range ents {
				seen = append(seen, e.Name())
			}
		}
		return nil
	}}
	if err := WriteOutput(name, []byte("{}"), 0o644, OutputOptions{Faults: fl}); err != nil {
		t.Fatal(err)
	}
	after := time.Now().UnixNano()
	prefix := fmt.Sprintf(".out.json.gpunode-tmp-%d-", os.Getpid())
	if len(seen) != 1 || !strings.HasPrefix(seen[0], prefix) {
		t.Fatalf("entries while writing: %q; want one %s<nanoseconds in base 36>", seen, prefix)
	}
	var ns int64
	for _, c := range strings.TrimPrefix(seen[0], prefix) {
		d := strings.IndexRune("0123456789abcdefghijklmnopqrstuvwxyz", c)
		if d < 0 {
			t.Fatalf("%q: %q is not a base-36 digit", seen[0], c)
		}
		ns = ns*36 + int64(d)
	}
	if ns < before || ns > after {
		t.Errorf("%q: time %d, want between %d and %d", seen[0], ns, before, after)
	}
}

// WriteFileVia refuses a temporary file that is not a sibling of the
// target: in another directory, or the target itself; nothing is written.
func TestWriteFileViaSibling(t *testing.T) {
	root, f := mtRoot(t)
	mtWrite(t, filepath.Join(root, "etc/a"), []byte("old"))
	mtWrite(t, filepath.Join(root, "var/keep"), nil)
	for _, tmp := range []string{"/var/.a.tmp", "/etc/a", "/etc/sub/.a.tmp"} {
		err := f.WriteFileVia("/etc/a", tmp, []byte("new"), 0o644)
		var pe *fs.PathError
		if !errors.As(err, &pe) || pe.Op != "write" || pe.Path != "/etc/a" || !strings.Contains(err.Error(), "not a sibling") {
			t.Errorf("tmp %s: %v; want a write error: not a sibling", tmp, err)
		}
		if b, err := os.ReadFile(filepath.Join(root, "etc/a")); err != nil || string(b) != "old" {
			t.Errorf("tmp %s: target now %q, %v; want it untouched", tmp, b, err)
		}
		if _, err := os.Lstat(filepath.Join(root, tmp)); tmp != "/etc/a" && err == nil {
			t.Errorf("tmp %s: created", tmp)
		}
	}
	if err := f.WriteFileVia("/etc/a", "/etc/.a.tmp", []byte("new"), 0o644); err != nil {
		t.Errorf("a sibling: %v", err)
	}
}
