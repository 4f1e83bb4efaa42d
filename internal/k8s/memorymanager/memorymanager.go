// Package memorymanager models kubelet v1.37's Memory Manager with the Static
// policy: the NUMA hints it offers for memory and hugepages (single NUMA
// nodes and multi-NUMA groups), where it books a container's memory once the
// Topology Manager has merged the hints, the reservedMemory checks done at
// start-up, and the per-NUMA bookkeeping (free/reserved per memory type,
// which group each node belongs to).
//
// The behaviour, error texts included, is kubelet's; the conformance module
// (conformance/kubelet, TestAdmitMemoryManagerDifferential) runs the real
// kubelet policy next to this one on random machines and pods. Hint
// generation enumerates NUMA masks with node.IterateMasks, which bounds the
// enumeration on machines with many NUMA nodes (kubelet visits all 2^N).
//
// Files: memorymanager.go (state), reserved.go (reservedMemory), requests.go
// (what a container or pod asks for), hints.go, allocate.go (booking and
// release), reuse.go (memory of init containers handed on), quotes.go.
package memorymanager

import (
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpunode/gpunode/internal/k8s/admit/podres"
	"github.com/gpunode/gpunode/internal/k8s/node"
)

// Table is the memory of one type on one NUMA node, in bytes.
type Table struct {
	Total          uint64 `json:"total"`
	SystemReserved uint64 `json:"systemReserved"`
	Allocatable    uint64 `json:"allocatable"`
	Reserved       uint64 `json:"reserved"`
	Free           uint64 `json:"free"`
}

// NUMAState is the memory state of one NUMA node.
type NUMAState struct {
	NumberOfAssignments int
	Memory              map[v1.ResourceName]*Table
	// Cells is the node's group: itself, or every node of the multi-NUMA
	// allocation it takes part in.
	Cells []int
}

// Block is memory of one type assigned to a container.
type Block struct {
	NUMAAffinity []int           `json:"numaAffinity"`
	Type         v1.ResourceName `json:"type"`
	Size         uint64          `json:"size"`
}

// Reserved is the per-NUMA reserved memory (reservedMemory), in bytes.
type Reserved map[int]map[v1.ResourceName]uint64

// IsHugePageResourceName reports whether name is hugepages-<size>.
func IsHugePageResourceName(name v1.ResourceName) bool {
	return strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix)
}

// HugePageResourceName is kubelet's name for a page size, e.g. hugepages-2Mi.
func HugePageResourceName(pageSizeBytes uint64) v1.ResourceName {
	return v1.ResourceName(v1.ResourceHugePagesPrefix + resource.NewQuantity(int64(pageSizeBytes), resource.BinarySI).String())
}

// isMemoryKind reports whether the Memory Manager handles name.
func isMemoryKind(name v1.ResourceName) bool {
	return name == v1.ResourceMemory || IsHugePageResourceName(name)
}

// Static is the Static policy with its state. Clone it to try an admission
// without committing it.
type Static struct {
	// MaxMasks bounds hint enumeration (0 = node.DefaultMaxMasks).
	MaxMasks int

	ids   []int              // NUMA ids, ascending
	state map[int]*NUMAState // per NUMA id
	// owned holds the blocks of every container that has memory: pod UID,
	// then container name.
	owned map[string]map[string][]Block
	reuse initReuse
}

// NewStatic builds the machine state before any allocation: on each NUMA node
// and for each memory type, what reservedMemory leaves of the capacity is
// allocatable and free. Hugepages are carved out of the node's memory.
func NewStatic(n *node.Node, reserved Reserved) *Static {
	p := &Static{ids: n.NUMAIDs(), state: make(map[int]*NUMAState, len(n.NUMANodes)), owned: map[string]map[string][]Block{}}
	for _, nn := range n.NUMANodes {
		held := reserved[nn.ID]
		tables := make(map[v1.ResourceName]*Table, 1+len(nn.HugePages))
		mem := nn.MemoryBytes
		for _, pool := range nn.HugePages {
			size := pool.Count * pool.PageSizeBytes
			mem -= size
			name := HugePageResourceName(pool.PageSizeBytes)
			tables[name] = newTable(size, held[name])
		}
		t := newTable(nn.MemoryBytes, held[v1.ResourceMemory])
		t.Allocatable = mem - t.SystemReserved
		t.Free = t.Allocatable
		tables[v1.ResourceMemory] = t
		p.state[nn.ID] = &NUMAState{Memory: tables, Cells: []int{nn.ID}}
	}
	return p
}

func newTable(total, systemReserved uint64) *Table {
	left := total - systemReserved
	return &Table{Total: total, SystemReserved: systemReserved, Allocatable: left, Free: left}
}

// Clone returns an independent copy.
func (p *Static) Clone() *Static {
	c := &Static{MaxMasks: p.MaxMasks, ids: p.ids, reuse: p.reuse.clone()}
	c.state = make(map[int]*NUMAState, len(p.state))
	for id, s := range p.state {
		c.state[id] = s.clone()
	}
	c.owned = make(map[string]map[string][]Block, len(p.owned))
	for uid, byName := range p.owned {
		c.owned[uid] = maps.Clone(byName)
		for name, bs := range byName {
			c.owned[uid][name] = slices.Clone(bs)
		}
	}
	return c
}

func (s *NUMAState) clone() *NUMAState {
	out := &NUMAState{NumberOfAssignments: s.NumberOfAssignments, Cells: slices.Clone(s.Cells), Memory: maps.Clone(s.Memory)}
	for name, t := range out.Memory {
		dup := *t
		out.Memory[name] = &dup
	}
	return out
}

// State returns the state of NUMA node id (read-only use).
func (p *Static) State(id int) *NUMAState { return p.state[id] }

// Blocks returns the blocks assigned to a container.
func (p *Static) Blocks(podUID, container string) []Block { return p.owned[podUID][container] }

// pinnedAsks is what the policy pins for container c: nothing when the pod
// is not handled, else its memory requests (see ContainerRequests).
func pinnedAsks(pod *v1.Pod, c *v1.Container) (map[v1.ResourceName]uint64, error) {
	if !handles(pod) {
		return nil, nil
	}
	return ContainerRequests(c)
}

// handles reports whether the policy manages the pod's memory at all:
// kubelet's Static policy only pins Guaranteed pods without pod-level
// resources.
func handles(pod *v1.Pod) bool {
	return podres.QOS(pod) == v1.PodQOSGuaranteed && !podres.IsPodLevelResourcesSet(pod)
}
