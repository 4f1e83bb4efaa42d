package bind

import (
	"context"
	"strings"
	"testing"
)

// Defect: CUDA_VISIBLE_DEVICES=MIG-... (what the device plugin sets under
// Kubernetes) was refused; a MIG device binds to its parent GPU.
func TestMIGUUIDBindsParent(t *testing.T) {
	dgx := discover(t, "dgx-h100")
	gpus := uuidsFor(dgx)
	gpus[6].MIGUUIDs = []string{"MIG-6e95ef19-5145-571b-b040-7e731f1c1af3", "MIG-b4bcd4f3-6f69-516d-9404-b5ada80d760b"}
	gpus[1].MIGUUIDs = []string{"MIG-27b1a30b-e164-5ba8-9904-9d949f65d8e4"}
	src := Sources{GPUs: fakeGPUs{name: "nvml", gpus: gpus}}
	vis := "MIG-27b1a30b-e164-5ba8-9904-9d949f65d8e4,MIG-b4bcd4f3-6f69-516d-9404-b5ada80d760b"
	for rank, want := range []int{1, 6} {
		p, err := Resolve(context.Background(), dgx, Request{LocalRank: ip(rank), CUDAVisibleDevices: &vis, Command: []string{"python"}}, src)
		if err != nil {
			t.Fatalf("rank %d: %v", rank, err)
		}
		node := -1
		for _, g := range dgx.GPUs {
			if g.Name == dgx.GPUs[want].Name {
				node = g.NUMANode
			}
		}
		if p.Target.Index == nil || *p.Target.Index != want || p.NUMANode != node || !strings.HasPrefix(p.Target.Visible, "MIG-") {
			t.Errorf("rank %d: target %+v node %d, want GPU %d on node %d", rank, p.Target, p.NUMANode, want, node)
		}
	}
	// A GPU UUID and a MIG UUID of the same GPU mixed: both resolve.
	p, err := Resolve(context.Background(), dgx, Request{GPU: "mig-6E95EF19-5145-571b-b040-7e731f1c1af3", Command: []string{"x"}}, src)
	if err != nil || p.Target.Index == nil || *p.Target.Index != 6 {
		t.Errorf("case-insensitive MIG UUID: %+v %v", p.Target, err)
	}
}
