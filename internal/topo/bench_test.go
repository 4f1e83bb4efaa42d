package topo

import (
	"context"
	"testing"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/testhost"
)

// BenchmarkDiscoverDGX measures discovery on the DGX H100-shaped fixture
// (target: under 5 ms per run).
func BenchmarkDiscoverDGX(b *testing.B) {
	fs, err := hostfs.New(testhost.Path(b, "dgx-h100"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	start := testhost.CPUTime()
	for b.Loop() {
		if _, err := Discover(context.Background(), fs); err != nil {
			b.Fatal(err)
		}
	}
	testhost.ReportCPU(b, start)
}
