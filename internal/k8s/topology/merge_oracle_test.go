package topology

// oracleMerge is a straightforward port of kubelet v1.37.2's policies
// (policy.go, policy_*.go): it enumerates the Cartesian product of the hint
// lists and keeps the best merged hint with HintMerger.compare. It is the
// in-package reference for small inputs.
func oracleMerge(p *Policy, providersHints []map[string][]Hint) (Hint, bool) {
	switch p.name {
	case PolicyNone:
		return Hint{}, true
	case PolicySingleNUMANode:
		lists := filterSingleNUMAHints(hintLists(Flatten(providersHints)))
		best := oracleMergeLists(p, lists)
		if *best.Affinity == p.def {
			best = Hint{nil, best.Preferred}
		}
		return best, best.Preferred
	case PolicyRestricted:
		best := oracleMergeLists(p, hintLists(Flatten(providersHints)))
		return best, best.Preferred
	default:
		return oracleMergeLists(p, hintLists(Flatten(providersHints))), true
	}
}

func oracleMergePermutation(def Bitmask, perm []Hint) Hint {
	preferred := true
	var affs []Bitmask
	for _, h := range perm {
		if h.Affinity != nil {
			affs = append(affs, *h.Affinity)
			if *h.Affinity != affs[0] {
				preferred = false
			}
		}
		if !h.Preferred {
			preferred = false
		}
	}
	m := def
	for _, a := range affs {
		m &= a
	}
	return Hint{m.Ptr(), preferred}
}

// oracleCompareMasks is HintMerger's CompareNUMAAffinityMasks.
func oracleCompareMasks(p *Policy, current, candidate *Hint) *Hint {
	if *candidate.Affinity == *current.Affinity {
		return current
	}
	var best Bitmask
	if p.closest {
		best = oracleClosest(p, *current.Affinity, *candidate.Affinity)
	} else {
		best = oracleNarrowest(*current.Affinity, *candidate.Affinity)
	}
	if best == *current.Affinity {
		return current
	}
	return candidate
}

func oracleNarrowest(m1, m2 Bitmask) Bitmask {
	if m1.IsNarrowerThan(m2) {
		return m1
	}
	return m2
}

func oracleClosest(p *Policy, m1, m2 Bitmask) Bitmask {
	if m1.Count() != m2.Count() {
		return oracleNarrowest(m1, m2)
	}
	d1, d2 := p.averageDistance(m1), p.averageDistance(m2)
	if d1 == d2 {
		if m1.IsLessThan(m2) {
			return m1
		}
		return m2
	}
	if d1 < d2 {
		return m1
	}
	return m2
}

func oracleNarrowestCount(hints []Hint) (int, bool) {
	var n *Hint
	for i := range hints {
		if hints[i].Affinity == nil {
			continue
		}
		if n == nil {
			n = &hints[i]
		}
		if hints[i].Affinity.IsNarrowerThan(*n.Affinity) {
			n = &hints[i]
		}
	}
	if n == nil {
		return 0, false
	}
	return n.Affinity.Count(), true
}

func oracleCompare(p *Policy, b int, current, candidate *Hint) *Hint {
	if candidate.Affinity.Count() == 0 {
		return current
	}
	if current == nil {
		return candidate
	}
	if !current.Preferred && candidate.Preferred {
		return candidate
	}
	if current.Preferred && !candidate.Preferred {
		return current
	}
	if current.Preferred && candidate.Preferred {
		return oracleCompareMasks(p, current, candidate)
	}
	cc, xc := current.Affinity.Count(), candidate.Affinity.Count()
	if cc > b { // Case 1
		return oracleCompareMasks(p, current, candidate)
	}
	if cc == b { // Case 2
		if xc != b {
			return current
		}
		return oracleCompareMasks(p, current, candidate)
	}
	if xc > b { // Case 3a
		return current
	}
	if xc == b { // Case 3b
		return candidate
	}
	if xc > cc { // Case 3ca
		return candidate
	}
	if xc < cc { // Case 3cb
		return current
	}
	return oracleCompareMasks(p, current, candidate) // Case 3cc
}

func oracleMergeLists(p *Policy, lists [][]Hint) Hint {
	b := 0
	for _, l := range lists {
		if c, ok := oracleNarrowestCount(l); ok && c > b {
			b = c
		}
	}
	var best *Hint
	var iterate func(i int, accum []Hint)
	iterate = func(i int, accum []Hint) {
		if i == len(lists) {
			h := oracleMergePermutation(p.def, accum)
			best = oracleCompare(p, b, best, &h)
			return
		}
		for j := range lists[i] {
			iterate(i+1, append(accum, lists[i][j]))
		}
	}
	iterate(0, nil)
	if best == nil {
		return Hint{p.def.Ptr(), false}
	}
	return *best
}
