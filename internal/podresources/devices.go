package podresources

import (
	"strconv"
	"strings"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/topo"
)

// HostGPU is one GPU of this node as the topology and the GPU backend see
// it: what device ids are matched against.
type HostGPU struct {
	// Index is the GPU's index in PCI order (nvidia-smi's numbering).
	Index int
	BDF   string
	UUID  string
	// NUMANode is the GPU's NUMA node; nil when unknown.
	NUMANode *int
	// MIG are the UUIDs of its MIG devices.
	MIG []string
}

// HostGPUs joins the topology's GPUs (PCI order, NUMA node from sysfs) with
// the backend's status (UUIDs, MIG devices); either may be nil. A GPU the
// backend lists but the topology does not keeps the backend's NUMA node.
func HostGPUs(t *topo.Topology, st *gpu.Status) []HostGPU {
	var out []HostGPU
	byBDF := map[string]int{}
	if t != nil {
		for _, d := range t.GPUs {
			g := HostGPU{Index: d.Index, BDF: d.BDF}
			if d.NUMANode >= 0 {
				n := d.NUMANode
				g.NUMANode = &n
			}
			byBDF[strings.ToLower(d.BDF)] = len(out)
			out = append(out, g)
		}
	}
	if st == nil {
		return out
	}
	for _, s := range st.GPUs {
		i, ok := byBDF[strings.ToLower(s.PCIAddress)]
		if !ok {
			g := HostGPU{Index: s.Index, BDF: s.PCIAddress}
			if s.NUMANode != nil {
				n := *s.NUMANode
				g.NUMANode = &n
			}
			i = len(out)
			out = append(out, g)
		}
		g := &out[i]
		g.UUID = s.UUID
		if g.NUMANode == nil && s.NUMANode != nil {
			n := *s.NUMANode
			g.NUMANode = &n
		}
		for _, gi := range s.MIGInstances {
			for _, ci := range gi.ComputeInstances {
				if ci.UUID != "" {
					g.MIG = append(g.MIG, ci.UUID)
				}
			}
		}
	}
	return out
}

// Device id kinds, as the NVIDIA device plugin advertises them.
const (
	IDGPU     = "gpu"     // GPU-<uuid>
	IDMIG     = "mig"     // MIG-<uuid>, or MIG-GPU-<uuid>/<gi>/<ci> (drivers before R470)
	IDIndex   = "index"   // N, or N:M for a MIG device (--device-id-strategy=index)
	IDUnknown = "unknown" // anything else: only kubelet's topology places it
)

// DeviceID is one parsed device id.
type DeviceID struct {
	Kind string
	// Value is the id without its replica suffix.
	Value string
	// Replica is the time-slicing replica ("<id>::<replica>"), -1 when
	// the id has none.
	Replica int
	// ParentUUID is the GPU UUID a legacy MIG id names; Index the GPU index
	// of an index id.
	ParentUUID string
	Index      int
}

// ParseDeviceID reads a device plugin's device id.
func ParseDeviceID(id string) DeviceID {
	d := DeviceID{Kind: IDUnknown, Value: id, Replica: -1, Index: -1}
	if base, rep, ok := strings.Cut(id, "::"); ok {
		if n, err := strconv.Atoi(rep); err == nil && n >= 0 {
			d.Value, d.Replica = base, n
		}
	}
	v := d.Value
	switch {
	case strings.HasPrefix(v, "MIG-GPU-"):
		d.Kind = IDMIG
		parent, _, _ := strings.Cut(strings.TrimPrefix(v, "MIG-"), "/")
		d.ParentUUID = parent
	case strings.HasPrefix(v, "MIG-"):
		d.Kind = IDMIG
	case strings.HasPrefix(v, "GPU-"):
		d.Kind = IDGPU
	default:
		gpuPart, _, isMIG := strings.Cut(v, ":")
		if n, err := strconv.Atoi(gpuPart); err == nil && n >= 0 && n < 1<<16 && gpuPart == strconv.Itoa(n) {
			if !isMIG {
				d.Kind, d.Index = IDIndex, n
			} else if _, err := strconv.Atoi(v[len(gpuPart)+1:]); err == nil {
				d.Kind, d.Index = IDIndex, n
			}
		}
	}
	return d
}

// Match finds the host GPU a device id names; -1 when none does.
func (d DeviceID) Match(gpus []HostGPU) int {
	for i, g := range gpus {
		switch d.Kind {
		case IDGPU:
			if g.UUID != "" && strings.EqualFold(g.UUID, d.Value) {
				return i
			}
		case IDMIG:
			if d.ParentUUID != "" {
				if g.UUID != "" && strings.EqualFold(g.UUID, d.ParentUUID) {
					return i
				}
				continue
			}
			for _, m := range g.MIG {
				if strings.EqualFold(m, d.Value) {
					return i
				}
			}
		case IDIndex:
			if g.Index == d.Index {
				return i
			}
		}
	}
	return -1
}

// IsGPUResource reports whether an extended resource is an NVIDIA GPU or a
// share of one: nvidia.com/gpu, a renamed time-sliced resource
// (nvidia.com/gpu.shared) or a MIG resource (nvidia.com/mig-1g.10gb); other
// resources count when their ids are GPU or MIG UUIDs.
func IsGPUResource(name string, ids []string) bool {
	if strings.HasPrefix(name, "nvidia.com/gpu") || strings.HasPrefix(name, "nvidia.com/mig-") {
		return true
	}
	for _, id := range ids {
		if k := ParseDeviceID(id).Kind; k == IDGPU || k == IDMIG {
			return true
		}
	}
	return false
}
