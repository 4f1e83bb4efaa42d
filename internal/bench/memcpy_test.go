package bench

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// fakeLibc is a libcOpener: with err it fails as a missing library does;
// otherwise its memcpy copies with Go and counts its calls, and released
// (when not nil) counts the releases.
func fakeLibc(version string, err error, released *int) libcOpener {
	return func(file string) (libcMemcpy, error) {
		if err != nil {
			return libcMemcpy{}, err
		}
		l := libcMemcpy{version: version, memcpy: func(dst, src unsafe.Pointer, n uintptr) unsafe.Pointer {
			copy(unsafe.Slice((*byte)(dst), n), unsafe.Slice((*byte)(src), n))
			return dst
		}}
		if released != nil {
			l.release = func() { *released++ }
		}
		return l, nil
	}
}

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>8)
	}
	return b
}

// TestChooseMemcpyFallback: without a loadable C library the memcpy passes
// run Go's copy, the routine says so and a note says why.
func TestChooseMemcpyFallback(t *testing.T) {
	for name, open := range map[string]libcOpener{
		"load fails": fakeLibc("", errors.New("libc.so.6: cannot open shared object file"), nil),
		"no memcpy":  func(string) (libcMemcpy, error) { return libcMemcpy{version: "2.36"}, nil },
		// The real loader on a library that is not there (a musl or
		// static environment has no libc.so.6).
		"dlopen fails": func(string) (libcMemcpy, error) { return dlopenLibc("libgpunode-no-such-library.so.0") },
	} {
		t.Run(name, func(t *testing.T) {
			mc := chooseMemcpy(open)
			if mc.name != GoMemmoveRoutine || mc.release != nil {
				t.Fatalf("routine %q (release %v), want %q", mc.name, mc.release != nil, GoMemmoveRoutine)
			}
			if !strings.Contains(mc.note, "Go's copy") || !strings.Contains(mc.note, "mbw -t1") {
				t.Errorf("note %q", mc.note)
			}
			if name != "no memcpy" && !strings.Contains(mc.note, "libc") && !strings.Contains(mc.note, "libgpunode-no-such-library") {
				t.Errorf("note %q does not say which library failed", mc.note)
			}
			src, dst := pattern(1<<16+3), make([]byte, 1<<16+3)
			mc.copy(dst, src)
			if !bytes.Equal(dst, src) {
				t.Error("fallback copy differs")
			}
		})
	}
}

// TestChooseMemcpyLibrary: a loaded library's memcpy is what the passes
// call, with the shorter length, and the routine names the library.
func TestChooseMemcpyLibrary(t *testing.T) {
	var calls []uintptr
	open := func(string) (libcMemcpy, error) {
		return libcMemcpy{version: "2.41", memcpy: func(dst, src unsafe.Pointer, n uintptr) unsafe.Pointer {
			calls = append(calls, n)
			copy(unsafe.Slice((*byte)(dst), n), unsafe.Slice((*byte)(src), n))
			return dst
		}}, nil
	}
	mc := chooseMemcpy(open)
	if mc.name != "glibc 2.41 memcpy (libc.so.6)" || mc.note != "" {
		t.Fatalf("routine %q note %q", mc.name, mc.note)
	}
	src, dst := pattern(5000), make([]byte, 4096)
	mc.copy(dst, src)
	mc.copy(nil, src) // nothing to copy: no call
	if len(calls) != 1 || calls[0] != 4096 || !bytes.Equal(dst, src[:4096]) {
		t.Fatalf("calls %v", calls)
	}
	// A C library that is not glibc (no gnu_get_libc_version).
	if mc := chooseMemcpy(fakeLibc("", nil, nil)); mc.name != "C library memcpy (libc.so.6)" {
		t.Errorf("routine %q", mc.name)
	}
}

// TestDlopenLibcMemcpy loads this machine's libc.so.6 with the real loader
// and copies through its memcpy. A machine without libc.so.6 skips, unless
// GPUNODE_REAL_BENCH=1 (where bench numa must compare with mbw).
func TestDlopenLibcMemcpy(t *testing.T) {
	l, err := dlopenLibc(libcFile)
	if err != nil {
		if os.Getenv("GPUNODE_REAL_BENCH") == "1" {
			t.Fatalf("GPUNODE_REAL_BENCH=1 but %v", err)
		}
		t.Skipf("no glibc here: %v", err)
	}
	defer l.release()
	if l.version == "" || !strings.Contains(l.version, ".") {
		t.Errorf("gnu_get_libc_version: %q", l.version)
	}
	mc := chooseMemcpy(func(string) (libcMemcpy, error) { return l, nil })
	if !strings.HasPrefix(mc.name, "glibc ") {
		t.Errorf("routine %q", mc.name)
	}
	// Past glibc's non-temporal threshold too (a few MiB), and an odd size.
	for _, n := range []int{1, 4099, 24<<20 + 5} {
		src, dst := pattern(n), make([]byte, n)
		mc.copy(dst, src)
		if !bytes.Equal(dst, src) {
			t.Fatalf("%d bytes: memcpy's copy differs", n)
		}
	}
}

// TestLiveBandwidthRoutines runs the live kernels on small arrays, one
// thread: the memcpy passes call the routine given, Go's copy passes stop
// at goCopyPasses, and each op has its samples.
func TestLiveBandwidthRoutines(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the kernels")
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Skipf("sched_getaffinity: %v", err)
	}
	cpu := -1
	for c := range maxNodeBits {
		if set.IsSet(c) {
			cpu = c
			break
		}
	}
	if cpu < 0 {
		t.Skip("no CPU in this thread's affinity")
	}
	calls := 0
	l := liveNUMA{memcpy: func(dst, src []byte) {
		calls++
		copy(dst, src)
	}}
	s, err := l.bandwidth(context.Background(), []int{cpu}, -1, 1<<20, []streamOp{opMemcpy, opGoCopy, opCopy}, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// One warm-up pass is excluded.
	if len(s.memcpy) == 0 || calls != len(s.memcpy)+1 {
		t.Errorf("memcpy passes: %d samples, %d calls of the routine", len(s.memcpy), calls)
	}
	if len(s.goCopy) == 0 || len(s.goCopy) > goCopyPasses || len(s.copy) == 0 || len(s.triad) != 0 {
		t.Errorf("samples: Go copy %d (at most %d), copy %d, triad %d", len(s.goCopy), goCopyPasses, len(s.copy), len(s.triad))
	}
	for _, x := range append(append(s.memcpy, s.goCopy...), s.copy...) {
		if x <= 0 {
			t.Fatalf("sample %v", x)
		}
	}
}

// BenchmarkCopyRoutines times the two copy routines of bench numa's memcpy
// passes on the same two 256 MiB arrays (mbw -t1 256's setup: the source
// filled by a loop first), one glibc memcpy pass and one Go copy pass in
// turn, so that load from other processes falls on both alike. It reports
// each as mbw counts (MiB of one array over the mean pass time) and their
// ratio. go test -run '^$' -bench '^BenchmarkCopyRoutines$' -benchtime 10x
// ./internal/bench/ (docs/BANDWIDTH.md).
func BenchmarkCopyRoutines(b *testing.B) {
	l, err := dlopenLibc(libcFile)
	if err != nil {
		b.Skipf("no glibc here: %v", err)
	}
	defer l.release()
	mc := chooseMemcpy(func(string) (libcMemcpy, error) { return l, nil })
	const size = 256 << 20
	src, err := mapOnNode(size, -1)
	if err != nil {
		b.Fatal(err)
	}
	defer unmap(src)
	dst, err := mapOnNode(size, -1)
	if err != nil {
		b.Fatal(err)
	}
	defer unmap(dst)
	a, c := float64s(src), float64s(dst)
	for j := range a {
		a[j], c[j] = 1, 0
	}
	// Warm-up of each, excluded (mbw has none, but its arrays are filled
	// before its first pass, as these are).
	mc.copy(dst, src)
	copy(dst, src)
	var tC, tGo time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		mc.copy(dst, src)
		t1 := time.Now()
		copy(dst, src)
		tC += t1.Sub(t0)
		tGo += time.Since(t1)
	}
	mib := float64(size>>20) * float64(b.N)
	b.ReportMetric(mib/tC.Seconds(), "glibc-MiB/s")
	b.ReportMetric(mib/tGo.Seconds(), "go-MiB/s")
	b.ReportMetric(tC.Seconds()/tGo.Seconds(), "go/glibc")
}

// A library that loads without a memcpy is given back, not kept open.
func TestChooseMemcpyReleasesALibraryWithoutMemcpy(t *testing.T) {
	released := 0
	mc := chooseMemcpy(func(string) (libcMemcpy, error) {
		return libcMemcpy{version: "2.36", release: func() { released++ }}, nil
	})
	if mc.name != GoMemmoveRoutine || released != 1 {
		t.Errorf("routine %q, released %d times; want the fallback and one release", mc.name, released)
	}
}

// cStringAt stops at the NUL and at its limit, whichever comes first.
func TestCStringAt(t *testing.T) {
	b := []byte("glibc\x002.36")
	for _, c := range []struct {
		limit int
		want  string
	}{{0, ""}, {4, "glib"}, {5, "glibc"}, {6, "glibc"}, {len(b), "glibc"}} {
		if got := cStringAt(&b[0], c.limit); got != c.want {
			t.Errorf("cStringAt(limit %d) = %q, want %q", c.limit, got, c.want)
		}
	}
	n := []byte("H100")
	if got := cStringAt(&n[0], len(n)); got != "H100" {
		t.Errorf("unterminated buffer: %q", got)
	}
}
