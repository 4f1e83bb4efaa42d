// Package node is the node model of gpunode's kubelet admission simulator:
// NUMA nodes with their CPUs (SMT siblings, sockets, uncore caches), memory
// and hugepages, NUMA distances, and devices per extended resource (e.g.
// nvidia.com/gpu) with their NUMA nodes and health.
//
// A node comes from a node file (YAML, see Load) or from gpunode's live
// topology discovery (FromTopology). The model is what kubelet's resource
// managers see through cAdvisor and the device plugins: the CPU Manager reads
// CPUs/cores/sockets/uncore caches, the Memory Manager reads per-NUMA memory
// and hugepages, the Device Manager reads device TopologyInfo.
//
// Node file example:
//
//	apiVersion: gpunode.io/v1
//	kind: Node
//	name: gpu-node-a
//	numaNodes:
//	- id: 0
//	  cpus: "0-47"
//	  memory: 512Gi
//	  hugepages: [{pageSize: 1Gi, count: 0}]
//	  distances: [10, 21]
//	- id: 1
//	  cpus: "48-95"
//	  memory: 512Gi
//	  distances: [21, 10]
//	cores: ["0,96", "1,97"]        # optional SMT sibling groups; default one CPU per core
//	sockets: [{id: 0, cpus: "0-47"}, {id: 1, cpus: "48-95"}]   # optional; default socket = NUMA node
//	uncoreCaches: [{id: 0, cpus: "0-7"}]                          # optional; default uncore = socket
//	devices:
//	  nvidia.com/gpu:
//	  - {id: gpu0, numaNode: 0}
//	  - {id: gpu7, numaNodes: [1], health: Unhealthy}
//	  - {id: gpu8}                    # no topology: NUMA-agnostic
package node

import (
	"fmt"
	"sort"

	"k8s.io/utils/cpuset"
)

// MaxNUMANodeID is the highest NUMA node id kubelet's bitmask can hold.
const MaxNUMANodeID = 63

// Node is a validated node model.
type Node struct {
	Name string
	// NUMANodes sorted by ID.
	NUMANodes []NUMANode
	// CPUs sorted by ID.
	CPUs []CPU
	// Devices per extended resource, sorted by resource name.
	Devices []DeviceResource
}

// NUMANode is one NUMA node.
type NUMANode struct {
	ID   int
	CPUs cpuset.CPUSet
	// MemoryBytes is the node's total memory (MemTotal of the node, hugepages
	// included), as cAdvisor reports it.
	MemoryBytes uint64
	HugePages   []HugePages
	// Distances to the NUMA nodes in the order of Node.NUMANodes; nil when
	// unknown.
	Distances []int
}

// HugePages is a hugepages pool of one page size on one NUMA node.
type HugePages struct {
	PageSizeBytes uint64
	Count         uint64
}

// CPU is one logical CPU.
type CPU struct {
	ID       int
	Core     int // the lowest CPU id among its SMT siblings (as kubelet)
	Socket   int
	NUMANode int
	Uncore   int // L3 / uncore cache id
}

// DeviceResource is an extended resource served by a device plugin.
type DeviceResource struct {
	Name    string
	Devices []Device
}

// Device is one device as a device plugin reports it.
type Device struct {
	ID string
	// NUMANodes is the device's TopologyInfo; empty means no topology.
	NUMANodes []int
	Healthy   bool
}

// NUMAIDs returns the ids of all NUMA nodes.
func (n *Node) NUMAIDs() []int {
	out := make([]int, len(n.NUMANodes))
	for i, nn := range n.NUMANodes {
		out[i] = nn.ID
	}
	return out
}

// NUMA returns the NUMA node with id, or nil.
func (n *Node) NUMA(id int) *NUMANode {
	for i := range n.NUMANodes {
		if n.NUMANodes[i].ID == id {
			return &n.NUMANodes[i]
		}
	}
	return nil
}

// AllCPUs returns the set of all CPU ids.
func (n *Node) AllCPUs() cpuset.CPUSet {
	ids := make([]int, len(n.CPUs))
	for i, c := range n.CPUs {
		ids[i] = c.ID
	}
	return cpuset.New(ids...)
}

// MemoryBytes returns the node's memory capacity: the sum over its NUMA
// nodes, as cAdvisor reports it.
func (n *Node) MemoryBytes() uint64 {
	var total uint64
	for _, nn := range n.NUMANodes {
		total += nn.MemoryBytes
	}
	return total
}

// DeviceResource returns the devices of resource name, or nil.
func (n *Node) DeviceResource(name string) *DeviceResource {
	for i := range n.Devices {
		if n.Devices[i].Name == name {
			return &n.Devices[i]
		}
	}
	return nil
}

// Distance returns the distance from NUMA node a to b and whether it is known.
func (n *Node) Distance(a, b int) (int, bool) {
	ia, ib := -1, -1
	for i, nn := range n.NUMANodes {
		if nn.ID == a {
			ia = i
		}
		if nn.ID == b {
			ib = i
		}
	}
	if ia < 0 || ib < 0 || len(n.NUMANodes[ia].Distances) != len(n.NUMANodes) {
		return 0, false
	}
	return n.NUMANodes[ia].Distances[ib], true
}

// HasDistances reports whether every NUMA node has a distance row.
func (n *Node) HasDistances() bool {
	for _, nn := range n.NUMANodes {
		if len(nn.Distances) != len(n.NUMANodes) {
			return false
		}
	}
	return len(n.NUMANodes) > 0
}

// Validate checks the model's invariants; the error names the offending field.
func (n *Node) Validate() error {
	if len(n.NUMANodes) == 0 {
		return fmt.Errorf("numaNodes: at least one NUMA node is required")
	}
	seen := map[int]bool{}
	for i, nn := range n.NUMANodes {
		if nn.ID < 0 || nn.ID > MaxNUMANodeID {
			return fmt.Errorf("numaNodes[%d].id: %d is out of range 0..%d (kubelet's NUMA bitmask holds 64 nodes)", i, nn.ID, MaxNUMANodeID)
		}
		if seen[nn.ID] {
			return fmt.Errorf("numaNodes[%d].id: duplicate NUMA node %d", i, nn.ID)
		}
		seen[nn.ID] = true
		if i > 0 && n.NUMANodes[i-1].ID > nn.ID {
			return fmt.Errorf("numaNodes[%d].id: NUMA nodes must be sorted by id", i)
		}
		if nn.Distances != nil && len(nn.Distances) != len(n.NUMANodes) {
			return fmt.Errorf("numaNodes[%d].distances: has %d entries, want %d (one per NUMA node)", i, len(nn.Distances), len(n.NUMANodes))
		}
		var huge uint64
		for j, hp := range nn.HugePages {
			if hp.PageSizeBytes == 0 {
				return fmt.Errorf("numaNodes[%d].hugepages[%d].pageSize: must be positive", i, j)
			}
			huge += hp.PageSizeBytes * hp.Count
		}
		if huge > nn.MemoryBytes {
			return fmt.Errorf("numaNodes[%d].hugepages: %d bytes of hugepages exceed the node's memory %d", i, huge, nn.MemoryBytes)
		}
	}
	byID := map[int]*CPU{}
	for i := range n.CPUs {
		c := &n.CPUs[i]
		if byID[c.ID] != nil {
			return fmt.Errorf("cpus: CPU %d listed twice", c.ID)
		}
		if !seen[c.NUMANode] {
			return fmt.Errorf("cpus: CPU %d is on unknown NUMA node %d", c.ID, c.NUMANode)
		}
		byID[c.ID] = c
	}
	for _, c := range n.CPUs {
		core := byID[c.Core]
		if core == nil || core.Core != c.Core {
			return fmt.Errorf("cores: CPU %d names core %d, which is not the lowest CPU of its sibling group", c.ID, c.Core)
		}
		if core.NUMANode != c.NUMANode || core.Socket != c.Socket {
			return fmt.Errorf("cores: SMT siblings %d and %d are on different NUMA nodes or sockets", c.Core, c.ID)
		}
	}
	for _, nn := range n.NUMANodes {
		for _, id := range nn.CPUs.List() {
			if c := byID[id]; c == nil || c.NUMANode != nn.ID {
				return fmt.Errorf("numaNodes: CPU %d of NUMA node %d is inconsistent with the CPU list", id, nn.ID)
			}
		}
	}
	for _, r := range n.Devices {
		ids := map[string]bool{}
		for j, d := range r.Devices {
			if d.ID == "" {
				return fmt.Errorf("devices[%q][%d].id: must not be empty", r.Name, j)
			}
			if ids[d.ID] {
				return fmt.Errorf("devices[%q][%d].id: duplicate device %q", r.Name, j, d.ID)
			}
			ids[d.ID] = true
			for _, id := range d.NUMANodes {
				if !seen[id] {
					return fmt.Errorf("devices[%q][%d] (%s): NUMA node %d does not exist on this node", r.Name, j, d.ID, id)
				}
			}
		}
	}
	return nil
}

// sortModel puts CPUs, devices and NUMA nodes in canonical order.
func (n *Node) sortModel() {
	sort.Slice(n.NUMANodes, func(i, j int) bool { return n.NUMANodes[i].ID < n.NUMANodes[j].ID })
	sort.Slice(n.CPUs, func(i, j int) bool { return n.CPUs[i].ID < n.CPUs[j].ID })
	sort.Slice(n.Devices, func(i, j int) bool { return n.Devices[i].Name < n.Devices[j].Name })
}
