// Package ctk holds gpunode's conformance tests against the NVIDIA
// Container Toolkit's own configuration readers
// (github.com/NVIDIA/nvidia-container-toolkit/pkg/config/engine/...): for a
// corpus of daemon.json, containerd config.toml (versions 1-3) and CRI-O
// files, internal/container must find the same nvidia runtime binary and
// default runtime that nvidia-ctk finds. The toolkit is an oracle here
// only; the product module does not depend on it.
package ctk
