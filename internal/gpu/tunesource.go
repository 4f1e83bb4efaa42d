package gpu

import (
	"context"
	"fmt"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/tune"
)

// TuneSource plugs the GPU checks into 'gpunode audit' (tune.GPUChecker).
type TuneSource struct {
	Backend Backend
	// CUDARuntime overrides the detected CUDA runtime version.
	CUDARuntime string
}

var _ tune.GPUChecker = TuneSource{}

// Name implements tune.Source.
func (s TuneSource) Name() string { return "gpu" }

// Checks implements tune.Source: Audit's findings as tune checks (layer
// "gpu"; warn and fail are drift, info is ok with a detail, a node without
// a driver is one absent check). It reads, never writes.
func (s TuneSource) Checks(ctx context.Context, h *tune.Host, _ *tune.Profile) ([]tune.Check, error) {
	if s.Backend == nil {
		return []tune.Check{{ID: CheckDriverPresent, Layer: "gpu", Status: tune.StatusAbsent, Detail: "no GPU backend"}}, nil
	}
	st, err := s.Backend.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("gpu: %w", err)
	}
	var host *hostfs.FS
	if h != nil {
		host = h.FS
	}
	o, err := RuntimeOptions(host, s.CUDARuntime)
	if err != nil {
		return nil, fmt.Errorf("gpu: CUDA runtime: %w", err)
	}
	if host != nil {
		Annotate(host, &st)
	}
	var out []tune.Check
	for _, f := range Audit(st, o) {
		c := tune.Check{ID: f.Check, Layer: "gpu", Current: f.Message, Detail: f.Message}
		if f.GPU >= 0 {
			c.ID = fmt.Sprintf("%s/gpu%d", f.Check, f.GPU)
			c.Detail = fmt.Sprintf("GPU %d %s: %s", f.GPU, f.UUID, f.Message)
		}
		if f.Fix != "" {
			c.Fix = []string{f.Fix}
		}
		switch f.Severity {
		case SevOK, SevInfo:
			c.Status = tune.StatusOK
		default:
			c.Status = tune.StatusDrift
		}
		if f.Check == CheckDriverPresent {
			c.Status = tune.StatusAbsent
		}
		out = append(out, c)
	}
	return out, nil
}
