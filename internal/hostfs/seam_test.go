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
