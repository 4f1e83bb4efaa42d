package gpu

import (
	"context"
	"fmt"
	"sort"
)

// NVLinkClasses returns the `nvidia-smi topo -m` class ("NV<n>") of every
// pair of GPUs joined by NVLink, keyed by their PCI addresses (sysfs form,
// the smaller address first). n is the number of bonded links:
//
//   - direct links (the remote end of a link is the other GPU): n counts
//     the active links from one GPU to the other;
//   - links into NVSwitches (the remote end is not a GPU of this node): every
//     pair of switch-attached GPUs is connected through the fabric, with
//     n = min(active switch links of either GPU), which is what nvidia-smi
//     prints on HGX boards (NV18 on H100/H200 SXM).
//
// Pairs without NVLink are absent. A backend without GPUs returns an empty
// map.
func NVLinkClasses(ctx context.Context, b Backend) (map[[2]string]string, error) {
	st, err := b.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("nvlink classes: %w", err)
	}
	return NVLinkClassesOf(st), nil
}

// NVLinkClassesOf is NVLinkClasses on a Status already read.
func NVLinkClassesOf(st Status) map[[2]string]string {
	out := map[[2]string]string{}
	isGPU := map[string]bool{}
	for _, g := range st.GPUs {
		if g.PCIAddress != "" {
			isGPU[g.PCIAddress] = true
		}
	}
	key := func(a, b string) [2]string {
		if b < a {
			a, b = b, a
		}
		return [2]string{a, b}
	}
	// direct[pair][end] counts the active links end reports to the other
	// GPU of pair. Both ends usually report the same links: count them once
	// by taking the larger one-sided count.
	direct := map[[2]string]map[string]int{}
	switched := map[string]int{}
	for _, g := range st.GPUs {
		for _, l := range g.NVLinks {
			if !l.Active || l.RemotePCIAddress == "" || g.PCIAddress == "" {
				continue
			}
			if !isGPU[l.RemotePCIAddress] {
				switched[g.PCIAddress]++
				continue
			}
			if l.RemotePCIAddress == g.PCIAddress {
				continue
			}
			k := key(g.PCIAddress, l.RemotePCIAddress)
			if direct[k] == nil {
				direct[k] = map[string]int{}
			}
			direct[k][g.PCIAddress]++
		}
	}
	// Classes nvidia-smi topo -m printed (nvidia-smi backend).
	for _, g := range st.GPUs {
		for _, p := range g.NVLinkPeers {
			if g.PCIAddress == "" || p.PCIAddress == "" || p.PCIAddress == g.PCIAddress || p.Links <= 0 {
				continue
			}
			k := key(g.PCIAddress, p.PCIAddress)
			if direct[k] == nil {
				direct[k] = map[string]int{}
			}
			direct[k][g.PCIAddress] = max(direct[k][g.PCIAddress], p.Links)
		}
	}
	for k, ends := range direct {
		n := 0
		for _, c := range ends {
			n = max(n, c)
		}
		out[k] = fmt.Sprintf("NV%d", n)
	}
	sw := make([]string, 0, len(switched))
	for a := range switched {
		sw = append(sw, a)
	}
	sort.Strings(sw)
	for i, a := range sw {
		for _, b := range sw[i+1:] {
			k := key(a, b)
			n := min(switched[a], switched[b])
			if _, ok := out[k]; ok {
				continue
			}
			out[k] = fmt.Sprintf("NV%d", n)
		}
	}
	return out
}
