package memorymanager

// Messages kubelet v1.37's Memory Manager (pkg/kubelet/cm/memorymanager)
// prints, quoted so that gpunode reports the text a user finds in kubelet's
// log and pod events. The conformance module compares them with kubelet's.
const (
	// Allocate: the Topology Manager left the affinity open and no mask of
	// NUMA nodes can hold the request.
	quoteNoDefaultAffinity = "[memorymanager] failed to get the default NUMA affinity, no NUMA nodes with enough memory is available"
	// Allocate: the merged hint was preferred, the memory manager's own best
	// hint is not.
	quoteNoDefaultPreferred = "[memorymanager] failed to find the default preferred hint"
	// Allocate: no hint of the memory manager contains the merged mask.
	quoteNoExtension = "[memorymanager] failed to find NUMA nodes to extend the current topology hint"
	// Allocate: the merged hint was preferred, the widened one is not.
	quoteNoExtendedPreferred = "[memorymanager] failed to find the extended preferred hint"
	// Allocate: the mask mixes nodes of single-NUMA and other multi-NUMA
	// allocations.
	quoteViolatesGroups = "[memorymanager] preferred hint violates NUMA node allocation"
	// A memory or hugepages request does not fit an int64.
	quoteNotInt64 = "[memorymanager] failed to represent quantity as int64"

	// Start-up checks of reservedMemory (NewManager / NewPolicyStatic).
	quoteReservedNoSuchNUMA = "the reserved memory configuration references a NUMA node %d that does not exist on this machine"
	quoteReservedTotal      = "the total amount %q of type %q is not equal to the value %q determined by Node Allocatable feature"
	quoteReservedNotInt64   = "could not covert a variable of type Quantity to int64"
	quoteReservedMissing    = "[memorymanager] you should specify the system reserved memory"
)
