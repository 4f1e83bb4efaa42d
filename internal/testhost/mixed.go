package testhost

// MixedPCIe is a two-socket Intel host whose GPUs and NICs reach each other
// over every kind of PCIe path but NVLink: GPU0 and NIC0 sit on two root
// ports of one root complex (PHB between them); GPU1 and NIC1 sit behind
// cascaded switches (a switch under the root port, a second switch under
// one of its downstream ports: PXB between them, PIX between GPU1 and the
// GPU2 on the first switch); GPU3 is on the other socket (SYS). Its kernel
// isolates CPUs 4-15,20-31 but runs tickless only on 8-15,24-31 (nohz_full
// different from isolcpus).
func MixedPCIe() Spec {
	return Spec{
		Name: "mixed-pcie", Hostname: "mixed-pcie-01", Kernel: "6.8.0-49-generic", CPUModel: "Intel(R) Xeon(R) Gold 6430",
		Sockets: 2, CoresPerSocket: 8, ThreadsPerCore: 2, L3SizeKB: 61440, MemPerNodeKB: 263174144, Distance: twoLevel(21),
		Isolated: "4-15,20-31", NohzFull: "8-15,24-31",
		BootArgs: "isolcpus=4-15,20-31 nohz_full=8-15,24-31 rcu_nocbs=8-15,24-31",
		Devices: []Device{
			// PHB: one root complex, two root ports.
			{BDF: "0000:11:00.0", RootComplex: "pci0000:10", Bridges: []string{"0000:10:01.0"}, Vendor: nvidia, DeviceID: "0x2330",
				Class: classGPU, Driver: "nvidia", NUMANode: 0, Speed: gen5, MaxSpeed: gen5, Width: 16, MaxWidth: 16, IRQs: []int{180}},
			{BDF: "0000:12:00.0", RootComplex: "pci0000:10", Bridges: []string{"0000:10:02.0"}, Vendor: mellanox, DeviceID: "0x1021",
				Class: classIB, Driver: "mlx5_core", NUMANode: 0, Speed: gen5, MaxSpeed: gen5, Width: 16, MaxWidth: 16, IRQs: []int{181, 182},
				NetDevs: []string{"ibp18s0"}, IBDevs: []string{"mlx5_0"}, IBLinkLayer: "InfiniBand"},
			// Cascaded switches: root port 30:01.0, switch 31:00.0 with
			// downstream ports 32:00.0 and 32:01.0; a second switch 33:00.0
			// under 32:00.0 with downstream ports 34:00.0 and 34:01.0.
			{BDF: "0000:35:00.0", RootComplex: "pci0000:30", Bridges: []string{"0000:30:01.0", "0000:31:00.0", "0000:32:00.0", "0000:33:00.0", "0000:34:00.0"},
				Vendor: nvidia, DeviceID: "0x2330", Class: classGPU, Driver: "nvidia", NUMANode: 0, Speed: gen5, MaxSpeed: gen5, Width: 16, MaxWidth: 16, IRQs: []int{183}},
			{BDF: "0000:36:00.0", RootComplex: "pci0000:30", Bridges: []string{"0000:30:01.0", "0000:31:00.0", "0000:32:00.0", "0000:33:00.0", "0000:34:01.0"},
				Vendor: nvidia, DeviceID: "0x2330", Class: classGPU, Driver: "nvidia", NUMANode: 0, Speed: gen5, MaxSpeed: gen5, Width: 16, MaxWidth: 16, IRQs: []int{184}},
			{BDF: "0000:37:00.0", RootComplex: "pci0000:30", Bridges: []string{"0000:30:01.0", "0000:31:00.0", "0000:32:01.0"}, Vendor: mellanox, DeviceID: "0x1021",
				Class: classIB, Driver: "mlx5_core", NUMANode: 0, Speed: gen5, MaxSpeed: gen5, Width: 16, MaxWidth: 16, IRQs: []int{185, 186},
				NetDevs: []string{"ibp55s0"}, IBDevs: []string{"mlx5_1"}, IBLinkLayer: "InfiniBand"},
			// The other socket.
			{BDF: "0000:91:00.0", RootComplex: "pci0000:90", Bridges: []string{"0000:90:01.0"}, Vendor: nvidia, DeviceID: "0x2330",
				Class: classGPU, Driver: "nvidia", NUMANode: 1, Speed: gen5, MaxSpeed: gen5, Width: 16, MaxWidth: 16, IRQs: []int{187}},
		},
	}
}
