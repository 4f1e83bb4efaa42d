// Package irq finds the interrupts of a node's GPUs and NICs, shows where they
// were served, and plans, applies and rolls back their CPU affinity (seed
// section 1.4.3).
//
// # Discovery
//
// A device's IRQs are the union of its sysfs msi_irqs directory (as topo
// reads it) and the /proc/interrupts rows whose chip or handler name carries
// its PCI address ("IR-PCI-MSIX-0000:18:00.0 0-edge nvidia",
// "mlx5_comp3@pci:0000:1a:00.0"). For each IRQ the report gives the per-CPU
// counts from /proc/interrupts (where it was served so far), the current
// /proc/irq/<N>/smp_affinity_list and effective_affinity_list, and flags IRQs
// routed now to CPUs outside the device's NUMA node (effective affinity,
// else smp_affinity). Counts since boot are history: with --sample D the
// table is read twice, D apart, and an IRQ served off-node in that window
// is flagged too.
//
// # Plan
//
// Each IRQ gets one CPU on its device's node, spread round-robin over the
// node's physical cores (one thread per core, cores in id order, a cursor
// per node shared by all devices on it so that GPUs and NICs do not pile onto
// the same core). Isolated and nohz_full CPUs, --avoid CPUs and the CPUs
// handed to ranks (--rank-cpus) are never chosen. A device whose NUMA node is
// unknown uses its local CPUs. When no CPU is left the IRQ keeps its affinity
// and the plan says why.
//
// # Apply and rollback
//
// Apply writes /proc/irq/<N>/smp_affinity_list through the shared change
// journal (internal/journal, owner "irq"), one step per IRQ, recorded before
// the write; rollback restores the recorded originals. An IRQ whose affinity
// the kernel refuses to change (managed interrupts answer EIO) is detected by
// rewriting its current value first and is skipped, never journaled.
//
// # irqbalance
//
// irqbalance re-places IRQs every 10 s and would undo the plan. When an
// irqbalance process runs (found through /proc/<pid>/comm) the report says so
// and prints what keeps it away: IRQBALANCE_BANNED_CPULIST (the CPUs that
// must stay free of interrupts: isolated, nohz_full, --avoid and rank CPUs),
// --banirq arguments for the planned IRQs, and an equivalent --policyscript
// that prints "ban=true" for them.
package irq

import (
	"github.com/gpunode/gpunode/internal/topo"
)

// SchemaVersion identifies the JSON/YAML layout of Report.
const SchemaVersion = "gpunode.irq/v1"

// Report is the IRQ view of a host: the devices, their IRQs, where those were
// served, and the plan.
type Report struct {
	SchemaVersion string `json:"schemaVersion"`
	Hostname      string `json:"hostname,omitempty"`
	// Kinds are the device kinds included (gpu, nic, nvme, nvswitch).
	Kinds []string `json:"kinds"`
	// SampleSeconds is the --sample window the Window counts cover (0:
	// no sample).
	SampleSeconds float64 `json:"sampleSeconds,omitempty"`
	// Excluded are the CPUs no IRQ is planned on, by reason.
	Excluded Excluded   `json:"excluded"`
	Devices  []Device   `json:"devices"`
	Summary  Summary    `json:"summary"`
	IRQBal   IRQBalance `json:"irqbalance"`
	Warnings []string   `json:"warnings"`
}

// Excluded lists the CPUs kept free of planned IRQs.
type Excluded struct {
	Isolated topo.CPUList `json:"isolated"`
	NohzFull topo.CPUList `json:"nohzFull"`
	Avoid    topo.CPUList `json:"avoid"`
	RankCPUs topo.CPUList `json:"rankCPUs"`
	All      topo.CPUList `json:"all"`
}

// Device is a GPU or NIC and its IRQs.
type Device struct {
	Kind       string       `json:"kind"`
	Name       string       `json:"name"`
	BDF        string       `json:"bdf"`
	Driver     string       `json:"driver,omitempty"`
	NUMANode   int          `json:"numaNode"`
	NUMASource string       `json:"numaSource"`
	NodeCPUs   topo.CPUList `json:"nodeCPUs"`
	IRQs       []IRQ        `json:"irqs"`
}

// IRQ is one interrupt of a device.
type IRQ struct {
	IRQ int `json:"irq"`
	// Name is the handler name from /proc/interrupts ("nvidia",
	// "mlx5_comp3@pci:0000:1a:00.0").
	Name string `json:"name,omitempty"`
	// Source says where the IRQ was found: msi_irqs, interrupts, or both
	// ("msi_irqs+interrupts").
	Source string `json:"source"`
	// Affinity is smp_affinity_list; Effective is effective_affinity_list
	// (the CPU the interrupt is routed to now), when the kernel has it.
	Affinity  topo.CPUList  `json:"affinity"`
	Effective *topo.CPUList `json:"effective,omitempty"`
	// Total is the number of interrupts served so far; Served lists the CPUs
	// that served them (non-zero counts only).
	Total  uint64     `json:"total"`
	Served []CPUCount `json:"served"`
	// OffNodeCount counts interrupts served since boot by CPUs outside
	// the device's node: history, not a verdict (an IRQ fixed since keeps
	// its count until reboot).
	OffNodeCount uint64 `json:"offNodeCount"`
	// WindowTotal and WindowOffNode count the interrupts served during
	// the --sample window (all, and by CPUs off the node); zero without
	// a sample.
	WindowTotal   uint64 `json:"windowTotal,omitempty"`
	WindowOffNode uint64 `json:"windowOffNode,omitempty"`
	// OffNodeRouted is set when the IRQ is routed now (effective
	// affinity, else smp_affinity) to CPUs outside the device's node.
	// OffNode is set when it is routed off-node or, with a sample, was
	// served off-node during the window.
	OffNodeRouted bool `json:"offNodeRouted"`
	OffNode       bool `json:"offNode"`
	// Planned is the CPU set the plan gives the IRQ (empty: keep), Change
	// whether that differs from Affinity, Reason why nothing is planned.
	Planned topo.CPUList `json:"planned"`
	Change  bool         `json:"change"`
	Reason  string       `json:"reason,omitempty"`
}

// CPUCount is the number of interrupts one CPU served.
type CPUCount struct {
	CPU   int    `json:"cpu"`
	Count uint64 `json:"count"`
}

// Summary counts the report.
type Summary struct {
	Devices int `json:"devices"`
	IRQs    int `json:"irqs"`
	OffNode int `json:"offNode"`
	Changes int `json:"changes"`
}

// IRQBalance is what the report knows about irqbalance and what keeps it from
// undoing the plan.
type IRQBalance struct {
	Running bool  `json:"running"`
	PIDs    []int `json:"pids,omitempty"`
	// ConfigFile is the environment file irqbalance reads, when present,
	// and the banned CPU list it sets today.
	ConfigFile    string `json:"configFile,omitempty"`
	CurrentBanned string `json:"currentBanned,omitempty"`
	// BannedCPUList is the IRQBALANCE_BANNED_CPULIST value to set.
	BannedCPUList string `json:"bannedCPUList"`
	// Args are the IRQBALANCE_ARGS --banirq options for the planned IRQs.
	Args string `json:"args,omitempty"`
	// PolicyScript is an equivalent --policyscript body.
	PolicyScript string `json:"policyScript,omitempty"`
}
