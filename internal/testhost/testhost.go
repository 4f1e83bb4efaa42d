// Package testhost builds fixture host trees: faithful copies of the sysfs and
// procfs files gpunode reads (symlinks included), for machines we do not have
// at hand. The trees live in testdata/hosts/<name>/ at the repository root and
// are regenerated with
//
//	go test ./internal/testhost -update
//
// Tests that only read a fixture use Path; tests that change one use Copy,
// which gives them a private copy in a temporary directory.
package testhost

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
)

// RepoRoot returns the repository root (the directory holding go.mod).
func RepoRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("testhost: cannot locate source file")
	}
	dir := filepath.Dir(file)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("testhost: go.mod not found above %s", file)
		}
		dir = parent
	}
}

// HostsDir returns <repo>/testdata/hosts.
func HostsDir() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "testdata", "hosts"), nil
}

// Names lists the fixture hosts present in testdata/hosts.
func Names() ([]string, error) {
	dir, err := HostsDir()
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// Path returns the read-only fixture tree of host name.
func Path(t testing.TB, name string) string {
	t.Helper()
	dir, err := HostsDir()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("fixture host %q: %v", name, err)
	}
	return p
}

// Copy copies fixture host name into a fresh temporary directory and returns
// it, for tests that write.
//
// The copy goes to a directory on tmpfs (/dev/shm) when there is one: a
// fixture tree is thousands of small files, and creating and removing them
// on a disk-backed /tmp made fixture copies most of the run time of the
// packages that copy fixtures (internal/cli spent 85% of its CPU time here).
func Copy(t testing.TB, name string) string {
	t.Helper()
	dst := TempDir(t)
	if err := CopyTree(Path(t, name), dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TempDir is a fresh directory removed when t ends: on /dev/shm when it is
// a writable directory, else t.TempDir().
func TempDir(t testing.TB) string {
	t.Helper()
	if shm := TmpfsDir(); shm != "" {
		if d, err := os.MkdirTemp(shm, "gpunode-test-"); err == nil {
			t.Cleanup(func() {
				// Like t.TempDir: make what a test made read-only
				// removable first.
				_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
					if err == nil && e.IsDir() {
						_ = os.Chmod(p, 0o700)
					}
					return nil
				})
				if err := os.RemoveAll(d); err != nil {
					t.Errorf("removing the fixture copy: %v", err)
				}
			})
			return d
		}
	}
	return t.TempDir()
}

// TmpfsDir is /dev/shm when it is a directory, else "" (os.MkdirTemp's
// default, $TMPDIR).
func TmpfsDir() string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		return "/dev/shm"
	}
	return ""
}

// CopyTree copies src into dst, recreating symlinks and modes.
func CopyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, target)
		case d.IsDir():
			return os.MkdirAll(target, info.Mode().Perm()|0o700)
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, b, info.Mode().Perm())
		}
	})
}

// Snapshot describes every file, directory and link below root (path ->
// "mode kind content-or-target"), for byte-identical comparisons.
func Snapshot(root string) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "link -> " + l
		case d.IsDir():
			out[rel] = fmt.Sprintf("dir %v", info.Mode().Perm())
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = fmt.Sprintf("file %v %q", info.Mode().Perm(), b)
		}
		return nil
	})
	return out, err
}

// DiffSnapshots lists the differences between two snapshots, sorted.
func DiffSnapshots(a, b map[string]string) []string {
	var diffs []string
	for k, va := range a {
		if vb, ok := b[k]; !ok {
			diffs = append(diffs, "only in first: "+k)
		} else if va != vb {
			diffs = append(diffs, fmt.Sprintf("%s: %s != %s", k, trunc(va), trunc(vb)))
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			diffs = append(diffs, "only in second: "+k)
		}
	}
	sort.Strings(diffs)
	return diffs
}

func trunc(s string) string {
	if len(s) > 120 {
		return s[:117] + "..."
	}
	return strings.ReplaceAll(s, "\n", "\\n")
}
