package kubelet

import (
	"fmt"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"

	"github.com/gpunode/gpunode/internal/k8s/topology"
)

// providerHints returns kubelet-provider-like hints over n nodes: every mask
// of at least minNodes nodes, preferred iff exactly minNodes (255 hints for
// n=8, minNodes=1, as the device manager's for one device per node).
func providerHints(n, minNodes int) []topology.Hint {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = i
	}
	var out []topology.Hint
	topology.IterateBitmasks(ids, func(m topology.Bitmask) {
		if m.Count() >= minNodes {
			out = append(out, topology.Hint{Affinity: m.Ptr(), Preferred: m.Count() == minNodes})
		}
	})
	return out
}

// benchCase: lists alternate between 1-node and 2-node preferred widths, so
// no combination is preferred and both merges visit the non-preferred cases.
func benchCase(n, lists int) mergeCase {
	c := mergeCase{policy: topologymanager.PolicyBestEffort}
	for i := range n {
		c.nodes = append(c.nodes, i)
	}
	for l := range lists {
		c.providers = append(c.providers, map[string][]topology.Hint{fmt.Sprintf("r%d", l): providerHints(n, 1+l%2)})
	}
	return c
}

// upstreamFeasible is the largest product of list sizes run upstream in a
// benchmark (about 10^8 combinations: a few seconds per merge on 2 cores).
const upstreamFeasible = 1e8

func products(c mergeCase) float64 {
	p := 1.0
	for _, m := range c.providers {
		for _, hs := range m {
			p *= float64(max(1, len(hs)))
		}
	}
	return p
}

func benchMerge(b *testing.B, c mergeCase, upstream bool) {
	if upstream {
		if products(c) > upstreamFeasible {
			b.Skipf("upstream would enumerate %.3g combinations (kubernetes#131738: ~20 min for 8 NUMA x 4 x 255)", products(c))
		}
		p := upstreamPolicy(c)
		hints := toUpstream(c.providers)
		logger := logr.Discard()
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			p.Merge(logger, hints)
		}
		return
	}
	opts := map[string]string{}
	if len(c.nodes) > topology.DefaultMaxAllowableNUMANodes {
		opts[topology.OptionMaxAllowableNUMANodes] = fmt.Sprint(len(c.nodes))
	}
	p, err := topology.NewPolicy(c.policy, c.nodes, opts, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		p.Merge(c.providers)
	}
}

// BenchmarkMerge runs upstream's best-effort merge and gpunode's on the same
// inputs. The targets: 8 NUMA x 4 lists x 255 hints < 5 ms and 16
// NUMA best-effort < 20 ms for gpunode; upstream is skipped where it would
// take minutes (compare on 8numa-3x255, the largest case it finishes).
func BenchmarkMerge(b *testing.B) {
	for _, tc := range []struct{ n, lists int }{
		{4, 3}, {6, 3}, {8, 2}, {8, 3}, {8, 4}, {16, 3},
	} {
		c := benchCase(tc.n, tc.lists)
		size := len(c.providers[0]["r0"])
		for _, impl := range []string{"upstream", "gpunode"} {
			b.Run(fmt.Sprintf("%dnuma-%dx%d/%s", tc.n, tc.lists, size, impl), func(b *testing.B) {
				benchMerge(b, c, impl == "upstream")
			})
		}
	}
}
