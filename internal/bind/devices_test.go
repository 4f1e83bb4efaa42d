package bind

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/testhost"
	"github.com/gpunode/gpunode/internal/topo"
)

// A request resolves to the same plan (CPUs, memory policy, environment,
// warnings) on a topology discovered with DiscoverOptions as on a full one.
func TestNodeRequestsNeedNoDevices(t *testing.T) {
	one := 1
	for _, h := range []string{"dgx-h100", "amd-8numa", "gh200", "vm-2vcpu", "downgraded"} {
		full := discover(t, h)
		fsys, err := hostfs.New(testhost.Path(t, h))
		if err != nil {
			t.Fatal(err)
		}
		bare, err := topo.DiscoverWith(context.Background(), fsys, topo.Options{NoDevices: true, NoHostInfo: true})
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
				{Node: &node, LocalRank: &one, LocalWorldSize: 4, Command: []string{"true"}},
				{Node: &node, NIC: "mlx5_0", Command: []string{"true"}}, // refused either way
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
	// Rank requests need the devices and never the host's description.
	for _, req := range []Request{{}, {NIC: "mlx5_0"}, {GPU: "0"}, {LocalRank: &one, LocalWorldSize: 4}} {
		if !NeedsDevices(req) || DiscoverOptions(req).NoDevices {
			t.Errorf("%+v: needs devices", req)
		}
	}
	for _, h := range []string{"dgx-h100", "gh200"} {
		full := discover(t, h)
		fsys, _ := hostfs.New(testhost.Path(t, h))
		lean, err := topo.DiscoverWith(context.Background(), fsys, DiscoverOptions(Request{}))
		if err != nil {
			t.Fatal(err)
		}
		for rank := range len(full.GPUs) {
			r := rank
			req := Request{LocalRank: &r, LocalWorldSize: len(full.GPUs), Command: []string{"true"}}
			want, werr := Resolve(context.Background(), full, req, Sources{})
			got, gerr := Resolve(context.Background(), lean, req, Sources{})
			wj, _ := json.Marshal(want)
			gj, _ := json.Marshal(got)
			if (werr == nil) != (gerr == nil) || string(wj) != string(gj) {
				t.Errorf("%s rank %d:\nfull %s %v\nlean %s %v", h, rank, wj, werr, gj, gerr)
			}
		}
	}
}
