//go:build !(linux && cgo)

package gpu

import "errors"

// OpenNVML always fails in a build without cgo (go-nvml needs cgo), so auto
// selection falls back to nvidia-smi.
func OpenNVML() (Backend, error) {
	return nil, errors.New("gpunode was built without cgo, so it has no NVML backend (use nvidia-smi)")
}
