package topology

// Messages kubelet v1.37's Topology Manager (pkg/kubelet/cm/topologymanager)
// prints when it starts, quoted so that gpunode reports the text a user finds
// in kubelet's log. conformance/kubelet (TestOptionsMatchUpstream,
// TestNewPolicyMatchesNewManager) compares them with kubelet's.
const (
	quoteUnknownOption    = "unknown Topology Manager Policy option: %q"
	quoteAlphaOptionsOff  = "topology manager policy alpha-level options not enabled, but option %q provided"
	quoteBetaOptionsOff   = "topology manager policy beta-level options not enabled, but option %q provided"
	quoteBadBool          = "bad value for option %q: %w"
	quoteNotInteger       = "unable to convert policy option to integer %q: %w"
	quoteBelowMinimum     = "the minimum value of %q should not be less than %v"
	quoteUnknownPolicy    = "unknown policy: \"%s\""
	quoteTooManyNUMANodes = "unsupported on machines with more than %v NUMA Nodes"
	quoteNoDistances      = "error getting NUMA distances from cadvisor"
)
