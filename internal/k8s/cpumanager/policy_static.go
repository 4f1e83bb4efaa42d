// Package cpumanager is kubelet v1.37's CPU Manager static policy: topology
// hints, packed (takeByTopologyNUMAPacked) and NUMA-distributed
// (takeByTopologyNUMADistributed) allocation, the six policy options with
// their maturity levels and incompatibilities, reservedSystemCPUs and
// reservation by quantity, strict reservation, and the SMT alignment error.
//
// The allocation algorithm (cpu_assignment.go, topology.go, alignment.go) is
// ported from kubelet; hint generation is rewritten to count CPUs per NUMA
// node once and to bound the NUMA-mask enumeration (node.IterateMasks) so
// that nodes with many NUMA nodes stay fast.
package cpumanager

import (
	"fmt"
	"math"
	"math/bits"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/k8s/admit/podres"
	"github.com/gpunode/gpunode/internal/k8s/node"
)

// ErrorSMTAlignment is the admission reason of an SMTAlignmentError.
const ErrorSMTAlignment = "SMTAlignmentError"

// SMTAlignmentError is kubelet's error for full-pcpus-only violations.
type SMTAlignmentError struct {
	RequestedCPUs         int
	CpusPerCore           int
	AvailablePhysicalCPUs int
	CausedByPhysicalCPUs  bool
}

func (e SMTAlignmentError) Error() string {
	if e.CausedByPhysicalCPUs {
		return fmt.Sprintf("SMT Alignment Error: not enough free physical CPUs: available physical CPUs = %d, requested CPUs = %d, CPUs per core = %d", e.AvailablePhysicalCPUs, e.RequestedCPUs, e.CpusPerCore)
	}
	return fmt.Sprintf("SMT Alignment Error: requested %d cpus not multiple cpus per core = %d", e.RequestedCPUs, e.CpusPerCore)
}

// Type is the admission failure reason.
func (e SMTAlignmentError) Type() string { return ErrorSMTAlignment }

// Static is the static policy with its state (the shared pool and the
// exclusive assignments). It is not safe for concurrent use; Clone it to try
// an admission without committing it.
type Static struct {
	topo                 *CPUTopology
	reserved             cpuset.CPUSet
	reservedPhysicalCPUs cpuset.CPUSet
	opts                 Options
	cpuGroupSize         int
	// MaxMasks bounds hint enumeration (0 = node.DefaultMaxMasks).
	MaxMasks int

	defaultSet  cpuset.CPUSet
	assignments map[string]map[string]cpuset.CPUSet
	cpusToReuse map[string]cpuset.CPUSet
	reuseFor    string

	numaIDs  []int
	capacity map[int]int // CPUs per NUMA node
}

// NumReservedCPUs returns kubelet's number of reserved CPUs: the size of
// reservedSystemCPUs when set, else ceil(kubeReserved.cpu +
// systemReserved.cpu). It returns kubelet's error when the static policy
// cannot start for lack of a reservation.
func NumReservedCPUs(reservedSystemCPUs cpuset.CPUSet, kubeReserved, systemReserved *resource.Quantity) (int, error) {
	if reservedSystemCPUs.Size() > 0 {
		return reservedSystemCPUs.Size(), nil
	}
	total := resource.NewQuantity(0, resource.DecimalSI)
	if kubeReserved != nil {
		total.Add(*kubeReserved)
	}
	if systemReserved != nil {
		total.Add(*systemReserved)
	}
	if total.IsZero() {
		return 0, fmt.Errorf("[cpumanager] unable to determine reserved CPU resources for static policy")
	}
	return int(math.Ceil(float64(total.MilliValue()) / 1000)), nil
}

// NewStatic builds the static policy as kubelet's NewStaticPolicy and
// initialises its state (validateState on an empty state).
func NewStatic(topo *CPUTopology, numReservedCPUs int, reservedCPUs cpuset.CPUSet, opts Options, topologyPolicy string) (*Static, error) {
	if err := ValidateOptions(opts, topo, topologyPolicy); err != nil {
		return nil, fmt.Errorf("new static policy error: %w", err)
	}
	p := &Static{
		topo:         topo,
		opts:         opts,
		cpuGroupSize: topo.CPUsPerCore(),
		assignments:  map[string]map[string]cpuset.CPUSet{},
		cpusToReuse:  map[string]cpuset.CPUSet{},
		capacity:     map[int]int{},
	}
	for _, info := range topo.CPUDetails {
		p.capacity[info.NUMANodeID]++
	}
	p.numaIDs = topo.CPUDetails.NUMANodes().List()
	allCPUs := topo.CPUDetails.CPUs()
	var reserved cpuset.CPUSet
	if reservedCPUs.Size() > 0 {
		reserved = reservedCPUs
	} else {
		reserved, _ = p.takeByTopology(allCPUs, numReservedCPUs)
	}
	if reserved.Size() != numReservedCPUs {
		return nil, fmt.Errorf("new static policy error: [cpumanager] unable to reserve the required amount of CPUs (size of %s did not equal %d)", reserved, numReservedCPUs)
	}
	var reservedPhysicalCPUs cpuset.CPUSet
	for _, cpu := range reserved.UnsortedList() {
		core, err := topo.CPUCoreID(cpu)
		if err != nil {
			return nil, fmt.Errorf("new static policy error: [cpumanager] unable to build the reserved physical CPUs from the reserved set: %w", err)
		}
		reservedPhysicalCPUs = reservedPhysicalCPUs.Union(topo.CPUDetails.CPUsInCores(core))
	}
	p.reserved = reserved
	p.reservedPhysicalCPUs = reservedPhysicalCPUs
	p.defaultSet = allCPUs
	if opts.StrictCPUReservation {
		p.defaultSet = allCPUs.Difference(reserved)
	}
	return p, nil
}

// Clone returns an independent copy of the policy and its state.
func (p *Static) Clone() *Static {
	c := *p
	c.assignments = make(map[string]map[string]cpuset.CPUSet, len(p.assignments))
	for pod, m := range p.assignments {
		cm := make(map[string]cpuset.CPUSet, len(m))
		for k, v := range m {
			cm[k] = v
		}
		c.assignments[pod] = cm
	}
	c.cpusToReuse = make(map[string]cpuset.CPUSet, len(p.cpusToReuse))
	for k, v := range p.cpusToReuse {
		c.cpusToReuse[k] = v
	}
	return &c
}

// Topology returns the CPU topology.
func (p *Static) Topology() *CPUTopology { return p.topo }

// Options returns the parsed options.
func (p *Static) Options() Options { return p.opts }

// Reserved returns the reserved CPUs.
func (p *Static) Reserved() cpuset.CPUSet { return p.reserved }

// DefaultSet returns the shared pool (reserved CPUs included unless
// strict-cpu-reservation).
func (p *Static) DefaultSet() cpuset.CPUSet { return p.defaultSet }

// Available returns the CPUs available for exclusive assignment.
func (p *Static) Available() cpuset.CPUSet { return p.defaultSet.Difference(p.reserved) }

// Assigned returns the exclusive CPUs of a container.
func (p *Static) Assigned(podUID, container string) (cpuset.CPUSet, bool) {
	s, ok := p.assignments[podUID][container]
	return s, ok
}

// GuaranteedCPUs is the number of exclusive CPUs the container gets: its
// integral CPU request in a Guaranteed pod, else 0.
func (p *Static) GuaranteedCPUs(pod *v1.Pod, c *v1.Container) int {
	if podres.QOS(pod) != v1.PodQOSGuaranteed {
		return 0
	}
	q := c.Resources.Requests[v1.ResourceCPU]
	if q.Value()*1000 != q.MilliValue() {
		return 0
	}
	return int(q.Value())
}

// PodGuaranteedCPUs is the pod-level count (init containers reuse,
// sidecars accumulate), as kubelet's podGuaranteedCPUs.
func (p *Static) PodGuaranteedCPUs(pod *v1.Pod) int {
	byInit, byRestartable := 0, 0
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if _, ok := c.Resources.Requests[v1.ResourceCPU]; !ok {
			continue
		}
		n := p.GuaranteedCPUs(pod, c)
		if podres.IsRestartableInitContainer(c) {
			byRestartable += n
		} else if byRestartable+n > byInit {
			byInit = byRestartable + n
		}
	}
	byApp := 0
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if _, ok := c.Resources.Requests[v1.ResourceCPU]; !ok {
			continue
		}
		byApp += p.GuaranteedCPUs(pod, c)
	}
	if byInit > byApp+byRestartable {
		return byInit
	}
	return byApp + byRestartable
}

func (p *Static) reusable(pod *v1.Pod) cpuset.CPUSet {
	if p.reuseFor != string(pod.UID) {
		return cpuset.New()
	}
	return p.cpusToReuse[string(pod.UID)]
}

// ContainerHints returns the container's "cpu" hints (nil map = no
// preference), as kubelet's GetTopologyHints.
func (p *Static) ContainerHints(pod *v1.Pod, c *v1.Container) map[string][]node.Hint {
	requested := p.GuaranteedCPUs(pod, c)
	if requested == 0 || podres.IsPodLevelResourcesSet(pod) {
		return nil
	}
	if allocated, ok := p.Assigned(string(pod.UID), c.Name); ok {
		if allocated.Size() != requested {
			return map[string][]node.Hint{string(v1.ResourceCPU): {}}
		}
		return map[string][]node.Hint{string(v1.ResourceCPU): p.GenerateHints(allocated, cpuset.New(), requested)}
	}
	return map[string][]node.Hint{string(v1.ResourceCPU): p.GenerateHints(p.Available(), p.reusable(pod), requested)}
}

// PodHints returns the pod-level "cpu" hints, as kubelet's
// GetPodTopologyHints.
func (p *Static) PodHints(pod *v1.Pod) map[string][]node.Hint {
	requested := p.PodGuaranteedCPUs(pod)
	if requested == 0 || podres.IsPodLevelResourcesSet(pod) {
		return nil
	}
	assigned := cpuset.New()
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if allocated, ok := p.Assigned(string(pod.UID), cs[i].Name); ok {
				if allocated.Size() != p.GuaranteedCPUs(pod, &cs[i]) {
					return map[string][]node.Hint{string(v1.ResourceCPU): {}}
				}
				assigned = assigned.Union(allocated)
			}
		}
	}
	if assigned.Size() == requested {
		return map[string][]node.Hint{string(v1.ResourceCPU): p.GenerateHints(assigned, cpuset.New(), requested)}
	}
	reusable := p.reusable(pod).Union(assigned)
	return map[string][]node.Hint{string(v1.ResourceCPU): p.GenerateHints(p.Available(), reusable, requested)}
}

// GenerateHints is kubelet's generateCPUTopologyHints: every NUMA mask (over
// NUMA nodes with CPUs) that holds the reusable CPUs and enough reusable +
// available CPUs; preferred iff its size equals the smallest mask whose
// capacity fits the request (or socket-aligned with align-by-socket).
func (p *Static) GenerateHints(available, reusable cpuset.CPUSet, request int) []node.Hint {
	minAffinitySize := len(p.numaIDs)
	var capacity, avail [node.MaxNUMANodeID + 1]int
	for id, n := range p.capacity {
		capacity[id] = n
	}
	for _, c := range available.UnsortedList() {
		if info, ok := p.topo.CPUDetails[c]; ok {
			avail[info.NUMANodeID]++
		}
	}
	var reuseMask node.Mask
	nReuse := 0
	for _, c := range reusable.UnsortedList() {
		reuseMask |= node.MaskOf(p.topo.CPUDetails[c].NUMANodeID)
		nReuse++
	}
	var masks []node.Mask
	full := node.IterateMasks(p.numaIDs, p.MaxMasks, func(m node.Mask) {
		capIn, availIn := 0, 0
		for v := uint64(m); v != 0; v &= v - 1 {
			id := bits.TrailingZeros64(v)
			capIn += capacity[id]
			availIn += avail[id]
		}
		if capIn >= request && m.Count() < minAffinitySize {
			minAffinitySize = m.Count()
		}
		if reuseMask&^m != 0 {
			return
		}
		if nReuse+availIn < request {
			return
		}
		masks = append(masks, m)
	})
	if !full {
		if g := greedyMinNodes(p.numaIDs, p.capacity, request); g > 0 && g < minAffinitySize {
			minAffinitySize = g
		}
	}
	hints := make([]node.Hint, len(masks))
	for i := range masks {
		m := masks[i]
		hints[i] = node.Hint{Affinity: &masks[i]}
		if p.opts.AlignBySocket && p.isHintSocketAligned(m, minAffinitySize) {
			hints[i].Preferred = true
			continue
		}
		if m.Count() == minAffinitySize {
			hints[i].Preferred = true
		}
	}
	return hints
}

// greedyMinNodes returns the fewest NUMA nodes whose capacities sum to at
// least request (0 if none).
func greedyMinNodes(ids []int, capacity map[int]int, request int) int {
	caps := make([]int, 0, len(ids))
	for _, id := range ids {
		caps = append(caps, capacity[id])
	}
	sort.Sort(sort.Reverse(sort.IntSlice(caps)))
	sum := 0
	for i, c := range caps {
		sum += c
		if sum >= request {
			return i + 1
		}
	}
	return 0
}

func (p *Static) isHintSocketAligned(m node.Mask, minAffinitySize int) bool {
	perSocket := p.topo.NumNUMANodes / p.topo.NumSockets
	if perSocket == 0 {
		return false
	}
	minSockets := (minAffinitySize + perSocket - 1) / perSocket
	return p.topo.CPUDetails.SocketsInNUMANodes(m.Bits()...).Size() == minSockets
}

func (p *Static) getAlignedCPUs(m node.Mask, allocatable cpuset.CPUSet) cpuset.CPUSet {
	aligned := cpuset.New()
	if p.opts.AlignBySocket {
		for _, s := range p.topo.CPUDetails.SocketsInNUMANodes(m.Bits()...).UnsortedList() {
			aligned = aligned.Union(allocatable.Intersection(p.topo.CPUDetails.CPUsInSockets(s)))
		}
		return aligned
	}
	for _, id := range m.Bits() {
		aligned = aligned.Union(allocatable.Intersection(p.topo.CPUDetails.CPUsInNUMANodes(id)))
	}
	return aligned
}

func (p *Static) enforceSMTAlignment(numCPUs int) error {
	if !p.opts.FullPhysicalCPUsOnly {
		return nil
	}
	if numCPUs%p.cpuGroupSize != 0 {
		return SMTAlignmentError{RequestedCPUs: numCPUs, CpusPerCore: p.cpuGroupSize}
	}
	avail := p.defaultSet.Difference(p.reservedPhysicalCPUs).Size()
	if numCPUs > avail {
		return SMTAlignmentError{RequestedCPUs: numCPUs, CpusPerCore: p.cpuGroupSize, AvailablePhysicalCPUs: avail, CausedByPhysicalCPUs: true}
	}
	return nil
}

// Allocate assigns exclusive CPUs to the container following the merged
// affinity (nil = no preference), as kubelet's Allocate. It returns the
// assigned set (empty for shared-pool containers).
func (p *Static) Allocate(pod *v1.Pod, c *v1.Container, affinity *node.Mask) (cpuset.CPUSet, error) {
	numCPUs := p.GuaranteedCPUs(pod, c)
	if numCPUs == 0 || podres.IsPodLevelResourcesSet(pod) {
		return cpuset.New(), nil
	}
	if cs, ok := p.Assigned(string(pod.UID), c.Name); ok {
		p.updateCPUsToReuse(pod, c, cs)
		return cs, nil
	}
	if err := p.enforceSMTAlignment(numCPUs); err != nil {
		return cpuset.New(), err
	}
	result, err := p.allocateCPUs(numCPUs, affinity, p.reusable(pod))
	if err != nil {
		return cpuset.New(), err
	}
	if p.assignments[string(pod.UID)] == nil {
		p.assignments[string(pod.UID)] = map[string]cpuset.CPUSet{}
	}
	p.assignments[string(pod.UID)][c.Name] = result
	p.updateCPUsToReuse(pod, c, result)
	return result, nil
}

func (p *Static) allocateCPUs(numCPUs int, affinity *node.Mask, reusable cpuset.CPUSet) (cpuset.CPUSet, error) {
	allocatable := p.Available().Union(reusable)
	result := cpuset.New()
	if affinity != nil {
		aligned := p.getAlignedCPUs(*affinity, allocatable)
		n := aligned.Size()
		if numCPUs < n {
			n = numCPUs
		}
		got, err := p.takeByTopology(aligned, n)
		if err != nil {
			return cpuset.New(), err
		}
		result = result.Union(got)
	}
	rest, err := p.takeByTopology(allocatable.Difference(result), numCPUs-result.Size())
	if err != nil {
		return cpuset.New(), err
	}
	result = result.Union(rest)
	p.defaultSet = p.defaultSet.Difference(result)
	return result, nil
}

func (p *Static) updateCPUsToReuse(pod *v1.Pod, c *v1.Container, cs cpuset.CPUSet) {
	uid := string(pod.UID)
	if p.reuseFor != uid {
		p.cpusToReuse = map[string]cpuset.CPUSet{}
		p.reuseFor = uid
	}
	if _, ok := p.cpusToReuse[uid]; !ok {
		p.cpusToReuse[uid] = cpuset.New()
	}
	for i := range pod.Spec.InitContainers {
		ic := &pod.Spec.InitContainers[i]
		if c.Name == ic.Name {
			if podres.IsRestartableInitContainer(ic) {
				break
			}
			p.cpusToReuse[uid] = p.cpusToReuse[uid].Union(cs)
			return
		}
	}
	p.cpusToReuse[uid] = p.cpusToReuse[uid].Difference(cs)
}

func (p *Static) takeByTopology(available cpuset.CPUSet, numCPUs int) (cpuset.CPUSet, error) {
	strategy := CPUSortingStrategyPacked
	if p.opts.DistributeCPUsAcrossCores {
		strategy = CPUSortingStrategySpread
	}
	if p.opts.DistributeCPUsAcrossNUMA {
		group := 1
		if p.opts.FullPhysicalCPUsOnly {
			group = p.cpuGroupSize
		}
		return takeByTopologyNUMADistributed(p.topo, available, numCPUs, group, strategy, p.opts.AlignBySocket)
	}
	return takeByTopologyNUMAPacked(p.topo, available, numCPUs, strategy, p.opts.PreferAlignByUncoreCache)
}

// TakeByTopology exposes the allocator (for tests and explanations).
func (p *Static) TakeByTopology(available cpuset.CPUSet, numCPUs int) (cpuset.CPUSet, error) {
	return p.takeByTopology(available, numCPUs)
}
