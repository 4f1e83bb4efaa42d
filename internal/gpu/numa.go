package gpu

import (
	"errors"
	"fmt"
	"io/fs"

	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/hostfs"
)

// maxAffinityCPUs sizes the CPU set asked from nvmlDeviceGetCpuAffinity
// (Linux's NR_CPUS tops out at 8192).
const maxAffinityCPUs = 8192

// CPUsFromWords converts the CPU bitmask NVML returns (an array of C
// unsigned longs, CPU i at bit i%64 of word i/64) into a CPU set.
func CPUsFromWords(words []uint) cpuset.CPUSet {
	var ids []int
	for w, word := range words {
		for bit := 0; word != 0; bit++ {
			if word&1 != 0 {
				ids = append(ids, w*64+bit)
			}
			word >>= 1
		}
	}
	return cpuset.New(ids...)
}

// Annotate fills each GPU's NUMA node from sysfs
// (/sys/bus/pci/devices/<addr>/numa_node; -1 means none) when the backend did
// not report one. A GPU whose device is missing from sysfs keeps a nil NUMA
// node; other read errors are returned as warnings, never fatal.
func Annotate(host *hostfs.FS, st *Status) []error {
	var warns []error
	for i := range st.GPUs {
		g := &st.GPUs[i]
		if g.NUMANode != nil || g.PCIAddress == "" {
			continue
		}
		p := "/sys/bus/pci/devices/" + g.PCIAddress + "/numa_node"
		n, err := host.ReadInt(p)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				warns = append(warns, fmt.Errorf("GPU %d: %w", g.Index, err))
			}
			continue
		}
		if n >= 0 {
			v := int(n)
			g.NUMANode = &v
		}
	}
	return warns
}
