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
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
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

// TempName is the host path of the temporary file that WriteFileVia and
// Symlink use to replace p: ".NAME.gpunode-tmp-TAG" in p's directory. The
// journal names it (with a tag of its own) before it is created, so that a
// rollback, or the next run, removes one left behind by a killed process.
func TempName(p, tag string) string {
	p = clean(p)
	return path.Join(path.Dir(p), "."+path.Base(p)+".gpunode-tmp-"+tag)
}

// IsTempName reports whether base name n is a temporary file name made by
// TempName.
func IsTempName(n string) bool {
	return strings.HasPrefix(n, ".") && strings.Contains(n, ".gpunode-tmp-")
}

// WriteFileAtomic replaces (or creates) the regular file p with data and mode
// perm: it writes a temporary file in the same directory, fsyncs it, renames
// it over p and fsyncs the directory, so a reader (or a crash) sees either the
// old or the new contents, never a mix. perm is applied exactly (the umask
// does not apply). The parent directory must exist.
func (f *FS) WriteFileAtomic(p string, data []byte, perm fs.FileMode) error {
	tag := strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	return f.WriteFileVia(p, TempName(p, tag), data, perm)
}

// WriteFileVia is WriteFileAtomic through the temporary file tmp (a host
// path in p's directory, normally TempName(p, tag)). A file already at tmp
// (left by a killed process) is replaced.
func (f *FS) WriteFileVia(p, tmp string, data []byte, perm fs.FileMode) error {
	p, tmp = clean(p), clean(tmp)
	if path.Dir(tmp) != path.Dir(p) || tmp == p {
		return &fs.PathError{Op: "write", Path: p, Err: fmt.Errorf("temporary file %s is not a sibling", tmp)}
	}
	lp, err := f.parentPath(p)
	if err != nil {
		return err
	}
	dir := filepath.Dir(lp)
	ltmp := filepath.Join(dir, path.Base(tmp))
	if _, err := os.Lstat(ltmp); err == nil {
		if err := f.op(OpUnlink, tmp); err != nil {
			return &fs.PathError{Op: "unlink", Path: tmp, Err: err}
		}
		if err := os.Remove(ltmp); err != nil {
			return rename(err, tmp)
		}
	}
	if err := f.op(OpOpenWrite, tmp); err != nil {
		return &fs.PathError{Op: "open", Path: tmp, Err: err}
	}
	fh, err := os.OpenFile(ltmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return rename(err, tmp)
	}
	ok := false
	defer func() {
		if !ok {
			fh.Close()
			os.Remove(ltmp)
		}
	}()
	if err := f.op(OpWrite, tmp); err != nil {
		return &fs.PathError{Op: "write", Path: p, Err: err}
	}
	if _, err := fh.Write(data); err != nil {
		return &fs.PathError{Op: "write", Path: p, Err: unwrapPath(err)}
	}
	if err := f.op(OpChmod, tmp); err != nil {
		return &fs.PathError{Op: "chmod", Path: p, Err: err}
	}
	if err := fh.Chmod(perm.Perm() | perm&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)); err != nil {
		return &fs.PathError{Op: "chmod", Path: p, Err: unwrapPath(err)}
	}
	if err := f.op(OpFsync, tmp); err != nil {
		return &fs.PathError{Op: "fsync", Path: p, Err: err}
	}
	if !f.skipSync() {
		if err := fh.Sync(); err != nil {
			return &fs.PathError{Op: "fsync", Path: p, Err: unwrapPath(err)}
		}
	}
	if err := fh.Close(); err != nil {
		return &fs.PathError{Op: "close", Path: p, Err: unwrapPath(err)}
	}
	if err := f.op(OpRename, p); err != nil {
		return &fs.PathError{Op: "rename", Path: p, Err: err}
	}
	if err := os.Rename(ltmp, lp); err != nil {
		return &fs.PathError{Op: "rename", Path: p, Err: unwrapPath(err)}
	}
	ok = true
	return f.syncDir(dir, p)
}

// syncDir fsyncs a directory so that a rename or removal in it is durable.
func (f *FS) syncDir(dir, p string) error {
	if err := f.op(OpFsync, path.Dir(p)); err != nil {
		return &fs.PathError{Op: "fsync dir", Path: p, Err: err}
	}
	if f.skipSync() {
		return nil
	}
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

// ErrHardLink is the error (inside a *fs.PathError) for a file below a
// root other than "/" that has more than one name: WriteString refuses it.
var ErrHardLink = errors.New("file has more than one link")

// WriteString writes s to an existing kernel file (sysfs/procfs semantics:
// open for writing, truncate, one write). It does not create files.
func (f *FS) WriteString(p, s string) error {
	p = clean(p)
	if err := f.op(OpOpenWrite, p); err != nil {
		return &fs.PathError{Op: "open", Path: p, Err: err}
	}
	// O_NONBLOCK, then a type check, as on the read side: a FIFO planted in
	// place of a knob must neither block the open nor take the value.
	// Below a root, the file is checked before it is truncated (a hard
	// link's other name must not be emptied either): truncated by hand
	// after the checks.
	trunc := os.O_TRUNC
	if f.root != "/" {
		trunc = 0
	}
	fh, err := f.open(p, os.O_WRONLY|trunc|unix.O_NONBLOCK|unix.O_NOCTTY)
	if err != nil {
		return err
	}
	if st, err := fh.Stat(); err != nil {
		fh.Close()
		return &fs.PathError{Op: "fstat", Path: p, Err: unwrapPath(err)}
	} else if !st.Mode().IsRegular() {
		fh.Close()
		kind := fileType(st.Sys().(*syscall.Stat_t).Mode)
		f.noteRefused(p, kind)
		return &fs.PathError{Op: "open", Path: p, Err: fmt.Errorf("%w (%s): refusing to write it", ErrNotRegular, kind)}
	} else if n := st.Sys().(*syscall.Stat_t).Nlink; n > 1 && f.root != "/" {
		// Below a root, a second name of the file may lie outside it: a
		// write would change that outside file (and a rollback restore
		// it). Kernel attributes have one name; the O_TRUNC above only
		// emptied what this write replaces in any case, so refuse before
		// writing.
		fh.Close()
		return &fs.PathError{Op: "open", Path: p, Err: fmt.Errorf("%w: %d names (a hard link, perhaps to a file outside %s): refusing to write it", ErrHardLink, n, f.root)}
	}
	if trunc == 0 {
		if err := fh.Truncate(0); err != nil {
			// Kernel attributes (a live tree mounted below the root) may
			// refuse a truncate; their write replaces the value anyway.
			var sfs unix.Statfs_t
			if unix.Fstatfs(int(fh.Fd()), &sfs) != nil || !isKernelMagic(int64(sfs.Type)) {
				fh.Close()
				return &fs.PathError{Op: "truncate", Path: p, Err: unwrapPath(err)}
			}
		}
	}
	if err := f.op(OpWrite, p); err != nil {
		fh.Close()
		return &fs.PathError{Op: "write", Path: p, Err: err}
	}
	if _, err := fh.WriteString(s); err != nil {
		fh.Close()
		return &fs.PathError{Op: "write", Path: p, Err: unwrapPath(err)}
	}
	if err := fh.Close(); err != nil {
		return &fs.PathError{Op: "close", Path: p, Err: unwrapPath(err)}
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
	if _, err := os.Lstat(lp); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := f.op(OpUnlink, p); err != nil {
		return &fs.PathError{Op: "remove", Path: p, Err: err}
	}
	if err := os.Remove(lp); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return rename(err, p)
	}
	return f.syncDir(filepath.Dir(lp), p)
}

// MissingDirs returns the host paths of directory p and of its parents that
// do not exist, outermost first (none when p exists). It looks at each path
// itself (Lstat): a symlink to a directory counts as an existing directory,
// and a dangling symlink (or a link to a non-directory) is an error, never a
// missing directory - so that a caller that journals the list as "created"
// can never remove an administrator's link on rollback.
func (f *FS) MissingDirs(p string) ([]string, error) {
	var missing []string
	for cur := clean(p); cur != "/"; cur = path.Dir(cur) {
		fi, err := f.Lstat(cur)
		if err == nil {
			if fi.Mode()&fs.ModeSymlink != 0 {
				t, terr := f.Stat(cur)
				switch {
				case errors.Is(terr, fs.ErrNotExist):
					return nil, &fs.PathError{Op: "mkdir", Path: cur, Err: errors.New("is a symlink to a missing directory (create its target, or remove the link)")}
				case terr != nil:
					return nil, terr
				case !t.IsDir():
					return nil, &fs.PathError{Op: "mkdir", Path: cur, Err: errors.New("is a symlink to something that is not a directory")}
				}
				break
			}
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
		if err := f.Mkdir(d, perm); err != nil {
			return created, err
		}
		created = append(created, d)
	}
	return created, nil
}

// Mkdir creates the single directory p with mode perm exactly (the umask
// does not apply); its parent must exist.
func (f *FS) Mkdir(p string, perm fs.FileMode) error {
	p = clean(p)
	lp, err := f.parentPath(p)
	if err != nil {
		return err
	}
	if err := f.op(OpMkdir, p); err != nil {
		return &fs.PathError{Op: "mkdir", Path: p, Err: err}
	}
	if err := os.Mkdir(lp, perm.Perm()); err != nil {
		return rename(err, p)
	}
	if err := f.op(OpChmod, p); err != nil {
		return &fs.PathError{Op: "chmod", Path: p, Err: err}
	}
	if err := os.Chmod(lp, perm.Perm()); err != nil {
		return rename(err, p)
	}
	return nil
}

// Symlink creates a symbolic link at p pointing to target (written as given).
// An existing file or link at p is replaced atomically.
func (f *FS) Symlink(target, p string) error {
	tag := strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	return f.SymlinkVia(target, p, TempName(p, tag))
}

// SymlinkVia is Symlink through the temporary link tmp (a sibling of p,
// normally TempName(p, tag)); a file already at tmp is replaced.
func (f *FS) SymlinkVia(target, p, tmp string) error {
	p, tmp = clean(p), clean(tmp)
	if path.Dir(tmp) != path.Dir(p) || tmp == p {
		return &fs.PathError{Op: "symlink", Path: p, Err: fmt.Errorf("temporary file %s is not a sibling", tmp)}
	}
	lp, err := f.parentPath(p)
	if err != nil {
		return err
	}
	ltmp := filepath.Join(filepath.Dir(lp), path.Base(tmp))
	if _, err := os.Lstat(ltmp); err == nil {
		if err := f.op(OpUnlink, tmp); err != nil {
			return &fs.PathError{Op: "unlink", Path: tmp, Err: err}
		}
		if err := os.Remove(ltmp); err != nil {
			return rename(err, tmp)
		}
	}
	if err := f.op(OpSymlink, tmp); err != nil {
		return &fs.PathError{Op: "symlink", Path: p, Err: err}
	}
	if err := os.Symlink(target, ltmp); err != nil {
		return rename(err, p)
	}
	if err := f.op(OpRename, p); err != nil {
		os.Remove(ltmp)
		return &fs.PathError{Op: "rename", Path: p, Err: err}
	}
	if err := os.Rename(ltmp, lp); err != nil {
		os.Remove(ltmp)
		return &fs.PathError{Op: "rename", Path: p, Err: unwrapPath(err)}
	}
	return f.syncDir(filepath.Dir(lp), p)
}

// Lchown changes the owner of p without following a final symlink.
func (f *FS) Lchown(p string, uid, gid int) error {
	p = clean(p)
	lp, err := f.parentPath(p)
	if err != nil {
		return err
	}
	if err := f.op(OpChown, p); err != nil {
		return &fs.PathError{Op: "lchown", Path: p, Err: err}
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
	if err := f.op(OpChmod, p); err != nil {
		return &fs.PathError{Op: "chmod", Path: p, Err: err}
	}
	if err := os.Chmod(hp, perm); err != nil {
		return rename(err, p)
	}
	return nil
}

// OpenLock opens (creating it, mode 0600) the lock file p for flock(2). The
// parent directory is resolved inside the root and the file is opened
// relative to it without following a final link; when the parent cannot be
// resolved the open fails (it never falls back to the unresolved path, which
// could lie outside the root). Anything but a regular file is refused.
func (f *FS) OpenLock(p string) (*os.File, error) {
	p = clean(p)
	if p == "/" {
		return nil, &fs.PathError{Op: "open", Path: p, Err: errors.New("is the root")}
	}
	dfd, err := f.openFD(path.Dir(p), unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dfd)
	if err := f.op(OpOpenWrite, p); err != nil {
		return nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	fd, err := retryEINTR(func() (int, error) {
		return unix.Openat(dfd, path.Base(p), unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	}, p)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := f.fstat(fd, p, &st); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "stat", Path: p, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "open", Path: p, Err: errors.New("not a regular file")}
	}
	return os.NewFile(uintptr(fd), p), nil
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
	return isKernelMagic(int64(st.Type))
}

// isKernelMagic reports whether a statfs type is a kernel pseudo filesystem.
func isKernelMagic(t int64) bool {
	switch t {
	case procSuperMagic, sysfsMagic, cgroup2Magic, debugfsMagic:
		return true
	}
	return false
}
