package hostfs

import (
	"io/fs"
	"path"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Writable returns nil when the file p can be replaced the way
// WriteFileVia replaces it (a temporary file in p's directory renamed over
// p), and otherwise the reason: p's directory or p itself is not writable
// for this process (permissions, a read-only mount - EROFS - or an
// immutable file - EPERM, even for root). Links in p's directories are
// resolved inside the root; the caller checks that p is not a link. The
// check uses the real user (faccessat without flags: its AT_EACCESS form
// is emulated from the mode bits where the kernel lacks faccessat2, which
// misses read-only mounts and immutable files); gpunode changes hosts as
// root, where real and effective users agree.
func (f *FS) Writable(p string) error {
	p = clean(p)
	lp, err := f.parentPath(p)
	if err != nil {
		return err
	}
	if err := unix.Faccessat(unix.AT_FDCWD, filepath.Dir(lp), unix.W_OK, 0); err != nil {
		return &fs.PathError{Op: "write access", Path: path.Dir(p), Err: err}
	}
	if err := unix.Faccessat(unix.AT_FDCWD, lp, unix.W_OK, 0); err != nil {
		return &fs.PathError{Op: "write access", Path: p, Err: err}
	}
	return nil
}
