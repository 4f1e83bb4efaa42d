package hostfs

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// linkedRoot is a root whose /sys/devices/cpu0/cpufreq is a link through
// "..", like sysfs's cpuN/cpufreq -> ../cpufreq/policyN: resolving it in
// the root is what a concurrent rename makes openat2 answer EAGAIN to.
func linkedRoot(t *testing.T) (*FS, string) {
	t.Helper()
	root := t.TempDir()
	pol := filepath.Join(root, "sys/devices/cpufreq/policy0")
	if err := os.MkdirAll(pol, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pol, "scaling_governor"), []byte("performance\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "sys/devices/cpu0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../cpufreq/policy0", filepath.Join(root, "sys/devices/cpu0/cpufreq")); err != nil {
		t.Fatal(err)
	}
	fsys, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	if fsys.rootFD < 0 {
		// every kernel CI runs has openat2 (5.6+): the retry under test is
		// its path, so its absence is a failure, not a skip
		t.Fatal("no O_PATH root descriptor: openat2(RESOLVE_IN_ROOT) is not in use")
	}
	return fsys, root
}

const governor = "/sys/devices/cpu0/cpufreq/scaling_governor"

// TestOpenRetriesInjectedEAGAIN: an EAGAIN from openat2 (the kernel's
// "a '..' raced a rename, you may retry") is retried; a persistent one
// ends, boundedly, in the EAGAIN error.
func TestOpenRetriesInjectedEAGAIN(t *testing.T) {
	base, _ := linkedRoot(t)
	for _, fails := range []int{1, 3, maxEAGAIN} {
		var tries atomic.Int32
		fsys := base.WithFaults(&Faults{Open: func(p string, try int) error {
			tries.Add(1)
			if try < fails {
				return unix.EAGAIN
			}
			return nil
		}})
		s, err := fsys.ReadString(governor)
		if err != nil || s != "performance" {
			t.Fatalf("%d EAGAINs: %q, %v; want the value read after retrying", fails, s, err)
		}
		if n := int(tries.Load()); n != fails+1 {
			t.Errorf("%d EAGAINs: %d attempts, want %d", fails, n, fails+1)
		}
	}
	var tries atomic.Int32
	fsys := base.WithFaults(&Faults{Open: func(string, int) error { tries.Add(1); return unix.EAGAIN }})
	if _, err := fsys.ReadString(governor); !errors.Is(err, unix.EAGAIN) {
		t.Fatalf("persistent EAGAIN: err = %v, want EAGAIN", err)
	}
	if n := int(tries.Load()); n != maxEAGAIN+1 {
		t.Errorf("persistent EAGAIN: %d attempts, want %d (bounded)", n, maxEAGAIN+1)
	}
	// Other errors are not retried.
	tries.Store(0)
	fsys = base.WithFaults(&Faults{Open: func(string, int) error { tries.Add(1); return unix.EACCES }})
	if _, err := fsys.ReadString(governor); !errors.Is(err, unix.EACCES) || tries.Load() != 1 {
		t.Fatalf("EACCES: err = %v after %d attempts, want EACCES after 1", err, tries.Load())
	}
}

// renameStorm renames a file in dir back and forth until stop is closed.
func renameStorm(t *testing.T, dir string, stop <-chan struct{}, wg *sync.WaitGroup) *atomic.Int64 {
	t.Helper()
	a, b := filepath.Join(dir, "storm-a"), filepath.Join(dir, "storm-b")
	if err := os.WriteFile(a, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if unix.Rename(a, b) == nil {
				n.Add(1)
			}
			a, b = b, a
		}
	}()
	return &n
}

// TestReadUnderRenameStorm: with renames racing every '..' resolution, every
// read through the link still succeeds.
func TestReadUnderRenameStorm(t *testing.T) {
	fsys, _ := linkedRoot(t)
	var retried atomic.Int64
	counting := fsys.WithFaults(&Faults{Open: func(_ string, try int) error {
		if try > 0 {
			retried.Add(1)
		}
		return nil
	}})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	renames := renameStorm(t, t.TempDir(), stop, &wg)
	const reads = 5000
	failed := 0
	var first error
	for i := 0; i < reads; i++ {
		if s, err := counting.ReadString(governor); err != nil || s != "performance" {
			failed++
			if first == nil {
				first = err
			}
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("%d reads, %d renames, %d retries after EAGAIN", reads, renames.Load(), retried.Load())
	if failed > 0 {
		t.Fatalf("%d of %d reads failed under a rename storm (first: %v)", failed, reads, first)
	}
}
