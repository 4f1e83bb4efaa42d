package topo

import (
	"context"
	"fmt"
	"testing"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/testhost"
)

// large1024 is a synthetic 1024-CPU, 64-GPU host: 8 sockets of 64 cores
// with SMT, 2 NUMA nodes per socket, and per NUMA node 4 GPUs and 1
// InfiniBand NIC behind two PCIe switches.
func large1024() testhost.Spec {
	s := testhost.Spec{
		Name: "large-1024", Hostname: "large-1024", Kernel: "6.8.0-49-generic",
		CPUModel: "Synthetic 64-Core Processor",
		Sockets:  8, CoresPerSocket: 64, ThreadsPerCore: 2, NodesPerSocket: 2, CoresPerL3: 8,
		L3SizeKB: 32768, MemPerNodeKB: 264241152,
		Distance: func(i, j int) int {
			switch {
			case i == j:
				return 10
			case i/2 == j/2:
				return 12
			}
			return 32
		},
	}
	irq := 200
	for node := 0; node < 16; node++ {
		bus := 0x10 + node*12
		rc := fmt.Sprintf("pci0000:%02x", bus)
		rp := fmt.Sprintf("0000:%02x:01.0", bus)
		for sw := 0; sw < 2; sw++ {
			us := fmt.Sprintf("0000:%02x:00.0", bus+1+sw*5)
			ds := func(i int) string { return fmt.Sprintf("0000:%02x:%02x.0", bus+2+sw*5, i) }
			for i := 0; i < 3; i++ {
				d := testhost.Device{
					BDF: fmt.Sprintf("0000:%02x:00.0", bus+3+sw*5+i), RootComplex: rc, Bridges: []string{rp, us, ds(i)},
					NUMANode: node, Speed: "32.0 GT/s PCIe", MaxSpeed: "32.0 GT/s PCIe", Width: 16, MaxWidth: 16, IRQs: []int{irq},
				}
				irq++
				if i < 2 {
					d.Vendor, d.DeviceID, d.Class, d.Driver = "0x10de", "0x2330", "0x030200", "nvidia"
				} else if sw == 0 {
					d.Vendor, d.DeviceID, d.Class, d.Driver = "0x15b3", "0x1021", "0x020700", "mlx5_core"
					d.NetDevs, d.IBDevs, d.IBLinkLayer = []string{fmt.Sprintf("ibp%ds0", bus+3+i)}, []string{fmt.Sprintf("mlx5_%d", node)}, "InfiniBand"
				} else {
					continue
				}
				s.Devices = append(s.Devices, d)
			}
		}
	}
	return s
}

// BenchmarkDiscover1024CPU measures discovery on a generated 1024-CPU,
// 64-GPU host (target: under 25 ms per run). The tree is generated in the
// benchmark's temporary directory, not kept in git.
func BenchmarkDiscover1024CPU(b *testing.B) {
	root := b.TempDir()
	if err := testhost.Write(large1024(), root); err != nil {
		b.Fatal(err)
	}
	fs, err := hostfs.New(root)
	if err != nil {
		b.Fatal(err)
	}
	t, err := Discover(context.Background(), fs)
	if err != nil {
		b.Fatal(err)
	}
	if len(t.OnlineCPUs.List()) != 1024 || len(t.GPUs) != 64 || len(t.NUMANodes) != 16 {
		b.Fatalf("generated host discovered as %d CPUs, %d GPUs, %d NUMA nodes; want 1024, 64, 16", len(t.OnlineCPUs.List()), len(t.GPUs), len(t.NUMANodes))
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := testhost.CPUTime()
	for b.Loop() {
		if _, err := Discover(context.Background(), fs); err != nil {
			b.Fatal(err)
		}
	}
	testhost.ReportCPU(b, start)
}
