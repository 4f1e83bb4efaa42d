package topo

import "sort"

// NIC locality: which NICs serve a GPU best, from the link classes
// (Class) discovery put in Links.

// LocalNICs are the NICs on GPU g's NUMA node (none when g's node is
// unknown).
func (t *Topology) LocalNICs(g PCIDevice) []string {
	if g.NUMANode < 0 {
		return nil
	}
	var out []string
	for _, n := range t.NICs {
		if n.NUMANode == g.NUMANode {
			out = append(out, n.Name)
		}
	}
	return out
}

// LinkRank orders link classes nearest first; -1 for a class that is not
// a GPU/NIC path.
func LinkRank(class string) int {
	switch class {
	case LinkPIX:
		return 0
	case LinkPXB:
		return 1
	case LinkPHB:
		return 2
	case LinkNODE:
		return 3
	case LinkSYS:
		return 4
	}
	return -1
}

// NearestNIC is the NIC with the closest link class to the GPU named gpu
// (ties: the first by name), and that class.
func (t *Topology) NearestNIC(gpu string) (string, string) {
	nics := map[string]bool{}
	for _, n := range t.NICs {
		nics[n.Name] = true
	}
	type cand struct{ nic, class string }
	var cs []cand
	for _, l := range t.Links {
		var other string
		switch {
		case l.A == gpu && nics[l.B]:
			other = l.B
		case l.B == gpu && nics[l.A]:
			other = l.A
		default:
			continue
		}
		if LinkRank(l.Class) >= 0 {
			cs = append(cs, cand{other, l.Class})
		}
	}
	if len(cs) == 0 {
		return "", ""
	}
	sort.Slice(cs, func(i, j int) bool {
		if ri, rj := LinkRank(cs[i].class), LinkRank(cs[j].class); ri != rj {
			return ri < rj
		}
		return cs[i].nic < cs[j].nic
	})
	return cs[0].nic, cs[0].class
}
