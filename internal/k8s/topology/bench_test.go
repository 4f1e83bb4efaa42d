package topology

import (
	"fmt"
	"testing"
)

// deviceLikeHints returns the hints a kubelet provider produces for a
// request that needs at least minNodes of the n NUMA nodes: every mask with
// at least minNodes bits, preferred iff it has exactly minNodes bits
// (255 hints for n=8, minNodes=1).
func deviceLikeHints(n, minNodes int) []Hint {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = i
	}
	var out []Hint
	IterateBitmasks(ids, func(m Bitmask) {
		if m.Count() >= minNodes {
			out = append(out, Hint{m.Ptr(), m.Count() == minNodes})
		}
	})
	return out
}

func benchProviders(n, lists int, aligned bool) []map[string][]Hint {
	var ps []map[string][]Hint
	for i := range lists {
		minNodes := 1 + i%2 // lists disagree on the preferred width: no preferred merge
		if aligned {
			minNodes = 1
		}
		ps = append(ps, map[string][]Hint{fmt.Sprintf("r%d", i): deviceLikeHints(n, minNodes)})
	}
	return ps
}

func nodes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func distances(n int) [][]uint64 {
	d := make([][]uint64, n)
	for i := range d {
		d[i] = make([]uint64, n)
		for j := range d[i] {
			switch {
			case i == j:
				d[i][j] = 10
			case i/2 == j/2:
				d[i][j] = 12
			default:
				d[i][j] = 20 + uint64((i+j)%3)
			}
		}
	}
	return d
}

// BenchmarkMerge8NUMA4x255 is the target: 8 NUMA nodes, 4 resource
// lists of 255 hints (< 5 ms). Upstream enumerates 255^4 = 4.2e9
// combinations (about 20 minutes).
func BenchmarkMerge8NUMA4x255(b *testing.B) {
	for _, tc := range []struct {
		name    string
		policy  string
		aligned bool
		closest bool
	}{
		{"best-effort/misaligned", PolicyBestEffort, false, false},
		{"best-effort/aligned", PolicyBestEffort, true, false},
		{"restricted/closest", PolicyRestricted, false, true},
		{"single-numa-node", PolicySingleNUMANode, true, false},
	} {
		b.Run(tc.name, func(b *testing.B) {
			opts := map[string]string{}
			var dist [][]uint64
			if tc.closest {
				opts[OptionPreferClosestNUMANodes] = "true"
				dist = distances(8)
			}
			p, err := NewPolicy(tc.policy, nodes(8), opts, dist)
			if err != nil {
				b.Fatal(err)
			}
			ps := benchProviders(8, 4, tc.aligned)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				p.Merge(ps)
			}
		})
	}
}

// BenchmarkMerge16NUMABestEffort: 16 NUMA nodes, 3 lists holding every
// mask of at least 1 or 2 nodes (65535 / 65519 hints each); target < 20 ms.
func BenchmarkMerge16NUMABestEffort(b *testing.B) {
	p, err := NewPolicy(PolicyBestEffort, nodes(16), map[string]string{OptionMaxAllowableNUMANodes: "16"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	ps := benchProviders(16, 3, false)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		p.Merge(ps)
	}
}

// BenchmarkMerge64NUMA: a 64-NUMA machine where each provider offers the
// single nodes and pairs of its local 8-node group plus "any" (non-preferred).
func BenchmarkMerge64NUMA(b *testing.B) {
	p, err := NewPolicy(PolicyBestEffort, nodes(64), map[string]string{OptionMaxAllowableNUMANodes: "64"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	var ps []map[string][]Hint
	for r := range 4 {
		var hs []Hint
		for g := range 8 {
			for i := range 8 {
				for j := i; j < 8; j++ {
					m := MustBitmask(g*8+i, g*8+j)
					hs = append(hs, Hint{m.Ptr(), i == j && (g+r)%2 == 0})
				}
			}
		}
		all := Bitmask(^uint64(0))
		hs = append(hs, Hint{all.Ptr(), false})
		ps = append(ps, map[string][]Hint{fmt.Sprintf("r%d", r): hs})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		p.Merge(ps)
	}
}
