package kubeletcfg

// Messages kubelet v1.37.2 prints, quoted so that a finding reads exactly as
// kubelet's own startup error. Keep every quoted kubelet text of this
// package's reservation parsing here.
const (
	// kubelet's messages for one kubeReserved/systemReserved entry
	// (cmd/kubelet/app, while it parses the reservations).
	quoteReserveBadQuantity = "failed to parse quantity %q for %q resource: %w"
	quoteReserveNegative    = "resource quantity for %q cannot be negative: %v"
	quoteReserveUnknown     = "cannot reserve %q resource"

	// kubelet's prefixes for the messages above, naming the flag.
	quoteKubeReservedFailed   = "--kube-reserved value failed to parse: %v"
	quoteSystemReservedFailed = "--system-reserved value failed to parse: %v"
)
