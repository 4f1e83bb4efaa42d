package bench

import (
	"fmt"
	"unsafe"

	"github.com/ebitengine/purego"
)

// The memcpy passes of bench numa compare with 'mbw -t1', which runs the C
// library's memcpy (glibc's __memmove_*_unaligned_erms on x86-64). Go's
// copy is the runtime's own memmove, a different routine with its own
// thresholds and instructions (docs/BANDWIDTH.md measures both against
// mbw), so the passes call the C library's memcpy, loaded at run time with
// dlopen (purego: in a cgo and in a CGO_ENABLED=0 build alike), and fall
// back to Go's copy where no libc.so.6 can be loaded (a musl or static
// environment). The result says which routine ran (memcpyRoutine); the Go
// copy is measured beside it either way (goCopyMbwMiBps).

const (
	// libcFile is the C library the memcpy passes load.
	libcFile = "libc.so.6"
	// GoMemmoveRoutine names Go's copy, the fallback of the memcpy passes.
	GoMemmoveRoutine = "Go runtime memmove"
)

// libcMemcpy is what the memcpy passes need from a C library.
type libcMemcpy struct {
	// memcpy is the library's memcpy(dst, src, n).
	memcpy func(dst, src unsafe.Pointer, n uintptr) unsafe.Pointer
	// version is gnu_get_libc_version()'s answer, "" when the library has
	// none (not glibc).
	version string
	// release gives the library back (nil: nothing to release).
	release func()
}

// libcOpener loads a C library by file name (dlopenLibc; tests inject
// others, a failing one for the fallback).
type libcOpener func(file string) (libcMemcpy, error)

// memcpyRoutine is the copy routine of the memcpy passes.
type memcpyRoutine struct {
	// name is the routine, as the result reports it.
	name string
	// copy copies min(len(dst), len(src)) bytes of src to dst.
	copy func(dst, src []byte)
	// note says why the routine is the fallback ("" otherwise).
	note string
	// release gives the library back (nil: nothing to release).
	release func()
}

// chooseMemcpy loads the C library's memcpy with open, or falls back to
// Go's copy when it cannot be loaded.
func chooseMemcpy(open libcOpener) memcpyRoutine {
	lib, err := open(libcFile)
	if err != nil || lib.memcpy == nil {
		if err == nil {
			err = fmt.Errorf("%s has no memcpy", libcFile)
			if lib.release != nil {
				lib.release()
			}
		}
		return memcpyRoutine{name: GoMemmoveRoutine, copy: goCopy,
			note: fmt.Sprintf("memcpy passes ran Go's copy (the runtime's memmove), not the C library's memcpy that 'mbw -t1' runs: %v", err)}
	}
	name := "C library memcpy (" + libcFile + ")"
	if lib.version != "" {
		name = "glibc " + lib.version + " memcpy (" + libcFile + ")"
	}
	c := lib.memcpy
	return memcpyRoutine{name: name, release: lib.release, copy: func(dst, src []byte) {
		n := min(len(dst), len(src))
		if n == 0 {
			return
		}
		c(unsafe.Pointer(&dst[0]), unsafe.Pointer(&src[0]), uintptr(n))
	}}
}

// goCopy is Go's copy, the runtime's memmove.
func goCopy(dst, src []byte) { copy(dst, src) }

// dlopenLibc loads file with dlopen and registers its memcpy (dlsym of
// glibc's memcpy resolves its IFUNC to the variant this CPU gets, the one
// mbw calls) and, when present, gnu_get_libc_version.
func dlopenLibc(file string) (libcMemcpy, error) {
	h, err := purego.Dlopen(file, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return libcMemcpy{}, fmt.Errorf("%s could not be loaded: %w", file, err)
	}
	release := func() { _ = purego.Dlclose(h) }
	sym, err := purego.Dlsym(h, "memcpy")
	if err != nil || sym == 0 {
		release()
		if err == nil {
			err = fmt.Errorf("dlsym returned NULL")
		}
		return libcMemcpy{}, fmt.Errorf("%s has no memcpy: %w", file, err)
	}
	l := libcMemcpy{release: release}
	purego.RegisterFunc(&l.memcpy, sym)
	if v, err := purego.Dlsym(h, "gnu_get_libc_version"); err == nil && v != 0 {
		var version func() *byte
		purego.RegisterFunc(&version, v)
		if p := version(); p != nil {
			l.version = cStringAt(p, 64)
		}
	}
	return l, nil
}

// cStringAt reads the NUL-terminated string at p, at most limit bytes, one
// byte at a time (never past its end): C strings from a loaded library
// (gnu_get_libc_version, cuGetErrorString) and C buffers (cuDeviceGetName).
func cStringAt(p *byte, limit int) string {
	var b []byte
	for i := range limit {
		c := *(*byte)(unsafe.Add(unsafe.Pointer(p), i))
		if c == 0 {
			break
		}
		b = append(b, c)
	}
	return string(b)
}
