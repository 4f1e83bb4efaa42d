package topology

// An independent reference for Merge, written from the documented Topology
// Manager rules (kubernetes.io, "Control Topology Management Policies on a
// node", and shared/reference/kubelet-resource-managers.md) rather than from
// kubelet's code: it walks the whole Cartesian product of the hint lists,
// one hint per list, which is only feasible for small inputs.
//
//   - Lists: a provider with no hints at all, or a resource with a nil list,
//     stands for "any NUMA node is fine" ({any, preferred}); a resource with
//     an empty list cannot be satisfied ({any, non-preferred}).
//   - single-numa-node first keeps only {any, preferred} and preferred hints
//     naming exactly one NUMA node.
//   - A combination's mask is the AND of the machine's nodes and every
//     chosen mask; it is preferred when every chosen hint is preferred and
//     the chosen masks are all the same. An empty mask is no candidate.
//   - Best candidate: a preferred one beats a non-preferred one, and among
//     preferred ones the fittest wins. Among non-preferred ones, with W the
//     largest over the lists of the width of the list's narrowest mask: the
//     fittest of width W, else the fittest of the largest width below W,
//     else the fittest of the smallest width above W.
//   - Fittest: fewer NUMA nodes, then (prefer-closest-numa-nodes, not with
//     single-numa-node) the lower mean distance over all ordered pairs of
//     the mask's nodes, then the lower mask value.
//   - No candidate at all: {all nodes, non-preferred}.
//   - Admission: none admits with {any, non-preferred}; best-effort always
//     admits; restricted and single-numa-node admit preferred results only;
//     single-numa-node reports a result spanning all nodes as {any, ...}.

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// bruteInput is what the reference needs, taken from a test case, not from
// a Policy.
type bruteInput struct {
	policy    string
	nodes     []int
	closest   bool
	distances [][]uint64 // rows/columns in the order of nodes
	providers []map[string][]Hint
}

func bruteFrom(c randCase) bruteInput {
	return bruteInput{c.policy, c.nodes, c.opts[OptionPreferClosestNUMANodes] == "true", c.distances, c.providers}
}

type bruteCandidate struct {
	mask      uint64
	preferred bool
}

// bruteLists applies the list conventions and the single-numa-node filter.
func bruteLists(in bruteInput) [][]Hint {
	anyNode := []Hint{{Preferred: true}}
	var lists [][]Hint
	for _, prov := range in.providers {
		if len(prov) == 0 {
			lists = append(lists, anyNode)
		}
		for _, hs := range prov { // order is irrelevant to the result
			if hs == nil {
				hs = anyNode
			} else if len(hs) == 0 {
				hs = []Hint{{Preferred: false}}
			}
			lists = append(lists, hs)
		}
	}
	if in.policy == PolicySingleNUMANode {
		for i := range lists {
			lists[i] = slices.DeleteFunc(slices.Clone(lists[i]), func(h Hint) bool {
				return !h.Preferred || (h.Affinity != nil && popcount(uint64(*h.Affinity)) != 1)
			})
		}
	}
	return lists
}

func popcount(m uint64) int {
	n := 0
	for ; m != 0; m >>= 1 {
		n += int(m & 1)
	}
	return n
}

// bruteProduct calls visit for every combination's merged mask and
// preference (empty masks included) and returns how many it visited.
func bruteProduct(all uint64, lists [][]Hint, visit func(bruteCandidate)) int {
	count := 0
	var walk func(i int, mask uint64, preferred bool, first *uint64)
	walk = func(i int, mask uint64, preferred bool, first *uint64) {
		if i == len(lists) {
			count++
			visit(bruteCandidate{mask, preferred})
			return
		}
		for _, h := range lists[i] {
			m, p, f := mask, preferred && h.Preferred, first
			if h.Affinity != nil {
				raw := uint64(*h.Affinity)
				m &= raw
				if f == nil {
					f = &raw
				} else if *f != raw {
					p = false
				}
			}
			walk(i+1, m, p, f)
		}
	}
	walk(0, all, true, nil)
	return count
}

func bruteMerge(in bruteInput) (Hint, bool) {
	if in.policy == PolicyNone {
		return Hint{}, true
	}
	var all uint64
	index := map[int]int{}
	for i, id := range in.nodes {
		all |= 1 << uint(id)
		index[id] = i
	}
	lists := bruteLists(in)
	useDistance := in.closest && in.policy != PolicySingleNUMANode
	// distanceSum over ordered pairs; means of masks of equal width compare
	// like their sums (the test distances are small, so sums are exact).
	distanceSum := func(m uint64) uint64 {
		var members []int
		for id := range 64 {
			if m&(1<<uint(id)) != 0 {
				members = append(members, index[id])
			}
		}
		var s uint64
		for _, a := range members {
			for _, b := range members {
				s += in.distances[a][b]
			}
		}
		return s
	}
	fitter := func(a, b uint64) bool {
		if wa, wb := popcount(a), popcount(b); wa != wb {
			return wa < wb
		}
		if useDistance {
			if da, db := distanceSum(a), distanceSum(b); da != db {
				return da < db
			}
		}
		return a < b
	}
	// W: the widest of the lists' narrowest masks.
	w := 0
	for _, l := range lists {
		narrowest := -1
		for _, h := range l {
			if h.Affinity != nil && (narrowest < 0 || popcount(uint64(*h.Affinity)) < narrowest) {
				narrowest = popcount(uint64(*h.Affinity))
			}
		}
		w = max(w, narrowest)
	}
	// rank orders candidates: lower is better.
	rank := func(c bruteCandidate) int {
		switch width := popcount(c.mask); {
		case c.preferred:
			return 0
		case width == w:
			return 1
		case width < w:
			return 2 + (64 - width) // the widest below W first
		default:
			return 2 + 64 + width // the narrowest above W first
		}
	}
	var best *bruteCandidate
	bruteProduct(all, lists, func(c bruteCandidate) {
		if c.mask == 0 {
			return
		}
		if best == nil || rank(c) < rank(*best) || (rank(c) == rank(*best) && fitter(c.mask, best.mask)) {
			best = &c
		}
	})
	result := Hint{Affinity: Bitmask(all).Ptr()}
	if best != nil {
		result = Hint{Affinity: Bitmask(best.mask).Ptr(), Preferred: best.preferred}
	}
	switch in.policy {
	case PolicyBestEffort:
		return result, true
	case PolicySingleNUMANode:
		if uint64(*result.Affinity) == all {
			result.Affinity = nil
		}
	}
	return result, result.Preferred
}

// productSize is the number of combinations bruteMerge walks for c.
func productSize(in bruteInput) int {
	n := 1
	for _, l := range bruteLists(in) {
		n *= max(1, len(l))
	}
	return n
}

// TestMergeMatchesBruteForce compares Merge with the reference on random
// small inputs for every policy (prefer-closest-numa-nodes on about half of
// them), and checks that the inputs reach every kind of outcome.
func TestMergeMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	want := 3000
	if testing.Short() {
		want = 300
	}
	for _, policy := range Policies() {
		outcomes := map[string]int{}
		for i, checked := 0, 0; checked < want; i++ {
			c := genCase(r, policy, 6, 5)
			in := bruteFrom(c)
			if productSize(in) > 20000 {
				continue
			}
			checked++
			p, err := NewPolicy(c.policy, c.nodes, c.opts, c.distances)
			if err != nil {
				t.Fatalf("case %d: NewPolicy: %v (%v)", i, err, c)
			}
			got, gotAdmit := p.Merge(c.providers)
			ref, refAdmit := bruteMerge(in)
			if !got.IsEqual(ref) || gotAdmit != refAdmit {
				t.Fatalf("%s case %d: Merge %v admit=%v, brute force %v admit=%v\n%v", policy, i, got, gotAdmit, ref, refAdmit, c)
			}
			outcomes[fmt.Sprintf("nil=%v preferred=%v admit=%v", got.Affinity == nil, got.Preferred, gotAdmit)]++
		}
		t.Logf("%s: %v", policy, outcomes)
		if policy != PolicyNone && len(outcomes) < 2 {
			t.Errorf("%s: the inputs reach only %v", policy, outcomes)
		}
	}
}

// TestBruteForceByHand pins the reference itself on cases worked out from
// the documented rules, so that it cannot drift along with Merge.
func TestBruteForceByHand(t *testing.T) {
	h := func(pref bool, ids ...int) Hint { return NewHint(pref, ids...) }
	two := []int{0, 1}
	four := []int{0, 1, 2, 3}
	tests := []struct {
		name  string
		in    bruteInput
		want  Hint
		admit bool
	}{
		{"none", bruteInput{policy: PolicyNone, nodes: two, providers: []map[string][]Hint{{"cpu": {}}}}, Hint{}, true},
		{"no providers: all nodes preferred", bruteInput{policy: PolicyRestricted, nodes: two}, h(true, 0, 1), true},
		{"empty list: all nodes, not preferred", bruteInput{policy: PolicyRestricted, nodes: two, providers: []map[string][]Hint{{"cpu": {}}}}, h(false, 0, 1), false},
		{"aligned on node 1", bruteInput{policy: PolicyRestricted, nodes: two, providers: []map[string][]Hint{
			{"cpu": {h(true, 0), h(true, 1), h(false, 0, 1)}}, {"gpu": {h(true, 1), h(false, 0, 1)}}}}, h(true, 1), true},
		{"different preferred masks are not preferred", bruteInput{policy: PolicyBestEffort, nodes: four, providers: []map[string][]Hint{
			{"a": {h(true, 0, 1)}}, {"b": {h(true, 1, 2)}}}}, h(false, 1), true},
		{"W=2: a 2-node result beats a 1-node one", bruteInput{policy: PolicyBestEffort, nodes: four, providers: []map[string][]Hint{
			{"a": {h(false, 0, 1, 2), h(false, 3)}}, {"b": {h(false, 0, 1), h(false, 2, 3)}}}}, h(false, 0, 1), true},
		{"below W: the widest", bruteInput{policy: PolicyBestEffort, nodes: four, providers: []map[string][]Hint{
			{"a": {h(false, 0, 1, 2)}}, {"b": {h(false, 0, 1, 3), h(false, 0, 3)}}}}, h(false, 0, 1), true},
		{"closest breaks the tie", bruteInput{policy: PolicyBestEffort, nodes: four, closest: true,
			distances: [][]uint64{{10, 30, 12, 30}, {30, 10, 30, 30}, {12, 30, 10, 30}, {30, 30, 30, 10}},
			providers: []map[string][]Hint{{"a": {h(true, 0, 1), h(true, 0, 2)}}}}, h(true, 0, 2), true},
		{"single-numa-node drops wide hints", bruteInput{policy: PolicySingleNUMANode, nodes: two, providers: []map[string][]Hint{
			{"cpu": {h(true, 0), h(true, 1)}}, {"gpu": {h(true, 0, 1)}}}}, Hint{}, false},
		{"single-numa-node: all nodes reads as any", bruteInput{policy: PolicySingleNUMANode, nodes: []int{0}, providers: []map[string][]Hint{
			{"cpu": {h(true, 0)}}}}, Hint{Preferred: true}, true},
	}
	for _, tt := range tests {
		got, admit := bruteMerge(tt.in)
		if !got.IsEqual(tt.want) || admit != tt.admit {
			t.Errorf("%s: brute force %v admit=%v, want %v admit=%v", tt.name, got, admit, tt.want, tt.admit)
		}
	}
}
