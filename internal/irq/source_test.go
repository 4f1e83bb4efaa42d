package irq

import (
	"context"
	"reflect"
	"testing"

	"github.com/gpunode/gpunode/internal/testhost"
)

// TestSourceKeep: Source.Keep gets the very analysis the checks were made
// from, equal to a fresh Analyze of the host (the agent exports it instead
// of analysing twice per cycle).
func TestSourceKeep(t *testing.T) {
	fsys, tp := host(t, testhost.Path(t, "dgx-h100"))
	var kept *Report
	cs, err := Source{FS: fsys, Topo: tp, Keep: func(r *Report) { kept = r }}.Checks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if kept == nil {
		t.Fatal("Keep was not called")
	}
	fresh, err := Analyze(context.Background(), fsys, tp, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(kept, fresh) {
		t.Errorf("kept report differs from a fresh analysis:\nkept  %s\nfresh %s", mustJSON(t, kept), mustJSON(t, fresh))
	}
	if !reflect.DeepEqual(cs, ChecksFromReport(kept)) {
		t.Error("the checks were not made from the kept report")
	}
	if len(cs) == 0 {
		t.Error("no checks on the DGX fixture")
	}
}
