package node

import (
	"fmt"

	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/topo"
)

// GPUResource is the extended resource the NVIDIA device plugin advertises.
const GPUResource = "nvidia.com/gpu"

// FromTopology builds the node model from gpunode's live topology: online
// CPUs with their cores (the lowest sibling id, as kubelet), sockets, NUMA
// nodes and L3 caches (uncore; the socket when unknown), NUMA memory,
// hugepages and distances, and one nvidia.com/gpu device per GPU on its NUMA
// node (no topology when the kernel reports none).
func FromTopology(t *topo.Topology) (*Node, error) {
	n := &Node{Name: t.Hostname}
	ids := map[int]bool{}
	for _, nn := range t.NUMANodes {
		m := NUMANode{ID: nn.ID, CPUs: cpuset.New(), MemoryBytes: nn.MemTotalBytes}
		if len(nn.Distances) == len(t.NUMANodes) {
			m.Distances = append([]int(nil), nn.Distances...)
		}
		for _, hp := range nn.HugePages {
			m.HugePages = append(m.HugePages, HugePages{PageSizeBytes: hp.SizeBytes, Count: hp.Total})
		}
		n.NUMANodes = append(n.NUMANodes, m)
		ids[nn.ID] = true
	}
	if len(n.NUMANodes) == 0 {
		// Machines without NUMA report one node 0 to kubelet. topo.Discover
		// already returns that node with the machine's memory; this covers a
		// Topology built without any NUMA node (memory unknown).
		n.NUMANodes = append(n.NUMANodes, NUMANode{ID: 0, CPUs: cpuset.New()})
		ids[0] = true
	}
	online := map[int]topo.CPU{}
	for _, c := range t.CPUs {
		if c.Online {
			online[c.ID] = c
		}
	}
	perNUMA := map[int][]int{}
	for id, c := range online {
		numa := c.NUMANode
		if numa < 0 || !ids[numa] {
			numa = n.NUMANodes[0].ID
		}
		core := id
		for _, s := range c.Siblings.List() {
			if _, ok := online[s]; ok && s < core {
				core = s
			}
		}
		uncore := c.Socket
		if c.L3 >= 0 {
			uncore = c.L3
		}
		n.CPUs = append(n.CPUs, CPU{ID: id, Core: core, Socket: c.Socket, NUMANode: numa, Uncore: uncore})
		perNUMA[numa] = append(perNUMA[numa], id)
	}
	for i := range n.NUMANodes {
		n.NUMANodes[i].CPUs = cpuset.New(perNUMA[n.NUMANodes[i].ID]...)
	}
	if len(t.GPUs) > 0 {
		r := DeviceResource{Name: GPUResource}
		for _, g := range t.GPUs {
			d := Device{ID: fmt.Sprintf("GPU-%d-%s", g.Index, g.BDF), Healthy: true}
			if g.NUMANode >= 0 && ids[g.NUMANode] {
				d.NUMANodes = []int{g.NUMANode}
			}
			r.Devices = append(r.Devices, d)
		}
		n.Devices = append(n.Devices, r)
	}
	n.sortModel()
	if err := n.Validate(); err != nil {
		return nil, fmt.Errorf("live topology: %w", err)
	}
	return n, nil
}
