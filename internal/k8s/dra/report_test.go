package dra

import (
	"bytes"
	"testing"

	"github.com/gpunode/gpunode/internal/output"
)

// TestReportTable: the table, then per node with an explanation its why,
// nearest fits, upstream and note lines; a node whose explanation has
// none of them gets no section.
func TestReportTable(t *testing.T) {
	r := &Report{Nodes: []NodeReport{
		{Node: "a", Fits: true, Allocations: []ClaimAllocation{{Claim: "ns/c", Results: []DeviceResult{{Request: "gpu", Driver: "gpu.nvidia.com", Pool: "a", Device: "gpu-0"}}}},
			Explain: &Explain{Solver: "gpunode"}},
		{Node: "b", Explain: &Explain{Solver: "upstream", Reason: "no room", NearestFits: []string{"count 1 instead of 2 fits"}, Upstream: "up", Note: "note"}},
	}}
	var b bytes.Buffer
	if err := r.WriteTable(&b, output.Options{}); err != nil {
		t.Fatal(err)
	}
	want := "NODE  FITS  CLAIM  REQUEST  DEVICE\n" +
		"a     yes   ns/c   gpu      gpu.nvidia.com/a/gpu-0\n" +
		"b     no    -      -        -\n" +
		"\nb (decided by upstream):\n  why: no room\n  nearest fit: count 1 instead of 2 fits\n  up\n  note\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
}
