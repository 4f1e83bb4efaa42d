package hostfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// This file holds the FS methods that create, replace and remove ordinary
// files (under /etc, /var/lib, ...). Kernel files (sysfs, procfs) are written
// with WriteString instead. All of them take host-absolute paths; links in the
// parent directories are resolved inside the root, the final component is
// operated on itself (so replacing a symlink replaces the link, not its target).

// parentPath resolves the parent directory of host path p and returns the
// local path of p's final component inside the resolved parent.
func (f *FS) parentPath(p string) (string, error) {
	p = clean(p)
	if p == "/" {
		return "", &fs.PathError{Op: "resolve", Path: p, Err: errors.New("is the root")}
	}
	dir, err := f.Resolve(path.Dir(p))
	if err != nil {
		return "", &fs.PathError{Op: "resolve", Path: p, Err: err}
	}
	return f.Path(path.Join(dir, path.Base(p))), nil
}

// Lstat returns information about p without following a final symlink.
func (f *FS) Lstat(p string) (fs.FileInfo, error) {
	p = clean(p)
	f.note(p, AccessStat)
	lp, err := f.parentPath(p)
	if err != nil {
		return nil, err
	}
	fi, err := os.Lstat(lp)
	if err != nil {
		return nil, rename(err, p)
	}
	return fi, nil
}

// WriteFileAtomic replaces (or creates) the regular file p with data and mode
// perm: it writes a temporary file in the same directory, fsyncs it, renames
// it over p and fsyncs the directory, so a reader (or a crash) sees either the
// old or the new contents, never a mix. perm is applied exactly (the umask
// does not apply). The parent directory must exist.
func (f *FS) WriteFileAtomic(p string, data []byte, perm fs.FileMode) error {
	p = clean(p)
	lp, err := f.parentPath(p)
	if err != nil {
		return err
	}
	dir := filepath.Dir(lp)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(lp)+".gpunode-tmp-*")
	if err != nil {
		return rename(err, p)
	}
	tmpName := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmpName)
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return &fs.PathError{Op: "write", Path: p, Err: unwrapPath(err)}
	}
	if err := tmp.Chmod(perm.Perm() | perm&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)); err != nil {
		return &fs.PathError{Op: "chmod", Path: p, Err: unwrapPath(err)}
	}
	if err := tmp.Sync(); err != nil {
		return &fs.PathError{Op: "fsync", Path: p, Err: unwrapPath(err)}
	}
	if err := tmp.Close(); err != nil {
		return &fs.PathError{Op: "close", Path: p, Err: unwrapPath(err)}
	}
	if err := os.Rename(tmpName, lp); err != nil {
		return &fs.PathError{Op: "rename", Path: p, Err: unwrapPath(err)}
	}
	ok = true
	return syncDir(dir, p)
}

// syncDir fsyncs a directory so that a rename or removal in it is durable.
func syncDir(dir, p string) error {
	d, err := os.Open(dir)
	if err != nil {
		return &fs.PathError{Op: "open dir", Path: p, Err: unwrapPath(err)}
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		// Some filesystems (tmpfs on old kernels, some FUSE) refuse to fsync
		// directories; the rename itself has happened.
		if errors.Is(err, errors.ErrUnsupported) || errors.Is(err, syscall.EINVAL) {
			return nil
		}
		return &fs.PathError{Op: "fsync dir", Path: p, Err: unwrapPath(err)}
	}
	return nil
}

// Remove removes the file, link or empty directory p (a final symlink is
// removed, not followed). Removing a path that does not exist is not an error.
func (f *FS) Remove(p string) error {
	p = clean(p)
	lp, err := f.parentPath(p)
	if err != nil {
		return err
	}
	if err := os.Remove(lp); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return rename(err, p)
	}
	return syncDir(filepath.Dir(lp), p)
}

// MissingDirs returns the host paths of directory p and of its parents that
// do not exist, outermost first (none when p exists). It fails when the
// nearest existing one is not a directory.
func (f *FS) MissingDirs(p string) ([]string, error) {
	var missing []string
	for cur := clean(p); cur != "/"; cur = path.Dir(cur) {
		fi, err := f.Stat(cur)
		if err == nil {
			if !fi.IsDir() {
				return nil, &fs.PathError{Op: "mkdir", Path: cur, Err: errors.New("not a directory")}
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		missing = append(missing, cur)
	}
	slices.Reverse(missing)
	return missing, nil
}

// MkdirAll creates directory p and any missing parents with mode perm (the
// umask applies to none of them). It returns the host paths of the
// directories it created, outermost first, so a caller can journal them.
func (f *FS) MkdirAll(p string, perm fs.FileMode) ([]string, error) {
	missing, err := f.MissingDirs(p)
	if err != nil {
		return nil, err
	}
	created := make([]string, 0, len(missing))
	for _, d := range missing {
		lp, err := f.parentPath(d)
		if err != nil {
			return created, err
		}
		if err := os.Mkdir(lp, perm.Perm()); err != nil {
			return created, rename(err, d)
		}
		if err := os.Chmod(lp, perm.Perm()); err != nil {
			return created, rename(err, d)
		}
		created = append(created, d)
	}
	return created, nil
}

// Symlink creates a symbolic link at p pointing to target (written as given).
// An existing file or link at p is replaced atomically.
func (f *FS) Symlink(target, p string) error {
	p = clean(p)
	lp, err := f.parentPath(p)
	if err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(lp), "."+filepath.Base(lp)+".gpunode-tmp-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	if err := os.Symlink(target, tmp); err != nil {
		return rename(err, p)
	}
	if err := os.Rename(tmp, lp); err != nil {
		os.Remove(tmp)
		return &fs.PathError{Op: "rename", Path: p, Err: unwrapPath(err)}
	}
	return syncDir(filepath.Dir(lp), p)
}

// Lchown changes the owner of p without following a final symlink.
func (f *FS) Lchown(p string, uid, gid int) error {
	p = clean(p)
	lp, err := f.parentPath(p)
	if err != nil {
		return err
	}
	if err := os.Lchown(lp, uid, gid); err != nil {
		return rename(err, p)
	}
	return nil
}

// Chmod sets the permission bits of p (following links).
func (f *FS) Chmod(p string, perm fs.FileMode) error {
	p = clean(p)
	hp, err := f.hostPath(p)
	if err != nil {
		return err
	}
	if err := os.Chmod(hp, perm); err != nil {
		return rename(err, p)
	}
	return nil
}

// ReadFileNoFollow reads the regular file p without following a final link
// (it fails on a symlink). Used to snapshot files before they are replaced.
func (f *FS) ReadFileNoFollow(p string) ([]byte, error) {
	p = clean(p)
	fi, err := f.Lstat(p)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: p, Err: fmt.Errorf("not a regular file (%s)", fi.Mode().Type())}
	}
	return f.ReadFile(p)
}

// Filesystem magic numbers of the kernel's pseudo filesystems (statfs(2)).
const (
	procSuperMagic = 0x9fa0
	sysfsMagic     = 0x62656572
	cgroup2Magic   = 0x63677270
	debugfsMagic   = 0x64626720
)

// IsKernelFile reports whether p lives on a kernel pseudo filesystem
// (procfs, sysfs, cgroup2, debugfs), where a write is a request to the
// kernel rather than a store of bytes. In a captured tree it is false: the
// "kernel files" there are plain files.
func (f *FS) IsKernelFile(p string) bool {
	hp, err := f.hostPath(p)
	if err != nil {
		return false
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(hp, &st); err != nil {
		return false
	}
	switch int64(st.Type) {
	case procSuperMagic, sysfsMagic, cgroup2Magic, debugfsMagic:
		return true
	}
	return false
}
