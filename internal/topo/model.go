// Package topo discovers a machine's CPU, memory and PCIe topology from sysfs
// and procfs alone: sockets, NUMA nodes with their memory and distances,
// logical CPUs with core/die/package ids, SMT siblings and L3 groups, isolated
// and nohz_full CPUs, and the PCI devices that matter to GPU work (NVIDIA GPUs
// and NVSwitches, Ethernet and InfiniBand NICs, NVMe drives) with their NUMA
// node, local CPUs, PCIe path, link speed and width, driver and MSI IRQs.
//
// From the PCIe paths it classifies every GPU/NIC pair the way
// `nvidia-smi topo -m` does (X, PIX, PXB, PHB, NODE, SYS) without the NVIDIA
// driver; NVLink classes (NV#) are merged in by the GPU layer.
//
// Discovery never fails on a missing or malformed optional file: the problem
// becomes a Warning naming the file, and the rest of the report is intact.
package topo

import (
	"encoding/json"
	"fmt"

	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/sysfmt"
)

// SchemaVersion identifies the JSON/YAML layout of Topology.
const SchemaVersion = "gpunode.topo/v1"

// Topology is everything gpunode knows about a machine's layout.
type Topology struct {
	SchemaVersion string      `json:"schemaVersion"`
	Hostname      string      `json:"hostname,omitempty"`
	Kernel        string      `json:"kernel,omitempty"`
	CPUModel      string      `json:"cpuModel,omitempty"`
	Sockets       []Socket    `json:"sockets"`
	NUMANodes     []NUMANode  `json:"numaNodes"`
	CPUs          []CPU       `json:"cpus"`
	OnlineCPUs    CPUList     `json:"onlineCPUs"`
	IsolatedCPUs  CPUList     `json:"isolatedCPUs"`
	NohzFullCPUs  CPUList     `json:"nohzFullCPUs"`
	SMTActive     bool        `json:"smtActive"`
	L3Caches      []Cache     `json:"l3Caches"`
	GPUs          []PCIDevice `json:"gpus"`
	NICs          []PCIDevice `json:"nics"`
	NVMe          []PCIDevice `json:"nvme"`
	NVSwitches    []PCIDevice `json:"nvswitches"`
	Links         []Link      `json:"links"`
	Warnings      []Warning   `json:"warnings"`
}

// Socket is one CPU package.
type Socket struct {
	ID        int     `json:"id"`
	CPUs      CPUList `json:"cpus"`
	Cores     int     `json:"cores"`
	NUMANodes []int   `json:"numaNodes"`
}

// NUMANode is one NUMA node. Nodes without CPUs hold memory only (GPU HBM on
// Grace Hopper, CXL memory).
type NUMANode struct {
	ID            int         `json:"id"`
	CPUs          CPUList     `json:"cpus"`
	MemTotalBytes uint64      `json:"memTotalBytes"`
	MemFreeBytes  uint64      `json:"memFreeBytes"`
	Distances     []int       `json:"distances"`
	HugePages     []HugePages `json:"hugePages,omitempty"`
	// GPU is the index of the GPU whose memory this CPU-less node holds, when
	// known (coherent CPU-GPU systems such as GH200).
	GPU *int `json:"gpu,omitempty"`
}

// HugePages is one hugepage pool of a NUMA node.
type HugePages struct {
	SizeBytes uint64 `json:"sizeBytes"`
	Total     uint64 `json:"total"`
	Free      uint64 `json:"free"`
}

// CPU is one logical CPU.
type CPU struct {
	ID       int     `json:"id"`
	Core     int     `json:"core"`
	Socket   int     `json:"socket"`
	Die      int     `json:"die"`
	NUMANode int     `json:"numaNode"`
	L3       int     `json:"l3"` // index into Topology.L3Caches, -1 if unknown
	Siblings CPUList `json:"siblings"`
	Online   bool    `json:"online"`
	Isolated bool    `json:"isolated,omitempty"`
	NohzFull bool    `json:"nohzFull,omitempty"`
}

// Cache is a group of CPUs sharing one last-level (L3) cache.
type Cache struct {
	ID        int     `json:"id"`
	Level     int     `json:"level"`
	SizeBytes uint64  `json:"sizeBytes,omitempty"`
	CPUs      CPUList `json:"cpus"`
}

// Device kinds.
const (
	KindGPU      = "gpu"
	KindNIC      = "nic"
	KindNVMe     = "nvme"
	KindNVSwitch = "nvswitch"
)

// Sources of a device's NUMA node.
const (
	NUMAFromSysfs        = "sysfs"         // numa_node
	NUMAFromLocalCPUList = "local_cpulist" // numa_node was -1; the local CPUs lie on one node
	NUMAFromSingleNode   = "single-node"   // numa_node was -1 on a one-node machine
	NUMAUnknown          = "unknown"       // could not be determined
	NUMAFromNVML         = "nvml"          // set by the GPU layer
)

// PCIDevice is a PCI function gpunode cares about.
type PCIDevice struct {
	Kind string `json:"kind"`
	// Index orders devices of one kind by PCI address (GPU0, GPU1, ... as
	// CUDA_DEVICE_ORDER=PCI_BUS_ID and nvidia-smi number them).
	Index int `json:"index"`
	// Name is the device's label: GPU<index>, the InfiniBand device
	// (mlx5_0), else the network interface (eth0) or NVMe controller (nvme0).
	Name       string   `json:"name"`
	BDF        string   `json:"bdf"`
	VendorID   string   `json:"vendorId"`
	DeviceID   string   `json:"deviceId"`
	Class      string   `json:"class"`
	Driver     string   `json:"driver,omitempty"`
	NUMANode   int      `json:"numaNode"`
	NUMASource string   `json:"numaSource"`
	LocalCPUs  CPUList  `json:"localCPUs"`
	PCIePath   []string `json:"pciePath"` // root complex ("pci0000:00") first, the device last
	// Link speeds are parsed at discovery (GT/s and generation) and
	// serialise as the kernel prints them ("16.0 GT/s PCIe").
	LinkSpeed    PCIeSpeed `json:"linkSpeed,omitzero"`
	MaxLinkSpeed PCIeSpeed `json:"maxLinkSpeed,omitzero"`
	LinkWidth    int       `json:"linkWidth,omitempty"`
	MaxLinkWidth int       `json:"maxLinkWidth,omitempty"`
	// LinkDowngraded is set when the link trained below its capability.
	LinkDowngraded bool     `json:"linkDowngraded,omitempty"`
	IRQs           []int    `json:"irqs,omitempty"`
	NetDevs        []string `json:"netDevs,omitempty"`
	IBDevs         []string `json:"ibDevs,omitempty"`
	// LinkLayer is "infiniband" or "ethernet" for NICs.
	LinkLayer string `json:"linkLayer,omitempty"`
	// MemoryNUMANode is the CPU-less NUMA node holding a GPU's own memory on
	// coherent systems (GH200), when known.
	MemoryNUMANode *int `json:"memoryNumaNode,omitempty"`
	// SysfsPath is the resolved device directory below /sys/devices.
	SysfsPath string `json:"sysfsPath"`
}

// Link classes, as `nvidia-smi topo -m` defines them.
const (
	LinkSelf = "X"    // the same device
	LinkPIX  = "PIX"  // at most a single PCIe bridge
	LinkPXB  = "PXB"  // multiple PCIe bridges, without the host bridge
	LinkPHB  = "PHB"  // a PCIe host bridge (the CPU's root complex)
	LinkNODE = "NODE" // PCIe and the interconnect between host bridges of one NUMA node
	LinkSYS  = "SYS"  // PCIe and the SMP interconnect between NUMA nodes (QPI/UPI, xGMI)
)

// Link is the connection class between two devices named by Name.
type Link struct {
	A     string `json:"a"`
	B     string `json:"b"`
	Class string `json:"class"`
}

// Warning is a problem found during discovery: a file that could not be read
// or parsed, or a topology issue worth a user's attention.
type Warning struct {
	// Path is the host file concerned, if any.
	Path    string `json:"path,omitempty"`
	Message string `json:"message"`
}

func (w Warning) String() string {
	if w.Path == "" {
		return w.Message
	}
	return w.Path + ": " + w.Message
}

// CPUList is a CPU set that renders as a kernel cpulist ("0-15,64-79") in
// JSON and YAML.
type CPUList struct{ cpuset.CPUSet }

// NewCPUList wraps a cpuset.
func NewCPUList(s cpuset.CPUSet) CPUList { return CPUList{s} }

// MarshalJSON renders the set as a cpulist string.
func (c CPUList) MarshalJSON() ([]byte, error) { return json.Marshal(c.String()) }

// UnmarshalJSON parses a cpulist string.
func (c *CPUList) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("cpulist: %w", err)
	}
	set, err := sysfmt.ParseCPUList(s)
	if err != nil {
		return err
	}
	c.CPUSet = set
	return nil
}

// NodeByID returns the NUMA node with id, or nil.
func (t *Topology) NodeByID(id int) *NUMANode {
	for i := range t.NUMANodes {
		if t.NUMANodes[i].ID == id {
			return &t.NUMANodes[i]
		}
	}
	return nil
}

// Device returns the GPU, NIC, NVMe drive or NVSwitch named name (or with PCI
// address name), or nil.
func (t *Topology) Device(name string) *PCIDevice {
	for _, list := range [][]PCIDevice{t.GPUs, t.NICs, t.NVMe, t.NVSwitches} {
		for i := range list {
			if list[i].Name == name || list[i].BDF == name {
				return &list[i]
			}
		}
	}
	return nil
}

// Cores returns the number of physical cores (distinct socket/core pairs).
func (t *Topology) Cores() int {
	seen := map[[2]int]bool{}
	for _, c := range t.CPUs {
		if c.Online {
			seen[[2]int{c.Socket, c.Core}] = true
		}
	}
	return len(seen)
}

// CoreGroups splits set into physical cores (CPUs sharing socket and core
// id), in the order of each core's lowest CPU id. CPUs the topology does not
// know, or whose core id is unknown, form a group of their own.
func (t *Topology) CoreGroups(set cpuset.CPUSet) []cpuset.CPUSet {
	type key struct{ socket, core int }
	byID := make(map[int]*CPU, len(t.CPUs))
	for i := range t.CPUs {
		byID[t.CPUs[i].ID] = &t.CPUs[i]
	}
	index := map[key]int{}
	var groups [][]int
	// set.List() is ascending, so cores are first seen at their lowest CPU.
	for _, id := range set.List() {
		k := key{-1, id}
		if c, ok := byID[id]; ok && c.Core >= 0 {
			k = key{c.Socket, c.Core}
		}
		i, seen := index[k]
		if !seen {
			i = len(groups)
			index[k] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], id)
	}
	out := make([]cpuset.CPUSet, len(groups))
	for i, ids := range groups {
		out[i] = cpuset.New(ids...)
	}
	return out
}
