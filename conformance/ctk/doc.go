// Package ctk holds gpunode's conformance tests against the NVIDIA
// Container Toolkit's own configuration readers
// (github.com/NVIDIA/nvidia-container-toolkit/pkg/config/engine/...): for a
// corpus of daemon.json, containerd config.toml (versions 1-3) and CRI-O
// files, internal/container must find the same nvidia runtime binary and
// default runtime that nvidia-ctk finds. The toolkit is an oracle here
// only; the product module does not depend on it.
//
// The same module checks CDI spec validation (cdi_test.go): for the fixture
// hosts' specs, the CDI module's own documented examples, the seeds and
// crashers of FuzzParseCDISpec and twice -cases generated specs (YAML and
// JSON, half of them breaking rules, some cut or edited as text),
// internal/container's ParseCDISpec accepts exactly what the CDI library's
// loader (tags.cncf.io/container-device-interface/pkg/cdi ReadSpec)
// accepts, with the same devices, and its reason ends with CDI's (known
// differences in wording are listed in the test). The product links only
// CDI's leaf packages (specs-go, pkg/parser), not pkg/cdi.
package ctk
