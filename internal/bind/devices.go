package bind

import "github.com/gpunode/gpunode/internal/topo"

// NeedsDevices reports whether resolving req needs the topology's PCI
// devices. A request for a NUMA node (--node) with no NIC and no local rank
// and world size (no peers to share the node with) needs only CPUs and
// NUMA nodes, so its caller can discover without the PCI bus
// (topo.Options.NoDevices), which was most of bind's own start-up.
func NeedsDevices(req Request) bool {
	return req.Node == nil || req.NIC != "" || req.GPU != "" || (req.LocalRank != nil && req.LocalWorldSize > 1)
}

// DiscoverOptions is what topology discovery must read to resolve req:
// never the host's description (name, kernel, CPU model, hugepage pools),
// and the PCI bus only when NeedsDevices.
func DiscoverOptions(req Request) topo.Options {
	return topo.Options{NoDevices: !NeedsDevices(req), NoHostInfo: true}
}
