// Package cpumanager models kubelet v1.37's CPU Manager with the static
// policy: topology hints for guaranteed containers and pods, exclusive CPU
// allocation (packed by default, spread over NUMA nodes with
// distribute-cpus-across-numa), the six policy options with their maturity
// levels and incompatibilities, reservedSystemCPUs and reservation by
// quantity, strict reservation, and the SMT alignment error.
//
// The allocator (layout.go, packed.go, numaspread.go) works on an index of
// the machine built once per topology: CPUs and their groups (socket, NUMA
// node, physical core, uncore cache) renumbered densely, with free-CPU
// counters per group kept up to date as CPUs are picked. It reproduces
// kubelet's choices exactly, ties and quirks included; the differential
// tests in conformance/kubelet check that against kubelet itself. Hint
// generation counts CPUs per NUMA node once and bounds the NUMA-mask
// enumeration (node.IterateMasks) so that machines with many NUMA nodes
// stay fast.
package cpumanager

import (
	"errors"
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

// SMTAlignmentError rejects a container under full-pcpus-only: its request
// is not a whole number of cores, or (CausedByPhysicalCPUs) there are not
// enough CPUs left outside the cores that hold reserved CPUs.
type SMTAlignmentError struct {
	RequestedCPUs         int
	CpusPerCore           int
	AvailablePhysicalCPUs int
	CausedByPhysicalCPUs  bool
}

func (e SMTAlignmentError) Error() string {
	format, args := quoteSMTNotMultiple, []any{e.RequestedCPUs, e.CpusPerCore}
	if e.CausedByPhysicalCPUs {
		format, args = quoteSMTNotEnoughPhysical, []any{e.AvailablePhysicalCPUs, e.RequestedCPUs, e.CpusPerCore}
	}
	return fmt.Sprintf(format, args...)
}

// Type is the admission failure reason.
func (e SMTAlignmentError) Type() string { return ErrorSMTAlignment }

// reuseState is the CPUs that finished init containers of the pod being
// admitted hand on to its later containers. Only the latest pod is kept.
type reuseState struct {
	pod  string
	cpus cpuset.CPUSet
}

// Static is the static policy with its state (the shared pool and the
// exclusive assignments). It is not safe for concurrent use; Clone it to try
// an admission without committing it.
type Static struct {
	topo *CPUTopology
	lo   *layout
	opts Options
	// threads is the number of hardware threads per core; numaPerSocket
	// the machine's NUMA nodes over its sockets (integer quotient).
	threads, numaPerSocket int
	// reserved are the CPUs kept for system daemons; reservedCores the CPUs
	// of every core holding one of them (full-pcpus-only never hands those
	// out).
	reserved, reservedCores cpuset.CPUSet
	// MaxMasks bounds hint enumeration (0 = node.DefaultMaxMasks).
	MaxMasks int

	defaultSet  cpuset.CPUSet
	assignments map[string]map[string]cpuset.CPUSet
	reuse       reuseState

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
		return 0, errors.New(quoteNoReservation)
	}
	return int(math.Ceil(float64(total.MilliValue()) / 1000)), nil
}

// NewStatic builds the static policy, as kubelet's NewStaticPolicy, with an
// empty state: the shared pool is every CPU (less the reserved ones under
// strict-cpu-reservation). The reserved CPUs are reservedCPUs when given,
// else the numReservedCPUs CPUs the policy's own allocator picks first.
func NewStatic(topo *CPUTopology, numReservedCPUs int, reservedCPUs cpuset.CPUSet, opts Options, topologyPolicy string) (*Static, error) {
	if err := ValidateOptions(opts, topo, topologyPolicy); err != nil {
		return nil, fmt.Errorf(quoteNewStaticPolicy, err)
	}
	p := &Static{
		topo:          topo,
		lo:            newLayout(topo),
		opts:          opts,
		threads:       topo.CPUsPerCore(),
		numaPerSocket: quotient(topo.NumNUMANodes, topo.NumSockets),
		assignments:   map[string]map[string]cpuset.CPUSet{},
		reuse:         reuseState{cpus: cpuset.New()},
		capacity:      map[int]int{},
	}
	for _, info := range topo.CPUDetails {
		p.capacity[info.NUMANodeID]++
	}
	for id := range p.capacity {
		p.numaIDs = append(p.numaIDs, id)
	}
	sort.Ints(p.numaIDs)
	every := topo.CPUDetails.CPUs()
	if err := p.reserve(every, numReservedCPUs, reservedCPUs); err != nil {
		return nil, fmt.Errorf(quoteNewStaticPolicy, err)
	}
	p.defaultSet = every
	if opts.StrictCPUReservation {
		p.defaultSet = every.Difference(p.reserved)
	}
	return p, nil
}

// reserve settles the reserved CPUs and the cores they occupy.
func (p *Static) reserve(every cpuset.CPUSet, want int, explicit cpuset.CPUSet) error {
	chosen := explicit
	if chosen.IsEmpty() {
		chosen, _ = p.takeByTopology(every, want)
	}
	if chosen.Size() != want {
		return fmt.Errorf(quoteReserveSize, chosen, want)
	}
	cores, bad, ok := p.lo.groupsHolding(tierCore, chosen.List())
	if !ok {
		return fmt.Errorf(quoteReservedPhysicalCPUs, fmt.Errorf(quoteUnknownCPU, bad))
	}
	p.reserved = chosen
	p.reservedCores = p.lo.cpusIn(tierCore, cores)
	return nil
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
// CPU request when the pod is Guaranteed and the request is a whole number
// of CPUs, else 0.
func (p *Static) GuaranteedCPUs(pod *v1.Pod, c *v1.Container) int {
	if podres.QOS(pod) != v1.PodQOSGuaranteed {
		return 0
	}
	milli := c.Resources.Requests.Cpu().MilliValue()
	if milli%1000 != 0 {
		return 0
	}
	return int(milli / 1000)
}

// PodGuaranteedCPUs is the pod's exclusive CPU need: the larger of its peak
// during initialisation (each init container runs beside the sidecars
// started before it) and its steady state (sidecars plus app containers).
func (p *Static) PodGuaranteedCPUs(pod *v1.Pod) int {
	initPeak, sidecars := 0, 0
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		n := p.GuaranteedCPUs(pod, c)
		if podres.IsRestartableInitContainer(c) {
			sidecars += n
		} else {
			initPeak = max(initPeak, sidecars+n)
		}
	}
	steady := sidecars
	for i := range pod.Spec.Containers {
		steady += p.GuaranteedCPUs(pod, &pod.Spec.Containers[i])
	}
	return max(initPeak, steady)
}

// reusable is what the pod's finished init containers left to reuse.
func (p *Static) reusable(pod *v1.Pod) cpuset.CPUSet {
	if p.reuse.pod == string(pod.UID) {
		return p.reuse.cpus
	}
	return cpuset.New()
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
		if p.opts.AlignBySocket && p.fillsFewestSockets(m, minAffinitySize) {
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

// fillsFewestSockets is the align-by-socket preference: the mask's NUMA
// nodes span exactly as many sockets as the smallest fitting mask needs,
// counting the machine's NUMA nodes per socket.
func (p *Static) fillsFewestSockets(m node.Mask, fewestNUMA int) bool {
	// The spanned sockets must hold fewestNUMA nodes and one socket fewer
	// must not (no preference when sockets outnumber NUMA nodes).
	k := p.numaPerSocket
	spanned := len(p.socketsUnder(m))
	return k > 0 && spanned*k >= fewestNUMA && (spanned-1)*k < fewestNUMA
}

// socketsUnder returns the socket groups holding CPUs of the mask's NUMA
// nodes.
func (p *Static) socketsUnder(m node.Mask) []int {
	var ids []int
	for _, numa := range m.Bits() {
		if g, ok := p.lo.groupByLabel(tierNUMA, numa); ok {
			for _, s := range p.lo.member[tierNUMA][g] {
				ids = append(ids, p.lo.cpuIDs[s])
			}
		}
	}
	socks, _, _ := p.lo.groupsHolding(tierSocket, ids)
	return socks
}

// withinAffinity narrows CPUs to the affinity's NUMA nodes, or with
// align-by-socket to the whole sockets those nodes sit in.
func (p *Static) withinAffinity(m node.Mask, cpus cpuset.CPUSet) cpuset.CPUSet {
	if p.opts.AlignBySocket {
		return cpus.Intersection(p.lo.cpusIn(tierSocket, p.socketsUnder(m)))
	}
	var numas []int
	for _, numa := range m.Bits() {
		if g, ok := p.lo.groupByLabel(tierNUMA, numa); ok {
			numas = append(numas, g)
		}
	}
	return cpus.Intersection(p.lo.cpusIn(tierNUMA, numas))
}

// smtCheck is full-pcpus-only's admission test.
func (p *Static) smtCheck(n int) error {
	if !p.opts.FullPhysicalCPUsOnly {
		return nil
	}
	e := SMTAlignmentError{RequestedCPUs: n, CpusPerCore: p.threads}
	if n%p.threads != 0 {
		return e
	}
	e.AvailablePhysicalCPUs = p.defaultSet.Difference(p.reservedCores).Size()
	if n > e.AvailablePhysicalCPUs {
		e.CausedByPhysicalCPUs = true
		return e
	}
	return nil
}

// Allocate assigns exclusive CPUs to the container following the merged
// affinity (nil = no preference), as kubelet's Allocate. It returns the
// assigned set (empty for shared-pool containers).
func (p *Static) Allocate(pod *v1.Pod, c *v1.Container, affinity *node.Mask) (cpuset.CPUSet, error) {
	n := p.GuaranteedCPUs(pod, c)
	if n == 0 || podres.IsPodLevelResourcesSet(pod) {
		return cpuset.New(), nil
	}
	uid := string(pod.UID)
	if held, ok := p.Assigned(uid, c.Name); ok {
		p.noteReuse(pod, c.Name, held)
		return held, nil
	}
	if err := p.smtCheck(n); err != nil {
		return cpuset.New(), err
	}
	got, err := p.carve(n, affinity, p.reusable(pod))
	if err != nil {
		return cpuset.New(), err
	}
	if p.assignments[uid] == nil {
		p.assignments[uid] = map[string]cpuset.CPUSet{}
	}
	p.assignments[uid][c.Name] = got
	p.noteReuse(pod, c.Name, got)
	return got, nil
}

// carve takes n CPUs out of the free ones plus reusable: first as many as
// the affinity's CPUs offer, then the rest from anywhere; the result leaves
// the shared pool.
func (p *Static) carve(n int, affinity *node.Mask, reusable cpuset.CPUSet) (cpuset.CPUSet, error) {
	pool := p.Available().Union(reusable)
	sources := []cpuset.CPUSet{pool}
	if affinity != nil {
		sources = append([]cpuset.CPUSet{p.withinAffinity(*affinity, pool)}, sources...)
	}
	got := cpuset.New()
	for i, src := range sources {
		src = src.Difference(got)
		wanted := n - got.Size()
		if i+1 < len(sources) { // a preferred source gives what it has
			wanted = min(wanted, src.Size())
		}
		more, err := p.takeByTopology(src, wanted)
		if err != nil {
			return cpuset.New(), err
		}
		got = got.Union(more)
	}
	p.defaultSet = p.defaultSet.Difference(got)
	return got, nil
}

// noteReuse records what container name of pod hands on: CPUs of an
// ordinary init container become reusable by the pod's later containers;
// CPUs of any other container (sidecars, app containers) stop being so.
func (p *Static) noteReuse(pod *v1.Pod, name string, cpus cpuset.CPUSet) {
	if uid := string(pod.UID); p.reuse.pod != uid {
		p.reuse = reuseState{pod: uid, cpus: cpuset.New()}
	}
	for i := range pod.Spec.InitContainers {
		if ic := &pod.Spec.InitContainers[i]; ic.Name == name {
			if !podres.IsRestartableInitContainer(ic) {
				p.reuse.cpus = p.reuse.cpus.Union(cpus)
				return
			}
			break
		}
	}
	p.reuse.cpus = p.reuse.cpus.Difference(cpus)
}

// takeByTopology runs the allocator the options select.
func (p *Static) takeByTopology(cpus cpuset.CPUSet, n int) (cpuset.CPUSet, error) {
	o := p.opts
	var chunk int // 0: packed; else NUMA-distributed in chunks of whole cores or CPUs
	switch {
	case !o.DistributeCPUsAcrossNUMA:
	case o.FullPhysicalCPUsOnly:
		chunk = p.threads
	default:
		chunk = 1
	}
	return p.lo.take(cpus, n, o.DistributeCPUsAcrossCores, chunk, o.PreferAlignByUncoreCache, o.AlignBySocket)
}

// TakeByTopology exposes the allocator (for tests and explanations).
func (p *Static) TakeByTopology(available cpuset.CPUSet, numCPUs int) (cpuset.CPUSet, error) {
	return p.takeByTopology(available, numCPUs)
}
