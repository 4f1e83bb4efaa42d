package hostfs

import (
	"os"
	"path/filepath"
	"testing"
)

// Changed is what lets a command run again in another executable (the
// static gpunode handing a GPU command to gpunode-agent): reads never set
// it, every kind of write-side call does, and copies share it.
func TestChanged(t *testing.T) {
	writes := []struct {
		name string
		do   func(f *FS) error
	}{
		{"WriteFileAtomic", func(f *FS) error { return f.WriteFileAtomic("/etc/real/a", []byte("x"), 0o644) }},
		{"WriteString", func(f *FS) error { return f.WriteString("/etc/real/old", "x") }},
		{"Mkdir", func(f *FS) error { return f.Mkdir("/etc/real/d", 0o755) }},
		{"MkdirAll", func(f *FS) error { _, err := f.MkdirAll("/etc/real/e/f", 0o755); return err }},
		{"Remove", func(f *FS) error { return f.Remove("/etc/real/old") }},
		{"Symlink", func(f *FS) error { return f.Symlink("/etc/real", "/etc/l2") }},
		{"Chmod", func(f *FS) error { return f.Chmod("/etc/real/old", 0o600) }},
		{"OpenLock", func(f *FS) error {
			fh, err := f.OpenLock("/etc/real/lock")
			if err == nil {
				fh.Close()
			}
			return err
		}},
		{"WriteOutputFile", func(f *FS) error {
			return f.WriteOutputFile("/etc/real/out", []byte("x"), 0o644, OutputOptions{})
		}},
		// A copy made for fault injection shares the flag.
		{"WithFaults copy", func(f *FS) error {
			return f.WithFaults(&Faults{}).WriteFileAtomic("/etc/real/c", []byte("x"), 0o644)
		}},
	}
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			fsys, root := newWriteFS(t)
			if err := os.WriteFile(filepath.Join(root, "etc/real/old"), []byte("old\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			// Reads of every kind leave it unset.
			_, _ = fsys.ReadFile("/etc/real/old")
			_, _ = fsys.ReadDirNames("/etc")
			_, _ = fsys.Readlink("/etc/link")
			_, _ = fsys.Stat("/etc/real/old")
			_, _ = fsys.ReadFile("/etc/real/missing")
			if fsys.Changed() {
				t.Fatal("Changed after reads only")
			}
			if err := w.do(fsys); err != nil {
				t.Fatalf("%s: %v", w.name, err)
			}
			if !fsys.Changed() {
				t.Errorf("%s: Changed() = false after a write", w.name)
			}
		})
	}
	// A failed write attempt counts too: the caller cannot know how far it got.
	fsys, _ := newWriteFS(t)
	if err := fsys.WriteFileAtomic("/no/such/dir/f", []byte("x"), 0o644); err == nil {
		t.Fatal("write under a missing directory succeeded")
	}
	if !fsys.Changed() {
		t.Error("Changed() = false after a failed write attempt")
	}
}
