package hostfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within runs fn and fails the test if it has not returned after d (a FIFO
// read that blocks would otherwise hang the whole test binary).
func within(t *testing.T, d time.Duration, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s still blocked after %v", what, d)
	}
}

func TestReadFileRefusesFIFO(t *testing.T) {
	root := tree(t)
	fifo := filepath.Join(root, "proc/sys/vm/swappiness")
	if err := os.Remove(fifo); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	f, _ := New(root)
	for _, read := range []struct {
		name string
		fn   func() error
	}{
		{"ReadFile", func() error { _, err := f.ReadFile("/proc/sys/vm/swappiness"); return err }},
		{"ReadString", func() error { _, err := f.ReadString("/proc/sys/vm/swappiness"); return err }},
		{"ReadDir", func() error { _, err := f.ReadDir("/proc/sys/vm/swappiness"); return err }},
	} {
		var err error
		within(t, 5*time.Second, read.name+" of a FIFO", func() { err = read.fn() })
		if err == nil {
			t.Errorf("%s of a FIFO succeeded", read.name)
			continue
		}
		if !strings.Contains(err.Error(), "/proc/sys/vm/swappiness") {
			t.Errorf("%s: error %q does not name the path", read.name, err)
		}
		if read.name != "ReadDir" && (!errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "FIFO")) {
			t.Errorf("%s: error %q; want ErrNotRegular naming a FIFO", read.name, err)
		}
	}
	// The live-root path (no openat2) behaves the same.
	live := &FS{root: "/", rootFD: -1}
	var err error
	within(t, 5*time.Second, "ReadFile of a FIFO on /", func() { _, err = live.ReadFile(fifo) })
	if !errors.Is(err, ErrNotRegular) {
		t.Errorf("live ReadFile of a FIFO: %v", err)
	}
}

func TestReadFileBound(t *testing.T) {
	root := tree(t)
	big := filepath.Join(root, "big")
	fh, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := fh.Truncate(MaxFileSize + 1<<20); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	f, _ := New(root)
	if _, err := f.ReadFile("/big"); err == nil || !strings.Contains(err.Error(), "larger than 64 MiB") {
		t.Errorf("65 MiB file: %v; want refused", err)
	}
	exact := filepath.Join(root, "exact")
	if err := os.WriteFile(exact, make([]byte, 3000), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := f.ReadFile("/exact"); err != nil || len(b) != 3000 {
		t.Errorf("3000-byte file: %d bytes, %v", len(b), err)
	}
}

// A directory read as a file keeps the kernel's EISDIR (callers report "is a
// directory"); only types that could block or stream are ErrNotRegular.
func TestReadFileDirectoryIsEISDIR(t *testing.T) {
	f, _ := New(tree(t))
	_, err := f.ReadFile("/proc/sys/vm")
	if !errors.Is(err, syscall.EISDIR) || errors.Is(err, ErrNotRegular) || len(f.Refused()) != 0 {
		t.Errorf("ReadFile(dir) = %v (refused %v); want EISDIR, not logged as refused", err, f.Refused())
	}
}
