package topo

import (
	"context"
	"errors"
	"testing"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/testhost"
)

// A cancelled context stops discovery: every per-CPU, per-node and per-device
// loop checks it, and Discover returns the context's error, not a topology.
func TestDiscoverHonoursCancellation(t *testing.T) {
	fsys, err := hostfs.New(testhost.Path(t, "dgx-h100"))
	if err != nil {
		t.Fatal(err)
	}
	fsys.Record()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tp, err := Discover(ctx, fsys)
	if !errors.Is(err, context.Canceled) || tp != nil {
		t.Fatalf("Discover with a cancelled context = %v, %v; want context.Canceled", tp != nil, err)
	}
	// It stopped early: a full discovery of the DGX reads thousands of paths.
	full, _ := hostfs.New(testhost.Path(t, "dgx-h100"))
	full.Record()
	if _, err := Discover(context.Background(), full); err != nil {
		t.Fatal(err)
	}
	got, all := len(fsys.Recorded()), len(full.Recorded())
	t.Logf("cancelled discovery read %d paths, a full one %d", got, all)
	if got*4 > all {
		t.Errorf("cancelled discovery read %d of the %d paths a full one reads; want it to stop early", got, all)
	}
}
