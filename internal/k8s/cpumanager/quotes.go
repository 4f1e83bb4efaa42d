package cpumanager

// Messages kubelet v1.37's CPU Manager prints, quoted word for word so that
// gpunode's errors read exactly like kubelet's (the differential tests in
// conformance/kubelet compare them). Format verbs are kubelet's.
const (
	// Allocation (cpu_assignment.go in kubelet).
	quoteNotEnoughCPUs    = "not enough cpus available to satisfy request: requested=%d, available=%d"
	quoteFailedToAllocate = "failed to allocate cpus"
	quoteAccountingShort  = "accounting error, not enough CPUs allocated, remaining: %v"
	quoteAccountingOver   = "accounting error, too many CPUs allocated, remaining: %v"

	// SMTAlignmentError (full-pcpus-only).
	quoteSMTNotEnoughPhysical = "SMT Alignment Error: not enough free physical CPUs: available physical CPUs = %d, requested CPUs = %d, CPUs per core = %d"
	quoteSMTNotMultiple       = "SMT Alignment Error: requested %d cpus not multiple cpus per core = %d"

	// Static policy start-up.
	quoteNewStaticPolicy      = "new static policy error: %w"
	quoteNoReservation        = "[cpumanager] unable to determine reserved CPU resources for static policy"
	quoteReserveSize          = "[cpumanager] unable to reserve the required amount of CPUs (size of %s did not equal %d)"
	quoteReservedPhysicalCPUs = "[cpumanager] unable to build the reserved physical CPUs from the reserved set: %w"
	quoteUnknownCPU           = "unknown CPU ID: %d"

	// Policy options (the misspelling "Topolgy" is kubelet's).
	quoteUnknownOption      = "unknown CPU Manager Policy option: %q"
	quoteAlphaOptionsOff    = "CPU Manager Policy Alpha-level Options not enabled, but option %q provided"
	quoteBetaOptionsOff     = "CPU Manager Policy Beta-level Options not enabled, but option %q provided"
	quoteBadOptionValue     = "bad value for option %q: %w"
	quoteOptionsExclusive   = "static policy options %s and %s can not be used at the same time"
	quoteSocketVsSingleNUMA = "Topolgy manager %s policy is incompatible with CPUManager %s policy option"
	quoteSocketsAboveNUMA   = "Align by socket is not compatible with hardware where number of sockets are more than number of NUMA"
)
