package benchplot

import (
	"bytes"
	"errors"
	"testing"

	"github.com/gpunode/gpunode/internal/bench"
)

func TestPlots(t *testing.T) {
	numa := &bench.NUMAResult{Nodes: []int{0, 1}, Pairs: []bench.NUMAPair{
		{CPUNode: 0, MemNode: 0, CopyGBps: 200}, {CPUNode: 0, MemNode: 1, CopyGBps: 95.2},
		{CPUNode: 1, MemNode: 0, CopyGBps: 96}, {CPUNode: 1, MemNode: 1, CopyGBps: 199},
	}}
	h2d := &bench.H2DResult{GPU: 0, LinkGBps: 63, LinkGen: "Gen5", LinkWidth: 16, Cases: []bench.H2DCase{{Direction: bench.HostToDevice, Memory: bench.Pinned, Placement: bench.Local, GBps: 53}, {Direction: bench.DeviceToHost, Memory: bench.Pageable, Placement: bench.Remote, GBps: 20}}}
	alloc := &bench.AllocResult{Runs: []bench.AllocRun{{Allocator: bench.Glibc, MedianWallSeconds: 1}, {Allocator: bench.Jemalloc, MedianWallSeconds: 0.5}}}
	for _, v := range []any{numa, h2d, alloc} {
		svg, err := Plot(v, "svg")
		if err != nil || !bytes.Contains(svg, []byte("<svg")) {
			t.Errorf("%T svg: %v", v, err)
		}
		png, err := Plot(v, "png")
		if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
			t.Errorf("%T png: %v", v, err)
		}
	}
	// The heat map labels every cell with its value.
	svg, _ := Plot(numa, "svg")
	for _, s := range []string{"200.0", "95.2", "copy bandwidth (GB/s)", "memory node"} {
		if !bytes.Contains(svg, []byte(s)) {
			t.Errorf("numa svg lacks %q", s)
		}
	}
	if _, err := PlotFormat("x.pdf"); !errors.Is(err, bench.ErrInput) {
		t.Errorf("pdf: %v", err)
	}
	if _, err := Plot(numa, "pdf"); !errors.Is(err, bench.ErrInput) {
		t.Errorf("plot pdf: %v", err)
	}
}
