// Package topology is gpunode's model of the kubelet Topology Manager
// (k8s.io/kubernetes pkg/kubelet/cm/topologymanager, v1.37.2): NUMA affinity
// bitmasks, topology hints, the four policies (none, best-effort, restricted,
// single-numa-node), their options (prefer-closest-numa-nodes,
// max-allowable-numa-nodes) and the hint merge.
//
// # Using it
//
//	p, err := topology.NewPolicy("restricted", []int{0, 1}, map[string]string{}, nil)
//	hint, admit := p.Merge([]map[string][]topology.Hint{
//		{"cpu": {topology.NewHint(true, 0), topology.NewHint(false, 0, 1)}},
//		{"nvidia.com/gpu": nil}, // nil = no preference
//	})
//
// A provider's map follows kubelet's conventions: an empty map or a nil list
// for a resource means "don't care" ({nil, preferred}); an empty, non-nil list
// means "cannot satisfy" ({nil, non-preferred}).
//
// # Equivalence with kubelet
//
// Upstream merges by enumerating the Cartesian product of all hint lists
// (kubernetes#131738: ~20 minutes for 8 NUMA nodes x 4 lists of 255 hints) and
// keeps the best merged hint according to HintMerger.compare. That comparison
// is a total order on distinct merged hints (preferred first; among preferred
// the fittest; among non-preferred a tier around B, the largest of the
// per-list narrowest widths), so the result depends only on the SET of
// distinct merged hints. Merge therefore computes
//
//   - the set of masks reachable by an all-preferred combination (tracked as
//     "no mask yet" or "all masks equal X", at most one state per distinct
//     preferred mask), and, only when none of them is non-empty,
//   - the set of distinct non-zero ANDs reachable by any combination, built
//     list by list with de-duplication, on bits compressed to equivalence
//     classes (bits no hint tells apart), switching to a dense superset-zeta /
//     Möbius transform over the compressed space when that is cheaper.
//
// Neither the Cartesian product nor the 2^N masks of a large machine are ever
// enumerated. The conformance module conformance/kubelet compares Merge with
// upstream's policies on randomized inputs; merge_bruteforce_test.go checks
// it in-package against a brute force over the Cartesian product written
// from the documented rules.
package topology
