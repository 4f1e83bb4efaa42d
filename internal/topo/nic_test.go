package topo

import "testing"

func TestNICLocality(t *testing.T) {
	tp := &Topology{
		GPUs: []PCIDevice{{Name: "GPU0", NUMANode: 0}, {Name: "GPU1", NUMANode: -1}},
		NICs: []PCIDevice{{Name: "mlx5_1", NUMANode: 0}, {Name: "mlx5_0", NUMANode: 0}, {Name: "mlx5_2", NUMANode: 1}},
		Links: []Link{
			{A: "GPU0", B: "mlx5_2", Class: LinkSYS},
			{A: "mlx5_1", B: "GPU0", Class: LinkPXB},
			{A: "GPU0", B: "mlx5_0", Class: LinkPXB},
			{A: "GPU0", B: "GPU1", Class: LinkPIX},  // not a NIC
			{A: "GPU1", B: "mlx5_2", Class: "NV12"}, // not a PCIe class
		},
	}
	if got := tp.LocalNICs(tp.GPUs[0]); len(got) != 2 || got[0] != "mlx5_1" || got[1] != "mlx5_0" {
		t.Errorf("LocalNICs(GPU0) = %v", got)
	}
	if got := tp.LocalNICs(tp.GPUs[1]); got != nil {
		t.Errorf("LocalNICs(GPU1, node unknown) = %v", got)
	}
	if nic, class := tp.NearestNIC("GPU0"); nic != "mlx5_0" || class != LinkPXB {
		t.Errorf("NearestNIC(GPU0) = %s %s, want mlx5_0 PXB (tie broken by name)", nic, class)
	}
	if nic, class := tp.NearestNIC("GPU1"); nic != "" || class != "" {
		t.Errorf("NearestNIC(GPU1) = %q %q, want none", nic, class)
	}
	for i, c := range []string{LinkPIX, LinkPXB, LinkPHB, LinkNODE, LinkSYS} {
		if LinkRank(c) != i {
			t.Errorf("LinkRank(%s) = %d, want %d", c, LinkRank(c), i)
		}
	}
	if LinkRank("NV12") != -1 || LinkRank("") != -1 {
		t.Error("LinkRank of a non-PCIe class is not -1")
	}
}
