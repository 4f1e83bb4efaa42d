package hostfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// CopyOptions tune CopyRecordedWith.
type CopyOptions struct {
	// Force accepts a non-empty output directory. Whatever is in the way of
	// the capture (a file, a link, even a link planted to redirect it) is
	// replaced, never followed or written through.
	Force bool
}

// ErrOutputDir marks a capture output directory refused before anything was
// written: a symbolic link, or not empty without Force.
var ErrOutputDir = errors.New("refused")

// CopyRecorded is CopyRecordedWith without options: dst must be missing or
// an empty directory.
func (f *FS) CopyRecorded(dst string) error {
	return f.CopyRecordedWith(dst, CopyOptions{})
}

// CopyRecordedWith copies every path f recorded (see Record) into the
// directory dst, so that New(dst) reads back exactly what f read: file
// contents, directory listings (entries as empty placeholders unless their
// contents were read too) and symbolic links, which are recreated as links
// with their original targets. Paths that vanished since they were read are
// skipped.
//
// dst is opened like any other root: it is created when missing and must not
// itself be a symbolic link; unless o.Force it must be empty. Below it every
// directory is created with mkdirat and entered with O_NOFOLLOW, every file
// is created afresh with O_CREAT|O_EXCL|O_NOFOLLOW (an existing entry is
// unlinked first, never opened), so no link or hard link already present in
// dst, or planted while the capture runs, is ever written through.
func (f *FS) CopyRecordedWith(dst string, o CopyOptions) error {
	if f.rec == nil {
		return errors.New("copy recorded: the FS was not recording")
	}
	out, err := openOutRoot(dst, o.Force, f.faults)
	if err != nil {
		return err
	}
	defer out.close()
	c := &copier{src: f, out: out}
	acc := f.Recorded()
	var files []string
	var errs []error
	data := map[string][]byte{} // resolved path -> bytes read at discovery time
	for _, a := range acc {
		resolved, err := c.walk(a.Path, 0)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			errs = append(errs, err)
			continue
		}
		switch a.Kind {
		case AccessDir:
			if err := c.placeholders(resolved); err != nil {
				errs = append(errs, err)
			}
		case AccessFile, AccessStat:
			files = append(files, resolved)
			if b, ok := f.recordedData(a.Path); ok {
				data[resolved] = b
			}
		}
	}
	for _, p := range files {
		if err := c.copyFile(p, data); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// outRoot is a capture's output directory, held open by descriptor. Host
// paths below it are created component by component relative to that
// descriptor, none of them followed if it is a link.
type outRoot struct {
	dir    string // as the user named it, for messages
	fd     int
	force  bool
	faults *Faults // the FS's; its Sys hook sees the calls below
}

func openOutRoot(dst string, force bool, fl *Faults) (*outRoot, error) {
	abs, err := filepath.Abs(dst)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dst, err)
	}
	if abs == "/" {
		return nil, fmt.Errorf("%s: refusing to capture into /", dst)
	}
	parent, base := filepath.Dir(abs), filepath.Base(abs)
	// The directories above dst are the caller's choice of place and are
	// resolved like any path on the command line; dst itself is not.
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, err
	}
	var pfd int
	err = fl.do("open", parent, func() (err error) {
		pfd, err = unix.Open(parent, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: parent, Err: err}
	}
	defer unix.Close(pfd)
	created := true
	if err := fl.do("mkdirat", dst, func() error { return unix.Mkdirat(pfd, base, 0o755) }); err != nil {
		if err != unix.EEXIST {
			return nil, &fs.PathError{Op: "mkdir", Path: dst, Err: err}
		}
		created = false
	}
	var fd int
	err = fl.do("openat", dst, func() (err error) {
		fd, err = unix.Openat(pfd, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		if err == unix.ELOOP || isLink(pfd, base) {
			return nil, fmt.Errorf("%w: %s is a symbolic link: give the directory itself (a capture never writes through links)", ErrOutputDir, dst)
		}
		return nil, &fs.PathError{Op: "open", Path: dst, Err: err}
	}
	o := &outRoot{dir: dst, fd: fd, force: force, faults: fl}
	if !created && !force {
		empty := false
		err := fl.do("getdents", dst, func() (err error) {
			empty, err = dirEmpty(fd)
			return err
		})
		if err != nil {
			o.close()
			return nil, &fs.PathError{Op: "readdir", Path: dst, Err: err}
		}
		if !empty {
			o.close()
			return nil, fmt.Errorf("%w: %s: directory not empty: capture into a new or empty directory, or add --force to replace what is in the way", ErrOutputDir, dst)
		}
	}
	return o, nil
}

func isLink(dirfd int, name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}

// dirEmpty reports whether the directory open at fd has no entries. It
// reads through a duplicate so fd's offset is untouched.
func dirEmpty(fd int) (bool, error) {
	dup, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, err
	}
	fh := os.NewFile(uintptr(dup), ".")
	defer fh.Close()
	names, err := fh.Readdirnames(1)
	if errors.Is(err, os.ErrClosed) {
		return false, err
	}
	return len(names) == 0, nil
}

func (o *outRoot) close() {
	if o.fd != noFD {
		unix.Close(o.fd)
		o.fd = noFD
	}
}

// name renders host path p as a path below the output directory.
func (o *outRoot) name(p string) string { return filepath.Join(o.dir, filepath.FromSlash(clean(p))) }

func (o *outRoot) pathErr(op, p string, err error) error {
	return &fs.PathError{Op: op, Path: o.name(p), Err: err}
}

// openDir returns a descriptor of the directory at host path p below the
// output root, creating missing directories on the way. Nothing on the way
// is followed: a link (or a file) in place of a directory is an error, or
// with force is replaced by a directory. The caller closes the descriptor.
func (o *outRoot) openDir(p string) (int, error) {
	var cur int
	err := o.faults.do("dup", "/", func() (err error) {
		cur, err = unix.Dup(o.fd)
		return err
	})
	if err != nil {
		return noFD, o.pathErr("open", "/", err)
	}
	at := "/"
	for _, part := range splitPath(p) {
		at = path.Join(at, part)
		next, err := o.enter(cur, part, at)
		unix.Close(cur)
		if err != nil {
			return noFD, err
		}
		cur = next
	}
	return cur, nil
}

// enter creates (if missing) and opens the directory name in dirfd.
func (o *outRoot) enter(dirfd int, name, at string) (int, error) {
	for try := 0; ; try++ {
		if err := o.faults.do("mkdirat", at, func() error { return unix.Mkdirat(dirfd, name, 0o755) }); err != nil && err != unix.EEXIST {
			return noFD, o.pathErr("mkdir", at, err)
		}
		var fd int
		err := o.faults.do("openat", at, func() (err error) {
			fd, err = unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			return err
		})
		if err == nil {
			return fd, nil
		}
		if (err != unix.ELOOP && err != unix.ENOTDIR) || try > 0 {
			return noFD, o.pathErr("open", at, err)
		}
		if !o.force {
			return noFD, fmt.Errorf("%s: not a directory (a link or file is in the way; a capture never follows links, --force replaces it)", o.name(at))
		}
		if err := o.faults.do("unlinkat", at, func() error { return unix.Unlinkat(dirfd, name, 0) }); err != nil {
			return noFD, o.pathErr("unlink", at, err)
		}
	}
}

// clear removes a non-directory entry name from dirfd so that it can be
// created afresh. A directory in the way is an error.
func (o *outRoot) clear(dirfd int, name, at string) error {
	var st unix.Stat_t
	if err := o.faults.do("fstatat", at, func() error { return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) }); err != nil {
		if err == unix.ENOENT {
			return nil
		}
		return o.pathErr("lstat", at, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return o.pathErr("replace", at, unix.EISDIR)
	}
	if err := o.faults.do("unlinkat", at, func() error { return unix.Unlinkat(dirfd, name, 0) }); err != nil && err != unix.ENOENT {
		return o.pathErr("unlink", at, err)
	}
	return nil
}

// writeFile creates the regular file at host path p with data. An existing
// entry (ours from a placeholder, or anything planted) is unlinked first: the
// file is always a new inode created with O_EXCL, so nothing that was there
// is written through.
func (o *outRoot) writeFile(p string, data []byte) error {
	p = clean(p)
	dfd, err := o.openDir(path.Dir(p))
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	name := path.Base(p)
	if err := o.clear(dfd, name, p); err != nil {
		return err
	}
	fd, err := o.create(dfd, name, p)
	if err != nil {
		return err
	}
	fh := os.NewFile(uintptr(fd), o.name(p))
	if err := o.faults.do("write", p, func() error { _, err := fh.Write(data); return err }); err != nil {
		fh.Close()
		return o.pathErr("write", p, unwrapPath(err))
	}
	if err := o.faults.do("close", p, fh.Close); err != nil {
		return o.pathErr("close", p, unwrapPath(err))
	}
	return nil
}

// touch creates an empty placeholder file at host path p unless a regular
// file is already there (an earlier placeholder of this capture).
func (o *outRoot) touch(p string) error {
	p = clean(p)
	dfd, err := o.openDir(path.Dir(p))
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	name := path.Base(p)
	var st unix.Stat_t
	if err := o.faults.do("fstatat", p, func() error { return unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) }); err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && !o.force {
		return nil
	}
	if err := o.clear(dfd, name, p); err != nil {
		return err
	}
	fd, err := o.create(dfd, name, p)
	if err != nil {
		return err
	}
	unix.Close(fd) // an empty file just created, nothing written: nothing to flush
	return nil
}

// create makes the new regular file name in dirfd (host path p), never
// through an entry already there (O_EXCL, O_NOFOLLOW).
func (o *outRoot) create(dirfd int, name, p string) (int, error) {
	var fd int
	err := o.faults.do("openat", p, func() (err error) {
		fd, err = unix.Openat(dirfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
		return err
	})
	if err != nil {
		return noFD, o.pathErr("create", p, err)
	}
	return fd, nil
}

// symlink creates a link at host path p with target (never followed).
func (o *outRoot) symlink(p, target string) error {
	p = clean(p)
	dfd, err := o.openDir(path.Dir(p))
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	name := path.Base(p)
	buf := make([]byte, len(target)+1)
	n := 0
	err = o.faults.do("readlinkat", p, func() (err error) {
		n, err = unix.Readlinkat(dfd, name, buf)
		return err
	})
	if err == nil && n == len(target) && string(buf[:n]) == target {
		return nil
	}
	if err := o.clear(dfd, name, p); err != nil {
		return err
	}
	if err := o.faults.do("symlinkat", p, func() error { return unix.Symlinkat(target, dfd, name) }); err != nil {
		return o.pathErr("symlink", p, err)
	}
	return nil
}

// mkdir creates the directory at host path p (and its parents).
func (o *outRoot) mkdir(p string) error {
	fd, err := o.openDir(p)
	if err != nil {
		return err
	}
	unix.Close(fd) // a directory opened for reading: its close cannot fail
	return nil
}

type copier struct {
	src *FS
	out *outRoot
}

// walk recreates every directory and symlink on the way to host path p and
// returns p's resolved host path.
func (c *copier) walk(p string, depth int) (string, error) {
	if depth > maxLinks {
		return "", fmt.Errorf("%s: too many levels of symbolic links", p)
	}
	cur := "/"
	for _, part := range splitPath(p) { // a clean path: no ".."
		next := path.Join(cur, part)
		fi, err := os.Lstat(c.src.Path(next))
		if err != nil {
			return "", err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(c.src.Path(next))
			if err != nil {
				return "", err
			}
			if err := c.out.symlink(next, target); err != nil {
				return "", err
			}
			if !path.IsAbs(target) {
				target = path.Join(cur, target)
			}
			if cur, err = c.walk(clean(target), depth+1); err != nil {
				return "", err
			}
		case fi.IsDir():
			if err := c.out.mkdir(next); err != nil {
				return "", err
			}
			cur = next
		default:
			cur = next
		}
	}
	return cur, nil
}

// placeholders recreates the entries of a listed directory: links as links,
// directories as empty directories, files as empty files.
func (c *copier) placeholders(dir string) error {
	ents, err := os.ReadDir(c.src.Path(dir))
	if err != nil {
		return err
	}
	if len(ents) > maxDirEntries {
		return fmt.Errorf("%s: %d entries, more than a capture copies (%d)", dir, len(ents), maxDirEntries)
	}
	for _, e := range ents {
		p := path.Join(dir, e.Name())
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			t, err := os.Readlink(c.src.Path(p))
			if err != nil {
				return err
			}
			if err := c.out.symlink(p, t); err != nil {
				return err
			}
		case e.IsDir():
			if err := c.out.mkdir(p); err != nil {
				return err
			}
		default:
			if err := c.out.touch(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// maxDirEntries bounds one listed directory in a capture (the biggest real
// ones, /proc/irq and /sys/bus/pci/devices, hold a few thousand).
const maxDirEntries = 1 << 20

func (c *copier) copyFile(p string, data map[string][]byte) error {
	fi, err := os.Lstat(c.src.Path(p))
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		if fi.IsDir() {
			return c.out.mkdir(p)
		}
		return nil
	}
	b, ok := data[p]
	if !ok {
		// Stat-only paths: copy current contents. Unreadable files
		// (write-only attributes, permissions, non-regular files) are
		// captured empty.
		if b, err = c.src.readResolved(p); err != nil {
			b = nil
		}
	}
	return c.out.writeFile(p, b)
}

// splitPath returns the elements of a host path, without empty ones.
func splitPath(p string) []string {
	var out []string
	for _, s := range strings.Split(clean(p), "/") {
		if s != "" && s != "." {
			out = append(out, s)
		}
	}
	return out
}
