package hostfs

import (
	"fmt"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Op is a write-side operation an FS counts for fault injection.
type Op string

// The counted operations. Every write-side system call the FS makes on a
// host path is one of these and is counted once, before it is made.
const (
	OpOpenWrite Op = "open-for-write" // open(2) with O_WRONLY/O_RDWR/O_CREAT
	OpWrite     Op = "write"
	OpFsync     Op = "fsync"
	OpRename    Op = "rename"
	OpMkdir     Op = "mkdir"
	OpChmod     Op = "chmod"
	OpChown     Op = "chown"
	OpUnlink    Op = "unlink" // unlink(2) and rmdir(2)
	OpSymlink   Op = "symlink"
)

// Faults makes an FS fail (or die) at one counted write-side operation. It
// is an option on an FS value (see WithFaults), never package state: tests
// build one FS with faults and hand it to the code under test.
//
// Operations are numbered from 1 in the order the FS makes them, over every
// FS that shares the Faults value.
type Faults struct {
	// At is the number of the operation to fault; 0 faults none (counting
	// only, to size a sweep).
	At int
	// Err is returned (wrapped in a *fs.PathError by the caller) instead of
	// making operation At. When nil and Kill is false, syscall.EIO is used.
	Err syscall.Errno
	// Kill sends SIGKILL to the process at operation At instead, so that a
	// test can re-exec itself and kill the child at an exact point.
	Kill bool
	// Only, when set, counts only operations of these kinds.
	Only []Op
	// NoSync counts fsyncs (they can still be faulted) but does not make
	// them: a test cannot observe durability without a power cut, and
	// thousands of fsyncs on a disk-backed temp directory are slow.
	NoSync bool
	// Hook, when set, runs before every counted operation (with its number)
	// and may return an error to fail it; racing tests use it to slow an
	// apply down. It runs without any FS lock held.
	Hook func(n int, op Op, p string) error
	// Open, when set, runs before every openat2 below the root (the read
	// side included; not counted), with the host path and the attempt
	// number (0 first, then each retry); an error it returns (an errno)
	// stands for the kernel's answer to that attempt. Tests use it to
	// inject the transient EAGAIN of RESOLVE_IN_ROOT.
	Open func(p string, try int) error
	// Sys, when set, runs before each of the other system calls the FS
	// makes on a descriptor it holds or on an output path (not counted):
	// each read(2) of a file's contents (tests count with it the reads a
	// file costs: one for a file of known size), fstat and getdents on the
	// read side, each openat2 attempt of a Dir's entry beneath its
	// descriptor, the calls of WriteOutput and of a capture's output side
	// (see the names passed at each call). It gets the call's name and the
	// path it is for (a host path; for WriteOutput and a capture's output
	// directory, the name as given, and for WriteOutput's fsync of the
	// directory that directory as split off the name, trailing separator
	// kept); an errno it returns stands for the kernel's answer, and the
	// call is not made. Racing tests create or remove an entry in it,
	// between two calls of a check-then-act.
	Sys func(call, p string) error
	// Sleep, when set, runs instead of time.Sleep for each pause of the
	// back-off between two openat2 attempts that answered EAGAIN (see
	// Open), with the pause's length: tests check the schedule without
	// waiting it out.
	Sleep func(d time.Duration)

	mu  sync.Mutex
	n   int
	log []string
}

// Count returns the number of counted operations so far.
func (fl *Faults) Count() int {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	return fl.n
}

// Log returns "N op path" for every counted operation so far (at most the
// first 100 000).
func (fl *Faults) Log() []string {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	return append([]string(nil), fl.log...)
}

// WithFaults returns a copy of f that counts its write-side operations in
// fl and faults the one fl selects. The copy shares f's root.
func (f *FS) WithFaults(fl *Faults) *FS {
	c := &FS{root: f.root, rootFD: noFD, rec: f.rec, faults: fl, maxDir: f.maxDir, changed: f.changed}
	if f.rootFD != noFD {
		// The copy holds its own descriptor: f's is closed when f is
		// collected, which may be long before the copy is.
		if fd, err := unix.FcntlInt(uintptr(f.rootFD), unix.F_DUPFD_CLOEXEC, 0); err == nil {
			c.rootFD = fd
			runtime.AddCleanup(c, func(fd int) { unix.Close(fd) }, fd)
		}
	}
	return c
}

// op counts write-side operation op on host path p and returns the injected
// error when it is the faulted one.
func (f *FS) op(op Op, p string) error {
	f.markChanged()
	fl := f.faults
	if fl == nil {
		return nil
	}
	if len(fl.Only) > 0 {
		ok := false
		for _, o := range fl.Only {
			ok = ok || o == op
		}
		if !ok {
			return nil
		}
	}
	fl.mu.Lock()
	fl.n++
	n := fl.n
	if len(fl.log) < 100000 {
		fl.log = append(fl.log, fmt.Sprintf("%d %s %s", n, op, p))
	}
	fl.mu.Unlock()
	if fl.Hook != nil {
		if err := fl.Hook(n, op, p); err != nil {
			return err
		}
	}
	if n != fl.At {
		return nil
	}
	if fl.Kill {
		_ = syscall.Kill(syscall.Getpid(), syscall.SIGKILL)
		select {} // the signal is delivered before this returns
	}
	if fl.Err != 0 {
		return fl.Err
	}
	return syscall.EIO
}

// sys runs fl.Sys, when there is one, before system call call on path p.
func (fl *Faults) sys(call, p string) error {
	if fl == nil || fl.Sys == nil {
		return nil
	}
	return fl.Sys(call, p)
}

// do runs fl.Sys for system call name on path p, then, unless it injected
// an error, the call itself.
func (fl *Faults) do(name, p string, call func() error) error {
	if err := fl.sys(name, p); err != nil {
		return err
	}
	return call()
}

// pause sleeps for d, or hands d to fl.Sleep when there is one.
func (fl *Faults) pause(d time.Duration) {
	if fl != nil && fl.Sleep != nil {
		fl.Sleep(d)
		return
	}
	time.Sleep(d)
}

// skipSync reports whether the fsync just counted should not be made.
func (f *FS) skipSync() bool { return f.faults != nil && f.faults.NoSync }
