package sysfmt

import (
	"errors"
	"runtime"
	"strings"
	"testing"
)

// repeatRanges returns a list of about size bytes repeating r.
func repeatRanges(r string, size int) string {
	n := size / (len(r) + 1)
	return strings.TrimSuffix(strings.Repeat(r+",", n), ",")
}

// allocated returns the bytes fn allocated on the heap. MemStats counts
// the whole process (the runtime and other goroutines allocate too), so it
// runs fn on one P and keeps the smallest of a few runs.
func allocated(fn func()) uint64 {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	best := ^uint64(0)
	for range 5 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		fn()
		runtime.ReadMemStats(&after)
		best = min(best, after.TotalAlloc-before.TotalAlloc)
	}
	return best
}

// Hostile CPU lists (issue 10, defect 8): each is refused before anything
// proportional to the ids it names is allocated.
func TestParseCPUListBoundsBeforeAllocating(t *testing.T) {
	for _, tc := range []struct{ name, list string }{
		{"huge range", "0-999999999"},
		{"id beyond int", "0-99999999999999999999999"},
		{"12 KB of 0-65535", repeatRanges("0-65535", 12<<10)},
		{"12 KB of 0-8191 (each range valid)", repeatRanges("0-8191", 12<<10)},
		{"one id too many", "0-16383,0"},
		{"id at the bound", "16384"},
	} {
		var err error
		bytes := allocated(func() { _, err = ParseCPUList(tc.list) })
		if !errors.Is(err, ErrCPUListBound) {
			t.Errorf("%s: error %v; want ErrCPUListBound", tc.name, err)
		}
		if err != nil && len(err.Error()) > 300 {
			t.Errorf("%s: error message is %d bytes (the list must be shortened)", tc.name, len(err.Error()))
		}
		if bytes > 64<<10 {
			t.Errorf("%s: %d bytes allocated before refusing; want < 64 KiB", tc.name, bytes)
		}
		if cerr := CheckCPUList(tc.list); !errors.Is(cerr, ErrCPUListBound) {
			t.Errorf("%s: CheckCPUList = %v; want ErrCPUListBound", tc.name, cerr)
		}
		if bytes := allocated(func() { _ = CheckCPUList(tc.list) }); bytes > 4<<10 {
			t.Errorf("%s: CheckCPUList allocated %d bytes", tc.name, bytes)
		}
	}
}

func TestParseCPUListAtTheBound(t *testing.T) {
	set, err := ParseCPUList("0-16383")
	if err != nil || set.Size() != MaxCPUID {
		t.Fatalf("0-16383: %d CPUs, %v", set.Size(), err)
	}
	// Repeats count towards the bound but the set holds each id once.
	set, err = ParseCPUList("0-8191,0-8191")
	if err != nil || set.Size() != 8192 {
		t.Fatalf("0-8191,0-8191: %d CPUs, %v", set.Size(), err)
	}
	// The biggest legitimate list costs a bounded amount.
	if b := allocated(func() { _, _ = ParseCPUList("0-16383") }); b > 4<<20 {
		t.Errorf("0-16383 allocated %d bytes; want < 4 MiB", b)
	}
	// Syntax errors are not bound errors.
	for _, bad := range []string{"1,,2", "5-2", "a", "-1"} {
		if err := CheckCPUList(bad); err == nil || errors.Is(err, ErrCPUListBound) {
			t.Errorf("CheckCPUList(%q) = %v; want a syntax error", bad, err)
		}
	}
}

func BenchmarkParseCPUListHostile(b *testing.B) {
	list := repeatRanges("0-65535", 12<<10)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseCPUList(list); err == nil {
			b.Fatal("accepted")
		}
	}
}

func BenchmarkParseCPUListMax(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseCPUList("0-16383"); err != nil {
			b.Fatal(err)
		}
	}
}
