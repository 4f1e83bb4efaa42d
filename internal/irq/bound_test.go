package irq

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/testhost"
	"github.com/gpunode/gpunode/internal/topo"
)

// TestAnalyzeRefusesHugeInterruptsFast: a /proc/interrupts of one 20 MB
// line, or a header of 200k columns, is refused by Analyze (the agent's
// and 'irq plan”s one reader) without reading it whole: under 4 MiB
// allocated, where reading it costs more than its size.
func TestAnalyzeRefusesHugeInterruptsFast(t *testing.T) {
	root := testhost.Copy(t, "dgx-h100")
	fsys, err := hostfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := topo.Discover(context.Background(), fsys)
	if err != nil {
		t.Fatal(err)
	}
	var cols strings.Builder
	for i := 0; i < 200000; i++ {
		cols.WriteString("CPU" + strconv.Itoa(i) + " ")
	}
	p := filepath.Join(root, "proc/interrupts")
	for name, content := range map[string][]byte{
		"20 MB line":   bytes.Repeat([]byte("x"), 20<<20),
		"200k columns": []byte(cols.String() + "\n  0: 1 edge timer\n"),
	} {
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		t0 := time.Now()
		_, err := Analyze(context.Background(), fsys, tp, Options{})
		took := time.Since(t0)
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: refused in %v with %d bytes allocated: %v", name, took, alloc, err)
		if err == nil || !strings.Contains(err.Error(), "/proc/interrupts line 1") {
			t.Errorf("%s: %v, want it refused naming line 1", name, err)
		}
		if alloc > 4<<20 {
			t.Errorf("%s: %d bytes allocated to refuse it, want under 4 MiB", name, alloc)
		}
	}
	// At the edges of the parser's bounds: maxColumns columns parse,
	// one more is refused; a row of maxLineBytes is refused as a whole.
	hdr := func(n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteString(" CPU" + strconv.Itoa(i))
		}
		return b.String() + "\n"
	}
	if _, err := ParseInterrupts([]byte(hdr(maxColumns))); err != nil {
		t.Errorf("%d columns: %v", maxColumns, err)
	}
	if _, err := ParseInterrupts([]byte(hdr(maxColumns + 1))); err == nil {
		t.Errorf("%d columns accepted", maxColumns+1)
	}
	if _, err := ParseInterrupts([]byte("CPU0\n  0: 1 " + strings.Repeat("y", maxLineBytes) + "\n")); err == nil {
		t.Error("a row over maxLineBytes accepted")
	}
}
