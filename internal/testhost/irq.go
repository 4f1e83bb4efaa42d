package testhost

import (
	"fmt"
	"strings"

	"github.com/gpunode/gpunode/internal/sysfmt"
	"k8s.io/utils/cpuset"
)

// buildIRQs writes /proc/interrupts and /proc/irq/<N>/{smp_affinity,
// smp_affinity_list,effective_affinity_list,node} for every device IRQ, in
// the kernel's layout (kernel/irq/proc.c: a "CPU<n>" header, "%10u " per
// online CPU, then the chip name with the device address, the hardware IRQ,
// the trigger and the action names).
//
// The served-where counts are deterministic and realistic enough to exercise
// the IRQ analysis: each vector was served on a CPU of its device's node, and
// every fifth vector also (and now) on a CPU of another node. NVIDIA GPU
// IRQs follow the seed's script, which writes mask 2 (CPU 1) for every
// nvidia IRQ, so on a multi-node host the GPUs of the other nodes are served
// off-node. Other IRQs allow every CPU (no irqbalance placement yet).
func buildIRQs(s Spec, t *tree, nodeCPUs [][]int, all cpuset.CPUSet) {
	ncpu := all.Size()
	arm := strings.Contains(s.Kernel, "nvidia") // NVIDIA's arm64 (Grace) kernels use the GICv3 ITS
	chipPrefix := "IR-PCI-MSIX-"
	if arm {
		chipPrefix = "ITS-PCI-MSIX-"
	}
	var b strings.Builder
	const prec = 3
	fmt.Fprintf(&b, "%*s", prec+8, "")
	for c := 0; c < ncpu; c++ {
		fmt.Fprintf(&b, "CPU%-8d", c)
	}
	b.WriteString("\n")
	row := func(label string, counts map[int]uint64, desc string) {
		fmt.Fprintf(&b, "%*s: ", prec, label)
		for c := 0; c < ncpu; c++ {
			fmt.Fprintf(&b, "%10d ", counts[c])
		}
		b.WriteString(desc + "\n")
	}
	if !arm {
		row("0", map[int]uint64{0: 44}, " IR-IO-APIC    2-edge      timer")
	}
	for _, d := range s.Devices {
		home := all
		switch {
		case d.LocalCPUs != "":
			if set, err := sysfmt.ParseCPUList(d.LocalCPUs); err == nil {
				home = set
			}
		case d.NUMANode >= 0 && d.NUMANode < len(nodeCPUs):
			home = cpuset.New(nodeCPUs[d.NUMANode]...)
		}
		homeList := home.List()
		var remote []int
		for c := 0; c < ncpu; c++ {
			if !home.Contains(c) {
				remote = append(remote, c)
			}
		}
		for vec, irq := range d.IRQs {
			counts := map[int]uint64{}
			local := homeList[(vec*2)%len(homeList)]
			affinity := all
			effective := local
			counts[local] = uint64(1000 + (irq*7919)%50000)
			if d.Driver == "nvidia" {
				// The seed's script: echo 2 > /proc/irq/<n>/smp_affinity.
				affinity = cpuset.New(1)
				effective = 1
				counts = map[int]uint64{1: uint64(20000 + irq)}
			} else if len(remote) > 0 && irq%5 == 3 {
				r := remote[(irq*31)%len(remote)]
				counts[r] = uint64(100 + irq%97)
				effective = r
			}
			var action string
			switch {
			case d.Driver == "mlx5_core" && vec == 0:
				action = fmt.Sprintf("mlx5_async%d@pci:%s", vec, d.BDF)
			case d.Driver == "mlx5_core":
				action = fmt.Sprintf("mlx5_comp%d@pci:%s", vec-1, d.BDF)
			case d.NVMe != "":
				action = fmt.Sprintf("%sq%d", d.NVMe, vec)
			case len(d.NetDevs) > 0:
				action = fmt.Sprintf("%s-TxRx-%d", d.NetDevs[0], vec)
			default:
				action = d.Driver
			}
			trigger := fmt.Sprintf("%d-edge", vec)
			if arm {
				trigger = fmt.Sprintf("%d Edge", vec)
			}
			row(fmt.Sprint(irq), counts, fmt.Sprintf(" %s%s %4s      %s", chipPrefix, d.BDF, trigger, action))
			dir := fmt.Sprintf("/proc/irq/%d", irq)
			t.file(dir+"/smp_affinity", sysfmt.FormatCPUMask(affinity, ncpu)+"\n")
			t.file(dir+"/smp_affinity_list", affinity.String()+"\n")
			t.file(dir+"/effective_affinity", sysfmt.FormatCPUMask(cpuset.New(effective), ncpu)+"\n")
			t.file(dir+"/effective_affinity_list", fmt.Sprintf("%d\n", effective))
			t.file(dir+"/node", fmt.Sprintf("%d\n", d.NUMANode))
		}
	}
	spread := func(n uint64) map[int]uint64 {
		m := map[int]uint64{}
		for c := 0; c < ncpu; c++ {
			m[c] = n + uint64(c%7)
		}
		return m
	}
	if arm {
		row("IPI0", spread(5000), "       Rescheduling interrupts")
		row("IPI1", spread(300), "       Function call interrupts")
		fmt.Fprintf(&b, "%*s: %10d\n", prec, "Err", 0)
	} else {
		row("NMI", spread(120), "  Non-maskable interrupts")
		row("LOC", spread(900000), "  Local timer interrupts")
		fmt.Fprintf(&b, "%*s: %10d\n", prec, "ERR", 0)
		fmt.Fprintf(&b, "%*s: %10d\n", prec, "MIS", 0)
	}
	t.file("/proc/interrupts", b.String())
	t.file("/proc/irq/default_smp_affinity", sysfmt.FormatCPUMask(all, ncpu)+"\n")
}
