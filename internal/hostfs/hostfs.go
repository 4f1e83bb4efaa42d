// Package hostfs is the one door through which gpunode touches the host: every
// read (and write) of /sys, /proc, /etc and /dev goes through an FS built from
// the --root flag. Paths given to FS methods are host-absolute ("/sys/...");
// the FS maps them below its root and resolves symbolic links inside the root,
// so a captured tree behaves like the machine it came from.
//
// An FS can record every path it reads (see Record); 'gpunode topo capture'
// uses the record to copy exactly those files, links included.
package hostfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// MaxFileSize bounds a single read; sysfs and procfs files are small, but
// /proc/interrupts on a big machine reaches megabytes.
const MaxFileSize = 64 << 20

// maxLinks bounds symlink resolution.
const maxLinks = 64

// noFD is the descriptor held when there is none, and returned beside an
// error.
const noFD = -1

// FS is a view of a host filesystem rooted at Root.
type FS struct {
	root   string
	rootFD int // O_PATH descriptor of root for openat2(RESOLVE_IN_ROOT); -1 when unused
	rec    *recorder
	faults *Faults // fault injection for tests (see WithFaults); nil counts nothing
	// refused logs paths refused as not regular files (see Refused); shared
	// by copies of the FS.
	refused *refusals
	// maxDir bounds one directory listing: MaxDirEntries, lowered by
	// tests to reach the bound with a few entries.
	maxDir int
	// changed is set by the first write-side operation (see Changed);
	// shared by copies of the FS.
	changed *atomic.Bool
}

// Access kinds recorded by an FS.
const (
	AccessFile = "file" // file contents were read
	AccessDir  = "dir"  // a directory was listed
	AccessLink = "link" // a symlink target was read
	AccessStat = "stat" // existence or type was checked
)

type recorder struct {
	mu    sync.Mutex
	paths map[string]string
	// data holds the bytes each recorded file read returned, so a capture
	// holds exactly what discovery saw even if the file changed since.
	data map[string][]byte
}

// New returns an FS rooted at root, which must be an existing directory.
func New(root string) (*FS, error) {
	if root == "" {
		root = "/"
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", root, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", root, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s: not a directory", root)
	}
	f := &FS{root: abs, rootFD: noFD, refused: &refusals{paths: map[string]string{}}, maxDir: MaxDirEntries, changed: new(atomic.Bool)}
	if abs != "/" {
		if fd, err := unix.Open(abs, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
			f.rootFD = fd
			runtime.AddCleanup(f, func(fd int) { unix.Close(fd) }, fd)
		}
	}
	return f, nil
}

// openFD opens host path p (already cleaned) and returns a raw descriptor.
// Below a non-/ root it resolves the path inside the root in one
// openat2(RESOLVE_IN_ROOT) call, and falls back to resolving links by hand on
// kernels without openat2. Raw descriptors keep the hot read path at three
// system calls per file, which matters on hosts with hundreds of CPUs.
func (f *FS) openFD(p string, flag int) (int, error) {
	flag |= unix.O_CLOEXEC
	if f.root == "/" {
		return retryEINTR(func() (int, error) { return unix.Open(p, flag, 0) }, p)
	}
	if f.rootFD != noFD {
		// p is absolute: under RESOLVE_IN_ROOT an absolute name is
		// resolved from the root descriptor, as a relative one is.
		how := &unix.OpenHow{Flags: uint64(flag), Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS}
		fd, err := f.openat2(p, how)
		if err == nil || !(errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM)) {
			return fd, err
		}
	}
	hp, err := f.hostPath(p)
	if err != nil {
		return noFD, err
	}
	return retryEINTR(func() (int, error) { return unix.Open(hp, flag, 0) }, p)
}

// openat2 is one openat2(RESOLVE_IN_ROOT) of host path p below the root, retried
// when the kernel says the answer may be transient. openat2(2): with
// RESOLVE_IN_ROOT or RESOLVE_BENEATH the kernel returns EAGAIN when it
// "could not ensure that a '..' component didn't escape (due to a race
// condition or potential attack)" - any rename or mount anywhere on the
// system while a '..' is resolved (sysfs's cpuN/cpufreq -> ../cpufreq/policyN)
// - and "the caller may choose to retry". EINTR is retried as everywhere
// else. Retries are bounded (maxEAGAIN, with a back-off that grows to
// maxEAGAINSleep, about 50 ms in all) so that a storm the kernel never lets
// through ends in the EAGAIN error rather than a hang.
func (f *FS) openat2(p string, how *unix.OpenHow) (int, error) {
	var inject func(string, int) error
	if f.faults != nil {
		inject = f.faults.Open
	}
	var sleep time.Duration
	for try := 0; ; try++ {
		fd, err := retryEINTR(func() (int, error) {
			if inject != nil {
				if err := inject(p, try); err != nil {
					return noFD, err
				}
			}
			return unix.Openat2(f.rootFD, p, how)
		}, p)
		if err == nil || !errors.Is(err, unix.EAGAIN) || try >= maxEAGAIN {
			return fd, err
		}
		// The first retries are immediate (the race is one rename's
		// window); then back off, so that a loop of renames elsewhere
		// gets a gap to let the walk through.
		if try >= 4 {
			sleep = min(max(2*sleep, 10*time.Microsecond), maxEAGAINSleep)
			f.faults.pause(sleep)
		}
	}
}

// maxEAGAIN bounds the retries of an openat2 that answered EAGAIN, and
// maxEAGAINSleep the pause between two of them.
const (
	maxEAGAIN      = 64
	maxEAGAINSleep = time.Millisecond
)

// maxEINTR bounds the retries of a system call interrupted by a signal. The
// opens and reads here never block (O_NONBLOCK, regular files only), so an
// EINTR is rare; a bound keeps a storm of signals from looping forever, and a
// cancelled command learns of SIGINT through its context, not through EINTR.
const maxEINTR = 64

func retryEINTR(open func() (int, error), p string) (int, error) {
	for try := 0; ; try++ {
		fd, err := open()
		if err == unix.EINTR && try < maxEINTR {
			continue
		}
		if err != nil {
			return noFD, &fs.PathError{Op: "open", Path: p, Err: err}
		}
		return fd, nil
	}
}

// open is openFD wrapped in an *os.File.
func (f *FS) open(p string, flag int) (*os.File, error) {
	fd, err := f.openFD(p, flag)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), p), nil
}

// ErrNotRegular is the error (inside a *fs.PathError naming the path) for a
// host file that gpunode refuses to read because it is not a regular file: a
// FIFO, socket or device in place of a sysfs/procfs attribute or a journal
// would block a read forever or return unbounded data. sysfs and procfs
// attributes are regular files (of size 4096 and 0).
var ErrNotRegular = errors.New("not a regular file")

// ReadFile reads a whole file (at most MaxFileSize bytes). sysfs files report
// a size of 4096 whatever they hold, so the read never trusts Stat for the
// size; but it does for the type: the file is opened with O_NONBLOCK (a FIFO
// opens without waiting for a writer) and anything but a regular file is
// refused with ErrNotRegular before a byte is read.
func (f *FS) ReadFile(p string) ([]byte, error) {
	p = clean(p)
	f.note(p, AccessFile)
	b, err := f.read(p)
	if err != nil {
		return nil, err
	}
	f.keep(p, b)
	return b, nil
}

// ReadHead reads at most the first n bytes of host path p, in one read:
// for the few facts at the start of a file that is long or slow to
// generate (/proc/cpuinfo runs to hundreds of KiB on big hosts, the model
// name is in its first lines). A capture keeps the head that was read.
func (f *FS) ReadHead(p string, n int) ([]byte, error) {
	p = clean(p)
	f.note(p, AccessFile)
	fd, err := f.openFD(p, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	if _, err := f.statRegular(fd, p); err != nil {
		return nil, err
	}
	buf := make([]byte, max(n, 0))
	k, err := f.readOnce(fd, p, buf)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: p, Err: err}
	}
	f.keep(p, buf[:k:k])
	return buf[:k:k], nil
}

// statRegular checks that fd (host path p) is a regular file: a directory
// is EISDIR, anything else that is not regular is refused (ErrNotRegular).
func (f *FS) statRegular(fd int, p string) (unix.Stat_t, error) {
	var st unix.Stat_t
	if err := f.fstat(fd, p, &st); err != nil {
		return st, &fs.PathError{Op: "fstat", Path: p, Err: err}
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		// A directory cannot block a read; keep the kernel's answer.
		return st, &fs.PathError{Op: "read", Path: p, Err: unix.EISDIR}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		f.noteRefused(p, fileType(st.Mode))
		return st, &fs.PathError{Op: "open", Path: p, Err: fmt.Errorf("%w (%s): refusing to read it", ErrNotRegular, fileType(st.Mode))}
	}
	return st, nil
}

// fstat is fstat(2) of fd (host path p), behind Faults.Sys.
func (f *FS) fstat(fd int, p string, st *unix.Stat_t) error {
	if err := f.faults.sys("fstat", p); err != nil {
		return err
	}
	return unix.Fstat(fd, st)
}

// readResolved reads host path p like ReadFile without recording it.
func (f *FS) readResolved(p string) ([]byte, error) {
	return f.read(clean(p))
}

// read opens p without blocking, checks it is a regular file and reads at
// most MaxFileSize bytes of it.
func (f *FS) read(p string) ([]byte, error) {
	fd, err := f.openFD(p, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return nil, err
	}
	return f.readFD(fd, p)
}

// readFD reads the open descriptor fd of host path p as read does, and
// closes it.
func (f *FS) readFD(fd int, p string) ([]byte, error) {
	defer unix.Close(fd)
	if strings.HasPrefix(p, "/sys/") {
		return f.readSys(fd, p)
	}
	st, err := f.statRegular(fd, p)
	if err != nil {
		return nil, err
	}
	if st.Size > MaxFileSize {
		return nil, &fs.PathError{Op: "read", Path: p, Err: errTooLarge}
	}
	// One read is enough when it returns less than it was offered and the
	// file says so: a file of known size returned exactly that size, or a
	// sysfs attribute (sysfs reports every attribute as one page of no
	// blocks, and hands its whole value out in the first read). Anything
	// else (procfs reports size 0 and may return a seq_file page at a
	// time, a file that grew) goes on reading to EOF.
	if st.Size >= oneRead && !isSysfsAttr(&st) {
		// A big file of known size: one buffer of its size and a byte.
		buf := make([]byte, st.Size+1)
		n, err := f.readOnce(fd, p, buf)
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: p, Err: err}
		}
		if n < len(buf) && (n == 0 || int64(n) == st.Size) {
			return buf[:n:n], nil
		}
		return f.readRest(fd, p, buf[:n])
	}
	var small [oneRead]byte
	first := small[:]
	if st.Size > 0 && st.Size < oneRead {
		first = small[:st.Size+1]
	}
	n, err := f.readOnce(fd, p, first)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: p, Err: err}
	}
	if n < len(first) && (n == 0 || int64(n) == st.Size || isSysfsAttr(&st)) {
		return bytes.Clone(first[:n]), nil
	}
	buf := make([]byte, n, max(2*n, 512))
	copy(buf, first[:n])
	return f.readRest(fd, p, buf)
}

// readSys reads a file under /sys: one read, and the type check only when
// that read did not end the file. A short first read is the whole value,
// both of a sysfs attribute (sysfs hands it out in one read) and of a
// regular file in a captured tree, so discovery's hundreds of attribute
// reads cost open, read and close, not an fstat more. Opened without
// blocking, nothing else standing there can hold the read: a FIFO without
// a writer reads 0 bytes, a terminal EAGAIN and a device like /dev/zero a
// full buffer, and each of those is then refused as not a regular file as
// everywhere else. (A FIFO someone is writing a short value into is read.)
func (f *FS) readSys(fd int, p string) ([]byte, error) {
	var small [oneRead]byte
	n, rerr := f.readOnce(fd, p, small[:])
	if rerr == nil && n > 0 && n < len(small) {
		return bytes.Clone(small[:n]), nil
	}
	st, err := f.statRegular(fd, p)
	if err != nil {
		return nil, err
	}
	if rerr != nil {
		return nil, &fs.PathError{Op: "read", Path: p, Err: rerr}
	}
	if st.Size > MaxFileSize {
		return nil, &fs.PathError{Op: "read", Path: p, Err: errTooLarge}
	}
	if n == 0 {
		return []byte{}, nil
	}
	buf := make([]byte, n, 2*n)
	copy(buf, small[:n])
	return f.readRest(fd, p, buf)
}

// readRest reads fd to EOF after the bytes already in buf, at most
// MaxFileSize bytes in all.
func (f *FS) readRest(fd int, p string, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			if len(buf) > MaxFileSize {
				return nil, &fs.PathError{Op: "read", Path: p, Err: errTooLarge}
			}
			// Grow by doubling, but never past one byte more than the
			// bound: that byte is how an oversized file is detected.
			grow := min(cap(buf), MaxFileSize+1-len(buf))
			buf = append(buf[:cap(buf)], make([]byte, grow)...)[:len(buf)]
		}
		n, err := f.readOnce(fd, p, buf[len(buf):cap(buf)])
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: p, Err: err}
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// oneRead is the buffer of the first read of every file: a sysfs attribute
// holds at most a page, 4 KiB on x86.
const oneRead = 4096

// isSysfsAttr reports whether st looks like a sysfs attribute: size one
// page, no blocks. A short first read of such a file is its whole value.
func isSysfsAttr(st *unix.Stat_t) bool {
	return st.Blocks == 0 && st.Size == int64(unix.Getpagesize())
}

// readOnce is one read(2) of host path p, retried (boundedly) when a
// signal interrupts it.
func (f *FS) readOnce(fd int, p string, b []byte) (int, error) {
	for try := 0; ; try++ {
		var n int
		err := f.faults.sys("read", p)
		if err == nil {
			n, err = unix.Read(fd, b)
		}
		if err == unix.EINTR && try < maxEINTR {
			continue
		}
		return n, err
	}
}

var errTooLarge = errors.New("file larger than 64 MiB")

// fileType names a non-regular file type for messages.
func fileType(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return "FIFO"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFCHR:
		return "character device"
	case unix.S_IFBLK:
		return "block device"
	case unix.S_IFDIR:
		return "directory"
	case unix.S_IFLNK:
		return "symbolic link"
	}
	return fmt.Sprintf("mode %#o", mode&unix.S_IFMT)
}

// Root returns the absolute host root.
func (f *FS) Root() string { return f.root }

// IsLive reports whether the FS reads the running machine (root "/").
func (f *FS) IsLive() bool { return f.root == "/" }

// Changed reports whether f (or a copy of it) has made a write-side
// operation under the root: opened a file for writing, written, renamed,
// made a directory or link, changed a mode or owner, removed, or written an
// output file. Attempts count, failed ones included: a caller that must not
// repeat work (a command about to run again in another executable) asks it
// before anything could have changed.
func (f *FS) Changed() bool { return f.changed != nil && f.changed.Load() }

// markChanged records a write-side operation (see Changed).
func (f *FS) markChanged() {
	if f.changed != nil {
		f.changed.Store(true)
	}
}

// Record makes f remember every host path it touches from now on.
func (f *FS) Record() {
	f.rec = &recorder{paths: map[string]string{}, data: map[string][]byte{}}
}

// Recorded returns the host paths touched since Record, with their access
// kind, sorted by path.
func (f *FS) Recorded() []Access {
	if f.rec == nil {
		return nil
	}
	f.rec.mu.Lock()
	defer f.rec.mu.Unlock()
	out := make([]Access, 0, len(f.rec.paths))
	for p, k := range f.rec.paths {
		out = append(out, Access{Path: p, Kind: k})
	}
	slices.SortFunc(out, func(a, b Access) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// Access is one recorded host path.
type Access struct {
	Path string
	Kind string
}

func (f *FS) note(p, kind string) {
	if f.rec == nil {
		return
	}
	f.rec.mu.Lock()
	defer f.rec.mu.Unlock()
	// Keep the strongest record of a path: a later stat must not turn a
	// recorded listing or file read into a bare existence check.
	if old, ok := f.rec.paths[p]; ok && accessRank(old) >= accessRank(kind) {
		return
	}
	f.rec.paths[p] = kind
}

// accessRank orders access kinds by how much of the path a capture must copy.
func accessRank(kind string) int {
	switch kind {
	case AccessFile:
		return 3
	case AccessDir:
		return 2
	case AccessLink:
		return 1
	}
	return 0
}

// keep remembers the bytes a recorded read returned.
func (f *FS) keep(p string, b []byte) {
	if f.rec == nil {
		return
	}
	f.rec.mu.Lock()
	defer f.rec.mu.Unlock()
	f.rec.data[p] = append([]byte(nil), b...)
}

// recordedData returns the bytes recorded for host path p.
func (f *FS) recordedData(p string) ([]byte, bool) {
	if f.rec == nil {
		return nil, false
	}
	f.rec.mu.Lock()
	defer f.rec.mu.Unlock()
	b, ok := f.rec.data[p]
	return b, ok
}

// clean normalises a host path to an absolute, cleaned form.
func clean(p string) string {
	if strings.HasPrefix(p, "/") {
		return path.Clean(p) // no allocation when p is already clean
	}
	return path.Clean("/" + p)
}

// Path maps a host path to the path on this machine's filesystem, without
// resolving links.
func (f *FS) Path(p string) string {
	return filepath.Join(f.root, filepath.FromSlash(clean(p)))
}

// Resolve follows every symlink in the host path p, treating absolute link
// targets as relative to the root, and returns the resolved host path. The
// final component need not exist.
func (f *FS) Resolve(p string) (string, error) {
	p = clean(p)
	if f.rootFD != noFD && f.rec == nil {
		// Fast path: openat2 resolves inside the root, /proc/self/fd
		// tells where (not openFD: without openat2 it resolves through
		// Resolve, looping). Recording needs the slow path, which sees
		// (and records) every link on the way.
		if fd, err := f.openat2(p, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS}); err == nil {
			resolved, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
			unix.Close(fd)
			if rel, ok := strings.CutPrefix(resolved, f.root); err == nil && ok && (rel == "" || rel[0] == '/') {
				return clean(rel), nil
			}
		}
	}
	return f.resolve(p, 0)
}

func (f *FS) resolve(p string, depth int) (string, error) {
	if depth > maxLinks {
		return "", fmt.Errorf("%s: too many levels of symbolic links", p)
	}
	// p is clean: no ".." parts; splitPath drops the empty one of "/".
	parts := splitPath(p)
	cur := "/"
	for i, part := range parts {
		next := path.Join(cur, part)
		fi, err := os.Lstat(f.Path(next))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				// Leave the rest unresolved; callers get ENOENT when they use it.
				return path.Join(append([]string{next}, parts[i+1:]...)...), nil
			}
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		target, err := os.Readlink(f.Path(next))
		if err != nil {
			return "", err
		}
		if !path.IsAbs(target) {
			target = path.Join(cur, target)
		}
		resolved, err := f.resolve(clean(target), depth+1)
		if err != nil {
			return "", err
		}
		cur = resolved
	}
	return cur, nil
}

// hostPath resolves p and returns the local path to operate on.
func (f *FS) hostPath(p string) (string, error) {
	r, err := f.Resolve(p)
	if err != nil {
		return "", &fs.PathError{Op: "resolve", Path: clean(p), Err: err}
	}
	return f.Path(r), nil
}

// ReadString reads a file and trims surrounding whitespace.
func (f *FS) ReadString(p string) (string, error) {
	b, err := f.ReadFile(p)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// ReadInt reads a file holding one decimal integer. With an error it
// returns 0.
func (f *FS) ReadInt(p string) (int64, error) {
	s, err := f.ReadString(p)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", clean(p), err)
	}
	return n, nil
}

// ReadDir lists a directory, sorted by name.
func (f *FS) ReadDir(p string) ([]fs.DirEntry, error) {
	p = clean(p)
	f.note(p, AccessDir)
	fh, err := f.open(p, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	// In batches, so that a directory of more than f.maxDir entries is
	// refused before it is all in memory.
	var ents []fs.DirEntry
	for {
		batch, err := fh.ReadDir(4096)
		ents = append(ents, batch...)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, &fs.PathError{Op: "readdir", Path: p, Err: unwrapPath(err)}
		}
		if len(ents) > f.maxDir {
			return nil, &fs.PathError{Op: "readdir", Path: p, Err: fmt.Errorf("more than %d entries", f.maxDir)}
		}
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	return ents, nil
}

// ReadDirNames lists the names in a directory, sorted. It reads the
// directory with getdents on a raw descriptor: no *os.File (whose poller
// registration is two more system calls a directory) and no DirEntry per
// name, which matters for discovery's per-device listings.
func (f *FS) ReadDirNames(p string) ([]string, error) {
	p = clean(p)
	f.note(p, AccessDir)
	fd, err := f.openFD(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return f.readNames(fd, p)
}

// MaxDirEntries bounds one directory listing. /sys/bus/pci/devices on the
// largest hosts holds a few thousand entries, /proc a few hundred thousand.
const MaxDirEntries = 1 << 20

// readNames lists the open directory fd (host path p), sorted, without "."
// and "..".
func (f *FS) readNames(fd int, p string) ([]string, error) {
	var buf [8192]byte
	var names []string
	for try := 0; ; {
		n, err := f.getdents(fd, p, buf[:])
		if err == unix.EINTR && try < maxEINTR {
			try++
			continue // a getdents that delivered nothing is safe to repeat
		}
		if err != nil {
			return nil, &fs.PathError{Op: "readdirent", Path: p, Err: err}
		}
		if n <= 0 {
			break
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
		if len(names) > f.maxDir {
			return nil, &fs.PathError{Op: "readdirent", Path: p, Err: fmt.Errorf("more than %d entries", f.maxDir)}
		}
	}
	sort.Strings(names)
	return names, nil
}

// getdents is getdents64(2) of fd (host path p), behind Faults.Sys.
func (f *FS) getdents(fd int, p string, buf []byte) (int, error) {
	if err := f.faults.sys("getdents", p); err != nil {
		return 0, err
	}
	return unix.Getdents(fd, buf)
}

// readlinkAt reads the target of the symlink name in directory dfd (host
// path p) in one readlinkat(2): the kernel takes link targets of at most
// PATH_MAX-1 bytes (symlink(2) reads the target like a path name, with its
// terminating NUL in PATH_MAX), so a buffer of PATH_MAX always holds one.
func readlinkAt(dfd int, name, p string) (string, error) {
	var buf [unix.PathMax]byte
	n, err := unix.Readlinkat(dfd, name, buf[:])
	if err != nil {
		return "", &fs.PathError{Op: "readlink", Path: p, Err: err}
	}
	return string(buf[:n]), nil
}

// Readlink returns the target of the symlink at host path p (links in the
// parent directories are resolved first).
func (f *FS) Readlink(p string) (string, error) {
	p = clean(p)
	f.note(p, AccessLink)
	if dfd, err := f.openFD(path.Dir(p), unix.O_PATH|unix.O_DIRECTORY); err == nil {
		defer unix.Close(dfd)
		return readlinkAt(dfd, path.Base(p), p)
	}
	dir, err := f.Resolve(path.Dir(p))
	if err != nil {
		return "", err
	}
	t, err := os.Readlink(f.Path(path.Join(dir, path.Base(p))))
	if err != nil {
		return "", rename(err, p)
	}
	return t, nil
}

// Stat returns information about the file at p, following links.
func (f *FS) Stat(p string) (fs.FileInfo, error) {
	p = clean(p)
	f.note(p, AccessStat)
	fh, err := f.open(p, unix.O_PATH)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, rename(err, p)
	}
	return fi, nil
}

// Exists reports whether p exists (following links).
func (f *FS) Exists(p string) bool {
	_, err := f.Stat(p)
	return err == nil
}

// rename rewrites the path in a PathError to the host path the caller used.
func rename(err error, p string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: pe.Op, Path: p, Err: pe.Err}
	}
	return err
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
