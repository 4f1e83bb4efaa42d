// Package gpu is gpunode's NVIDIA driver layer: it reads the state of every GPU
// on a node (persistence, compute and MIG modes, clocks and clock-event reasons,
// ECC, retired pages and remapped rows, power, PCIe and NVLink) into one model,
// Status, and changes the few settings gpunode manages (persistence mode and
// locked clocks) through the shared journal so 'gpunode rollback' restores them.
//
// # Backends
//
// All reads and writes go through the narrow Backend interface. Three
// implementations exist:
//
//   - nvml: github.com/NVIDIA/go-nvml. The library is dlopen'ed at run time by
//     nvml.Init, so the binary runs on nodes without a driver. Functions newer
//     than the oldest supported driver are looked up before they are called
//     (calling a missing symbol would abort the process), and every field is
//     read independently: NOT_SUPPORTED, FUNCTION_NOT_FOUND and friends leave
//     that field empty instead of failing the whole GPU. go-nvml needs cgo;
//     a binary built with CGO_ENABLED=0 has no nvml backend (nvml_nocgo.go) and
//     falls back to nvidia-smi.
//   - nvidia-smi: runs 'nvidia-smi -q -x' (full XML state) through an injectable
//     Runner, falling back to '--query-gpu ... --format=csv' when the XML cannot
//     be read. Both parsers fill the same model as NVML.
//   - fake: a YAML or JSON file holding a Status (the same schema 'gpunode gpu
//     status -o yaml' prints). With --root other than "/", the file
//     <root>/etc/gpunode/fake-gpus.yaml (FakeFile) describes the host's GPUs;
//     without it the host has no GPUs. Writes to a fake backend change only
//     its in-memory copy.
//
// Select picks a backend: "auto" tries NVML, then nvidia-smi on $PATH, then
// reports "no NVIDIA driver: <reason>" as a backend with no GPUs, so commands
// on a node without a driver print an empty status instead of failing.
//
// NUMA nodes come from sysfs (/sys/bus/pci/devices/<addr>/numa_node) through
// hostfs for every backend, because NVML reports a NUMA node only where the GPU
// memory itself is a NUMA node (Grace).
package gpu
