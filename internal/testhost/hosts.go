package testhost

import (
	_ "embed"
	"fmt"
)

// dgxFakeGPUs is the fake GPU backend's description of the dgx-h100 host
// (8 H100 SXM on 4 NVSwitches), so GPU-layer commands and NVLink classes
// work on that fixture.
//
//go:embed testdata/dgx-h100-fake-gpus.yaml
var dgxFakeGPUs string

// Specs returns the synthetic fixture hosts. The capture of a real 2-vCPU VM
// (testdata/hosts/vm-2vcpu) is not generated: it came from 'gpunode topo
// capture' and is kept as captured.
func Specs() []Spec {
	return withContainerFiles([]Spec{DGXH100(), GH200(), AMD8NUMA(), Downgraded(), MixedPCIe()})
}

const (
	nvidia   = "0x10de"
	mellanox = "0x15b3"
	classGPU = "0x030200"
	classIB  = "0x020700"
	classEth = "0x020000"
	classNVM = "0x010802"
	classNVS = "0x068000"
	gen5     = "32.0 GT/s PCIe"
	gen4     = "16.0 GT/s PCIe"
	gen3     = "8.0 GT/s PCIe"
	gen1     = "2.5 GT/s PCIe"
)

func twoLevel(remote int) func(i, j int) int {
	return func(i, j int) int {
		if i == j {
			return 10
		}
		return remote
	}
}

// DGXH100 is a two-socket Intel host shaped like a DGX H100: 2 NUMA nodes,
// 112 cores / 224 threads, 8 H100 SXM GPUs behind 4 PCIe switches with 2 GPUs
// and 2 ConnectX-7 InfiniBand NICs each, 4 NVSwitches, 2 Ethernet NICs and
// NVMe drives.
func DGXH100() Spec {
	s := Spec{
		Name: "dgx-h100", Hostname: "dgx-h100-01", Kernel: "6.8.0-49-generic",
		CPUModel: "Intel(R) Xeon(R) Platinum 8480C",
		Sockets:  2, CoresPerSocket: 56, ThreadsPerCore: 2, L3SizeKB: 107520,
		MemPerNodeKB: 1056439296, Distance: twoLevel(21),
		// irqbalance runs (gpunode irq detects it through /proc/<pid>/comm).
		Files: map[string]string{"/proc/1432/comm": "irqbalance\n", "/proc/1/comm": "systemd\n", "/etc/gpunode/fake-gpus.yaml": dgxFakeGPUs},
	}
	irq := 200
	next := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = irq
			irq++
		}
		return out
	}
	// Four switches: two per socket, each under its own root complex.
	rcs := []struct {
		rc   string
		bus  int
		numa int
	}{{"pci0000:15", 0x15, 0}, {"pci0000:37", 0x37, 0}, {"pci0000:97", 0x97, 1}, {"pci0000:b7", 0xb7, 1}}
	gpu, nic := 0, 0
	for _, r := range rcs {
		rp := fmt.Sprintf("0000:%02x:01.0", r.bus)
		us := fmt.Sprintf("0000:%02x:00.0", r.bus+1)
		ds := func(i int) string { return fmt.Sprintf("0000:%02x:%02x.0", r.bus+2, i) }
		dev := func(i int) string { return fmt.Sprintf("0000:%02x:00.0", r.bus+3+i) }
		for i := 0; i < 2; i++ {
			s.Devices = append(s.Devices, Device{
				BDF: dev(i), RootComplex: r.rc, Bridges: []string{rp, us, ds(i)},
				Vendor: nvidia, DeviceID: "0x2330", Class: classGPU, Driver: "nvidia", NUMANode: r.numa,
				Speed: gen5, MaxSpeed: gen5, Width: 16, MaxWidth: 16, IRQs: next(1),
			})
			gpu++
		}
		for i := 2; i < 4; i++ {
			ib := fmt.Sprintf("mlx5_%d", nic)
			s.Devices = append(s.Devices, Device{
				BDF: dev(i), RootComplex: r.rc, Bridges: []string{rp, us, ds(i)},
				Vendor: mellanox, DeviceID: "0x1021", Class: classIB, Driver: "mlx5_core", NUMANode: r.numa,
				Speed: gen5, MaxSpeed: gen5, Width: 16, MaxWidth: 16, IRQs: next(8),
				NetDevs: []string{fmt.Sprintf("ibp%ds0", r.bus+3+i)}, IBDevs: []string{ib}, IBLinkLayer: "InfiniBand",
			})
			nic++
		}
	}
	// NVSwitches on their own root complex (socket 0).
	for i := 0; i < 4; i++ {
		s.Devices = append(s.Devices, Device{
			BDF: fmt.Sprintf("0000:%02x:00.0", 0x6a+i), RootComplex: "pci0000:68", Bridges: []string{"0000:68:01.0", fmt.Sprintf("0000:69:%02x.0", i)},
			Vendor: nvidia, DeviceID: "0x22a3", Class: classNVS, Driver: "nvidia-nvswitch", NUMANode: 0,
			Speed: gen4, MaxSpeed: gen4, Width: 2, MaxWidth: 2, IRQs: next(1),
		})
	}
	// Storage/management Ethernet (dual-port ConnectX-7) and NVMe per socket.
	for sock, rc := range []struct {
		rc  string
		bus int
	}{{"pci0000:a0", 0xa0}, {"pci0000:20", 0x20}} {
		numa := 1 - sock
		for f := 0; f < 2; f++ {
			s.Devices = append(s.Devices, Device{
				BDF: fmt.Sprintf("0000:%02x:00.%d", rc.bus+1, f), RootComplex: rc.rc, Bridges: []string{fmt.Sprintf("0000:%02x:01.0", rc.bus)},
				Vendor: mellanox, DeviceID: "0x1021", Class: classEth, Driver: "mlx5_core", NUMANode: numa,
				Speed: gen5, MaxSpeed: gen5, Width: 16, MaxWidth: 16, IRQs: next(4),
				NetDevs: []string{fmt.Sprintf("enp%ds0f%dnp%d", rc.bus+1, f, f)}, IBDevs: []string{fmt.Sprintf("mlx5_%d", 8+sock*2+f)}, IBLinkLayer: "Ethernet",
			})
		}
		for n := 0; n < 2; n++ {
			s.Devices = append(s.Devices, Device{
				BDF: fmt.Sprintf("0000:%02x:00.0", rc.bus+2+n), RootComplex: rc.rc, Bridges: []string{fmt.Sprintf("0000:%02x:%02x.0", rc.bus, 3+n)},
				Vendor: "0x144d", DeviceID: "0xa80a", Class: classNVM, Driver: "nvme", NUMANode: numa,
				Speed: gen4, MaxSpeed: gen4, Width: 4, MaxWidth: 4, IRQs: next(2), NVMe: fmt.Sprintf("nvme%d", sock*2+n),
			})
		}
	}
	return s
}

// GH200 is a Grace Hopper superchip: 72 Arm cores without SMT on NUMA node 0,
// the GPU's HBM as CPU-less NUMA node 1, and nodes 2-8 reserved for MIG memory
// (present, empty), as the driver sets them up.
func GH200() Spec {
	extra := []MemNode{{MemKB: 100663296}} // 96 GiB HBM3
	for i := 0; i < 7; i++ {
		extra = append(extra, MemNode{})
	}
	return Spec{
		Name: "gh200", Hostname: "gh200-01", Kernel: "6.8.0-1013-nvidia-64k", CPUModel: "",
		Sockets: 1, CoresPerSocket: 72, ThreadsPerCore: 1, L3SizeKB: 116736,
		MemPerNodeKB: 503316480, ExtraNodes: extra,
		Distance: func(i, j int) int {
			switch {
			case i == j:
				return 10
			case i == 0 || j == 0:
				return 80
			default:
				return 120
			}
		},
		Devices: []Device{
			{BDF: "0009:01:00.0", RootComplex: "pci0009:00", Bridges: []string{"0009:00:00.0"}, Vendor: nvidia, DeviceID: "0x2342",
				Class: classGPU, Driver: "nvidia", NUMANode: 0, Speed: gen5, MaxSpeed: gen5, Width: 16, MaxWidth: 16, IRQs: []int{300}},
			{BDF: "0000:01:00.0", RootComplex: "pci0000:00", Bridges: []string{"0000:00:00.0"}, Vendor: mellanox, DeviceID: "0x1021",
				Class: classIB, Driver: "mlx5_core", NUMANode: 0, Speed: gen5, MaxSpeed: gen5, Width: 16, MaxWidth: 16, IRQs: []int{310, 311, 312, 313},
				NetDevs: []string{"ibp1s0"}, IBDevs: []string{"mlx5_0"}, IBLinkLayer: "InfiniBand"},
			{BDF: "0002:01:00.0", RootComplex: "pci0002:00", Bridges: []string{"0002:00:00.0"}, Vendor: "0x144d", DeviceID: "0xa80a",
				Class: classNVM, Driver: "nvme", NUMANode: 0, Speed: gen4, MaxSpeed: gen4, Width: 4, MaxWidth: 4, IRQs: []int{320, 321}, NVMe: "nvme0"},
			{BDF: "0006:01:00.0", RootComplex: "pci0006:00", Bridges: []string{"0006:00:00.0"}, Vendor: "0x8086", DeviceID: "0x1521",
				Class: classEth, Driver: "igb", NUMANode: 0, Speed: "5.0 GT/s PCIe", MaxSpeed: "5.0 GT/s PCIe", Width: 1, MaxWidth: 1, IRQs: []int{330, 331},
				NetDevs: []string{"enP6p1s0"}},
		},
	}
}

// AMD8NUMA is a two-socket AMD EPYC host in NPS4 mode: 8 NUMA nodes of 8
// cores (16 threads), L3 shared by 4 cores, 4 PCIe H100 GPUs directly on root
// ports of nodes 1, 3, 5 and 7, two NICs and an NVMe drive. Some firmware
// reports numa_node -1: GPU2 and the NVMe drive (inferable from their
// local_cpulist) and the Ethernet NIC (whose local_cpulist spans every CPU).
func AMD8NUMA() Spec {
	s := Spec{
		Name: "amd-8numa", Hostname: "epyc-8numa", Kernel: "6.1.0-28-amd64", CPUModel: "AMD EPYC 9354 32-Core Processor",
		Sockets: 2, CoresPerSocket: 32, ThreadsPerCore: 2, NodesPerSocket: 4, CoresPerL3: 4, L3SizeKB: 32768,
		MemPerNodeKB: 99614720, Distance: func(i, j int) int {
			switch {
			case i == j:
				return 10
			case i/4 == j/4:
				return 12
			default:
				return 32
			}
		},
	}
	nodeCPUs := func(n int) string { return fmt.Sprintf("%d-%d,%d-%d", n*8, n*8+7, 64+n*8, 64+n*8+7) }
	irq := 400
	for g, node := range []int{1, 3, 5, 7} {
		bus := 0x20 + g*0x40
		numa, local := node, ""
		if g == 2 {
			numa, local = -1, nodeCPUs(node)
		}
		s.Devices = append(s.Devices, Device{
			BDF: fmt.Sprintf("0000:%02x:00.0", bus+1), RootComplex: fmt.Sprintf("pci0000:%02x", bus), Bridges: []string{fmt.Sprintf("0000:%02x:01.1", bus)},
			Vendor: nvidia, DeviceID: "0x2331", Class: classGPU, Driver: "nvidia", NUMANode: numa, LocalCPUs: local,
			Speed: gen5, MaxSpeed: gen5, Width: 16, MaxWidth: 16, IRQs: []int{irq + g},
		})
	}
	s.Devices = append(s.Devices,
		Device{BDF: "0000:41:00.0", RootComplex: "pci0000:40", Bridges: []string{"0000:40:03.1"}, Vendor: mellanox, DeviceID: "0x101b",
			Class: classIB, Driver: "mlx5_core", NUMANode: 0, Speed: gen4, MaxSpeed: gen4, Width: 16, MaxWidth: 16, IRQs: []int{420, 421, 422, 423},
			NetDevs: []string{"ibp65s0"}, IBDevs: []string{"mlx5_0"}, IBLinkLayer: "InfiniBand"},
		Device{BDF: "0000:c1:00.0", RootComplex: "pci0000:c0", Bridges: []string{"0000:c0:03.1"}, Vendor: mellanox, DeviceID: "0x101b",
			Class: classIB, Driver: "mlx5_core", NUMANode: 4, Speed: gen4, MaxSpeed: gen4, Width: 16, MaxWidth: 16, IRQs: []int{430, 431, 432, 433},
			NetDevs: []string{"ibp193s0"}, IBDevs: []string{"mlx5_1"}, IBLinkLayer: "InfiniBand"},
		Device{BDF: "0000:02:00.0", RootComplex: "pci0000:00", Bridges: []string{"0000:00:01.2"}, Vendor: "0x14e4", DeviceID: "0x16d7",
			Class: classEth, Driver: "bnxt_en", NUMANode: -1, Speed: gen3, MaxSpeed: gen3, Width: 8, MaxWidth: 8, IRQs: []int{440, 441},
			NetDevs: []string{"eno1"}},
		Device{BDF: "0000:81:00.0", RootComplex: "pci0000:80", Bridges: []string{"0000:80:01.1"}, Vendor: "0x144d", DeviceID: "0xa80a",
			Class: classNVM, Driver: "nvme", NUMANode: -1, LocalCPUs: nodeCPUs(2), Speed: gen4, MaxSpeed: gen4, Width: 4, MaxWidth: 4, IRQs: []int{450, 451}, NVMe: "nvme0"},
	)
	return s
}

// Downgraded is a one-socket host whose PCIe links trained below capability:
// GPU0 at x8 (width), GPU1 at 2.5 GT/s (speed only, as an idle GPU shows),
// the NIC at Gen3 x8 in a Gen4 x16 slot, and an NVMe drive at x2.
func Downgraded() Spec {
	return Spec{
		Name: "downgraded", Hostname: "ws-downgraded", Kernel: "6.5.0-35-generic", CPUModel: "Intel(R) Xeon(R) w5-3435X",
		Sockets: 1, CoresPerSocket: 16, ThreadsPerCore: 2, L3SizeKB: 46080, MemPerNodeKB: 263174144, Distance: twoLevel(21),
		Isolated: "12-15,28-31", NohzFull: "12-15,28-31", Hugepages2M: 1024,
		Devices: []Device{
			{BDF: "0000:17:00.0", RootComplex: "pci0000:16", Bridges: []string{"0000:16:01.0"}, Vendor: nvidia, DeviceID: "0x2330",
				Class: classGPU, Driver: "nvidia", NUMANode: 0, Speed: gen5, MaxSpeed: gen5, Width: 8, MaxWidth: 16, IRQs: []int{150}},
			{BDF: "0000:38:00.0", RootComplex: "pci0000:37", Bridges: []string{"0000:37:01.0"}, Vendor: nvidia, DeviceID: "0x2330",
				Class: classGPU, Driver: "nvidia", NUMANode: 0, Speed: gen1, MaxSpeed: gen5, Width: 16, MaxWidth: 16, IRQs: []int{151}},
			{BDF: "0000:52:00.0", RootComplex: "pci0000:51", Bridges: []string{"0000:51:01.0"}, Vendor: mellanox, DeviceID: "0x101d",
				Class: classEth, Driver: "mlx5_core", NUMANode: 0, Speed: gen3, MaxSpeed: gen4, Width: 8, MaxWidth: 16, IRQs: []int{160, 161},
				NetDevs: []string{"enp82s0f0np0"}, IBDevs: []string{"mlx5_0"}, IBLinkLayer: "Ethernet"},
			{BDF: "0000:65:00.0", RootComplex: "pci0000:64", Bridges: []string{"0000:64:02.0"}, Vendor: "0x144d", DeviceID: "0xa80a",
				Class: classNVM, Driver: "nvme", NUMANode: 0, Speed: gen4, MaxSpeed: gen4, Width: 2, MaxWidth: 4, IRQs: []int{170, 171}, NVMe: "nvme0"},
		},
	}
}
