//go:build !(linux && cgo)

package miglive

import "github.com/gpunode/gpunode/internal/gpu"

// NVMLAvailable reports whether MIG live operations can use NVML: not in a
// build without cgo.
const NVMLAvailable = false

func nvmlDevicesOf(gpu.Backend) ([]Device, bool, error) { return nil, false, nil }
