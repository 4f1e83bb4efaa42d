//go:build !(linux && cgo)

package miglive

import "github.com/gpunode/gpunode/internal/gpu"

// nvmlDevicesOf: a build without cgo has no NVML backend.
func nvmlDevicesOf(gpu.Backend) ([]Device, bool, error) { return nil, false, nil }
