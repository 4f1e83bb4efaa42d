//go:build !(linux && cgo)

package gpu

import "errors"

// NVMLAvailable reports whether this binary was built with the NVML backend.
// go-nvml needs cgo; this build has none, so auto selection falls back to
// nvidia-smi.
const NVMLAvailable = false

// OpenNVML always fails in a build without cgo.
func OpenNVML() (Backend, error) {
	return nil, errors.New("gpunode was built without cgo, so it has no NVML backend (use nvidia-smi)")
}
