package topo

import (
	"fmt"
	"strings"
)

// Class returns the nvidia-smi style link class between two devices from
// their PCIe paths and NUMA nodes:
//   - different root complexes: NODE on one NUMA node, else SYS;
//   - one root complex, different root ports: PHB;
//   - one root port, each device at most one bridge below the deepest common
//     bridge (both behind downstream ports of the same switch): PIX;
//   - otherwise (cascaded switches, no host bridge crossed): PXB.
func Class(a, b *PCIDevice) string {
	if a.BDF == b.BDF {
		return LinkSelf
	}
	pa, pb := a.PCIePath, b.PCIePath
	if len(pa) == 0 || len(pb) == 0 || pa[0] != pb[0] {
		if a.NUMANode >= 0 && a.NUMANode == b.NUMANode {
			return LinkNODE
		}
		return LinkSYS
	}
	// Bridges between the root complex and each device.
	ba, bb := pa[1:len(pa)-1], pb[1:len(pb)-1]
	if len(ba) == 0 || len(bb) == 0 || ba[0] != bb[0] {
		return LinkPHB
	}
	c := 0
	for c < len(ba) && c < len(bb) && ba[c] == bb[c] {
		c++
	}
	if len(ba)-c <= 1 && len(bb)-c <= 1 {
		return LinkPIX
	}
	return LinkPXB
}

// computeLinks classifies every pair of GPUs and NICs.
func computeLinks(t *Topology) []Link {
	devs := matrixDevices(t)
	var out []Link
	for i := range devs {
		for j := i + 1; j < len(devs); j++ {
			out = append(out, Link{A: devs[i].Name, B: devs[j].Name, Class: Class(devs[i], devs[j])})
		}
	}
	return out
}

// matrixDevices lists the GPUs then the NICs.
func matrixDevices(t *Topology) []*PCIDevice {
	var devs []*PCIDevice
	for i := range t.GPUs {
		devs = append(devs, &t.GPUs[i])
	}
	for i := range t.NICs {
		devs = append(devs, &t.NICs[i])
	}
	return devs
}

// LinkClass returns the class of the link between devices named a and b, or
// "" when there is none.
func (t *Topology) LinkClass(a, b string) string {
	if a == b {
		return LinkSelf
	}
	for _, l := range t.Links {
		if (l.A == a && l.B == b) || (l.A == b && l.B == a) {
			return l.Class
		}
	}
	return ""
}

// SetLinkClass overrides the class of a link (the GPU layer sets NV# from
// NVML); it adds the link if missing.
func (t *Topology) SetLinkClass(a, b, class string) {
	for i, l := range t.Links {
		if (l.A == a && l.B == b) || (l.A == b && l.B == a) {
			t.Links[i].Class = class
			return
		}
	}
	t.Links = append(t.Links, Link{A: a, B: b, Class: class})
}

// gpuMemoryNodes links CPU-less NUMA nodes that hold memory to GPUs on
// coherent systems (GH200), when the count leaves no doubt.
func (d *discoverer) gpuMemoryNodes() {
	t := d.t
	var memOnly []int
	for i, n := range t.NUMANodes {
		if n.CPUs.Size() == 0 && n.MemTotalBytes > 0 {
			memOnly = append(memOnly, i)
		}
	}
	if len(memOnly) == 0 {
		return
	}
	if len(memOnly) != len(t.GPUs) {
		var ids []string
		for _, i := range memOnly {
			ids = append(ids, fmt.Sprint(t.NUMANodes[i].ID))
		}
		d.warn("", "NUMA node(s) %s hold memory but no CPUs; not matched to GPUs (%d GPUs)", strings.Join(ids, ","), len(t.GPUs))
		return
	}
	for gi, ni := range memOnly {
		g, id := gi, t.NUMANodes[ni].ID
		t.NUMANodes[ni].GPU = &g
		t.GPUs[gi].MemoryNUMANode = &id
		d.warn("", "GPU%d memory inferred on CPU-less NUMA node %d (coherent CPU-GPU memory, as on Grace Hopper)", gi, id)
	}
}

func (d *discoverer) topologyWarnings() {
	t := d.t
	for _, list := range [][]PCIDevice{t.GPUs, t.NICs, t.NVMe, t.NVSwitches} {
		for _, dev := range list {
			p := sysPCI + "/" + dev.BDF
			switch dev.NUMASource {
			case NUMAUnknown:
				d.warn(p+"/numa_node", "%s (%s): NUMA node unknown (numa_node is -1 or unreadable, and local_cpulist %q does not single out one node)", dev.Name, dev.BDF, dev.LocalCPUs.String())
			case NUMAFromLocalCPUList:
				d.warn(p+"/numa_node", "%s (%s): numa_node is -1; inferred NUMA node %d from local_cpulist", dev.Name, dev.BDF, dev.NUMANode)
			}
			if dev.LinkDowngraded {
				msg := fmt.Sprintf("%s (%s): PCIe link x%d %s below its capability x%d %s", dev.Name, dev.BDF,
					dev.LinkWidth, speedGen(dev.LinkSpeed), dev.MaxLinkWidth, speedGen(dev.MaxLinkSpeed))
				if dev.Kind == KindGPU && dev.LinkWidth >= dev.MaxLinkWidth {
					msg += " (GPUs lower the link speed when idle; re-check under load)"
				}
				d.warn(p, "%s", msg)
			}
		}
	}
	// GPUs without a NIC on their NUMA node (only meaningful when NICs exist).
	nics := t.NICs
	var rdma []PCIDevice
	for _, n := range nics {
		if len(n.IBDevs) > 0 {
			rdma = append(rdma, n)
		}
	}
	if len(rdma) > 0 {
		nics = rdma
	}
	if len(nics) == 0 {
		return
	}
	for _, g := range t.GPUs {
		if g.NUMANode < 0 {
			continue
		}
		local := false
		for _, n := range nics {
			if n.NUMANode == g.NUMANode {
				local = true
				break
			}
		}
		if !local {
			d.warn("", "%s (%s) is on NUMA node %d but no NIC is; GPU-NIC traffic crosses the CPU interconnect", g.Name, g.BDF, g.NUMANode)
		}
	}
}

func speedGen(s PCIeSpeed) string {
	if g := s.GenName(); g != "" {
		return fmt.Sprintf("%s (%s)", g, strings.TrimSpace(strings.TrimSuffix(s.Text, "PCIe")))
	}
	if s.Text == "" {
		return "unknown speed"
	}
	return s.Text
}
