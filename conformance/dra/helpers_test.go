package dra

import (
	"fmt"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/k8s/dra"
	"github.com/gpunode/gpunode/internal/mig"
	"github.com/gpunode/gpunode/internal/topo"
)

// synthSlices: n H100s, perRoot per PCIe root complex, through dra.Slices.
func synthSlices(t testing.TB, node string, n, perRoot int, mode string) []*resourceapi.ResourceSlice {
	t.Helper()
	st := gpu.Status{DriverVersion: "550.54.15", CUDAVersion: "12.4"}
	tp := &topo.Topology{}
	for i := 0; i < n; i++ {
		bdf := fmt.Sprintf("0000:%02x:00.0", 0x10+i)
		st.GPUs = append(st.GPUs, gpu.GPU{Index: i, Name: "NVIDIA H100 80GB HBM3", UUID: fmt.Sprintf("GPU-%08d-0000-0000-0000-000000000000", i), PCIAddress: bdf,
			Architecture: "Hopper", ComputeCapability: "9.0", MemoryBytes: 81559 << 20, SMCount: 132, NUMANode: ptr.To(i % 2)})
		tp.GPUs = append(tp.GPUs, topo.PCIDevice{BDF: bdf, PCIePath: []string{fmt.Sprintf("pci0000:%02x", i/perRoot), bdf}})
	}
	l, err := dra.Slices(dra.SliceOptions{NodeName: node, MIG: mode, Topology: tp, Status: st, Catalog: mig.Builtin()})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*resourceapi.ResourceSlice, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out
}
