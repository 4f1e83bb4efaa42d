package hostfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func newWriteFS(t *testing.T) (*FS, string) {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc/real"), 0o755); err != nil {
		t.Fatal(err)
	}
	// /etc/link -> /etc/real (absolute, must resolve inside the root)
	if err := os.Symlink("/etc/real", filepath.Join(root, "etc/link")); err != nil {
		t.Fatal(err)
	}
	fsys, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	return fsys, root
}

func TestWriteFileAtomic(t *testing.T) {
	fsys, root := newWriteFS(t)
	tests := []struct {
		name    string
		path    string
		data    string
		perm    fs.FileMode
		local   string
		wantErr bool
	}{
		{"create", "/etc/a.conf", "a\n", 0o644, "etc/a.conf", false},
		{"replace keeps exact mode", "/etc/a.conf", "b\n", 0o600, "etc/a.conf", false},
		{"through linked parent", "/etc/link/x", "x", 0o640, "etc/real/x", false},
		{"missing parent", "/nope/x", "x", 0o644, "", true},
		{"root", "/", "x", 0o644, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := fsys.WriteFileAtomic(tt.path, []byte(tt.data), tt.perm)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			b, err := os.ReadFile(filepath.Join(root, tt.local))
			if err != nil || string(b) != tt.data {
				t.Fatalf("content = %q, %v; want %q", b, err, tt.data)
			}
			fi, _ := os.Stat(filepath.Join(root, tt.local))
			if fi.Mode().Perm() != tt.perm {
				t.Errorf("mode = %v, want %v", fi.Mode().Perm(), tt.perm)
			}
		})
	}
	// No temporary files are left behind.
	ents, _ := os.ReadDir(filepath.Join(root, "etc"))
	for _, e := range ents {
		if filepath.Ext(e.Name()) != ".conf" && e.Name() != "real" && e.Name() != "link" {
			t.Errorf("leftover %s", e.Name())
		}
	}
}

func TestWriteFileAtomicReplacesLinkItself(t *testing.T) {
	fsys, root := newWriteFS(t)
	if err := os.WriteFile(filepath.Join(root, "etc/target"), []byte("t"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Symlink("/etc/target", "/etc/l"); err != nil {
		t.Fatal(err)
	}
	if tgt, err := fsys.Readlink("/etc/l"); err != nil || tgt != "/etc/target" {
		t.Fatalf("Readlink = %q, %v", tgt, err)
	}
	if err := fsys.WriteFileAtomic("/etc/l", []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	fi, err := fsys.Lstat("/etc/l")
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("Lstat = %v, %v; want regular file", fi, err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "etc/target")); string(b) != "t" {
		t.Errorf("link target changed to %q", b)
	}
	if _, err := fsys.ReadFileNoFollow("/etc/l"); err != nil {
		t.Errorf("ReadFileNoFollow: %v", err)
	}
}

func TestMkdirAllRemove(t *testing.T) {
	fsys, root := newWriteFS(t)
	want := []string{"/var", "/var/lib", "/var/lib/gpunode"}
	if missing, err := fsys.MissingDirs("var/lib/gpunode/"); err != nil || !slices.Equal(missing, want) {
		t.Fatalf("MissingDirs = %v, %v; want %v", missing, err, want)
	}
	created, err := fsys.MkdirAll("/var/lib/gpunode", 0o700)
	if err != nil {
		t.Fatal(err)
	}
	if len(created) != len(want) {
		t.Fatalf("created = %v, want %v", created, want)
	}
	for i := range want {
		if created[i] != want[i] {
			t.Fatalf("created = %v, want %v", created, want)
		}
	}
	fi, err := os.Stat(filepath.Join(root, "var/lib/gpunode"))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("stat = %v, %v", fi, err)
	}
	again, err := fsys.MkdirAll("/var/lib/gpunode", 0o700)
	if err != nil || len(again) != 0 {
		t.Fatalf("second MkdirAll = %v, %v", again, err)
	}
	if err := fsys.WriteFileAtomic("/etc/a", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.MkdirAll("/etc/a/b", 0o755); err == nil {
		t.Error("MkdirAll through a file succeeded")
	}
	if missing, err := fsys.MissingDirs("/etc/a/b"); err == nil {
		t.Errorf("MissingDirs through a file = %v, want an error", missing)
	}
	for i := len(created) - 1; i >= 0; i-- {
		if err := fsys.Remove(created[i]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "var")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("var still exists: %v", err)
	}
	if err := fsys.Remove("/var"); err != nil {
		t.Errorf("Remove of a missing path: %v", err)
	}
}

func TestIsKernelFile(t *testing.T) {
	fsys, root := newWriteFS(t)
	if err := os.WriteFile(filepath.Join(root, "etc/x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if fsys.IsKernelFile("/etc/x") || fsys.IsKernelFile("/missing") {
		t.Error("a plain file in a temp dir is a kernel file")
	}
	// The positive case needs the live /proc: TestRealKernel in
	// internal/tune covers it.
}

// TestWriteStringRefusesFIFO: a FIFO planted in place of a kernel knob (with
// a reader attached, so a blocking open would succeed and the value would go
// to whoever reads it) is refused with ErrNotRegular; without a reader the
// open does not wait either.
func TestWriteStringRefusesFIFO(t *testing.T) {
	root := t.TempDir()
	knob := filepath.Join(root, "proc/sys/vm/swappiness")
	if err := os.MkdirAll(filepath.Dir(knob), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(knob, 0o644); err != nil {
		t.Fatal(err)
	}
	fsys, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- fsys.WriteString("/proc/sys/vm/swappiness", "10") }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotRegular) && !errors.Is(err, unix.ENXIO) {
			t.Fatalf("write to a FIFO without reader: %v, want ErrNotRegular or ENXIO", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("WriteString blocked on a FIFO")
	}
	// With a reader the open succeeds; the type check must refuse it.
	r, err := os.OpenFile(knob, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := fsys.WriteString("/proc/sys/vm/swappiness", "10"); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("write to a FIFO with a reader: %v, want ErrNotRegular", err)
	}
	buf := make([]byte, 8)
	if n, _ := r.Read(buf); n != 0 {
		t.Fatalf("the FIFO's reader got %q", buf[:n])
	}
}

// TestWriteStringRefusesHardLink: below a root, a knob that is a hard link
// (here to a file outside the root) is refused and neither name changes;
// a knob with one name is written (and truncated) as before.
func TestWriteStringRefusesHardLink(t *testing.T) {
	// the root and the file outside it share one directory (one
	// filesystem), so the link can always be made
	top := t.TempDir()
	outside := filepath.Join(top, "precious")
	if err := os.WriteFile(outside, []byte("outside value\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(top, "root")
	knobs := filepath.Join(root, "proc/sys/vm")
	if err := os.MkdirAll(knobs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(outside, filepath.Join(knobs, "swappiness")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(knobs, "dirty_ratio"), []byte("20 and more\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fsys, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	err = fsys.WriteString("/proc/sys/vm/swappiness", "1")
	if !errors.Is(err, ErrHardLink) || !strings.Contains(err.Error(), "2 names") {
		t.Fatalf("hard-linked knob: %v, want ErrHardLink", err)
	}
	if b, _ := os.ReadFile(outside); string(b) != "outside value\n" {
		t.Fatalf("the outside file changed: %q", b)
	}
	if err := fsys.WriteString("/proc/sys/vm/dirty_ratio", "5"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(knobs, "dirty_ratio")); string(b) != "5" {
		t.Fatalf("one-name knob: %q, want it replaced whole", b)
	}
}
