//go:build !cgo

package bench

import "errors"

// WorkloadAvailable reports whether ThreadsWorkload is compiled in.
const WorkloadAvailable = false

// ThreadsWorkload needs cgo: Go's own allocator never calls malloc.
func ThreadsWorkload(threads int, ops int64) error {
	return errors.New("the built-in allocator workload needs a gpunode built with cgo (CGO_ENABLED=1 and a C compiler); give a command after --")
}
