package hostfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tree builds a small host tree with relative and absolute links.
func tree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	mk := func(p, content string) {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ln := func(p, target string) {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, full); err != nil {
			t.Fatal(err)
		}
	}
	mk("sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/numa_node", "1\n")
	mk("sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/msi_irqs/40", "msix\n")
	mk("sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/msi_irqs/41", "msix\n")
	ln("sys/bus/pci/devices/0000:01:00.0", "../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0")
	// An absolute link must resolve inside the root, never on the live host.
	ln("etc/abs", "/sys/bus/pci/devices/0000:01:00.0")
	// A link climbing above the root is clamped at the root.
	ln("etc/escape", "../../../../../sys/bus/pci/devices/0000:01:00.0/numa_node")
	mk("proc/sys/vm/swappiness", "60\n")
	return root
}

func TestNewRejectsNonDirectory(t *testing.T) {
	root := tree(t)
	if _, err := New(filepath.Join(root, "proc/sys/vm/swappiness")); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("New(file) error = %v, want not a directory", err)
	}
	if _, err := New(filepath.Join(root, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("New(missing) error = %v, want ErrNotExist", err)
	}
}

func TestReadsResolveInsideRoot(t *testing.T) {
	f, err := New(tree(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{
		"/sys/bus/pci/devices/0000:01:00.0/numa_node",
		"/etc/abs/numa_node",
		"/etc/escape",
		"sys/bus/pci/devices/0000:01:00.0/../0000:01:00.0/numa_node",
	} {
		n, err := f.ReadInt(p)
		if err != nil || n != 1 {
			t.Errorf("ReadInt(%q) = %d, %v; want 1", p, n, err)
		}
	}
	resolved, err := f.Resolve("/etc/abs")
	if err != nil || resolved != "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0" {
		t.Errorf("Resolve = %q, %v", resolved, err)
	}
	names, err := f.ReadDirNames("/sys/bus/pci/devices/0000:01:00.0/msi_irqs")
	if err != nil || strings.Join(names, ",") != "40,41" {
		t.Errorf("ReadDirNames = %v, %v", names, err)
	}
	target, err := f.Readlink("/sys/bus/pci/devices/0000:01:00.0")
	if err != nil || target != "../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0" {
		t.Errorf("Readlink = %q, %v", target, err)
	}
	_, err = f.ReadFile("/proc/missing")
	var pe *fs.PathError
	if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) || pe.Path != "/proc/missing" {
		t.Errorf("missing file error = %v; want a PathError naming /proc/missing", err)
	}
	if !f.Exists("/proc/sys/vm/swappiness") || f.Exists("/proc/sys/vm/nope") {
		t.Error("Exists is wrong")
	}
}

func TestWriteStringDoesNotCreate(t *testing.T) {
	root := tree(t)
	f, _ := New(root)
	if err := f.WriteString("/proc/sys/vm/swappiness", "10"); err != nil {
		t.Fatal(err)
	}
	if s, _ := f.ReadString("/proc/sys/vm/swappiness"); s != "10" {
		t.Errorf("after write: %q", s)
	}
	if err := f.WriteString("/proc/sys/vm/new_knob", "1"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("write to a missing knob: %v, want ErrNotExist", err)
	}
}

func TestCopyRecordedReplaysReads(t *testing.T) {
	src, _ := New(tree(t))
	src.Record()
	if _, err := src.ReadString("/etc/abs/numa_node"); err != nil {
		t.Fatal(err)
	}
	if _, err := src.ReadDirNames("/sys/bus/pci/devices/0000:01:00.0/msi_irqs"); err != nil {
		t.Fatal(err)
	}
	// A later existence check must not downgrade the recorded listing.
	if !src.Exists("/sys/bus/pci/devices/0000:01:00.0/msi_irqs") {
		t.Fatal("msi_irqs missing")
	}
	dst := t.TempDir()
	if err := src.CopyRecorded(dst); err != nil {
		t.Fatal(err)
	}
	// Links are recreated as links, with their original targets.
	if l, err := os.Readlink(filepath.Join(dst, "etc/abs")); err != nil || l != "/sys/bus/pci/devices/0000:01:00.0" {
		t.Errorf("etc/abs link = %q, %v", l, err)
	}
	if l, err := os.Readlink(filepath.Join(dst, "sys/bus/pci/devices/0000:01:00.0")); err != nil || !strings.HasPrefix(l, "../../../devices/") {
		t.Errorf("device link = %q, %v", l, err)
	}
	// Unread files are not copied.
	if _, err := os.Stat(filepath.Join(dst, "proc/sys/vm/swappiness")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("unread file was copied: %v", err)
	}
	back, _ := New(dst)
	if n, err := back.ReadInt("/etc/abs/numa_node"); err != nil || n != 1 {
		t.Errorf("replayed read = %d, %v", n, err)
	}
	if names, _ := back.ReadDirNames("/sys/bus/pci/devices/0000:01:00.0/msi_irqs"); strings.Join(names, ",") != "40,41" {
		t.Errorf("replayed listing = %v", names)
	}
}

func TestManualResolveMatchesKernel(t *testing.T) {
	f, _ := New(tree(t))
	for _, p := range []string{"/etc/abs", "/etc/escape", "/sys/bus/pci/devices/0000:01:00.0/msi_irqs/40", "/nope/x"} {
		fast, err1 := f.Resolve(p)
		slow, err2 := f.resolve(clean(p), 0)
		if fast != slow || (err1 == nil) != (err2 == nil) {
			t.Errorf("Resolve(%q): fast %q (%v) != manual %q (%v)", p, fast, err1, slow, err2)
		}
	}
}
