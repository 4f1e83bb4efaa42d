package cpumanager

// Property tests of the static policy's CPU allocation, written from its
// documented behaviour (kubernetes.io "Control CPU Management Policies on the
// Node" and the KEPs of the options): they check what every allocation must
// satisfy on many machines and free-CPU sets, never which CPUs it picks.
// Which CPUs kubelet picks is checked against kubelet itself by the
// differential tests in conformance/kubelet.
//
// Every expectation is computed from the shape's own ground truth (hwMap),
// not from the package's topology helpers.

import (
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"testing"

	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/k8s/node"
)

// hwOptionSet is one combination of static policy options.
type hwOptionSet struct {
	name string
	opts Options
}

// hwOptionSets are the combinations kubelet accepts (incompatible pairs left
// out), as the conformance differential runs them.
func hwOptionSets() []hwOptionSet {
	return []hwOptionSet{
		{"default", Options{}},
		{"full-pcpus-only", Options{FullPhysicalCPUsOnly: true}},
		{"distribute-cpus-across-numa", Options{DistributeCPUsAcrossNUMA: true}},
		{"distribute-cpus-across-numa+full-pcpus-only", Options{DistributeCPUsAcrossNUMA: true, FullPhysicalCPUsOnly: true}},
		{"align-by-socket", Options{AlignBySocket: true}},
		{"distribute-cpus-across-cores", Options{DistributeCPUsAcrossCores: true}},
		{"strict-cpu-reservation", Options{StrictCPUReservation: true}},
		{"prefer-align-cpus-by-uncorecache", Options{PreferAlignByUncoreCache: true}},
		{"prefer-align-cpus-by-uncorecache+full-pcpus-only", Options{PreferAlignByUncoreCache: true, FullPhysicalCPUsOnly: true}},
		{"align-by-socket+distribute-cpus-across-numa", Options{AlignBySocket: true, DistributeCPUsAcrossNUMA: true}},
	}
}

// hwAllocator is how the tests call the allocator; tests of the tests wrap it
// to break an invariant on purpose.
type hwAllocator func(p *Static, available cpuset.CPUSet, n int) (cpuset.CPUSet, error)

func hwTake(p *Static, available cpuset.CPUSet, n int) (cpuset.CPUSet, error) {
	return p.TakeByTopology(available, n)
}

// ---- ground-truth helpers ----

// countBy returns how many CPUs of set fall in each group of key.
func (m *hwMap) countBy(key []int, groups int, set cpuset.CPUSet) []int {
	out := make([]int, groups)
	for _, c := range set.UnsortedList() {
		out[key[c]]++
	}
	return out
}

// touched is the number of groups of key that set has CPUs in.
func (m *hwMap) touched(key []int, groups int, set cpuset.CPUSet) int {
	k := 0
	for _, v := range m.countBy(key, groups, set) {
		if v > 0 {
			k++
		}
	}
	return k
}

// wholeGroups lists the groups all of whose CPUs are in set.
func hwWholeGroups(groups [][]int, set cpuset.CPUSet) []int {
	var out []int
	for g, cpus := range groups {
		if cpuset.New(cpus...).IsSubsetOf(set) {
			out = append(out, g)
		}
	}
	return out
}

// isUnionOf reports whether set is exactly a union of whole groups.
func hwIsUnionOf(groups [][]int, key []int, set cpuset.CPUSet) bool {
	for _, c := range set.UnsortedList() {
		for _, sib := range groups[key[c]] {
			if !set.Contains(sib) {
				return false
			}
		}
	}
	return true
}

// hwMinGroups is, by brute force over every subset of groups, the fewest
// groups whose free counts add up to n (0 when none do).
func hwMinGroups(free []int, n int) int {
	best := 0
	for mask := 1; mask < 1<<len(free); mask++ {
		sum := 0
		for v := mask; v != 0; v &= v - 1 {
			sum += free[bits.TrailingZeros(uint(v))]
		}
		if k := bits.OnesCount(uint(mask)); sum >= n && (best == 0 || k < best) {
			best = k
		}
	}
	return best
}

// hwRandomFree draws a free-CPU set with the kinds of fragmentation a
// running node has: whole NUMA nodes free or busy, L3 groups free, busy, or
// split by whole cores or by single threads.
func (m *hwMap) randomFree(r *rand.Rand) cpuset.CPUSet {
	s := m.shape
	if r.IntN(8) == 0 {
		return cpuset.New(m.numaCPUsAll()...)
	}
	var free []int
	groups := m.l3CPUs
	if !s.l3WithinNUMA() {
		groups = m.numaCPUs
	}
	numaMode := make([]int, s.numas())
	for i := range numaMode {
		numaMode[i] = r.IntN(4) // 0 free, 1 busy, else per group
	}
	p := r.Float64()
	for _, g := range groups {
		nm := numaMode[m.numa[g[0]]]
		mode := 2 + r.IntN(4)
		if nm < 2 {
			mode = nm
		}
		switch mode {
		case 0, 2:
			free = append(free, g...)
		case 1, 3:
		case 4: // whole cores
			seen := map[int]bool{}
			for _, c := range g {
				if core := m.core[c]; !seen[core] {
					seen[core] = true
					if r.Float64() < p {
						free = append(free, m.coreCPUs[core]...)
					}
				}
			}
		default: // single threads
			for _, c := range g {
				if r.Float64() < p {
					free = append(free, c)
				}
			}
		}
	}
	return cpuset.New(free...)
}

func (m *hwMap) numaCPUsAll() []int {
	out := make([]int, 0, m.shape.cpus())
	for _, g := range m.numaCPUs {
		out = append(out, g...)
	}
	return out
}

// randomRequest draws a request size, favouring the sizes at which the
// documented rules apply (multiples of a core, an L3, a NUMA node, a socket)
// and the edges (0, everything free, one more).
func (m *hwMap) randomRequest(r *rand.Rand, free int) int {
	s := m.shape
	units := []int{1, s.threadsPerCore, s.cpusPerL3(), s.cpusPerNUMA(), s.cpusPerSocket()}
	switch r.IntN(6) {
	case 0:
		return r.IntN(free + 3)
	case 1:
		return []int{0, 1, free, free + 1}[r.IntN(4)]
	default:
		u := units[r.IntN(len(units))]
		return u * (1 + r.IntN(max(1, free/u)))
	}
}

func hwStatic(t testing.TB, topo *CPUTopology, opts Options, numReserved int, reserved cpuset.CPUSet) *Static {
	t.Helper()
	p, err := NewStatic(topo, numReserved, reserved, opts, "best-effort")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// hwTestShapes are the named shapes and n random ones.
func hwTestShapes(r *rand.Rand, n int) []hwShape {
	out := hwShapes()
	for i := 0; i < n; i++ {
		out = append(out, hwRandomShape(r, i))
	}
	return out
}

// casesFor scales the number of cases to the machine size so that the big
// EPYC and Xeon shapes do not dominate the run time.
func hwCasesFor(s hwShape, base int) int {
	n := base * 64 / max(64, s.cpus())
	if testing.Short() {
		n /= 4
	}
	return max(n, 4)
}

// ---- the allocator (TakeByTopology) ----

// checkTake checks one allocation of n CPUs from free against every rule
// that applies to it and returns the first broken one.
func (m *hwMap) checkTake(o Options, free cpuset.CPUSet, n int, got cpuset.CPUSet, err error, hit func(string)) error {
	s := m.shape
	tpc := s.threadsPerCore
	// Failure happens exactly when there are not enough free CPUs.
	if n > free.Size() {
		hit("fails when short")
		if err == nil {
			return fmt.Errorf("took %d of %d free CPUs without an error", n, free.Size())
		}
		if !got.IsEmpty() {
			return fmt.Errorf("failed but returned %s", got)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("failed with %d of %d free: %v", n, free.Size(), err)
	}
	// A subset of the free CPUs, of exactly the asked size.
	if got.Size() != n {
		return fmt.Errorf("got %d CPUs (%s), want %d", got.Size(), got, n)
	}
	if !got.IsSubsetOf(free) {
		return fmt.Errorf("got %s, not free: %s", got, got.Difference(free))
	}
	if n == 0 {
		return nil
	}
	wholeFree := len(hwWholeGroups(m.coreCPUs, free))
	// Whole cores when the request is a multiple of a core and enough
	// whole cores are free (the packed algorithm; spreading across cores or
	// NUMA nodes may split cores by design).
	if !o.DistributeCPUsAcrossCores && !o.DistributeCPUsAcrossNUMA && n%tpc == 0 && wholeFree*tpc >= n && tpc > 1 {
		hit("whole cores")
		if !hwIsUnionOf(m.coreCPUs, m.core, got) {
			return fmt.Errorf("split a core although %d whole cores are free: %s", wholeFree, got)
		}
	}
	// A request of m whole NUMA nodes with m NUMA nodes entirely free takes
	// m whole NUMA nodes (so the fewest possible).
	if k := n / s.cpusPerNUMA(); n%s.cpusPerNUMA() == 0 && len(hwWholeGroups(m.numaCPUs, free)) >= k {
		hit("whole NUMA nodes")
		if !hwIsUnionOf(m.numaCPUs, m.numa, got) || m.touched(m.numa, s.numas(), got) != k {
			return fmt.Errorf("%d CPUs = %d NUMA nodes with %d whole NUMA nodes free, got %s", n, k, len(hwWholeGroups(m.numaCPUs, free)), got)
		}
	}
	// Likewise whole sockets (distribution across NUMA nodes may pick NUMA
	// nodes of different sockets when a socket has several).
	if k := n / s.cpusPerSocket(); n%s.cpusPerSocket() == 0 && len(hwWholeGroups(m.socketCPUs, free)) >= k && (!o.DistributeCPUsAcrossNUMA || s.numaPerSocket == 1) {
		hit("whole sockets")
		if !hwIsUnionOf(m.socketCPUs, m.socket, got) || m.touched(m.socket, s.sockets, got) != k {
			return fmt.Errorf("%d CPUs = %d sockets with %d whole sockets free, got %s", n, k, len(hwWholeGroups(m.socketCPUs, free)), got)
		}
	}
	// prefer-align-cpus-by-uncorecache: with enough entirely free L3 groups
	// the allocation uses the fewest L3 groups, ceil(n / CPUs per L3). This
	// holds where L3 groups nest in NUMA nodes (the option's target: AMD
	// CCXs), and for requests of whole cores (kubelet's partial-L3 step
	// counts threads in pairs, so odd requests only fit on SMT2).
	if o.PreferAlignByUncoreCache && s.l3WithinNUMA() && (n%tpc == 0 || tpc <= 2) {
		need := (n + s.cpusPerL3() - 1) / s.cpusPerL3()
		if len(hwWholeGroups(m.l3CPUs, free)) >= need && s.l3s() > 1 {
			hit("fewest L3 groups")
			if k := m.touched(m.l3, s.l3s(), got); k != need {
				return fmt.Errorf("%d CPUs fit in %d L3 groups (%d entirely free), got %d: %s", n, need, len(hwWholeGroups(m.l3CPUs, free)), k, got)
			}
		}
	}
	// distribute-cpus-across-numa: when some set of the fewest NUMA nodes
	// that can hold the request can take an even share each, the
	// allocation uses exactly that many NUMA nodes, at least the even share
	// from each, in whole groups (cores with full-pcpus-only).
	if o.DistributeCPUsAcrossNUMA && !o.AlignBySocket {
		g := 1
		if o.FullPhysicalCPUsOnly {
			g = tpc
		}
		if n%g == 0 {
			perNUMA := m.countBy(m.numa, s.numas(), free)
			k := hwMinGroups(perNUMA, n)
			share := n / k / g * g
			if hwEvenSetExists(perNUMA, k, n, share, g) && k > 1 {
				hit(fmt.Sprintf("NUMA distribution, groups of %d", min(g, 2)))
				counts := m.countBy(m.numa, s.numas(), got)
				used := 0
				lo, hi := n, 0
				for _, c := range counts {
					if c == 0 {
						continue
					}
					used++
					lo, hi = min(lo, c), max(hi, c)
					if c < share || c%g != 0 {
						return fmt.Errorf("NUMA share %d (groups of %d) expected, got counts %v: %s", share, g, counts, got)
					}
				}
				if used != k {
					return fmt.Errorf("%d NUMA nodes can share %d CPUs evenly, got %d (counts %v)", k, n, used, counts)
				}
				// On an idle machine the shares differ by at most one group.
				if free.Size() == s.cpus() {
					hit("NUMA distribution, idle machine")
				}
				if free.Size() == s.cpus() && hi-lo > g {
					return fmt.Errorf("idle machine: shares %v differ by more than %d", counts, g)
				}
			}
		}
	}
	return nil
}

// hwEvenSetExists reports whether some k NUMA nodes each have share free
// CPUs and together hold n CPUs in whole groups of g.
func hwEvenSetExists(free []int, k, n, share, g int) bool {
	for mask := 1; mask < 1<<len(free); mask++ {
		if bits.OnesCount(uint(mask)) != k {
			continue
		}
		ok, groups := true, 0
		for v := mask; v != 0; v &= v - 1 {
			f := free[bits.TrailingZeros(uint(v))]
			ok = ok && f >= share
			groups += f / g * g
		}
		if ok && groups >= n {
			return true
		}
	}
	return false
}

// hwReport counts broken properties; it reports the first few on t unless
// quiet (the tests of the tests expect breakage).
type hwReport struct {
	t      *testing.T
	quiet  bool
	broken int
}

func (h *hwReport) fail(format string, a ...any) {
	h.broken++
	if !h.quiet && h.broken <= 5 {
		h.t.Errorf(format, a...)
	}
}

func TestAllocatorProperties(t *testing.T) {
	hwRunAllocatorProperties(t, &hwReport{t: t}, hwTake, 1, 150, 60)
}

// hwRunAllocatorProperties checks the allocator on every named shape and
// randomShapes random ones, each option set, random free sets and sizes
// (about base cases per machine of up to 64 CPUs):
//   - it fails exactly when fewer CPUs are free than asked, and otherwise
//     returns exactly n of the free CPUs;
//   - whole cores when n is a multiple of the threads per core and enough
//     whole cores are free (packed allocation);
//   - whole NUMA nodes / sockets, so the fewest, when n is a multiple of
//     their size and enough of them are entirely free;
//   - prefer-align-cpus-by-uncorecache: the fewest L3 groups when enough
//     are entirely free;
//   - distribute-cpus-across-numa: an even share on exactly the fewest NUMA
//     nodes that can take one;
//   - the same CPUs on the same machine described in another order.
func hwRunAllocatorProperties(t *testing.T, rep *hwReport, take hwAllocator, seed uint64, randomShapes, base int) {
	r := rand.New(rand.NewPCG(seed, 0xa110c))
	optionSets := hwOptionSets()
	cases := 0
	hits := map[string]int{}
	hit := func(p string) { hits[p]++ }
	for _, s := range hwTestShapes(r, randomShapes) {
		m := s.hw()
		topo := s.topology(t, nil)
		other := s.topology(t, r) // the same machine, groups listed in another order
		policies := make([]*Static, len(optionSets))
		others := make([]*Static, len(optionSets))
		for i, opt := range optionSets {
			policies[i] = hwStatic(t, topo, opt.opts, 0, cpuset.New())
			others[i] = hwStatic(t, other, opt.opts, 0, cpuset.New())
		}
		for c := 0; c < hwCasesFor(s, base); c++ {
			oi := r.IntN(len(optionSets))
			free := m.randomFree(r)
			n := m.randomRequest(r, free.Size())
			got, err := take(policies[oi], free, n)
			cases++
			label := fmt.Sprintf("%s [%s] n=%d free=%s", s.name, optionSets[oi].name, n, free)
			if e := m.checkTake(optionSets[oi].opts, free, n, got, err, hit); e != nil {
				rep.fail("%s: %v", label, e)
				continue
			}
			// Deterministic: the same request on the same machine described
			// in another order gives the same CPUs.
			again, err2 := take(others[oi], free, n)
			if !again.Equals(got) || (err == nil) != (err2 == nil) {
				rep.fail("%s: not deterministic: %s then %s", label, got, again)
			}
		}
	}
	t.Logf("%d allocation cases, %d broken; rules exercised: %v", cases, rep.broken, hits)
	hwRequireHits(t, rep, hits, base/6, "fails when short", "whole cores", "whole NUMA nodes", "whole sockets", "fewest L3 groups",
		"NUMA distribution, groups of 1", "NUMA distribution, groups of 2", "NUMA distribution, idle machine")
}

// hwRequireHits fails when a rule was exercised fewer than n times: the
// generators must keep producing the cases the rules are about. (Broken
// allocators skip rules after the first failure, so it is not checked then.)
func hwRequireHits(t *testing.T, rep *hwReport, hits map[string]int, n int, rules ...string) {
	t.Helper()
	if rep.quiet {
		return
	}
	for _, r := range rules {
		if hits[r] < n {
			t.Errorf("rule %q exercised %d times, want at least %d", r, hits[r], n)
		}
	}
}

// ---- the policy (NewStatic, GenerateHints, Allocate) ----

// hwReservation draws a reservation: either a count that the policy places
// itself, or an explicit reservedSystemCPUs set of whole cores plus at most
// one single thread (so at most one core is partly reserved).
func (m *hwMap) hwReservation(r *rand.Rand) (int, cpuset.CPUSet) {
	s := m.shape
	if r.IntN(2) == 0 {
		return 1 + r.IntN(min(4, s.cpus()-1)), cpuset.New()
	}
	var ids []int
	for _, core := range r.Perm(s.cores())[:r.IntN(min(3, s.cores()))] {
		ids = append(ids, m.coreCPUs[core]...)
	}
	if len(ids) == 0 || r.IntN(2) == 0 {
		ids = append(ids, r.IntN(s.cpus()))
	}
	set := cpuset.New(ids...)
	if set.Size() >= s.cpus() {
		set = cpuset.New(0)
	}
	return set.Size(), set
}

// hwNarrowest picks the hint a Topology Manager with only this provider
// settles on: the fewest NUMA nodes, then the lowest mask.
func hwNarrowest(hs []node.Hint) *node.Mask {
	var best *node.Mask
	for _, h := range hs {
		if h.Affinity == nil {
			continue
		}
		if best == nil || h.Affinity.Count() < best.Count() || (h.Affinity.Count() == best.Count() && *h.Affinity < *best) {
			best = h.Affinity
		}
	}
	return best
}

// hwAllocateFunc admits a one-container Guaranteed pod asking n CPUs.
type hwAllocateFunc func(p *Static, pod string, n int, aff *node.Mask) (cpuset.CPUSet, error)

func hwAllocate(p *Static, pod string, n int, aff *node.Mask) (cpuset.CPUSet, error) {
	pd := guaranteedPod(pod, strconv.Itoa(n))
	return p.Allocate(pd, &pd.Spec.Containers[0], aff)
}

func TestPolicyProperties(t *testing.T) {
	hwRunPolicyProperties(t, &hwReport{t: t}, hwAllocate, 2, 60, 12)
}

// hwRunPolicyProperties admits sequences of single-container Guaranteed
// pods on every named shape and 60 random ones with each option set and a
// random reservation, letting the Topology Manager's affinity be none, the
// narrowest hint or any hint, and checks after each admission:
//   - reserved CPUs are never handed out (and strict-cpu-reservation keeps
//     them out of the shared pool); the reservation has the asked size;
//   - allocations are exclusive and leave the shared pool;
//   - without full-pcpus-only, Allocate fails exactly when fewer CPUs are
//     available than asked;
//   - with full-pcpus-only, it fails with the SMT alignment error exactly
//     when the request is not a multiple of the threads per core or more
//     than the CPUs of the free cores that hold no reserved CPU, and
//     otherwise hands out whole cores;
//   - with the narrowest hint it uses the fewest NUMA nodes whose free
//     CPUs can hold the request (brute force over the free counts), and on
//     machines with one NUMA node per socket the fewest sockets;
//   - with any hint, the CPUs come from the hint's NUMA nodes (the sockets
//     of them with align-by-socket);
//   - the same sequence on the same machine described in another order
//     gives the same CPUs.
func hwRunPolicyProperties(t *testing.T, rep *hwReport, allocate hwAllocateFunc, seed uint64, randomShapes, base int) {
	r := rand.New(rand.NewPCG(seed, 0x9011c7))
	optionSets := hwOptionSets()
	fail := rep.fail
	admissions := 0
	hits := map[string]int{}
	for _, s := range hwTestShapes(r, randomShapes) {
		if s.cpus() < 2 {
			continue // no room for a reservation and a pod
		}
		m := s.hw()
		tpc := s.threadsPerCore
		for c := 0; c < hwCasesFor(s, base); c++ {
			opt := optionSets[r.IntN(len(optionSets))]
			if opt.opts.AlignBySocket && s.sockets > s.numas() {
				continue
			}
			numReserved, explicit := m.hwReservation(r)
			p := hwStatic(t, s.topology(t, nil), opt.opts, numReserved, explicit)
			twin := hwStatic(t, s.topology(t, r), opt.opts, numReserved, explicit)
			label := fmt.Sprintf("%s [%s] reserved %d/%s", s.name, opt.name, numReserved, explicit)
			reserved := p.Reserved()
			if reserved.Size() != numReserved || (explicit.Size() > 0 && !reserved.Equals(explicit)) {
				fail("%s: reserved %s, want %d CPUs (%s)", label, reserved, numReserved, explicit)
				continue
			}
			if explicit.Size() > 0 {
				hits["explicit reservation"]++
			}
			if opt.opts.StrictCPUReservation {
				hits["strict reservation"]++
			}
			if opt.opts.StrictCPUReservation && !p.DefaultSet().Intersection(reserved).IsEmpty() {
				fail("%s: strict reservation leaves %s in the shared pool", label, p.DefaultSet().Intersection(reserved))
			}
			assigned := cpuset.New()
			for k := 0; k < 2+r.IntN(6); k++ {
				avail := p.Available()
				if !avail.Equals(cpuset.New(m.numaCPUsAll()...).Difference(reserved).Difference(assigned)) {
					fail("%s: available %s, want all but reserved %s and assigned %s", label, avail, reserved, assigned)
					break
				}
				n := 1 + r.IntN(max(1, avail.Size()+2))
				if r.IntN(2) == 0 {
					n = tpc * (1 + r.IntN(max(1, avail.Size()/tpc)))
				}
				hints := p.GenerateHints(avail, cpuset.New(), n)
				var aff *node.Mask
				mode := r.IntN(3)
				switch {
				case mode == 1:
					aff = hwNarrowest(hints)
				case mode == 2 && len(hints) > 0:
					aff = hints[r.IntN(len(hints))].Affinity
				}
				pod := fmt.Sprintf("p%d", k)
				got, err := allocate(p, pod, n, aff)
				admissions++
				at := fmt.Sprintf("%s: pod %d (n=%d, affinity %v, available %s)", label, k, n, aff, avail)
				if gotTwin, errTwin := allocate(twin, pod, n, aff); !gotTwin.Equals(got) || (err == nil) != (errTwin == nil) {
					fail("%s: not deterministic: %s (%v) vs %s (%v)", at, got, err, gotTwin, errTwin)
				}
				// The SMT rule of full-pcpus-only.
				if opt.opts.FullPhysicalCPUsOnly {
					untouched := 0
					for _, cpus := range m.coreCPUs {
						set := cpuset.New(cpus...)
						if set.Intersection(assigned).IsEmpty() && set.Intersection(reserved).IsEmpty() {
							untouched++
						}
					}
					var smt SMTAlignmentError
					wantSMT := n%tpc != 0 || n > untouched*tpc
					if wantSMT != errors.As(err, &smt) {
						fail("%s: SMT alignment error %v, want one: %v (%d whole cores free of reservations)", at, err, wantSMT, untouched)
						continue
					}
					if wantSMT {
						hits["SMT alignment error"]++
						if smt.CausedByPhysicalCPUs != (n%tpc == 0) || smt.RequestedCPUs != n || smt.CpusPerCore != tpc {
							fail("%s: SMT error %+v", at, smt)
						}
						continue
					}
					if err == nil && tpc > 1 {
						hits["full-pcpus-only whole cores"]++
					}
					if err == nil && !hwIsUnionOf(m.coreCPUs, m.core, got) {
						fail("%s: full-pcpus-only split a core: %s", at, got)
					}
				}
				if n > avail.Size() {
					hits["fails when short"]++
				}
				if (err != nil) != (n > avail.Size()) {
					fail("%s: error %v with %d CPUs available", at, err, avail.Size())
					continue
				}
				if err != nil {
					continue
				}
				if got.Size() != n || !got.IsSubsetOf(avail) {
					fail("%s: got %s, want %d of the available CPUs", at, got, n)
					continue
				}
				if !got.Intersection(reserved).IsEmpty() {
					fail("%s: handed out reserved CPUs %s", at, got.Intersection(reserved))
				}
				if !p.DefaultSet().Intersection(got).IsEmpty() {
					fail("%s: %s still in the shared pool", at, p.DefaultSet().Intersection(got))
				}
				if aff != nil {
					hits["inside the hint"]++
					var allowed []int
					for _, id := range aff.Bits() {
						if opt.opts.AlignBySocket {
							allowed = append(allowed, m.socketCPUs[m.socket[m.numaCPUs[id][0]]]...)
						} else {
							allowed = append(allowed, m.numaCPUs[id]...)
						}
					}
					if !got.IsSubsetOf(cpuset.New(allowed...)) {
						fail("%s: CPUs %s outside the hint", at, got.Difference(cpuset.New(allowed...)))
					}
				}
				if mode == 1 && aff != nil && !opt.opts.AlignBySocket {
					want := hwMinGroups(m.countBy(m.numa, s.numas(), avail), n)
					hits["fewest NUMA nodes"]++
					if want > 1 {
						hits["fewest NUMA nodes of several"]++
					}
					if k := m.touched(m.numa, s.numas(), got); k != want {
						fail("%s: %d NUMA nodes, but %d can hold %d CPUs: %s", at, k, want, n, got)
					}
					if s.numaPerSocket == 1 {
						want := hwMinGroups(m.countBy(m.socket, s.sockets, avail), n)
						if want > 1 {
							hits["fewest sockets of several"]++
						}
						if k := m.touched(m.socket, s.sockets, got); k != want {
							fail("%s: %d sockets, but %d can hold %d CPUs: %s", at, k, want, n, got)
						}
					}
				}
				assigned = assigned.Union(got)
			}
		}
	}
	t.Logf("%d admissions, %d broken; rules exercised: %v", admissions, rep.broken, hits)
	hwRequireHits(t, rep, hits, base*2, "SMT alignment error", "full-pcpus-only whole cores", "fails when short", "inside the hint",
		"fewest NUMA nodes", "fewest NUMA nodes of several", "fewest sockets of several", "explicit reservation", "strict reservation")
}

// ---- the tests of the tests ----

// TestPropertiesCatchBrokenAllocators runs the property checks on
// deliberately broken allocators and policies: each must be caught.
func TestPropertiesCatchBrokenAllocators(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the property suites once per mutant")
	}
	without := func(change func(*Options)) hwAllocator {
		cache := map[*Static]*Static{}
		return func(p *Static, free cpuset.CPUSet, n int) (cpuset.CPUSet, error) {
			q, ok := cache[p]
			if !ok {
				o := p.Options()
				change(&o)
				q = hwStatic(t, p.Topology(), o, 0, cpuset.New())
				cache[p] = q
			}
			return q.TakeByTopology(free, n)
		}
	}
	coin := rand.New(rand.NewPCG(3, 3))
	allocators := []struct {
		name string
		take hwAllocator
	}{
		{"drops a CPU", func(p *Static, free cpuset.CPUSet, n int) (cpuset.CPUSet, error) {
			got, err := p.TakeByTopology(free, n)
			if got.Size() > 1 {
				got = got.Difference(cpuset.New(got.List()[got.Size()-1]))
			}
			return got, err
		}},
		{"takes a busy CPU", func(p *Static, free cpuset.CPUSet, n int) (cpuset.CPUSet, error) {
			got, err := p.TakeByTopology(free, n)
			var all []int
			for id := range p.Topology().CPUDetails {
				all = append(all, id)
			}
			busy := cpuset.New(all...).Difference(free)
			if got.Size() > 0 && busy.Size() > 0 {
				got = got.Difference(cpuset.New(got.List()[0])).Union(cpuset.New(busy.List()[0]))
			}
			return got, err
		}},
		{"lowest CPU ids first", func(p *Static, free cpuset.CPUSet, n int) (cpuset.CPUSet, error) {
			if n > free.Size() {
				return cpuset.New(), fmt.Errorf("not enough")
			}
			return cpuset.New(free.List()[:n]...), nil
		}},
		{"ignores prefer-align-cpus-by-uncorecache", without(func(o *Options) { o.PreferAlignByUncoreCache = false })},
		{"ignores distribute-cpus-across-numa", without(func(o *Options) { o.DistributeCPUsAcrossNUMA = false })},
		{"breaks ties at random", func(p *Static, free cpuset.CPUSet, n int) (cpuset.CPUSet, error) {
			got, err := p.TakeByTopology(free, n)
			if spare := free.Difference(got); got.Size() > 0 && spare.Size() > 0 && coin.IntN(2) == 0 {
				got = got.Difference(cpuset.New(got.List()[0])).Union(cpuset.New(spare.List()[coin.IntN(spare.Size())]))
			}
			return got, err
		}},
	}
	for _, a := range allocators {
		t.Run(a.name, func(t *testing.T) {
			rep := &hwReport{t: t, quiet: true}
			hwRunAllocatorProperties(t, rep, a.take, 11, 10, 12)
			if rep.broken == 0 {
				t.Errorf("the allocator properties did not notice that the allocator %s", a.name)
			}
		})
	}
	policies := []struct {
		name     string
		allocate hwAllocateFunc
	}{
		{"hands out a reserved CPU", func(p *Static, pod string, n int, aff *node.Mask) (cpuset.CPUSet, error) {
			got, err := hwAllocate(p, pod, n, aff)
			if got.Size() > 0 {
				got = got.Difference(cpuset.New(got.List()[0])).Union(cpuset.New(p.Reserved().List()[0]))
			}
			return got, err
		}},
		{"ignores the hint", func(p *Static, pod string, n int, aff *node.Mask) (cpuset.CPUSet, error) {
			return hwAllocate(p, pod, n, nil)
		}},
		{"swallows SMT alignment errors", func(p *Static, pod string, n int, aff *node.Mask) (cpuset.CPUSet, error) {
			got, err := hwAllocate(p, pod, n, aff)
			var smt SMTAlignmentError
			if errors.As(err, &smt) {
				return cpuset.New(), nil
			}
			return got, err
		}},
	}
	for _, a := range policies {
		t.Run(a.name, func(t *testing.T) {
			rep := &hwReport{t: t, quiet: true}
			hwRunPolicyProperties(t, rep, a.allocate, 12, 10, 4)
			if rep.broken == 0 {
				t.Errorf("the policy properties did not notice that Allocate %s", a.name)
			}
		})
	}
}
