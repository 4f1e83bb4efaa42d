package kubelet

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/go-logr/logr"
	cadvisorapi "github.com/google/cadvisor/lib/model"
	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager/bitmask"

	"github.com/gpunode/gpunode/internal/k8s/topology"
)

var casesPerPolicy = flag.Int("cases", 10000, "random cases per policy and option setting")

// mergeCase is one randomized merge input.
type mergeCase struct {
	policy    string
	nodes     []int
	closest   bool
	distances [][]uint64 // rows/columns in the order of nodes
	providers []map[string][]topology.Hint
}

func (c mergeCase) String() string {
	return fmt.Sprintf("policy=%s nodes=%v closest=%v distances=%v providers=%v", c.policy, c.nodes, c.closest, c.distances, c.providers)
}

// genCase draws 1-8 NUMA nodes (sometimes sparse ids), 1-4 resource lists
// spread over 1-3 providers (plus, sometimes, providers with no hints),
// lists that are nil (don't care), empty (cannot satisfy), random masks or
// kubelet-provider-like (every mask of at least m nodes of a subset,
// preferred iff exactly m), nil and out-of-machine affinities, and random
// symmetric distances. The Cartesian product is kept below maxPerms so
// upstream stays fast.
func genCase(r *rand.Rand, policy string, closest bool, maxPerms int) mergeCase {
	n := 1 + r.IntN(8)
	var nodes []int
	if r.IntN(4) == 0 {
		nodes = r.Perm(n + 3)[:n]
		slices.Sort(nodes)
	} else {
		for i := range n {
			nodes = append(nodes, i)
		}
	}
	c := mergeCase{policy: policy, nodes: nodes, closest: closest}
	if closest || r.IntN(2) == 0 {
		c.distances = make([][]uint64, n)
		for i := range n {
			c.distances[i] = make([]uint64, n)
		}
		for i := range n {
			c.distances[i][i] = 10
			for j := i + 1; j < n; j++ {
				d := uint64(11 + r.IntN(6)*3)
				c.distances[i][j], c.distances[j][i] = d, d
			}
		}
	}
	hi := nodes[len(nodes)-1] + 2 // masks may name nodes the machine lacks
	lists := 1 + r.IntN(4)
	perms := 1
	var provs []map[string][]topology.Hint
	for l := range lists {
		if len(provs) == 0 || r.IntN(2) == 0 {
			provs = append(provs, map[string][]topology.Hint{})
		}
		p := provs[len(provs)-1]
		name := fmt.Sprintf("res%d", l)
		budget := max(1, maxPerms/perms)
		var hs []topology.Hint
		switch k := r.IntN(10); {
		case k == 0:
			hs = nil
		case k == 1:
			hs = []topology.Hint{}
		case k <= 5:
			cnt := 1 + r.IntN(min(8, budget))
			hs = make([]topology.Hint, cnt)
			for j := range hs {
				pref := r.IntN(2) == 0
				if r.IntN(8) == 0 {
					hs[j] = topology.Hint{Preferred: pref}
					continue
				}
				var m topology.Bitmask
				for m == 0 {
					for id := range hi {
						if r.IntN(3) == 0 {
							m |= 1 << uint(id)
						}
					}
				}
				hs[j] = topology.Hint{Affinity: m.Ptr(), Preferred: pref}
			}
		default:
			// Provider-like: masks over a subset of the nodes.
			var sub []int
			for _, id := range nodes {
				if r.IntN(4) != 0 {
					sub = append(sub, id)
				}
			}
			if len(sub) == 0 {
				sub = nodes[:1]
			}
			minNodes := 1 + r.IntN(len(sub))
			topology.IterateBitmasks(sub, func(m topology.Bitmask) {
				if m.Count() >= minNodes && len(hs) < budget {
					hs = append(hs, topology.Hint{Affinity: m.Ptr(), Preferred: m.Count() == minNodes})
				}
			})
			if r.IntN(5) == 0 {
				hs = append(hs, topology.Hint{Preferred: false})
			}
			if len(hs) == 0 {
				hs = []topology.Hint{}
			}
		}
		p[name] = hs
		perms *= max(1, len(hs))
	}
	if r.IntN(8) == 0 {
		provs = append(provs, map[string][]topology.Hint{})
	}
	c.providers = provs
	return c
}

// upstreamPolicy builds kubelet's policy for c.
func upstreamPolicy(c mergeCase) topologymanager.Policy {
	dist := topologymanager.NUMADistances{}
	if c.distances != nil {
		maxID := c.nodes[len(c.nodes)-1]
		for i, a := range c.nodes {
			row := make([]uint64, maxID+1) // kubelet indexes rows by NUMA id
			for j, b := range c.nodes {
				row[b] = c.distances[i][j]
			}
			dist[a] = row
		}
	}
	info := &topologymanager.NUMAInfo{Nodes: c.nodes, NUMADistances: dist}
	opts := topologymanager.PolicyOptions{PreferClosestNUMA: c.closest, MaxAllowableNUMANodes: 8}
	switch c.policy {
	case topologymanager.PolicyBestEffort:
		return topologymanager.NewBestEffortPolicy(info, opts)
	case topologymanager.PolicyRestricted:
		return topologymanager.NewRestrictedPolicy(info, opts)
	case topologymanager.PolicySingleNumaNode:
		return topologymanager.NewSingleNumaNodePolicy(info, opts)
	default:
		return topologymanager.NewNonePolicy()
	}
}

func gpunodePolicy(tb testing.TB, c mergeCase) *topology.Policy {
	opts := map[string]string{}
	if c.closest {
		opts[topology.OptionPreferClosestNUMANodes] = "true"
	}
	p, err := topology.NewPolicy(c.policy, c.nodes, opts, c.distances)
	if err != nil {
		tb.Fatalf("NewPolicy: %v (%v)", err, c)
	}
	return p
}

// toUpstream converts gpunode hints to kubelet's, keeping nil lists nil and
// empty lists empty.
func toUpstream(provs []map[string][]topology.Hint) []map[string][]topologymanager.TopologyHint {
	out := make([]map[string][]topologymanager.TopologyHint, len(provs))
	for i, p := range provs {
		m := make(map[string][]topologymanager.TopologyHint, len(p))
		for r, hs := range p {
			if hs == nil {
				m[r] = nil
				continue
			}
			l := make([]topologymanager.TopologyHint, len(hs))
			for j, h := range hs {
				l[j].Preferred = h.Preferred
				if h.Affinity != nil {
					bm, err := bitmask.NewBitMask(h.Affinity.Bits()...)
					if err != nil {
						panic(err)
					}
					l[j].NUMANodeAffinity = bm
				}
			}
			m[r] = l
		}
		out[i] = m
	}
	return out
}

func sameHint(a topology.Hint, b topologymanager.TopologyHint) bool {
	if a.Preferred != b.Preferred || (a.Affinity == nil) != (b.NUMANodeAffinity == nil) {
		return false
	}
	if a.Affinity == nil {
		return true
	}
	return slices.Equal(a.Affinity.Bits(), b.NUMANodeAffinity.GetBits())
}

func upstreamString(h topologymanager.TopologyHint) string {
	if h.NUMANodeAffinity == nil {
		return fmt.Sprintf("{nil %v}", h.Preferred)
	}
	return fmt.Sprintf("{%v %v}", h.NUMANodeAffinity.GetBits(), h.Preferred)
}

// TestMergeMatchesUpstream is the differential test: for every policy and
// both prefer-closest settings, casesPerPolicy random inputs must give the
// same merged hint and admit decision as kubelet v1.37.2.
func TestMergeMatchesUpstream(t *testing.T) {
	logger := logr.Discard()
	policies := []string{topologymanager.PolicyNone, topologymanager.PolicyBestEffort, topologymanager.PolicyRestricted, topologymanager.PolicySingleNumaNode}
	for pi, policy := range policies {
		for _, closest := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/closest=%v", policy, closest), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(pi), map[bool]uint64{false: 1, true: 2}[closest]))
				stats := map[string]int{}
				for i := range *casesPerPolicy {
					c := genCase(r, policy, closest, 3000)
					got, gotAdmit := gpunodePolicy(t, c).Merge(c.providers)
					want, wantAdmit := upstreamPolicy(c).Merge(logger, toUpstream(c.providers))
					if !sameHint(got, want) || gotAdmit != wantAdmit {
						t.Fatalf("case %d: gpunode %v admit=%v, kubelet %s admit=%v\n%v", i, got, gotAdmit, upstreamString(want), wantAdmit, c)
					}
					stats[fmt.Sprintf("preferred=%v admit=%v", got.Preferred, gotAdmit)]++
				}
				t.Logf("%d cases agree: %v", *casesPerPolicy, stats)
			})
		}
	}
}

// TestOptionsMatchUpstream compares option parsing, including error texts.
func TestOptionsMatchUpstream(t *testing.T) {
	logger := logr.Discard()
	for _, opts := range []map[string]string{
		nil,
		{"prefer-closest-numa-nodes": "true"},
		{"prefer-closest-numa-nodes": "0"},
		{"prefer-closest-numa-nodes": "maybe"},
		{"max-allowable-numa-nodes": "8"},
		{"max-allowable-numa-nodes": "36"},
		{"max-allowable-numa-nodes": "7"},
		{"max-allowable-numa-nodes": "x"},
		{"no-such-option": "1"},
	} {
		got, gerr := topology.ParseOptions(opts)
		want, werr := topologymanager.NewPolicyOptions(logger, opts)
		if fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Errorf("%v: error %v, kubelet %v", opts, gerr, werr)
			continue
		}
		if gerr == nil && (got.PreferClosestNUMA != want.PreferClosestNUMA || got.MaxAllowableNUMANodes != want.MaxAllowableNUMANodes) {
			t.Errorf("%v: %+v, kubelet %+v", opts, got, want)
		}
	}
}

// TestNewPolicyMatchesNewManager compares startup failures: unknown
// policies and more NUMA nodes than max-allowable-numa-nodes.
func TestNewPolicyMatchesNewManager(t *testing.T) {
	logger := logr.Discard()
	for _, tc := range []struct {
		policy string
		n      int
		opts   map[string]string
	}{
		{"best-effort", 8, nil},
		{"best-effort", 9, nil},
		{"restricted", 9, map[string]string{"max-allowable-numa-nodes": "9"}},
		{"single-numa-node", 36, map[string]string{"max-allowable-numa-nodes": "16"}},
		{"none", 36, nil},
		{"bogus", 2, nil},
	} {
		var topo []cadvisorapi.Node
		var ids []int
		for i := range tc.n {
			topo = append(topo, cadvisorapi.Node{Id: i})
			ids = append(ids, i)
		}
		_, werr := topologymanager.NewManager(logger, topo, tc.policy, "container", tc.opts)
		_, gerr := topology.NewPolicy(tc.policy, ids, tc.opts, nil)
		if fmt.Sprint(werr) != fmt.Sprint(gerr) {
			t.Errorf("%+v: gpunode %v, kubelet %v", tc, gerr, werr)
		}
	}
}
