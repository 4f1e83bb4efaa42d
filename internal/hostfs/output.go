package hostfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ErrRefusedOutput is the error (wrapped, naming the path) for a
// user-named output file gpunode will not write: what stands at the path
// is not a regular file (a FIFO, device, socket or directory), or is a
// symbolic link and the caller did not force it. Commands exit 2 on it.
var ErrRefusedOutput = errors.New("refusing to replace")

// RefusedOutputError is the refusal of an output path that is not a
// regular file. Its text is exactly issue 26's ("refusing to replace
// /dev/null: not a regular file"); what stands there (FIFO, socket,
// character device, directory, ...) is in Kind, not in the text.
type RefusedOutputError struct {
	Path string // the name as the user gave it
	Kind string // what stands at Path
}

func (e *RefusedOutputError) Error() string {
	return ErrRefusedOutput.Error() + " " + e.Path + ": not a regular file"
}

// Unwrap makes errors.Is(err, ErrRefusedOutput) hold.
func (e *RefusedOutputError) Unwrap() error { return ErrRefusedOutput }

// OutputOptions tune WriteOutput.
type OutputOptions struct {
	// Force replaces a symbolic link at the path (the link itself; it is
	// never followed). Without it a link is refused.
	Force bool
	// Faults, for tests: its Sys hook runs before each system call on
	// the temporary file and before the rename (see Faults.Sys).
	Faults *Faults
}

// WriteOutput writes a file the user named on the command line (report
// --html, bench --plot, the NFD feature file, ...), a path on this machine
// as given. It is the one writer of such files, and it follows one rule:
//
//   - the bytes go to a new temporary file in the same directory (created
//     exclusively, never through a link), which is fsynced and renamed
//     over the path, and the directory is fsynced: a reader or a crash
//     sees the old file or the new one, never a mix;
//   - the rename happens only when nothing is at the path (renameat2
//     RENAME_NOREPLACE, so a file that appears meanwhile is looked at
//     again) or a regular file is;
//   - a FIFO, device, socket or directory at the path is refused
//     (ErrRefusedOutput: "refusing to replace /dev/null: not a regular
//     file"; a *RefusedOutputError naming the kind), so that 'report --html /dev/null' never
//     turns /dev/null into a file;
//   - a symbolic link at the path is refused unless opt.Force, and is then
//     replaced, never followed.
//
// perm is applied exactly (the umask does not apply).
func WriteOutput(name string, data []byte, perm fs.FileMode, opt OutputOptions) error {
	if name == "" {
		return &fs.PathError{Op: "write", Path: name, Err: errors.New("empty file name")}
	}
	dir, base := filepath.Split(filepath.Clean(name))
	if dir == "" {
		dir = "."
	}
	// "/", "." and ".." (base "", "." and "..") are directories, refused
	// by the look below like any other directory.
	target := filepath.Join(dir, base)
	// Look first, so that nothing is written when the path is refused.
	exists, err := outputTarget(name, target, opt)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "."+base+".gpunode-tmp-"+strconv.Itoa(os.Getpid())+"-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	fl := opt.Faults
	var fh *os.File
	err = fl.do("open", name, func() (err error) {
		fh, err = os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		return err
	})
	if err != nil {
		return fmt.Errorf("write %s: %w", name, unwrapPath(err))
	}
	done := false
	defer func() {
		if !done {
			fh.Close()
			os.Remove(tmp)
		}
	}()
	if err := fl.do("write", name, func() error { _, err := fh.Write(data); return err }); err != nil {
		return fmt.Errorf("write %s: %w", name, unwrapPath(err))
	}
	if err := fl.do("fchmod", name, func() error { return fh.Chmod(perm.Perm()) }); err != nil {
		return fmt.Errorf("write %s: chmod: %w", name, unwrapPath(err))
	}
	if err := fl.do("fsync", name, fh.Sync); err != nil {
		return fmt.Errorf("write %s: fsync: %w", name, unwrapPath(err))
	}
	if err := fl.do("close", name, fh.Close); err != nil {
		return fmt.Errorf("write %s: close: %w", name, unwrapPath(err))
	}
	renamed := false
	if !exists {
		err := fl.do("renameat2", name, func() error {
			return unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, target, unix.RENAME_NOREPLACE)
		})
		switch {
		case err == nil:
			renamed = true
		case !(errors.Is(err, unix.EEXIST) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS)):
			return fmt.Errorf("write %s: rename: %w", name, err)
		default:
			// EEXIST: something appeared meanwhile, look at it again.
			// EINVAL, ENOSYS: a filesystem without RENAME_NOREPLACE; look
			// again just before the plain rename, the best it offers.
			if exists, err = outputTarget(name, target, opt); err != nil {
				return err
			}
		}
	}
	if !renamed {
		if exists {
			// A regular file (or a forced link): check once more right
			// before replacing it, to narrow the window of a swap.
			if _, err := outputTarget(name, target, opt); err != nil {
				return err
			}
		}
		if err := fl.do("rename", name, func() error { return os.Rename(tmp, target) }); err != nil {
			return fmt.Errorf("write %s: %w", name, unwrapPath(err))
		}
	}
	done = true
	if d, err := os.Open(dir); err == nil {
		err := fl.do("fsync", dir, d.Sync)
		d.Close()
		if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, errors.ErrUnsupported) {
			return fmt.Errorf("write %s: fsync directory: %w", name, unwrapPath(err))
		}
	}
	return nil
}

// outputTarget looks at what stands at target (name as the user gave it)
// without following a link: it reports whether something exists there that
// may be replaced, or the refusal.
func outputTarget(name, target string, opt OutputOptions) (bool, error) {
	fi, err := os.Lstat(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("write %s: %w", name, unwrapPath(err))
	case fi.Mode().IsRegular():
		return true, nil
	case fi.Mode()&fs.ModeSymlink != 0:
		if opt.Force {
			return true, nil
		}
		return false, fmt.Errorf("%w %s: a symbolic link (not followed; --force replaces the link itself)", ErrRefusedOutput, name)
	}
	kind := "directory"
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		kind = fileType(st.Mode)
	}
	return false, &RefusedOutputError{Path: name, Kind: kind}
}

// WriteOutputFile is WriteOutput for a file under the FS's root (a host
// path: a saved bench result under --state-dir): links in its directories
// are resolved inside the root, the final component is looked at itself.
func (f *FS) WriteOutputFile(p string, data []byte, perm fs.FileMode, opt OutputOptions) error {
	p = clean(p)
	lp, err := f.parentPath(p)
	if err != nil {
		return err
	}
	f.markChanged()
	return WriteOutput(lp, data, perm, opt)
}

// CheckOutput tells early (before the work that produces the bytes) whether
// WriteOutput would refuse name: nil when the path is absent or a regular
// file (or a link with opt.Force), otherwise the ErrRefusedOutput error.
func CheckOutput(name string, opt OutputOptions) error {
	if name == "" {
		return &fs.PathError{Op: "write", Path: name, Err: errors.New("empty file name")}
	}
	_, err := outputTarget(name, filepath.Clean(name), opt)
	return err
}
