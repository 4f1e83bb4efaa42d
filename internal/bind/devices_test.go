package bind

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/testhost"
	"github.com/gpunode/gpunode/internal/topo"
)

// A request NeedsDevices says needs no devices resolves to the same plan
// (CPUs, memory policy, environment, warnings) on a topology discovered
// without the PCI bus.
func TestNodeRequestsNeedNoDevices(t *testing.T) {
	one := 1
	for _, h := range []string{"dgx-h100", "amd-8numa", "gh200", "vm-2vcpu", "downgraded"} {
		full := discover(t, h)
		fsys, err := hostfs.New(testhost.Path(t, h))
		if err != nil {
			t.Fatal(err)
		}
		bare, err := topo.DiscoverWith(context.Background(), fsys, topo.Options{NoDevices: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range full.NUMANodes {
			node := n.ID
			for _, req := range []Request{
				{Node: &node, Command: []string{"true"}},
				{Node: &node, CPUsPerRank: 1, Command: []string{"true"}},
				{Node: &node, IncludeIsolated: true, Mem: "preferred", Command: []string{"true"}},
				{Node: &node, LocalRank: &one, Command: []string{"true"}},
			} {
				if NeedsDevices(req) {
					t.Fatalf("%+v: NeedsDevices", req)
				}
				want, werr := Resolve(context.Background(), full, req, Sources{})
				got, gerr := Resolve(context.Background(), bare, req, Sources{})
				wj, _ := json.Marshal(want)
				gj, _ := json.Marshal(got)
				if (werr == nil) != (gerr == nil) || string(wj) != string(gj) {
					t.Errorf("%s node %d %+v:\nwith devices    %s %v\nwithout devices %s %v", h, node, req, wj, werr, gj, gerr)
				}
			}
		}
	}
	node := 0
	for _, req := range []Request{{}, {Node: &node, NIC: "mlx5_0"}, {GPU: "0"}, {Node: &node, LocalRank: &one, LocalWorldSize: 4}} {
		if !NeedsDevices(req) {
			t.Errorf("%+v: needs devices", req)
		}
	}
}
