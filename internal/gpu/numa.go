package gpu

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/gpunode/gpunode/internal/hostfs"
)

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
