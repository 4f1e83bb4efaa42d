package cpumanager

import (
	"slices"

	"k8s.io/utils/cpuset"
)

// tier is one kind of CPU grouping the allocator reasons about.
type tier int

const (
	tierSocket tier = iota
	tierNUMA
	tierCore
	tierCache // uncore (L3) cache
	tierCount
)

// layout indexes a CPUTopology for the allocator. Logical CPUs are renumbered
// 0..len(cpuIDs)-1 in ascending CPU id order ("slots"); the groups of each
// tier are renumbered in ascending group id order, so comparing two group
// numbers compares their ids, and every member list is in ascending CPU id
// order.
type layout struct {
	topo   *CPUTopology
	cpuIDs []int              // slot -> CPU id
	slotOf map[int]int        // CPU id -> slot
	home   [tierCount][]int   // home[t][slot]: group number of the slot at tier t
	member [tierCount][][]int // member[t][g]: slots of group g, ascending
	label  [tierCount][]int   // label[t][g]: the group's id in the topology

	// The counters kubelet's topology reports (CPUsPerSocket, CPUsPerCore,
	// CPUsPerUncore): the integer quotient of the CPU count by the group
	// count, which is what "a whole socket/core/cache is free" is compared
	// with, even on machines whose groups differ in size.
	perSocket, perCore, perCache int
	// numaOuter is true when NUMA nodes sit above sockets in the hierarchy
	// (at least as many sockets as NUMA nodes), false when sockets do.
	numaOuter bool
}

func quotient(a, b int) int {
	if b == 0 {
		return 0
	}
	return a / b
}

func newLayout(topo *CPUTopology) *layout {
	lo := &layout{topo: topo, slotOf: make(map[int]int, len(topo.CPUDetails))}
	for id := range topo.CPUDetails {
		lo.cpuIDs = append(lo.cpuIDs, id)
	}
	slices.Sort(lo.cpuIDs)
	for s, id := range lo.cpuIDs {
		lo.slotOf[id] = s
	}
	keyOf := func(t tier, info CPUInfo) int {
		switch t {
		case tierSocket:
			return info.SocketID
		case tierNUMA:
			return info.NUMANodeID
		case tierCore:
			return info.CoreID
		}
		return info.UncoreCacheID
	}
	for t := tier(0); t < tierCount; t++ {
		keys := make([]int, len(lo.cpuIDs))
		for s, id := range lo.cpuIDs {
			keys[s] = keyOf(t, topo.CPUDetails[id])
		}
		labels := slices.Clone(keys)
		slices.Sort(labels)
		labels = slices.Compact(labels)
		lo.label[t] = labels
		lo.member[t] = make([][]int, len(labels))
		lo.home[t] = make([]int, len(keys))
		for s, k := range keys {
			g, _ := slices.BinarySearch(labels, k)
			lo.home[t][s] = g
			lo.member[t][g] = append(lo.member[t][g], s)
		}
	}
	lo.perSocket = quotient(topo.NumCPUs, topo.NumSockets)
	lo.perCore = quotient(topo.NumCPUs, topo.NumCores)
	lo.perCache = quotient(topo.NumCPUs, topo.NumUncoreCache)
	lo.numaOuter = topo.NumSockets >= topo.NumNUMANodes
	return lo
}

// wholeSize is the number of free CPUs at which group g of tier t counts as
// entirely free.
func (lo *layout) wholeSize(t tier, g int) int {
	switch t {
	case tierSocket:
		return lo.perSocket
	case tierCore:
		return lo.perCore
	}
	return len(lo.member[t][g])
}

// slots maps a CPU set onto slots (ascending), dropping CPUs the topology
// does not know.
func (lo *layout) slots(cpus cpuset.CPUSet) []int {
	out := make([]int, 0, cpus.Size())
	for _, id := range cpus.List() {
		if s, ok := lo.slotOf[id]; ok {
			out = append(out, s)
		}
	}
	return out
}

// cpuSet maps slots back onto CPU ids.
func (lo *layout) cpuSet(slots []int) cpuset.CPUSet {
	ids := make([]int, len(slots))
	for i, s := range slots {
		ids[i] = lo.cpuIDs[s]
	}
	return cpuset.New(ids...)
}

// groupByLabel returns the group number of the tier-t group with the given
// topology id.
func (lo *layout) groupByLabel(t tier, label int) (int, bool) {
	return slices.BinarySearch(lo.label[t], label)
}

// groupsHolding returns, ascending, the groups of tier t that hold at least
// one of the CPUs with the given ids; ok is false (and bad the first such id)
// if an id is not a CPU of the topology.
func (lo *layout) groupsHolding(t tier, ids []int) (gs []int, bad int, ok bool) {
	for _, id := range ids {
		s, known := lo.slotOf[id]
		if !known {
			return nil, id, false
		}
		gs = append(gs, lo.home[t][s])
	}
	slices.Sort(gs)
	return slices.Compact(gs), 0, true
}

// cpusIn returns every CPU of the given groups of tier t.
func (lo *layout) cpusIn(t tier, gs []int) cpuset.CPUSet {
	lists := make([][]int, len(gs))
	for i, g := range gs {
		lists[i] = lo.member[t][g]
	}
	return lo.cpuSet(slices.Concat(lists...))
}
