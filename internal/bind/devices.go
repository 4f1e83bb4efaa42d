package bind

import "github.com/gpunode/gpunode/internal/topo"

// NeedsDevices reports whether resolving req needs the topology's PCI
// devices. A request for a NUMA node (--node) needs only CPUs and NUMA
// nodes: --node excludes --gpu and --nic, and every local rank of it (its
// peers) resolves to that node too. Its caller can then discover without
// the PCI bus (topo.Options.NoDevices), which was most of bind's own
// start-up.
func NeedsDevices(req Request) bool {
	return req.Node == nil
}

// DiscoverOptions is what topology discovery must read to resolve req:
// never the host's description (name, kernel, CPU model, hugepage pools),
// and the PCI bus only when NeedsDevices.
func DiscoverOptions(req Request) topo.Options {
	return topo.Options{NoDevices: !NeedsDevices(req), NoHostInfo: true}
}
