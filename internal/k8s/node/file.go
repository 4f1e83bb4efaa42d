package node

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/cpuset"
	"sigs.k8s.io/yaml"

	"github.com/gpunode/gpunode/internal/sysfmt"

	"github.com/gpunode/gpunode/internal/userfile"
	"github.com/gpunode/gpunode/internal/yamlpos"
)

// File kinds and versions accepted by Parse.
const (
	FileAPIVersion = "gpunode.io/v1"
	FileKind       = "Node"
)

// File is the YAML form of a node file.
type File struct {
	APIVersion   string                  `json:"apiVersion"`
	Kind         string                  `json:"kind"`
	Name         string                  `json:"name,omitempty"`
	NUMANodes    []NUMANodeSpec          `json:"numaNodes"`
	Cores        []string                `json:"cores,omitempty"`
	Sockets      []GroupSpec             `json:"sockets,omitempty"`
	UncoreCaches []GroupSpec             `json:"uncoreCaches,omitempty"`
	Devices      map[string][]DeviceSpec `json:"devices,omitempty"`
}

// NUMANodeSpec is one NUMA node in a node file.
type NUMANodeSpec struct {
	ID        int               `json:"id"`
	CPUs      string            `json:"cpus,omitempty"`
	Memory    resource.Quantity `json:"memory"`
	HugePages []HugePagesSpec   `json:"hugepages,omitempty"`
	Distances []int             `json:"distances,omitempty"`
}

// HugePagesSpec is a hugepages pool in a node file.
type HugePagesSpec struct {
	PageSize resource.Quantity `json:"pageSize"`
	Count    uint64            `json:"count"`
}

// GroupSpec names a group of CPUs (a socket or an uncore cache).
type GroupSpec struct {
	ID   int    `json:"id"`
	CPUs string `json:"cpus"`
}

// DeviceSpec is one device in a node file. NUMANode and NUMANodes are
// alternatives; neither means the device has no topology.
type DeviceSpec struct {
	ID        string `json:"id"`
	NUMANode  *int   `json:"numaNode,omitempty"`
	NUMANodes []int  `json:"numaNodes,omitempty"`
	// Health is "Healthy" (default) or "Unhealthy".
	Health string `json:"health,omitempty"`
}

// parseCPUs parses a node file's CPU list with kubelet's cpuset.Parse after
// sysfmt.CheckCPUList has bounded it (ids and count at most sysfmt.MaxCPUID):
// cpuset.Parse allocates per id, so "0-999999999" would cost gigabytes.
func parseCPUs(s string) (cpuset.CPUSet, error) {
	if err := sysfmt.CheckCPUList(s); errors.Is(err, sysfmt.ErrCPUListBound) {
		return cpuset.CPUSet{}, err
	}
	return cpuset.Parse(s)
}

// Load reads and validates a node file, at most limit bytes
// (--max-input-bytes; limit <= 0: userfile.DefaultMaxBytes).
func Load(path string, limit int64) (*Node, error) {
	b, err := userfile.Read(path, limit)
	if err != nil {
		return nil, fmt.Errorf("node file: %w", err)
	}
	n, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("node file %w", yamlpos.Wrap(path, b, err))
	}
	return n, nil
}

// Parse decodes and validates a node file. Unknown fields are errors.
func Parse(b []byte) (*Node, error) {
	if err := yamlpos.WrongKind(b, FileKind, FileAPIVersion+" Node (a node file: numaNodes, cpus, memory, devices)"); err != nil {
		return nil, err
	}
	var f File
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	return f.Build()
}

// Build turns a File into a validated Node.
func (f *File) Build() (*Node, error) {
	if f.APIVersion != FileAPIVersion {
		return nil, fmt.Errorf("apiVersion: got %q, want %q", f.APIVersion, FileAPIVersion)
	}
	if f.Kind != FileKind {
		return nil, fmt.Errorf("kind: got %q, want %q", f.Kind, FileKind)
	}
	n := &Node{Name: f.Name}
	cpuNUMA := map[int]int{}
	for i, s := range f.NUMANodes {
		if s.ID < 0 || s.ID > MaxNUMANodeID {
			return nil, fmt.Errorf("numaNodes[%d].id: %d is out of range 0..%d (kubelet's NUMA bitmask holds 64 nodes)", i, s.ID, MaxNUMANodeID)
		}
		cpus, err := parseCPUs(s.CPUs)
		if err != nil {
			return nil, fmt.Errorf("numaNodes[%d].cpus: %w", i, err)
		}
		for _, c := range cpus.List() {
			if c > 1<<20 {
				return nil, fmt.Errorf("numaNodes[%d].cpus: CPU id %d is implausibly large", i, c)
			}
			if prev, ok := cpuNUMA[c]; ok {
				return nil, fmt.Errorf("numaNodes[%d].cpus: CPU %d already belongs to NUMA node %d", i, c, prev)
			}
			cpuNUMA[c] = s.ID
		}
		if s.Memory.Sign() < 0 {
			return nil, fmt.Errorf("numaNodes[%d].memory: must not be negative", i)
		}
		nn := NUMANode{ID: s.ID, CPUs: cpus, MemoryBytes: uint64(s.Memory.Value()), Distances: s.Distances}
		for j, hp := range s.HugePages {
			if hp.PageSize.Sign() <= 0 {
				return nil, fmt.Errorf("numaNodes[%d].hugepages[%d].pageSize: must be positive", i, j)
			}
			if hp.Count > 1<<40 {
				return nil, fmt.Errorf("numaNodes[%d].hugepages[%d].count: %d is implausibly large", i, j, hp.Count)
			}
			nn.HugePages = append(nn.HugePages, HugePages{PageSizeBytes: uint64(hp.PageSize.Value()), Count: hp.Count})
		}
		n.NUMANodes = append(n.NUMANodes, nn)
	}
	sort.SliceStable(n.NUMANodes, func(i, j int) bool { return n.NUMANodes[i].ID < n.NUMANodes[j].ID })

	core := map[int]int{}
	for i, s := range f.Cores {
		set, err := parseCPUs(s)
		if err != nil {
			return nil, fmt.Errorf("cores[%d]: %w", i, err)
		}
		if set.IsEmpty() {
			return nil, fmt.Errorf("cores[%d]: empty sibling group", i)
		}
		low := set.List()[0]
		for _, c := range set.List() {
			if _, ok := cpuNUMA[c]; !ok {
				return nil, fmt.Errorf("cores[%d]: CPU %d is not in any NUMA node's cpus", i, c)
			}
			if prev, ok := core[c]; ok {
				return nil, fmt.Errorf("cores[%d]: CPU %d is already a sibling in core %d", i, c, prev)
			}
			core[c] = low
		}
	}
	socket, err := groupOf("sockets", f.Sockets, cpuNUMA)
	if err != nil {
		return nil, err
	}
	uncore, err := groupOf("uncoreCaches", f.UncoreCaches, cpuNUMA)
	if err != nil {
		return nil, err
	}
	// Sorted, so that the first error reported is always the same.
	for _, c := range slices.Sorted(maps.Keys(cpuNUMA)) {
		numa := cpuNUMA[c]
		cpu := CPU{ID: c, Core: c, Socket: numa, NUMANode: numa}
		if v, ok := core[c]; ok {
			cpu.Core = v
		} else if len(f.Cores) > 0 {
			return nil, fmt.Errorf("cores: CPU %d is in no sibling group (list every CPU when cores is given)", c)
		}
		if v, ok := socket[c]; ok {
			cpu.Socket = v
		} else if len(f.Sockets) > 0 {
			return nil, fmt.Errorf("sockets: CPU %d is in no socket (list every CPU when sockets is given)", c)
		}
		cpu.Uncore = cpu.Socket
		if v, ok := uncore[c]; ok {
			cpu.Uncore = v
		} else if len(f.UncoreCaches) > 0 {
			return nil, fmt.Errorf("uncoreCaches: CPU %d is in no uncore cache (list every CPU when uncoreCaches is given)", c)
		}
		n.CPUs = append(n.CPUs, cpu)
	}
	for _, name := range slices.Sorted(maps.Keys(f.Devices)) {
		devs := f.Devices[name]
		if name == "" {
			return nil, fmt.Errorf("devices: empty resource name")
		}
		r := DeviceResource{Name: name}
		for j, d := range devs {
			dev := Device{ID: d.ID, Healthy: true}
			switch d.Health {
			case "", "Healthy":
			case "Unhealthy":
				dev.Healthy = false
			default:
				return nil, fmt.Errorf("devices[%q][%d].health: %q is not Healthy or Unhealthy", name, j, d.Health)
			}
			if d.NUMANode != nil && len(d.NUMANodes) > 0 {
				return nil, fmt.Errorf("devices[%q][%d]: set numaNode or numaNodes, not both", name, j)
			}
			if d.NUMANode != nil {
				dev.NUMANodes = []int{*d.NUMANode}
			} else if len(d.NUMANodes) > 0 {
				dev.NUMANodes = append([]int(nil), d.NUMANodes...)
			}
			r.Devices = append(r.Devices, dev)
		}
		n.Devices = append(n.Devices, r)
	}
	n.sortModel()
	if err := n.Validate(); err != nil {
		return nil, err
	}
	return n, nil
}

func groupOf(field string, groups []GroupSpec, cpuNUMA map[int]int) (map[int]int, error) {
	out := map[int]int{}
	ids := map[int]bool{}
	for i, g := range groups {
		if g.ID < 0 {
			return nil, fmt.Errorf("%s[%d].id: must not be negative", field, i)
		}
		if ids[g.ID] {
			return nil, fmt.Errorf("%s[%d].id: duplicate id %d", field, i, g.ID)
		}
		ids[g.ID] = true
		set, err := parseCPUs(g.CPUs)
		if err != nil {
			return nil, fmt.Errorf("%s[%d].cpus: %w", field, i, err)
		}
		for _, c := range set.List() {
			if _, ok := cpuNUMA[c]; !ok {
				return nil, fmt.Errorf("%s[%d].cpus: CPU %d is not in any NUMA node's cpus", field, i, c)
			}
			if prev, ok := out[c]; ok {
				return nil, fmt.Errorf("%s[%d].cpus: CPU %d already belongs to %s id %d", field, i, c, field, prev)
			}
			out[c] = g.ID
		}
	}
	return out, nil
}

// ToFile converts a Node back to its file form (for golden files and
// 'capture'-like flows).
func (n *Node) ToFile() *File {
	f := &File{APIVersion: FileAPIVersion, Kind: FileKind, Name: n.Name}
	for _, nn := range n.NUMANodes {
		s := NUMANodeSpec{ID: nn.ID, CPUs: nn.CPUs.String(), Memory: *resource.NewQuantity(int64(nn.MemoryBytes), resource.BinarySI), Distances: nn.Distances}
		for _, hp := range nn.HugePages {
			s.HugePages = append(s.HugePages, HugePagesSpec{PageSize: *resource.NewQuantity(int64(hp.PageSizeBytes), resource.BinarySI), Count: hp.Count})
		}
		f.NUMANodes = append(f.NUMANodes, s)
	}
	cores := map[int][]int{}
	sockets := map[int][]int{}
	uncores := map[int][]int{}
	smt, socketIsNUMA, uncoreIsSocket := false, true, true
	for _, c := range n.CPUs {
		cores[c.Core] = append(cores[c.Core], c.ID)
		if c.Core != c.ID {
			smt = true
		}
		sockets[c.Socket] = append(sockets[c.Socket], c.ID)
		uncores[c.Uncore] = append(uncores[c.Uncore], c.ID)
		socketIsNUMA = socketIsNUMA && c.Socket == c.NUMANode
		uncoreIsSocket = uncoreIsSocket && c.Uncore == c.Socket
	}
	if smt {
		for _, k := range sortedKeys(cores) {
			f.Cores = append(f.Cores, cpuset.New(cores[k]...).String())
		}
	}
	if !socketIsNUMA {
		for _, k := range sortedKeys(sockets) {
			f.Sockets = append(f.Sockets, GroupSpec{ID: k, CPUs: cpuset.New(sockets[k]...).String()})
		}
	}
	if !uncoreIsSocket {
		for _, k := range sortedKeys(uncores) {
			f.UncoreCaches = append(f.UncoreCaches, GroupSpec{ID: k, CPUs: cpuset.New(uncores[k]...).String()})
		}
	}
	if len(n.Devices) > 0 {
		f.Devices = map[string][]DeviceSpec{}
		for _, r := range n.Devices {
			for _, d := range r.Devices {
				s := DeviceSpec{ID: d.ID, NUMANodes: d.NUMANodes}
				if len(d.NUMANodes) == 1 {
					v := d.NUMANodes[0]
					s.NUMANode, s.NUMANodes = &v, nil
				}
				if !d.Healthy {
					s.Health = "Unhealthy"
				}
				f.Devices[r.Name] = append(f.Devices[r.Name], s)
			}
		}
	}
	return f
}

func sortedKeys(m map[int][]int) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}
