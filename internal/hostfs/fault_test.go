package hostfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestFaultsEveryOperation faults each counted operation of an atomic write
// in turn: every fault is reported, and the target keeps its old bytes.
func TestFaultsEveryOperation(t *testing.T) {
	fsys, root := newWriteFS(t)
	if err := fsys.WriteFileAtomic("/etc/a.conf", []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	count := &Faults{}
	if err := fsys.WithFaults(count).WriteFileVia("/etc/a.conf", TempName("/etc/a.conf", "t"), []byte("new\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// open, write, chmod, fsync, rename, fsync dir
	if n := count.Count(); n != 6 {
		t.Fatalf("%d operations counted, want 6: %v", n, count.Log())
	}
	if err := fsys.WriteFileAtomic("/etc/a.conf", []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for k := 1; k <= 6; k++ {
		fl := &Faults{At: k, Err: syscall.ENOSPC}
		err := fsys.WithFaults(fl).WriteFileVia("/etc/a.conf", TempName("/etc/a.conf", "t"), []byte("new\n"), 0o600)
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("fault at %d: err = %v, want ENOSPC", k, err)
		}
		b, _ := os.ReadFile(filepath.Join(root, "etc/a.conf"))
		if want := "old\n"; k < 6 && string(b) != want {
			t.Fatalf("fault at %d (%s): content %q, want %q", k, fl.Log()[k-1], b, want)
		}
		if k < 5 {
			if _, err := os.Lstat(filepath.Join(root, "etc/.a.conf.gpunode-tmp-t")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("fault at %d: temp file left behind (%v)", k, err)
			}
		}
		if err := fsys.WriteFileAtomic("/etc/a.conf", []byte("old\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A hook sees every operation and can fail one.
	var seen []Op
	fl := &Faults{Hook: func(n int, op Op, p string) error {
		seen = append(seen, op)
		if op == OpRename {
			return syscall.EROFS
		}
		return nil
	}}
	if err := fsys.WithFaults(fl).WriteFileAtomic("/etc/a.conf", []byte("x"), 0o644); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("hook error: %v", err)
	}
	if !slices.Equal(seen, []Op{OpOpenWrite, OpWrite, OpChmod, OpFsync, OpRename}) {
		t.Fatalf("hook saw %v", seen)
	}
	// The FS without faults is unaffected (the option is per value).
	if err := fsys.WriteFileAtomic("/etc/a.conf", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestWriteFileViaReplacesStaleTemp: a temp file left by a killed process
// does not block the next write.
func TestWriteFileViaReplacesStaleTemp(t *testing.T) {
	fsys, root := newWriteFS(t)
	stale := filepath.Join(root, "etc/.a.conf.gpunode-tmp-7")
	if err := os.WriteFile(stale, []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := fsys.WriteFileVia("/etc/a.conf", TempName("/etc/a.conf", "7"), []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stale temp still there: %v", err)
	}
	if !IsTempName(".a.conf.gpunode-tmp-7") || IsTempName("a.conf") {
		t.Fatal("IsTempName")
	}
}

// TestMissingDirsSymlinkedDir (defect 4): an administrator's symlinked
// directory is never reported missing. Before the fix MissingDirs used Stat,
// so a link whose target did not exist yet was listed as a directory to
// create (and the journal recorded it as absent, and rollback removed it).
func TestMissingDirsSymlinkedDir(t *testing.T) {
	fsys, root := newWriteFS(t)
	if err := os.MkdirAll(filepath.Join(root, "usr/local/etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	// /etc/tmpfiles.d -> /usr/local/etc/tmpfiles.d, target not created yet.
	if err := os.Symlink("/usr/local/etc/tmpfiles.d", filepath.Join(root, "etc/tmpfiles.d")); err != nil {
		t.Fatal(err)
	}
	missing, err := fsys.MissingDirs("/etc/tmpfiles.d")
	if err == nil || slices.Contains(missing, "/etc/tmpfiles.d") {
		t.Fatalf("dangling dir link: missing = %v, err = %v; want an error and the link never listed", missing, err)
	}
	if !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("error does not say it is a symlink: %v", err)
	}
	if _, err := fsys.MkdirAll("/etc/tmpfiles.d/sub", 0o755); err == nil {
		t.Fatal("MkdirAll through a dangling link succeeded")
	}
	if fi, err := os.Lstat(filepath.Join(root, "etc/tmpfiles.d")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("the link was changed: %v %v", fi, err)
	}
	// With its target present the link is an existing directory.
	if err := os.Mkdir(filepath.Join(root, "usr/local/etc/tmpfiles.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	missing, err = fsys.MissingDirs("/etc/tmpfiles.d/sub")
	if err != nil || !slices.Equal(missing, []string{"/etc/tmpfiles.d/sub"}) {
		t.Fatalf("missing = %v, %v; want only the subdirectory", missing, err)
	}
}

// TestOpenLockStaysInRoot (defect 6): when the lock's directory cannot be
// resolved (a file where a directory should be: ENOTDIR) OpenLock fails
// instead of opening the unresolved path, and it never follows a final link
// out of the root.
func TestOpenLockStaysInRoot(t *testing.T) {
	fsys, root := newWriteFS(t)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "etc/notdir"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.OpenLock("/etc/notdir/.lock"); err == nil {
		t.Fatal("lock below a regular file opened")
	}
	if err := os.Symlink(filepath.Join(outside, "victim"), filepath.Join(root, "etc/real/.lock")); err != nil {
		t.Fatal(err)
	}
	if f, err := fsys.OpenLock("/etc/real/.lock"); err == nil {
		f.Close()
		t.Fatal("lock through a final symlink opened")
	}
	if _, err := os.Lstat(filepath.Join(outside, "victim")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a file was created outside the root: %v", err)
	}
	// A link in the parent resolves inside the root.
	f, err := fsys.OpenLock("/etc/link/.lock2")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := os.Lstat(filepath.Join(root, "etc/real/.lock2")); err != nil {
		t.Fatal(err)
	}
}
