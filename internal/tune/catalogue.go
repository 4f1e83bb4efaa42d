package tune

import (
	"fmt"
	"regexp"
	"sort"
	"sync"
)

// Files gpunode owns. They are generated whole from the applied profile, so
// applying twice never duplicates a line.
const (
	fileSysctl   = "/etc/sysctl.d/90-gpunode.conf"
	fileTmpfiles = "/etc/tmpfiles.d/90-gpunode.conf"
	fileLimits   = "/etc/security/limits.d/90-gpunode.conf"
	fileSystemd  = "/etc/systemd/system.conf.d/90-gpunode.conf"
	fileFstab    = "/etc/fstab"
	fileGrubBak  = "/etc/default/grub.gpunode.bak"
)

// Layers of the catalogue, in report order.
const (
	LayerCPU     = "cpu"
	LayerMemory  = "memory"
	LayerLimits  = "limits"
	LayerNetwork = "network"
	LayerBoot    = "boot"
	LayerPCIe    = "pcie"
	LayerIRQ     = "irq"
	LayerGPU     = "gpu"
	LayerProcess = "process"
)

var layerOrder = map[string]int{LayerCPU: 0, LayerMemory: 1, LayerLimits: 2, LayerNetwork: 3, LayerBoot: 4, LayerPCIe: 5, LayerIRQ: 6, LayerGPU: 7, LayerProcess: 8, LayerTuners: 9}

// Special profile values accepted by every setting.
const (
	// ValueReport reads and shows the setting but never reports drift.
	ValueReport = "report"
	// valueOff in a built-in's Desired removes an inherited setting.
	valueOff = "-"
)

// Setting is one catalogue entry: a knob, how it is read and changed, what
// each built-in profile wants, and why.
type Setting struct {
	ID    string
	Layer string
	Title string
	// Why explains the setting, with a pointer to the seed chapter section.
	Why string
	// NeedsReboot: the value only takes effect at boot.
	NeedsReboot bool
	// Desired maps a built-in profile name to its value there ("-" removes
	// an inherited value).
	Desired map[string]string
	knob    knob
}

var seedSectionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`seed (\d+(?:\.\d+)+)`) }) // compiled on first use

// Section is the first seed chapter section Why points to ("1.4.3"), or
// "".
func (s *Setting) Section() string {
	if m := seedSectionRE().FindStringSubmatch(s.Why); m != nil {
		return m[1]
	}
	return ""
}

// Mechanism describes, for humans, how a setting is read, applied at
// runtime and persistently, and reverted.
type Mechanism struct {
	Read       string `json:"read"`
	Runtime    string `json:"runtime"`
	Persistent string `json:"persistent"`
	Revert     string `json:"revert"`
}

// Mechanism returns how s is read and changed.
func (s *Setting) Mechanism() Mechanism {
	const journaled = "journal: the original value is written back by 'gpunode tune rollback'"
	const fileRevert = "journal: the generated file is restored byte for byte (or removed) by 'gpunode tune rollback'"
	switch k := s.knob.(type) {
	case sysctlKnob:
		return Mechanism{sysctlPath(k.key), "write " + sysctlPath(k.key), fileSysctl, journaled}
	case sysfsKnob:
		return Mechanism{k.path, "write " + k.path, "tmpfiles.d 'w' line in " + fileTmpfiles, journaled}
	case perCPUKnob:
		return Mechanism{k.glob(), "write every CPU's file", "tmpfiles.d 'w' glob line in " + fileTmpfiles, journaled}
	case cpuidleKnob:
		return Mechanism{"/sys/devices/system/cpu/cpu*/cpuidle/state*/{latency,disable}", "disable every idle state whose exit latency exceeds the value (cpupower idle-set -D)", "tmpfiles.d 'w' lines in " + fileTmpfiles, journaled}
	case cmdlineKnob:
		return Mechanism{"/proc/cmdline; configured: the boot loader's configuration", "none (boot parameter)", bootMechanism, fileRevert}
	case limitsKnob:
		return Mechanism{"/etc/security/limits.conf, limits.d/*.conf (domain *)", "none (next login)", fileLimits, fileRevert}
	case systemdKnob:
		return Mechanism{"/etc/systemd/system.conf, system.conf.d/*.conf [Manager]", "none (systemctl daemon-reexec)", fileSystemd, fileRevert}
	case swapKnob:
		return Mechanism{"/proc/swaps; configured: /etc/fstab", "printed, not run: swapoff -a", "swap entries of /etc/fstab commented out", fileRevert}
	case dirtyKnob:
		rk, bk := k.keys()
		return Mechanism{sysctlPath(rk) + ", " + sysctlPath(bk), "write the ratio or the bytes file (the kernel zeroes the other)", fileSysctl, "journal (tune.dirty): the original mode and value are written back"}
	case hugepagesKnob:
		return Mechanism{"/sys/devices/system/node/node*/hugepages/hugepages-2048kB/nr_hugepages", "write every node's pool", "tmpfiles.d 'w' lines in " + fileTmpfiles, journaled}
	case shmKnob:
		return Mechanism{"/proc/mounts (/dev/shm size) and /proc/meminfo", "printed: mount -o remount,size=...", "printed: /etc/fstab entry", "n/a"}
	case manualKnob:
		return Mechanism{"see why", "printed commands", "printed commands", "n/a"}
	case checkKnob:
		return Mechanism{"see why", "check only", "check only", "n/a"}
	}
	return Mechanism{}
}

// Catalogue is the ordered list of settings gpunode knows.
type Catalogue struct {
	settings []*Setting
	byID     map[string]*Setting
}

// Settings returns the settings in report order.
func (c *Catalogue) Settings() []*Setting { return c.settings }

// Get returns the setting with id, or nil.
func (c *Catalogue) Get(id string) *Setting { return c.byID[id] }

// IDs returns every setting id, sorted.
func (c *Catalogue) IDs() []string {
	out := make([]string, 0, len(c.settings))
	for _, s := range c.settings {
		out = append(out, s.ID)
	}
	sort.Strings(out)
	return out
}

// validate checks a profile value for setting id.
func (c *Catalogue) validate(id, v string) error {
	s := c.byID[id]
	if s == nil {
		return fmt.Errorf("unknown setting %q (see 'gpunode tune show base' or docs/TUNING.md)", id)
	}
	if v == ValueReport {
		return nil
	}
	return s.knob.validate(v)
}

// Built-in profile names.
const (
	ProfileBase              = "base"
	ProfileTraining          = "training"
	ProfileInference         = "inference"
	ProfileInferenceIsolated = "inference-isolated"
)

// NewCatalogue returns gpunode's settings catalogue.
func NewCatalogue() *Catalogue {
	d := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	intSpec := func(lo, hi int64) spec { return spec{kind: valInt, min: lo, max: hi} }
	ss := []*Setting{
		// ---- CPU ----
		{ID: "cpu.epp", Layer: LayerCPU, Title: "energy-performance preference (intel_pstate/amd-pstate)",
			Why:     "with an active P-state driver the EPP hint, not only the governor, decides how fast cores ramp; 'performance' removes the power bias (seed 1.7; tuned's energy_perf_bias). It comes before cpu.governor: intel_pstate refuses EPP changes (EBUSY) while the governor is performance, so apply sets EPP first and rollback restores it last.",
			Desired: d(ProfileBase, "performance"),
			knob:    perCPUKnob{rel: "cpufreq/energy_performance_preference", avail: "cpufreq/energy_performance_available_preferences", spec: spec{kind: valWord}}},
		{ID: "cpu.governor", Layer: LayerCPU, Title: "CPU frequency governor",
			Why:     "performance keeps cores at full clock: no ramp-up latency when a data-loader or NCCL proxy thread wakes (seed 1.7, system_tuning.sh step 1).",
			Desired: d(ProfileBase, "performance"),
			knob:    perCPUKnob{rel: "cpufreq/scaling_governor", avail: "cpufreq/scaling_available_governors", spec: spec{kind: valWord}}},
		{ID: "cpu.idle.max-latency-us", Layer: LayerCPU, Title: "deepest allowed C-state exit latency (runtime)",
			Why:     "deep C-states take tens to hundreds of microseconds to exit; latency-bound inference disables states slower than this at runtime, like tuned's force_latency without a daemon holding /dev/cpu_dma_latency (seed 1.7, system_tuning.sh step 1).",
			Desired: d(ProfileInference, "2"),
			knob:    cpuidleKnob{}},
		{ID: "boot.processor.max_cstate", Layer: LayerBoot, Title: "ACPI C-state limit (boot)", NeedsReboot: true,
			Why:     "processor.max_cstate=1 stops the ACPI idle driver from entering deep C-states from boot on (seed 1.7).",
			Desired: d(ProfileInference, "1"),
			knob:    cmdlineKnob{param: "processor.max_cstate", spec: intSpec(0, 9), vendor: "Intel|AMD"}},
		{ID: "boot.intel_idle.max_cstate", Layer: LayerBoot, Title: "intel_idle C-state limit (boot)", NeedsReboot: true,
			Why:     "intel_idle.max_cstate=0 disables the intel_idle driver so processor.max_cstate applies (seed 1.7).",
			Desired: d(ProfileInference, "0"),
			knob:    cmdlineKnob{param: "intel_idle.max_cstate", spec: intSpec(0, 9), vendor: "Intel"}},
		{ID: "boot.idle", Layer: LayerBoot, Title: "idle loop (idle=poll)", NeedsReboot: true,
			Why:  "idle=poll spins instead of halting: lowest wake-up latency, highest power and heat; only for dedicated latency nodes (seed 1.7).",
			knob: cmdlineKnob{param: "idle", spec: spec{kind: valChoice, choices: []string{"poll", "halt", "nomwait"}}}},
		{ID: "cpu.smt", Layer: LayerCPU, Title: "simultaneous multithreading",
			Why:     "SMT siblings share a core's caches and ports; some latency-critical nodes turn it off, throughput nodes keep it (reference: vendor checks). Reported, not changed, by the built-in profiles.",
			Desired: d(ProfileBase, ValueReport),
			knob:    sysfsKnob{path: "/sys/devices/system/cpu/smt/control", spec: spec{kind: valChoice, choices: []string{"on", "off"}}}},
		// ---- memory ----
		{ID: "mm.thp.enabled", Layer: LayerMemory, Title: "transparent hugepages",
			Why:     "THP cuts TLB misses for large host buffers (3-5% throughput in training), but background compaction stalls latency-bound inference (seed 1.3.2, system_tuning.sh step 3).",
			Desired: d(ProfileTraining, "always", ProfileInference, "never"),
			knob:    sysfsKnob{path: "/sys/kernel/mm/transparent_hugepage/enabled", bracket: true, spec: spec{kind: valChoice, choices: []string{"always", "madvise", "never"}}}},
		{ID: "mm.thp.defrag", Layer: LayerMemory, Title: "THP defrag policy",
			Why:     "defrag decides whether a page fault waits for compaction to build a huge page; never avoids the synchronous stall (seed 1.3.2).",
			Desired: d(ProfileTraining, "madvise", ProfileInference, "never"),
			knob:    sysfsKnob{path: "/sys/kernel/mm/transparent_hugepage/defrag", bracket: true, spec: spec{kind: valChoice, choices: []string{"always", "defer", "defer+madvise", "madvise", "never"}}}},
		{ID: "vm.nr_hugepages", Layer: LayerMemory, Title: "explicit hugepages (system-wide)",
			Why:  "HugeTLB pages reserved up front give predictable large buffers for runtimes that use them (seed 1.3.2); not set by the built-ins.",
			knob: sysctlKnob{key: "vm.nr_hugepages", spec: intSpec(0, 1<<40)}},
		{ID: "mm.hugepages.per-node", Layer: LayerMemory, Title: "2 MiB hugepages reserved on every NUMA node",
			Why:  "a system-wide vm.nr_hugepages is spread by the kernel; reserving per node puts each GPU's pool on its local node (seed 1.3.2, 1.1); not set by the built-ins.",
			knob: hugepagesKnob{}},
		{ID: "swap", Layer: LayerMemory, Title: "swap devices", NeedsReboot: true,
			Why:     "a swapped-out page turns a host-to-device copy into disk I/O: orders of magnitude slower (seed 1.5, system_tuning.sh step 2).",
			Desired: d(ProfileTraining, "off", ProfileInference, "off"),
			knob:    swapKnob{}},
		{ID: "vm.swappiness", Layer: LayerMemory, Title: "swappiness",
			Why:     "0 tells the kernel to swap anonymous memory only under extreme pressure (seed 1.5, system_tuning.sh step 2).",
			Desired: d(ProfileBase, "0"),
			knob:    sysctlKnob{key: "vm.swappiness", spec: intSpec(0, 200)}},
		{ID: "vm.dirty", Layer: LayerMemory, Title: "dirty page limit (writers block)",
			Why:     "caps dirty page cache before writers block; on big-memory nodes a byte limit (auto: memory/64, at most 32 GiB) keeps checkpoint bursts from stalling the training loop (seed 1.6, system_tuning.sh step 4).",
			Desired: d(ProfileBase, "auto"),
			knob:    dirtyKnob{}},
		{ID: "vm.dirty-background", Layer: LayerMemory, Title: "dirty page background writeback threshold",
			Why:     "starts background writeback early so the foreground limit is rarely hit (auto: a quarter of vm.dirty) (seed 1.6, system_tuning.sh step 4).",
			Desired: d(ProfileBase, "auto"),
			knob:    dirtyKnob{background: true}},
		{ID: "kernel.numa_balancing", Layer: LayerMemory, Title: "automatic NUMA balancing",
			Why:     "the kernel would migrate pages behind explicit numactl/cpuset placement and add page-fault overhead (system_tuning.sh step 9, seed 1.1).",
			Desired: d(ProfileBase, "0"),
			knob:    sysctlKnob{key: "kernel.numa_balancing", spec: intSpec(0, 3)}},
		{ID: "vm.zone_reclaim_mode", Layer: LayerMemory, Title: "zone reclaim",
			Why:     "1 reclaims page cache on the local node before allocating remotely: stalls instead of a slightly slower remote page (reference: vendor checks).",
			Desired: d(ProfileBase, "0"),
			knob:    sysctlKnob{key: "vm.zone_reclaim_mode", spec: intSpec(0, 7)}},
		{ID: "shm.size", Layer: LayerMemory, Title: "/dev/shm size (share of memory)",
			Why:     "NCCL and DataLoader workers exchange buffers through /dev/shm; a small tmpfs fails large jobs (reference: vendor checks).",
			Desired: d(ProfileBase, "50%"),
			knob:    shmKnob{}},
		// ---- limits ----
		{ID: "limits.memlock", Layer: LayerLimits, Title: "locked memory limit (ulimit -l)",
			Why:     "pinned host memory (pin_memory=True, RDMA registration) is locked memory; a low limit makes pinning fail or fall back (seed 1.2, 1.3.2, system_tuning.sh step 7).",
			Desired: d(ProfileBase, "unlimited"),
			knob:    limitsKnob{item: "memlock", spec: spec{kind: valLimit}}},
		{ID: "limits.nofile", Layer: LayerLimits, Title: "open files limit (ulimit -n)",
			Why:     "data loaders, NCCL sockets and shared-memory segments use many descriptors (system_tuning.sh step 7).",
			Desired: d(ProfileBase, "1048576"),
			knob:    limitsKnob{item: "nofile", spec: spec{kind: valLimit}}},
		{ID: "systemd.DefaultLimitMEMLOCK", Layer: LayerLimits, Title: "systemd services' locked memory limit",
			Why:     "limits.conf only applies to PAM logins; services (kubelet, containerd, slurmd) inherit systemd's DefaultLimitMEMLOCK (system_tuning.sh step 7 misses this).",
			Desired: d(ProfileBase, "unlimited"),
			knob:    systemdKnob{key: "DefaultLimitMEMLOCK", spec: spec{kind: valLimit}}},
		{ID: "systemd.DefaultLimitNOFILE", Layer: LayerLimits, Title: "systemd services' open files limit",
			Why:     "as DefaultLimitMEMLOCK, for descriptors (system_tuning.sh step 7).",
			Desired: d(ProfileBase, "1048576"),
			knob:    systemdKnob{key: "DefaultLimitNOFILE", spec: spec{kind: valLimit}}},
		// ---- network ----
		{ID: "net.core.rmem_max", Layer: LayerNetwork, Title: "max socket receive buffer",
			Why:     "TCP-based collectives and storage need large socket buffers on 100-400 Gb/s links (system_tuning.sh step 5).",
			Desired: d(ProfileBase, "268435456"),
			knob:    sysctlKnob{key: "net.core.rmem_max", spec: intSpec(0, 1<<40), size: true}},
		{ID: "net.core.wmem_max", Layer: LayerNetwork, Title: "max socket send buffer",
			Why:     "as rmem_max, for sends (system_tuning.sh step 5).",
			Desired: d(ProfileBase, "268435456"),
			knob:    sysctlKnob{key: "net.core.wmem_max", spec: intSpec(0, 1<<40), size: true}},
		{ID: "net.ipv4.tcp_rmem", Layer: LayerNetwork, Title: "TCP receive buffer min/default/max",
			Why:     "lets TCP autotuning grow receive windows to the max (system_tuning.sh step 5).",
			Desired: d(ProfileBase, "4096 87380 268435456"),
			knob:    sysctlKnob{key: "net.ipv4.tcp_rmem", spec: spec{kind: valInts, n: 3}}},
		{ID: "net.ipv4.tcp_wmem", Layer: LayerNetwork, Title: "TCP send buffer min/default/max",
			Why:     "as tcp_rmem, for sends (system_tuning.sh step 5).",
			Desired: d(ProfileBase, "4096 65536 268435456"),
			knob:    sysctlKnob{key: "net.ipv4.tcp_wmem", spec: spec{kind: valInts, n: 3}}},
		// ---- boot: isolation and IOMMU ----
		{ID: "boot.isolcpus", Layer: LayerBoot, Title: "CPUs kept away from the scheduler", NeedsReboot: true,
			Why:     "isolates the CPUs for pinned data-pipeline and communication threads (auto: all but the first 1/8 of each NUMA node's cores) (seed 1.4.2, system_tuning.sh step 10).",
			Desired: d(ProfileInferenceIsolated, "auto"),
			knob:    cmdlineKnob{param: "isolcpus", spec: spec{kind: valCPUList}, auto: autoIsolated, cpulist: true}},
		{ID: "boot.nohz_full", Layer: LayerBoot, Title: "tickless CPUs (the isolated CPUs)", NeedsReboot: true,
			Why:     "stops the periodic scheduler tick on the isolated CPUs; an isolated CPU left ticking still takes the tick's jitter, a tickless CPU the scheduler may use gains nothing (every profile: where the host sets both isolcpus and nohz_full, the lists must be the same CPUs) (seed 1.4.2).",
			Desired: d(ProfileBase, "isolcpus", ProfileInferenceIsolated, "auto"),
			knob:    cmdlineKnob{param: "nohz_full", spec: spec{kind: valCPUList}, auto: autoIsolated, cpulist: true, sameAs: "isolcpus"}},
		{ID: "boot.rcu_nocbs", Layer: LayerBoot, Title: "CPUs without RCU callbacks", NeedsReboot: true,
			Why:     "moves RCU callbacks off the isolated CPUs (seed 1.4.2).",
			Desired: d(ProfileInferenceIsolated, "auto"),
			knob:    cmdlineKnob{param: "rcu_nocbs", spec: spec{kind: valCPUList}, auto: autoIsolated, cpulist: true}},
		{ID: "boot.irqaffinity", Layer: LayerBoot, Title: "default IRQ CPUs", NeedsReboot: true,
			Why:     "puts IRQs on the housekeeping CPUs by default (auto: the complement of isolcpus) (seed 1.4.2).",
			Desired: d(ProfileInferenceIsolated, "auto"),
			knob:    cmdlineKnob{param: "irqaffinity", spec: spec{kind: valCPUList}, auto: autoHousekeeping, cpulist: true}},
		{ID: "boot.iommu", Layer: LayerBoot, Title: "IOMMU passthrough", NeedsReboot: true,
			Why:     "iommu=pt keeps DMA of GPUs and NICs out of IOMMU translation (NVIDIA's tuned profiles add it; reference: vendor checks).",
			Desired: d(ProfileTraining, "pt", ProfileInference, "pt"),
			knob:    cmdlineKnob{param: "iommu", spec: spec{kind: valChoice, choices: []string{"pt", "on", "off", "force", "nopt"}}}},
		// ---- PCIe ----
		{ID: "pcie.acs", Layer: LayerPCIe, Title: "PCIe ACS P2P redirect on switch ports",
			Why:     "ACS request/completion redirect sends GPU-GPU and GPU-NIC peer traffic through the root complex (all_reduce 360 vs 426 GB/s on GB300); bare-metal GPU nodes disable it on switch ports (reference: vendor checks).",
			Desired: d(ProfileBase, "check"),
			knob:    checkKnob{run: checkACS, fixFor: acsFix}},
		{ID: "pcie.link", Layer: LayerPCIe, Title: "PCIe links at full speed and width",
			Why:     "a GPU or NIC trained below its capability (x8 or Gen3 instead of x16 Gen5) caps host transfers and GPUDirect RDMA (topology layer).",
			Desired: d(ProfileBase, "check"),
			knob:    checkKnob{run: checkPCIeLinks, fixes: []string{fixNote("reseat the card or riser, check BIOS PCIe settings; 'gpunode topo' shows the link of each device")}}},
		// ---- IRQ ----
		{ID: "irqbalance", Layer: LayerIRQ, Title: "irqbalance daemon",
			Why:     "irqbalance moves IRQs every 10 s; it places them on the device's node but ignores isolated CPUs only when told (reference: irqbalance). Reported by the built-ins.",
			Desired: d(ProfileBase, ValueReport),
			knob: manualKnob{spec: spec{kind: valChoice, choices: []string{"running", "stopped"}}, get: irqbalanceState,
				cmds: func(w string) []string {
					if w == "stopped" {
						return []string{"systemctl disable --now irqbalance"}
					}
					return []string{"systemctl enable --now irqbalance"}
				}}},
	}
	c := &Catalogue{byID: map[string]*Setting{}}
	for _, s := range ss {
		if s.Desired == nil {
			s.Desired = map[string]string{}
		}
		c.settings = append(c.settings, s)
		c.byID[s.ID] = s
	}
	sort.SliceStable(c.settings, func(i, j int) bool {
		return layerOrder[c.settings[i].Layer] < layerOrder[c.settings[j].Layer]
	})
	return c
}

// builtinProfiles are the built-in profiles: name, include chain,
// description. Their settings come from each catalogue entry's Desired.
var builtinProfiles = []struct {
	name, include, description string
}{
	{ProfileBase, "", "settings every GPU node wants: performance governor, no swapping, no NUMA balancing, memlock/nofile limits, network buffers, PCIe/IRQ checks"},
	{ProfileTraining, ProfileBase, "throughput: base + THP always, swap off, dirty limits from memory size, iommu=pt"},
	{ProfileInference, ProfileBase, "latency: base + THP and defrag never, swap off, shallow C-states (runtime and boot), iommu=pt"},
	{ProfileInferenceIsolated, ProfileInference, "inference + boot-time CPU isolation (isolcpus, nohz_full, rcu_nocbs, irqaffinity) computed from the topology"},
}

func builtinNames() []string {
	out := make([]string, len(builtinProfiles))
	for i, b := range builtinProfiles {
		out[i] = b.name
	}
	return out
}

func isBuiltin(name string) bool {
	for _, b := range builtinProfiles {
		if b.name == name {
			return true
		}
	}
	return false
}
