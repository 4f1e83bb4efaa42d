package tune

import (
	"context"
	"io"
	"testing"

	"github.com/gpunode/gpunode/internal/output"
	"github.com/gpunode/gpunode/internal/testhost"
)

// BenchmarkAudit measures one whole audit (topology discovery included, no
// GPU backend) of the DGX-shaped fixture against the training profile, as
// 'gpunode audit' does it. Target: under 50 ms per run.
func BenchmarkAudit(b *testing.B) {
	fsys := mustFS(b, sharedHost(b, "dgx-h100"))
	cat := NewCatalogue()
	p := mustLoad(b, cat, fsys, ProfileTraining)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	start := testhost.CPUTime()
	defer testhost.ReportCPU(b, start)
	for b.Loop() {
		h := NewHost(ctx, fsys)
		r, err := Audit(ctx, h, cat, p, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := r.WriteTable(io.Discard, output.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAuditOnly excludes topology discovery.
func BenchmarkAuditOnly(b *testing.B) {
	fsys := mustFS(b, sharedHost(b, "dgx-h100"))
	cat := NewCatalogue()
	p := mustLoad(b, cat, fsys, ProfileInferenceIsolated)
	ctx := context.Background()
	h := NewHost(ctx, fsys)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		// Drop the per-run caches so every file is read again.
		h2 := &Host{FS: h.FS, Topo: h.Topo}
		if _, err := Audit(ctx, h2, cat, p, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
