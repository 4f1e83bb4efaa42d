package hostfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestReadHead(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "proc"), 0o755); err != nil {
		t.Fatal(err)
	}
	long := "model name\t: X\n" + strings.Repeat("flags\t: y\n", 10000)
	if err := os.WriteFile(filepath.Join(root, "proc", "cpuinfo"), []byte(long), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(root, "proc", "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	f.Record()
	b, err := f.ReadHead("/proc/cpuinfo", 64)
	if err != nil || string(b) != long[:64] {
		t.Fatalf("ReadHead = %q, %v; want the first 64 bytes", b, err)
	}
	if d, ok := f.recordedData("/proc/cpuinfo"); !ok || string(d) != long[:64] {
		t.Errorf("recorded %q, %v: a capture keeps the head read", d, ok)
	}
	if _, err := f.ReadHead("/proc/fifo", 64); !errors.Is(err, ErrNotRegular) {
		t.Errorf("ReadHead of a FIFO: %v, want ErrNotRegular", err)
	}
	if _, err := f.ReadHead("/proc", 64); !errors.Is(err, unix.EISDIR) {
		t.Errorf("ReadHead of a directory: %v, want EISDIR", err)
	}
}
