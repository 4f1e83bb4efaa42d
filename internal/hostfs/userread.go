package hostfs

import (
	"os"

	"golang.org/x/sys/unix"
)

// OpenUser opens host path p for reading: a file a user named on the
// command line that lives on the host under the root (container check's
// --image-config and --container-spec). It is resolved inside the root
// like every host path and opened without blocking; anything but a
// regular file is refused (ErrNotRegular), a directory is EISDIR. The
// caller reads it through internal/userfile (userfile.ReadOpen), under
// --max-input-bytes, and closes it.
func (f *FS) OpenUser(p string) (*os.File, error) {
	p = clean(p)
	fd, err := f.openFD(p, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return nil, err
	}
	if _, err := f.statRegular(fd, p); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), p), nil
}

// OpenLocal opens a file a user named on the command line that is a path
// on this machine as given (relative to the working directory, never
// below --root): a manifest, a node file, a profile file. It is opened
// without blocking (O_NONBLOCK: a FIFO without a writer does not hold the
// open forever); the caller, internal/userfile, checks what it is and reads it under
// --max-input-bytes. Nothing else calls it (internal/houserules).
func OpenLocal(name string) (*os.File, error) {
	return os.OpenFile(name, os.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
}
