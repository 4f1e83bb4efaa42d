package topology

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

type randCase struct {
	policy    string
	nodes     []int
	opts      map[string]string
	distances [][]uint64
	providers []map[string][]Hint
}

func (c randCase) String() string {
	return fmt.Sprintf("policy=%s nodes=%v opts=%v dist=%v providers=%v", c.policy, c.nodes, c.opts, c.distances, c.providers)
}

// genCase draws a random merge input: 1-maxNodes NUMA nodes (ids sometimes
// sparse), 0-4 providers with 0-3 resources, nil / empty / random lists,
// masks reaching outside the machine, nil and empty affinities.
func genCase(r *rand.Rand, policy string, maxNodes, maxHints int) randCase {
	n := 1 + r.IntN(maxNodes)
	var nodes []int
	if r.IntN(4) == 0 {
		perm := r.Perm(min(64, n+4))
		nodes = perm[:n]
		slices.Sort(nodes)
	} else {
		for i := range n {
			nodes = append(nodes, i)
		}
	}
	hi := nodes[len(nodes)-1] + 1
	c := randCase{policy: policy, nodes: nodes, opts: map[string]string{}}
	if n > DefaultMaxAllowableNUMANodes {
		c.opts[OptionMaxAllowableNUMANodes] = fmt.Sprint(n)
	}
	if r.IntN(2) == 0 {
		c.opts[OptionPreferClosestNUMANodes] = "true"
		c.distances = make([][]uint64, n)
		for i := range c.distances {
			c.distances[i] = make([]uint64, n)
		}
		for i := range n {
			c.distances[i][i] = 10
			for j := i + 1; j < n; j++ {
				d := uint64(11 + r.IntN(4)*5)
				c.distances[i][j], c.distances[j][i] = d, d
			}
		}
	}
	np := r.IntN(5)
	if np == 0 && r.IntN(3) != 0 {
		np = 1
	}
	for range np {
		m := map[string][]Hint{}
		nr := r.IntN(4)
		for k := range nr {
			name := fmt.Sprintf("r%d", k)
			switch r.IntN(8) {
			case 0:
				m[name] = nil
			case 1:
				m[name] = []Hint{}
			default:
				nh := 1 + r.IntN(maxHints)
				hs := make([]Hint, nh)
				for j := range hs {
					pref := r.IntN(2) == 0
					switch r.IntN(10) {
					case 0:
						hs[j] = Hint{nil, pref}
					case 1:
						hs[j] = Hint{Bitmask(0).Ptr(), pref}
					default:
						var b Bitmask
						for b == 0 {
							for id := 0; id < hi+1 && id < 64; id++ {
								if r.IntN(3) == 0 {
									b |= 1 << uint(id)
								}
							}
						}
						hs[j] = Hint{b.Ptr(), pref}
					}
				}
				m[name] = hs
			}
		}
		c.providers = append(c.providers, m)
	}
	return c
}

func TestClosureModesAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 2000 {
		c := genCase(r, PolicyBestEffort, 12, 12)
		p, err := NewPolicy(c.policy, c.nodes, c.opts, c.distances)
		if err != nil {
			t.Fatal(err)
		}
		lists := hintLists(Flatten(c.providers))
		a := reachableANDs(p.def, lists, closurePairwise)
		b := reachableANDs(p.def, lists, closureDense)
		slices.Sort(a)
		slices.Sort(b)
		if !slices.Equal(a, b) {
			t.Fatalf("case %d: pairwise %v, dense %v\n%v", i, a, b, c)
		}
	}
}

func TestMergeTable(t *testing.T) {
	h := func(pref bool, ids ...int) Hint { return NewHint(pref, ids...) }
	tests := []struct {
		name      string
		policy    string
		nodes     []int
		providers []map[string][]Hint
		want      Hint
		admit     bool
	}{
		{"no providers", PolicyBestEffort, []int{0, 1}, nil, h(true, 0, 1), true},
		{"empty provider map", PolicyRestricted, []int{0, 1}, []map[string][]Hint{{}}, h(true, 0, 1), true},
		{"nil list is don't care", PolicyRestricted, []int{0, 1}, []map[string][]Hint{{"cpu": nil}}, h(true, 0, 1), true},
		{"empty list cannot satisfy", PolicyRestricted, []int{0, 1}, []map[string][]Hint{{"cpu": {}}}, h(false, 0, 1), false},
		{"empty list best-effort admits", PolicyBestEffort, []int{0, 1}, []map[string][]Hint{{"cpu": {}}}, h(false, 0, 1), true},
		{"aligned preferred", PolicyRestricted, []int{0, 1}, []map[string][]Hint{
			{"cpu": {h(true, 0), h(true, 1), h(false, 0, 1)}},
			{"gpu": {h(true, 1), h(false, 0, 1)}},
		}, h(true, 1), true},
		{"misaligned", PolicyRestricted, []int{0, 1}, []map[string][]Hint{
			{"cpu": {h(true, 0), h(false, 0, 1)}},
			{"gpu": {h(true, 1), h(false, 0, 1)}},
		}, h(false, 0), false},
		{"seed 5.5.4: 8 GPUs need both nodes", PolicySingleNUMANode, []int{0, 1}, []map[string][]Hint{
			{"cpu": {h(true, 0), h(true, 1), h(false, 0, 1)}},
			{"nvidia.com/gpu": {h(true, 0, 1)}},
		}, Hint{nil, false}, false},
		{"single-numa-node aligned", PolicySingleNUMANode, []int{0, 1}, []map[string][]Hint{
			{"cpu": {h(true, 0), h(true, 1), h(false, 0, 1)}},
			{"nvidia.com/gpu": {h(true, 0), h(false, 0, 1)}},
		}, h(true, 0), true},
		{"single-numa-node one-node machine gives nil", PolicySingleNUMANode, []int{0}, []map[string][]Hint{
			{"cpu": {h(true, 0)}},
		}, Hint{nil, true}, true},
		{"none", PolicyNone, []int{0, 1}, []map[string][]Hint{{"cpu": {}}}, Hint{}, true},
		{"case 3b: reach B", PolicyBestEffort, []int{0, 1, 2, 3}, []map[string][]Hint{
			{"a": {h(false, 0, 1), h(false, 2, 3)}},
			{"b": {h(false, 1, 2)}},
		}, h(false, 1), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewPolicy(tt.policy, tt.nodes, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, admit := p.Merge(tt.providers)
			if !got.IsEqual(tt.want) || admit != tt.admit {
				t.Errorf("got %v admit=%v, want %v admit=%v", got, admit, tt.want, tt.admit)
			}
			o, oadmit := bruteMerge(bruteInput{policy: tt.policy, nodes: tt.nodes, providers: tt.providers})
			if !got.IsEqual(o) || admit != oadmit {
				t.Errorf("brute force %v admit=%v disagrees with %v admit=%v", o, oadmit, got, admit)
			}
		})
	}
}

func TestNewPolicyErrors(t *testing.T) {
	tests := []struct {
		name    string
		policy  string
		nodes   []int
		opts    map[string]string
		dist    [][]uint64
		wantErr string
	}{
		{"unknown policy", "bogus", []int{0}, nil, nil, `unknown policy: "bogus"`},
		{"unknown option", PolicyBestEffort, []int{0}, map[string]string{"x": "1"}, nil, `unknown Topology Manager Policy option: "x"`},
		{"bad bool", PolicyBestEffort, []int{0}, map[string]string{OptionPreferClosestNUMANodes: "maybe"}, nil, `bad value for option "prefer-closest-numa-nodes": strconv.ParseBool: parsing "maybe": invalid syntax`},
		{"max below 8", PolicyBestEffort, []int{0}, map[string]string{OptionMaxAllowableNUMANodes: "4"}, nil, `the minimum value of "max-allowable-numa-nodes" should not be less than 8`},
		{"max not int", PolicyBestEffort, []int{0}, map[string]string{OptionMaxAllowableNUMANodes: "x"}, nil, `unable to convert policy option to integer "max-allowable-numa-nodes": strconv.Atoi: parsing "x": invalid syntax`},
		{"too many nodes", PolicyRestricted, []int{0, 1, 2, 3, 4, 5, 6, 7, 8}, nil, nil, "unsupported on machines with more than 8 NUMA Nodes"},
		{"id out of range", PolicyRestricted, []int{0, 64}, nil, nil, "numaNodes[1]: NUMA id 64 beyond 63"},
		{"duplicate id", PolicyRestricted, []int{1, 1}, nil, nil, "numaNodes[1]: duplicate NUMA id 1"},
		{"closest without distances", PolicyBestEffort, []int{0, 1}, map[string]string{OptionPreferClosestNUMANodes: "true"}, nil, `the "prefer-closest-numa-nodes" policy option needs the NUMA distances (kubelet: error getting NUMA distances from cadvisor)`},
		{"ragged distances", PolicyBestEffort, []int{0, 1}, nil, [][]uint64{{10, 20}, {20}}, "distances[1]: 1 columns for 2 NUMA nodes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewPolicy(tt.policy, tt.nodes, tt.opts, tt.dist)
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
	// none ignores the node count and options like kubelet.
	if _, err := NewPolicy(PolicyNone, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, map[string]string{"x": "y"}, nil); err != nil {
		t.Fatalf("none: %v", err)
	}
}

// TestMergeMatchesBruteForceWide covers machines with up to 64 NUMA nodes,
// where the closure runs on the sparse (map) path.
func TestMergeMatchesBruteForceWide(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	checked := 0
	for i := 0; checked < 600; i++ {
		policy := Policies()[i%4]
		c := genCase(r, policy, 64, 30)
		if productSize(bruteFrom(c)) > 50000 {
			continue
		}
		checked++
		p, err := NewPolicy(c.policy, c.nodes, c.opts, c.distances)
		if err != nil {
			t.Fatalf("case %d: NewPolicy: %v", i, err)
		}
		got, gotAdmit := p.Merge(c.providers)
		want, wantAdmit := bruteMerge(bruteFrom(c))
		if !got.IsEqual(want) || gotAdmit != wantAdmit {
			t.Fatalf("case %d: got %v admit=%v, brute force %v admit=%v\n%v", i, got, gotAdmit, want, wantAdmit, c)
		}
	}
}
