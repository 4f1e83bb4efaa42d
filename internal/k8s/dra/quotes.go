package dra

// Messages of the upstream structured allocator
// (k8s.io/dynamic-resource-allocation v0.37.2, structured/internal/incubating)
// that gpunode repeats when its own search meets the same condition, so a
// user sees the scheduler's words. Formats take the claim and the request.
const (
	quotePrioritizedListDisabled   = "claim %s, request %s: has subrequests, but the DRAPrioritizedList feature is disabled"
	quoteNoClass                   = "claim %s, request %s: could not retrieve device class %s"
	quoteUnsupportedCountMode      = "claim %s, request %s: unsupported count mode %s"
	quoteAdminAccessDisabled       = "claim %s, request %s: admin access is requested, but the feature is disabled"
	quoteConsumableCapacityDisable = "claim %s, request %s: has capacity requests, but the DRAConsumableCapacity feature is disabled"
)
