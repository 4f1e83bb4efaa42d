// Package memorymanager is kubelet v1.37's Memory Manager Static policy:
// memory and hugepages NUMA hints (single NUMA nodes and multi-NUMA groups),
// allocation with hint extension, the reservedMemory rule and the machine
// state it keeps (free/reserved per NUMA node, group "cells").
//
// It follows pkg/kubelet/cm/memorymanager/policy_static.go; hint generation
// enumerates NUMA masks through node.IterateMasks, which bounds the
// enumeration on machines with many NUMA nodes (kubelet enumerates all 2^N).
package memorymanager

import (
	"fmt"
	"math/bits"
	"sort"
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

// MemoryReservation is one reservedMemory entry of a KubeletConfiguration.
type MemoryReservation struct {
	NumaNode int32
	Limits   v1.ResourceList
}

// SystemReserved validates reservedMemory against the node allocatable
// reservation (kubeReserved + systemReserved + hard eviction, per memory
// type) and converts it, with kubelet's error texts.
func SystemReserved(n *node.Node, nodeAllocatableReservation v1.ResourceList, reserved []MemoryReservation) (Reserved, error) {
	exists := map[int]bool{}
	for _, nn := range n.NUMANodes {
		exists[nn.ID] = true
	}
	total := map[v1.ResourceName]resource.Quantity{}
	for _, r := range reserved {
		if !exists[int(r.NumaNode)] {
			return nil, fmt.Errorf("the reserved memory configuration references a NUMA node %d that does not exist on this machine", r.NumaNode)
		}
		for name, q := range r.Limits {
			q := q.DeepCopy()
			if v, ok := total[name]; ok {
				q.Add(v)
			}
			total[name] = q
		}
	}
	types := map[v1.ResourceName]bool{}
	for t := range total {
		types[t] = true
	}
	for t := range nodeAllocatableReservation {
		if IsHugePageResourceName(t) || t == v1.ResourceMemory {
			types[t] = true
		}
	}
	names := make([]string, 0, len(types))
	for t := range types {
		names = append(names, string(t))
	}
	sort.Strings(names)
	for _, tn := range names {
		t := v1.ResourceName(tn)
		alloc := resource.NewQuantity(0, resource.DecimalSI)
		if v, ok := nodeAllocatableReservation[t]; ok {
			alloc.Add(v)
		}
		res := resource.NewQuantity(0, resource.DecimalSI)
		if v, ok := total[t]; ok {
			res.Add(v)
		}
		if !alloc.Equal(*res) {
			return nil, fmt.Errorf("the total amount %q of type %q is not equal to the value %q determined by Node Allocatable feature", res.String(), t, alloc.String())
		}
	}
	out := Reserved{}
	for _, nn := range n.NUMANodes {
		out[nn.ID] = map[v1.ResourceName]uint64{}
	}
	for _, r := range reserved {
		for name, q := range r.Limits {
			v, ok := q.AsInt64()
			if !ok {
				return nil, fmt.Errorf("could not covert a variable of type Quantity to int64")
			}
			out[int(r.NumaNode)][name] = uint64(v)
		}
	}
	var sys uint64
	for _, m := range out {
		sys += m[v1.ResourceMemory]
	}
	if sys == 0 {
		return nil, fmt.Errorf("[memorymanager] you should specify the system reserved memory")
	}
	return out, nil
}

// Static is the Static policy with its state. Clone it to try an admission
// without committing it.
type Static struct {
	// MaxMasks bounds hint enumeration (0 = node.DefaultMaxMasks).
	MaxMasks int

	ids      []int
	state    map[int]*NUMAState
	blocks   map[string]map[string][]Block
	reusable map[string]map[node.Mask]map[v1.ResourceName]uint64
	reuseFor string
}

// NewStatic builds the default machine state from the node and the reserved
// memory, as kubelet's getDefaultMachineState.
func NewStatic(n *node.Node, reserved Reserved) *Static {
	p := &Static{ids: n.NUMAIDs(), state: map[int]*NUMAState{}, blocks: map[string]map[string][]Block{}}
	for _, nn := range n.NUMANodes {
		st := &NUMAState{Memory: map[v1.ResourceName]*Table{}, Cells: []int{nn.ID}}
		var huge uint64
		for _, hp := range nn.HugePages {
			name := HugePageResourceName(hp.PageSizeBytes)
			sr := reserved[nn.ID][name]
			total := hp.Count * hp.PageSizeBytes
			alloc := total - sr
			st.Memory[name] = &Table{Total: total, SystemReserved: sr, Allocatable: alloc, Free: alloc}
			huge += total
		}
		sr := reserved[nn.ID][v1.ResourceMemory]
		alloc := nn.MemoryBytes - sr - huge
		st.Memory[v1.ResourceMemory] = &Table{Total: nn.MemoryBytes, SystemReserved: sr, Allocatable: alloc, Free: alloc}
		p.state[nn.ID] = st
	}
	return p
}

// Clone returns an independent copy.
func (p *Static) Clone() *Static {
	c := *p
	c.state = make(map[int]*NUMAState, len(p.state))
	for id, s := range p.state {
		ns := &NUMAState{NumberOfAssignments: s.NumberOfAssignments, Cells: append([]int(nil), s.Cells...), Memory: map[v1.ResourceName]*Table{}}
		for k, t := range s.Memory {
			tt := *t
			ns.Memory[k] = &tt
		}
		c.state[id] = ns
	}
	c.blocks = make(map[string]map[string][]Block, len(p.blocks))
	for pod, m := range p.blocks {
		cm := map[string][]Block{}
		for k, v := range m {
			cm[k] = append([]Block(nil), v...)
		}
		c.blocks[pod] = cm
	}
	c.reusable = nil
	if p.reusable != nil {
		c.reusable = map[string]map[node.Mask]map[v1.ResourceName]uint64{}
		for pod, m := range p.reusable {
			mm := map[node.Mask]map[v1.ResourceName]uint64{}
			for k, v := range m {
				vv := map[v1.ResourceName]uint64{}
				for r, x := range v {
					vv[r] = x
				}
				mm[k] = vv
			}
			c.reusable[pod] = mm
		}
	}
	return &c
}

// State returns the state of NUMA node id (read-only use).
func (p *Static) State(id int) *NUMAState { return p.state[id] }

// Blocks returns the blocks assigned to a container.
func (p *Static) Blocks(podUID, container string) []Block { return p.blocks[podUID][container] }

// ContainerRequests returns the container's memory and hugepages requests.
func ContainerRequests(c *v1.Container) (map[v1.ResourceName]uint64, error) {
	out := map[v1.ResourceName]uint64{}
	for name, q := range c.Resources.Requests {
		if name != v1.ResourceMemory && !IsHugePageResourceName(name) {
			continue
		}
		v, ok := q.AsInt64()
		if !ok {
			return nil, fmt.Errorf("[memorymanager] failed to represent quantity as int64")
		}
		out[name] = uint64(v)
	}
	return out, nil
}

// PodRequests returns the pod-level memory and hugepages requests (init
// containers reuse, sidecars accumulate), as kubelet's
// getPodRequestedResources.
func PodRequests(pod *v1.Pod) (map[v1.ResourceName]uint64, error) {
	byInit := map[v1.ResourceName]uint64{}
	byRestartable := map[v1.ResourceName]uint64{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		reqs, err := ContainerRequests(c)
		if err != nil {
			return nil, err
		}
		for name, q := range reqs {
			if _, ok := byInit[name]; !ok {
				byInit[name] = 0
			}
			if podres.IsRestartableInitContainer(c) {
				byRestartable[name] += q
			} else if byRestartable[name]+q > byInit[name] {
				byInit[name] = byRestartable[name] + q
			}
		}
	}
	byApp := map[v1.ResourceName]uint64{}
	for i := range pod.Spec.Containers {
		reqs, err := ContainerRequests(&pod.Spec.Containers[i])
		if err != nil {
			return nil, err
		}
		for name, q := range reqs {
			byApp[name] += q
		}
	}
	out := map[v1.ResourceName]uint64{}
	for name := range byApp {
		out[name] = byApp[name] + byRestartable[name]
		if out[name] < byInit[name] {
			out[name] = byInit[name]
		}
	}
	return out, nil
}

// ContainerHints returns the container's hints per memory type (nil = no
// preference), as kubelet's GetTopologyHints.
func (p *Static) ContainerHints(pod *v1.Pod, c *v1.Container) map[string][]node.Hint {
	if podres.QOS(pod) != v1.PodQOSGuaranteed {
		return nil
	}
	reqs, err := ContainerRequests(c)
	if err != nil || len(reqs) == 0 || podres.IsPodLevelResourcesSet(pod) {
		return nil
	}
	return p.CalculateHints(pod, reqs)
}

// PodHints returns the pod's hints per memory type, as kubelet's
// GetPodTopologyHints.
func (p *Static) PodHints(pod *v1.Pod) map[string][]node.Hint {
	if podres.QOS(pod) != v1.PodQOSGuaranteed {
		return nil
	}
	reqs, err := PodRequests(pod)
	if err != nil || podres.IsPodLevelResourcesSet(pod) || len(reqs) == 0 {
		return nil
	}
	return p.CalculateHints(pod, reqs)
}

func (p *Static) podReusable(pod *v1.Pod, m node.Mask, name v1.ResourceName) uint64 {
	if p.reuseFor != string(pod.UID) || p.reusable == nil {
		return 0
	}
	return p.reusable[string(pod.UID)][m][name]
}

func sortedNames(reqs map[v1.ResourceName]uint64) []v1.ResourceName {
	out := make([]v1.ResourceName, 0, len(reqs))
	for n := range reqs {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// CalculateHints is kubelet's calculateHints.
func (p *Static) CalculateHints(pod *v1.Pod, reqs map[v1.ResourceName]uint64) map[string][]node.Hint {
	names := sortedNames(reqs)
	// Dense per-NUMA tables (ids are 0..63) so the mask loop does no map
	// lookups or allocations.
	var alloc, free [][node.MaxNUMANodeID + 1]uint64
	alloc = make([][node.MaxNUMANodeID + 1]uint64, len(names))
	free = make([][node.MaxNUMANodeID + 1]uint64, len(names))
	want := make([]uint64, len(names))
	var assigned, grouped node.Mask // nodes with assignments / in a multi-NUMA group
	var cells [node.MaxNUMANodeID + 1]node.Mask
	for _, id := range p.ids {
		st := p.state[id]
		for k, name := range names {
			if t := st.Memory[name]; t != nil {
				alloc[k][id] = t.Allocatable
				free[k][id] = t.Free
			}
		}
		if st.NumberOfAssignments > 0 {
			assigned |= node.MaskOf(id)
		}
		if len(st.Cells) > 1 {
			grouped |= node.MaskOf(id)
		}
		cells[id] = node.MaskOf(st.Cells...)
	}
	for k, name := range names {
		want[k] = reqs[name]
	}
	minAffinitySize := len(p.ids)
	var masks []node.Mask
	full := node.IterateMasks(p.ids, p.MaxMasks, func(m node.Mask) {
		for k := range names {
			var a uint64
			for v := uint64(m); v != 0; v &= v - 1 {
				a += alloc[k][bits.TrailingZeros64(v)]
			}
			if a < want[k] {
				return
			}
		}
		count := m.Count()
		if count < minAffinitySize {
			minAffinitySize = count
		}
		if count == 1 {
			if grouped&m != 0 {
				return
			}
		} else {
			// A node already used by an allocation may join this mask only
			// when it is in a group equal to this mask.
			for v := uint64(m & assigned); v != 0; v &= v - 1 {
				id := bits.TrailingZeros64(v)
				if grouped&node.MaskOf(id) == 0 || cells[id] != m {
					return
				}
			}
		}
		for k, name := range names {
			var f uint64
			for v := uint64(m); v != 0; v &= v - 1 {
				f += free[k][bits.TrailingZeros64(v)]
			}
			if f+p.podReusable(pod, m, name) < want[k] {
				return
			}
		}
		masks = append(masks, m)
	})
	if !full {
		if g := p.greedyMinNodes(reqs); g > 0 && g < minAffinitySize {
			minAffinitySize = g
		}
	}
	hints := map[string][]node.Hint{}
	if len(masks) == 0 {
		return hints
	}
	// One list shared by every memory type: the hints are identical.
	list := make([]node.Hint, len(masks))
	for i := range masks {
		list[i] = node.Hint{Affinity: &masks[i], Preferred: masks[i].Count() == minAffinitySize}
	}
	for _, name := range names {
		hints[string(name)] = list
	}
	return hints
}

// greedyMinNodes is a lower bound on the number of NUMA nodes whose
// allocatable memory fits every requested type.
func (p *Static) greedyMinNodes(reqs map[v1.ResourceName]uint64) int {
	best := 0
	for name, want := range reqs {
		var caps []uint64
		for _, id := range p.ids {
			if t := p.state[id].Memory[name]; t != nil {
				caps = append(caps, t.Allocatable)
			}
		}
		sort.Slice(caps, func(i, j int) bool { return caps[i] > caps[j] })
		var sum uint64
		k := 0
		for i, c := range caps {
			sum += c
			if sum >= want {
				k = i + 1
				break
			}
		}
		if k == 0 {
			return 0
		}
		if k > best {
			best = k
		}
	}
	return best
}

func groupEquals(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	x := append([]int(nil), a...)
	y := append([]int(nil), b...)
	sort.Ints(x)
	sort.Ints(y)
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}

func findBestHint(hints []node.Hint) *node.Hint {
	var best node.Hint
	for _, h := range hints {
		if best.Affinity == nil {
			best = h
			continue
		}
		if h.Preferred && !best.Preferred {
			best = h
			continue
		}
		if h.Preferred == best.Preferred && h.Affinity.IsNarrowerThan(*best.Affinity) {
			best = h
		}
	}
	return &best
}

func (p *Static) satisfies(m node.Mask, reqs map[v1.ResourceName]uint64) bool {
	for name, want := range reqs {
		var free uint64
		for _, id := range m.Bits() {
			if t := p.state[id].Memory[name]; t != nil {
				free += t.Free
			}
		}
		if free < want {
			return false
		}
	}
	return true
}

func (p *Static) violatesNUMAAllocations(m node.Mask) bool {
	bits := m.Bits()
	if len(bits) == 1 {
		return false
	}
	for _, id := range bits {
		st := p.state[id]
		if st.NumberOfAssignments == 0 {
			continue
		}
		if len(st.Cells) == 1 || !groupEquals(st.Cells, bits) {
			return true
		}
	}
	return false
}

// Allocate assigns memory to the container following the merged hint, as
// kubelet's Allocate (default hint when the merged affinity is nil, hint
// extension when it does not fit). It returns the container's blocks.
func (p *Static) Allocate(pod *v1.Pod, c *v1.Container, merged node.Hint) ([]Block, error) {
	if podres.QOS(pod) != v1.PodQOSGuaranteed || podres.IsPodLevelResourcesSet(pod) {
		return nil, nil
	}
	reqs, err := ContainerRequests(c)
	if err != nil {
		return nil, err
	}
	if len(reqs) == 0 {
		return nil, nil
	}
	uid := string(pod.UID)
	if b := p.blocks[uid][c.Name]; b != nil {
		p.updatePodReusableMemory(pod, c, b)
		return b, nil
	}
	best := merged
	if merged.Affinity == nil {
		hints := p.CalculateHints(pod, reqs)
		if len(hints) < 1 {
			return nil, fmt.Errorf("[memorymanager] failed to get the default NUMA affinity, no NUMA nodes with enough memory is available")
		}
		def := findBestHint(hints[string(v1.ResourceMemory)])
		if !def.Preferred && merged.Preferred {
			return nil, fmt.Errorf("[memorymanager] failed to find the default preferred hint")
		}
		best = *def
	}
	if best.Affinity == nil || !p.satisfies(*best.Affinity, reqs) {
		// kubelet extends the hint; a nil affinity here (no memory hint at all)
		// behaves like an empty mask there.
		var cur node.Mask
		if best.Affinity != nil {
			cur = *best.Affinity
		}
		hints := p.CalculateHints(pod, reqs)
		var filtered []node.Hint
		for _, h := range hints[string(v1.ResourceMemory)] {
			if cur&^*h.Affinity == 0 {
				filtered = append(filtered, h)
			}
		}
		if len(filtered) < 1 {
			return nil, fmt.Errorf("[memorymanager] failed to find NUMA nodes to extend the current topology hint")
		}
		ext := findBestHint(filtered)
		if !ext.Preferred && best.Preferred {
			return nil, fmt.Errorf("[memorymanager] failed to find the extended preferred hint")
		}
		best = *ext
	}
	if p.violatesNUMAAllocations(*best.Affinity) {
		return nil, fmt.Errorf("[memorymanager] preferred hint violates NUMA node allocation")
	}
	bits := best.Affinity.Bits()
	var blocks []Block
	for _, name := range sortedNames(reqs) {
		size := reqs[name]
		blocks = append(blocks, Block{NUMAAffinity: bits, Size: size, Type: name})
		if r := p.podReusable(pod, *best.Affinity, name); r >= size {
			size = 0
		} else {
			size -= r
		}
		p.updateMachineState(bits, name, size)
	}
	p.updatePodReusableMemory(pod, c, blocks)
	if p.blocks[uid] == nil {
		p.blocks[uid] = map[string][]Block{}
	}
	p.blocks[uid][c.Name] = blocks
	p.updateInitContainersMemoryBlocks(pod, c, blocks)
	return blocks, nil
}

func (p *Static) updateMachineState(bits []int, name v1.ResourceName, size uint64) {
	for _, id := range bits {
		st := p.state[id]
		st.NumberOfAssignments++
		st.Cells = bits
		if size == 0 {
			continue
		}
		t := st.Memory[name]
		if t == nil || t.Free <= 0 {
			continue
		}
		if t.Free >= size {
			t.Reserved += size
			t.Free -= size
			size = 0
			continue
		}
		size -= t.Free
		t.Reserved += t.Free
		t.Free = 0
	}
}

func isRegularInitContainer(pod *v1.Pod, c *v1.Container) bool {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == c.Name {
			return !podres.IsRestartableInitContainer(&pod.Spec.InitContainers[i])
		}
	}
	return false
}

func (p *Static) updatePodReusableMemory(pod *v1.Pod, c *v1.Container, blocks []Block) {
	uid := string(pod.UID)
	if p.reuseFor != uid || p.reusable == nil {
		p.reusable = map[string]map[node.Mask]map[v1.ResourceName]uint64{}
		p.reuseFor = uid
	}
	if isRegularInitContainer(pod, c) {
		if p.reusable[uid] == nil {
			p.reusable[uid] = map[node.Mask]map[v1.ResourceName]uint64{}
		}
		for _, b := range blocks {
			m := node.MaskOf(b.NUMAAffinity...)
			if p.reusable[uid][m] == nil {
				p.reusable[uid][m] = map[v1.ResourceName]uint64{}
			}
			if b.Size > p.reusable[uid][m][b.Type] {
				p.reusable[uid][m][b.Type] = b.Size
			}
		}
		return
	}
	for _, b := range blocks {
		m := node.MaskOf(b.NUMAAffinity...)
		if r := p.podReusable(pod, m, b.Type); r != 0 {
			if b.Size >= r {
				p.reusable[uid][m][b.Type] = 0
			} else {
				p.reusable[uid][m][b.Type] -= b.Size
			}
		}
	}
}

func (p *Static) updateInitContainersMemoryBlocks(pod *v1.Pod, c *v1.Container, blocks []Block) {
	uid := string(pod.UID)
	for _, cb := range blocks {
		size := cb.Size
		for i := range pod.Spec.InitContainers {
			ic := &pod.Spec.InitContainers[i]
			if ic.Name == c.Name || size == 0 {
				break
			}
			if podres.IsRestartableInitContainer(ic) {
				continue
			}
			ib := p.blocks[uid][ic.Name]
			for j := range ib {
				b := &ib[j]
				if b.Size == 0 || b.Type != cb.Type || node.MaskOf(b.NUMAAffinity...) != node.MaskOf(cb.NUMAAffinity...) {
					continue
				}
				if b.Size > size {
					b.Size -= size
					size = 0
				} else {
					size -= b.Size
					b.Size = 0
				}
			}
		}
	}
}

// RemoveContainer releases the container's memory as kubelet's
// RemoveContainer/releaseMemory does. kubelet does not record which NUMA node
// of a multi-NUMA block gave how much, so the release refills the block's
// nodes in order; after a rejected multi-NUMA pod the per-node free memory
// can therefore differ from before the pod (the total is the same).
func (p *Static) RemoveContainer(podUID, container string) {
	blocks := p.blocks[podUID][container]
	if blocks == nil {
		return
	}
	delete(p.blocks[podUID], container)
	if len(p.blocks[podUID]) == 0 {
		delete(p.blocks, podUID)
	}
	for _, b := range blocks {
		released := b.Size
		for _, id := range b.NUMAAffinity {
			st := p.state[id]
			st.NumberOfAssignments--
			if st.NumberOfAssignments == 0 {
				st.Cells = []int{id}
			}
			if released == 0 {
				continue
			}
			t := st.Memory[b.Type]
			if t == nil || t.Reserved == 0 {
				continue
			}
			if t.Reserved < released {
				released -= t.Reserved
				t.Free += t.Reserved
				t.Reserved = 0
				continue
			}
			t.Free += released
			t.Reserved -= released
			released = 0
		}
	}
}
