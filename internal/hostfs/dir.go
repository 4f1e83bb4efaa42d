package hostfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Dir is a host directory opened once to read several of its entries, as
// discovery does for each PCI device's ten or so attributes. Each read
// opens one name beneath the directory's descriptor, so the path (and the
// symlinks on it, such as /sys/bus/pci/devices/<bdf>) is resolved once, not
// per file. Reads are those of the FS: the same containment in --root, the
// same refusal of non-regular files, the same recording for capture, and
// errors name the path as DIR/NAME. A name that is a symlink leaving the
// directory, or anything the shortcut cannot decide, is read through the FS
// with its whole path; so is every name when the directory itself could not
// be opened (each read then reports that path's own error) or while the FS
// records. Close the Dir when done.
type Dir struct {
	f    *FS
	path string
	fd   int // O_PATH descriptor; -1 when every read goes through f
	real string
}

// Dir returns host directory p for reading entries beneath it. It never
// fails: see Dir for when reads go through the FS by whole path.
func (f *FS) Dir(p string) *Dir {
	d := &Dir{f: f, path: clean(p), fd: noFD}
	if f.rec != nil {
		// Recording sees every link on the way through the FS's own
		// resolution, so reads go through f by whole path.
		return d
	}
	if fd, err := f.openFD(d.path, unix.O_PATH|unix.O_DIRECTORY); err == nil {
		d.fd = fd
	}
	return d
}

// Close releases the directory's descriptor.
func (d *Dir) Close() error {
	if d.fd != noFD {
		err := unix.Close(d.fd)
		d.fd = noFD
		return err
	}
	return nil
}

// Path is the host path the Dir was opened with.
func (d *Dir) Path() string { return d.path }

// Real is the directory's host path with every symlink resolved (what
// FS.Resolve returns).
func (d *Dir) Real() (string, error) {
	if d.real != "" {
		return d.real, nil
	}
	if d.fd != noFD {
		if target, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(d.fd)); err == nil {
			rel, ok := target, true
			if d.f.root != "/" {
				rel, ok = strings.CutPrefix(target, d.f.root)
			}
			if ok && (rel == "" || rel[0] == '/') {
				d.real = clean(rel)
				return d.real, nil
			}
		}
	}
	return d.f.Resolve(d.path)
}

func (d *Dir) join(name string) string { return clean(path.Join(d.path, name)) }

// openBeneath opens name (one or more components, cleaned as FS.ReadFile
// cleans DIR/NAME: "x/../y" is "y", "y/" is "y"; p is d.join(name), the
// host path, which the caller has made) beneath the directory; ok
// is false when the FS must decide by the whole path. A name that leaves
// the directory ("..", an absolute name) is refused by RESOLVE_BENEATH
// (EXDEV) and so goes to the FS.
func (d *Dir) openBeneath(name, p string, flag int) (fd int, ok bool, err error) {
	if d.fd == noFD {
		return noFD, false, nil
	}
	rel := path.Clean(name)
	how := &unix.OpenHow{Flags: uint64(flag | unix.O_CLOEXEC), Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS}
	for try := 0; ; try++ {
		fd, err = noFD, d.f.faults.sys("openat2", p)
		if err == nil {
			fd, err = unix.Openat2(d.fd, rel, how)
		}
		if err == unix.EINTR && try < maxEINTR {
			continue
		}
		break
	}
	switch {
	case err == nil:
		return fd, true, nil
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
		return noFD, true, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	// EXDEV (a link out of the directory), ELOOP, ENOSYS...
	return noFD, false, nil
}

// ReadFile reads entry name as FS.ReadFile reads DIR/NAME.
func (d *Dir) ReadFile(name string) ([]byte, error) {
	p := d.join(name)
	fd, ok, err := d.openBeneath(name, p, unix.O_RDONLY|unix.O_NONBLOCK)
	if !ok {
		return d.f.ReadFile(p)
	}
	d.f.note(p, AccessFile)
	if err != nil {
		return nil, err
	}
	b, err := d.f.readFD(fd, p)
	if err != nil {
		return nil, err
	}
	d.f.keep(p, b)
	return b, nil
}

// ReadString reads entry name and trims surrounding whitespace.
func (d *Dir) ReadString(name string) (string, error) {
	b, err := d.ReadFile(name)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// ReadInt reads entry name holding one decimal integer. With an error it
// returns 0.
func (d *Dir) ReadInt(name string) (int64, error) {
	s, err := d.ReadString(name)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", d.join(name), err)
	}
	return n, nil
}

// Readlink returns the target of the symlink name in the directory.
func (d *Dir) Readlink(name string) (string, error) {
	rel := path.Clean(name)
	if d.fd == noFD || strings.Contains(rel, "/") {
		return d.f.Readlink(d.join(name))
	}
	p := d.join(name)
	d.f.note(p, AccessLink)
	return readlinkAt(d.fd, rel, p)
}

// ReadDirNames lists the names in subdirectory name ("." for the
// directory itself), sorted.
func (d *Dir) ReadDirNames(name string) ([]string, error) {
	p := d.join(name)
	fd, ok, err := d.openBeneath(name, p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK)
	if !ok {
		return d.f.ReadDirNames(p)
	}
	d.f.note(p, AccessDir)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return d.f.readNames(fd, p)
}
