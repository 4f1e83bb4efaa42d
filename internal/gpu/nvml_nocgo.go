//go:build !(linux && cgo)

package gpu

// HaveNVML says whether this build has the NVML backend: not without cgo
// (go-nvml needs it). The static node binary is such a build: it hands the
// commands that would open NVML to gpunode-agent when that is installed
// (internal/cli, nvmlforward.go).
const HaveNVML = false

// OpenNVML always fails in a build without cgo, so auto selection falls
// back to nvidia-smi.
func OpenNVML() (Backend, error) { return nil, ErrNoNVMLBuild }
