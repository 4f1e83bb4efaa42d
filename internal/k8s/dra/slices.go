package dra

import (
	"fmt"
	"io"
	"regexp"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/mig"
	"github.com/gpunode/gpunode/internal/output"
	"github.com/gpunode/gpunode/internal/topo"
)

// DriverName is the NVIDIA DRA driver's name.
const DriverName = "gpu.nvidia.com"

// Standard attributes (k8s.io/dynamic-resource-allocation/deviceattribute).
const (
	AttrPCIBusID = "resource.kubernetes.io/pciBusID"
	AttrPCIeRoot = "resource.kubernetes.io/pcieRoot"
	AttrNUMANode = "resource.kubernetes.io/numaNode"
)

// MIG modes of `k8s dra slices`.
const (
	MIGNone    = "none"
	MIGStatic  = "static"
	MIGDynamic = "dynamic"
)

// SliceOptions are the inputs of Slices.
type SliceOptions struct {
	NodeName string
	MIG      string
	Topology *topo.Topology
	Status   gpu.Status
	Catalog  *mig.Catalogue
}

// SliceList is `k8s dra slices` output: a v1 List of ResourceSlices that
// kubectl and `k8s dra allocate --slices` read back.
type SliceList struct {
	APIVersion string                      `json:"apiVersion"`
	Kind       string                      `json:"kind"`
	Items      []resourceapi.ResourceSlice `json:"items"`
	Warnings   []string                    `json:"-"`
}

// WriteTable lists the devices of every slice.
func (l *SliceList) WriteTable(w io.Writer, o output.Options) error {
	g := output.NewGrid("SLICE", "DEVICE", "TYPE", "PROFILE", "PCIE ROOT", "COUNTERS")
	for _, s := range l.Items {
		for _, cs := range s.Spec.SharedCounters {
			g.AddRow(s.Name, "(counter set) "+cs.Name, "-", "-", "-", fmt.Sprintf("%d counters", len(cs.Counters)))
		}
		for _, d := range s.Spec.Devices {
			str := func(k resourceapi.QualifiedName) string {
				if a, ok := d.Attributes[k]; ok && a.StringValue != nil {
					return *a.StringValue
				}
				return "-"
			}
			cons := "-"
			if len(d.ConsumesCounters) > 0 {
				cons = d.ConsumesCounters[0].CounterSet
			}
			g.AddRow(s.Name, d.Name, str("type"), str("profile"), str(AttrPCIeRoot), cons)
		}
	}
	return output.Print(w, g, o)
}

// ListItems implements output.Lister: one row per ResourceSlice, as
// kubectl's custom-columns over a List.
func (l *SliceList) ListItems() any { return l.Items }

// engines is gpunode's model of a MIG profile's engines (NVIDIA's published
// A100/H100 MIG tables: one copy engine, decoder and JPEG engine per
// compute slice on Hopper and newer, 8 copy engines for the full 7g; on
// Ampere decoders 0/1/2/2/5 and JPEG/OFA only on 7g; OFA on 7g and +me).
type engines struct{ sms, copy, dec, enc, jpeg, ofa int64 }

func profileEngines(arch string, p mig.Profile, product *mig.Product, gpuSMs int) engines {
	g := int64(p.ComputeSlices)
	e := engines{sms: int64(p.SMs), copy: g, dec: g, jpeg: g}
	if e.sms == 0 && product.ComputeSlices > 0 {
		e.sms = int64(gpuSMs * p.ComputeSlices / product.ComputeSlices)
	}
	full := p.ComputeSlices == product.ComputeSlices
	if strings.EqualFold(arch, "ampere") {
		e.dec = map[int]int64{2: 1, 3: 2, 4: 2, 7: 5}[p.ComputeSlices] // 1g: none
		e.jpeg = 0
		if full {
			e.jpeg = 1
		}
	} else if full && p.ComputeSlices == 7 {
		e.copy = 8
	}
	if full || p.MediaExtensions {
		e.ofa = 1
		if p.MediaExtensions {
			e.dec, e.jpeg = max(e.dec, 1), max(e.jpeg, 1)
		}
	}
	return e
}

func qty(v int64) resource.Quantity { return *resource.NewQuantity(v, resource.DecimalSI) }

func bytesQty(mib int64) resource.Quantity {
	return *resource.NewQuantity(mib*1024*1024, resource.BinarySI)
}

var rfc1123Bad = regexp.MustCompile(`[^a-z0-9-]`)

// MIGDeviceName is the driver's name of a dynamic MIG placement:
// gpu-<minor>-mig-<profile without dots, RFC 1123>-<profile id>-<start>.
func MIGDeviceName(minor int, profile string, id, start int) string {
	p := strings.Trim(rfc1123Bad.ReplaceAllString(strings.ToLower(strings.ReplaceAll(profile, ".", "")), "-"), "-")
	return fmt.Sprintf("gpu-%d-mig-%s-%d-%d", minor, p, id, start)
}

func semverOf(v string) string {
	parts := strings.Split(v, ".")
	for len(parts) < 3 {
		parts = append(parts, "0")
	}
	for i, p := range parts {
		p = strings.TrimLeft(p, "0")
		if p == "" {
			p = "0"
		}
		parts[i] = p
	}
	return strings.Join(parts[:3], ".")
}

// Slices builds the ResourceSlices the NVIDIA DRA driver would publish.
func Slices(o SliceOptions) (*SliceList, error) {
	if o.NodeName == "" {
		return nil, fmt.Errorf("no node name")
	}
	switch o.MIG {
	case MIGNone, MIGStatic, MIGDynamic:
	default:
		return nil, fmt.Errorf("--mig %q: want none, static or dynamic", o.MIG)
	}
	l := &SliceList{APIVersion: "v1", Kind: "List", Items: []resourceapi.ResourceSlice{}}
	pcie := map[string]*topo.PCIDevice{}
	if o.Topology != nil {
		for i := range o.Topology.GPUs {
			d := &o.Topology.GPUs[i]
			pcie[d.BDF] = d
		}
	}
	type gpuDevices struct {
		devs []resourceapi.Device
		sets []resourceapi.CounterSet
	}
	var per []gpuDevices
	for _, g := range o.Status.GPUs {
		common := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"productName":  {StringValue: ptr.To(g.Name)},
			"brand":        {StringValue: ptr.To("Nvidia")},
			"architecture": {StringValue: ptr.To(g.Architecture)},
		}
		if g.ComputeCapability != "" {
			common["cudaComputeCapability"] = resourceapi.DeviceAttribute{VersionValue: ptr.To(semverOf(g.ComputeCapability))}
		}
		if o.Status.DriverVersion != "" {
			common["driverVersion"] = resourceapi.DeviceAttribute{VersionValue: ptr.To(semverOf(o.Status.DriverVersion))}
		}
		if o.Status.CUDAVersion != "" {
			common["cudaDriverVersion"] = resourceapi.DeviceAttribute{VersionValue: ptr.To(semverOf(o.Status.CUDAVersion))}
		}
		if g.PCIAddress != "" {
			common[AttrPCIBusID] = resourceapi.DeviceAttribute{StringValue: ptr.To(g.PCIAddress)}
		}
		if d := pcie[g.PCIAddress]; d != nil && len(d.PCIePath) > 0 && strings.HasPrefix(d.PCIePath[0], "pci") {
			common[AttrPCIeRoot] = resourceapi.DeviceAttribute{StringValue: ptr.To(d.PCIePath[0])}
		} else {
			l.Warnings = append(l.Warnings, fmt.Sprintf("GPU %d (%s): no PCIe root complex in the topology: no %s attribute", g.Index, g.PCIAddress, AttrPCIeRoot))
		}
		numa := g.NUMANode
		if numa == nil {
			if d := pcie[g.PCIAddress]; d != nil && d.NUMANode >= 0 {
				numa = ptr.To(d.NUMANode)
			}
		}
		if numa != nil && *numa >= 0 {
			common[AttrNUMANode] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(*numa))}
		}
		attrs := func(kind string, extra map[resourceapi.QualifiedName]resourceapi.DeviceAttribute) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
			m := make(map[resourceapi.QualifiedName]resourceapi.DeviceAttribute, len(common)+len(extra)+1)
			for k, v := range common {
				m[k] = v
			}
			for k, v := range extra {
				m[k] = v
			}
			m["type"] = resourceapi.DeviceAttribute{StringValue: ptr.To(kind)}
			return m
		}
		full := resourceapi.Device{Name: fmt.Sprintf("gpu-%d", g.Index),
			Attributes: attrs("gpu", map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"uuid": {StringValue: ptr.To(g.UUID)}}),
			Capacity:   map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: bytesQty(int64(g.MemoryBytes >> 20))}}}
		var product *mig.Product
		if o.Catalog != nil && (o.MIG != MIGNone) {
			if p, err := o.Catalog.Lookup(g.Name); err == nil {
				product = p
			}
		}
		migOn := g.MIG != nil && g.MIG.Current
		var gd gpuDevices
		switch {
		case o.MIG == MIGStatic && migOn:
			for _, inst := range g.MIGInstances {
				if product == nil {
					l.Warnings = append(l.Warnings, fmt.Sprintf("GPU %d: %q is not in the MIG catalogue: its MIG devices are left out", g.Index, g.Name))
					break
				}
				pi, ok := product.ProfileByID(inst.ProfileID)
				if !ok {
					return nil, fmt.Errorf("GPU %d: MIG instance %d: profile id %d not in the catalogue for %s", g.Index, inst.GPUInstanceID, inst.ProfileID, product.Key)
				}
				p := product.Profiles[pi]
				uuid := ""
				for _, ci := range inst.ComputeInstances {
					if ci.UUID != "" {
						uuid = ci.UUID
						break
					}
				}
				e := profileEngines(g.Architecture, p, product, g.SMCount)
				capa := migCapacity(e, int64(p.MemoryGB)*1024, true, inst.Start, inst.Size)
				gd.devs = append(gd.devs, resourceapi.Device{
					Name: fmt.Sprintf("gpu-%d-mig-%d-%d-%d", g.Index, inst.ProfileID, inst.Start, inst.Size),
					Attributes: attrs("mig", map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
						"uuid": {StringValue: ptr.To(uuid)}, "parentUUID": {StringValue: ptr.To(g.UUID)}, "profile": {StringValue: ptr.To(p.Name)}}),
					Capacity: capa})
			}
		case o.MIG == MIGDynamic && product != nil:
			set := fmt.Sprintf("gpu-%d-counter-set", g.Index)
			fullE := engines{}
			for _, p := range product.Profiles {
				e := profileEngines(g.Architecture, p, product, g.SMCount)
				fullE = engines{max(fullE.sms, e.sms), max(fullE.copy, e.copy), max(fullE.dec, e.dec), max(fullE.enc, e.enc), max(fullE.jpeg, e.jpeg), max(fullE.ofa, e.ofa)}
			}
			// The memory counter holds the GPU's memory or the largest
			// profile's (catalogue sizes are nominal GB), whichever is more.
			memMiB := int64(g.MemoryBytes >> 20)
			for _, p := range product.Profiles {
				memMiB = max(memMiB, int64(p.MemoryGB)*1024)
			}
			counters := migCounters(fullE, memMiB, 0, product.MemorySlices)
			gd.sets = append(gd.sets, resourceapi.CounterSet{Name: set, Counters: counters})
			full.Capacity = migCapacity(fullE, memMiB, false, 0, 0)
			full.ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: set, Counters: migCounters(fullE, memMiB, 0, product.MemorySlices)}}
			gd.devs = append(gd.devs, full)
			for _, p := range product.Profiles {
				e := profileEngines(g.Architecture, p, product, g.SMCount)
				mem := int64(p.MemoryGB) * 1024
				for _, st := range p.Starts {
					gd.devs = append(gd.devs, resourceapi.Device{
						Name: MIGDeviceName(g.Index, p.Name, p.ID, st),
						Attributes: attrs("mig", map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
							"parentUUID": {StringValue: ptr.To(g.UUID)}, "profile": {StringValue: ptr.To(p.Name)}}),
						Capacity:         migCapacity(e, mem, false, 0, 0),
						ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: set, Counters: migCounters(e, mem, st, p.MemorySlices)}},
					})
				}
			}
		case migOn:
			l.Warnings = append(l.Warnings, fmt.Sprintf("GPU %d is in MIG mode: with --mig none it is published as a full GPU", g.Index))
			gd.devs = append(gd.devs, full)
		default:
			gd.devs = append(gd.devs, full)
		}
		per = append(per, gd)
	}
	node := o.NodeName
	mk := func(name string) resourceapi.ResourceSlice {
		return resourceapi.ResourceSlice{
			TypeMeta:   metav1.TypeMeta{APIVersion: GroupVersionV1, Kind: "ResourceSlice"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: resourceapi.ResourceSliceSpec{Driver: DriverName, NodeName: ptr.To(node),
				Pool: resourceapi.ResourcePool{Name: node, Generation: 1}},
		}
	}
	base := strings.ReplaceAll(node, ".", "-") + "-" + strings.ReplaceAll(DriverName, ".", "-")
	if o.MIG == MIGDynamic {
		// The driver's split layout: counter sets in their own slices (at
		// most ResourceSliceMaxCounterSets each), then one slice per GPU.
		var sets []resourceapi.CounterSet
		for _, gd := range per {
			sets = append(sets, gd.sets...)
		}
		for i := 0; i < len(sets); i += resourceapi.ResourceSliceMaxCounterSets {
			s := mk(fmt.Sprintf("%s-counters-%d", base, i/resourceapi.ResourceSliceMaxCounterSets))
			s.Spec.SharedCounters = sets[i:min(i+resourceapi.ResourceSliceMaxCounterSets, len(sets))]
			l.Items = append(l.Items, s)
		}
		for i, gd := range per {
			for j := 0; j < len(gd.devs); j += resourceapi.ResourceSliceMaxDevicesWithAdvancedFeatures {
				s := mk(fmt.Sprintf("%s-gpu-%d-%d", base, o.Status.GPUs[i].Index, j/resourceapi.ResourceSliceMaxDevicesWithAdvancedFeatures))
				s.Spec.Devices = gd.devs[j:min(j+resourceapi.ResourceSliceMaxDevicesWithAdvancedFeatures, len(gd.devs))]
				l.Items = append(l.Items, s)
			}
		}
	} else {
		var devs []resourceapi.Device
		for _, gd := range per {
			devs = append(devs, gd.devs...)
		}
		for j := 0; j < len(devs) || j == 0; j += resourceapi.ResourceSliceMaxDevices {
			s := mk(fmt.Sprintf("%s-%d", base, j/resourceapi.ResourceSliceMaxDevices))
			s.Spec.Devices = devs[j:min(j+resourceapi.ResourceSliceMaxDevices, len(devs))]
			if len(s.Spec.Devices) == 0 {
				s.Spec.Devices = nil
			}
			l.Items = append(l.Items, s)
			if len(devs) == 0 {
				break
			}
		}
	}
	for i := range l.Items {
		l.Items[i].Spec.Pool.ResourceSliceCount = int64(len(l.Items))
	}
	return l, nil
}

func migCapacity(e engines, memMiB int64, withSlices bool, start, size int) map[resourceapi.QualifiedName]resourceapi.DeviceCapacity {
	m := map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
		"multiprocessors": {Value: qty(e.sms)},
		"copyEngines":     {Value: qty(e.copy)},
		"decoders":        {Value: qty(e.dec)},
		"encoders":        {Value: qty(e.enc)},
		"jpegEngines":     {Value: qty(e.jpeg)},
		"ofaEngines":      {Value: qty(e.ofa)},
		"memory":          {Value: bytesQty(memMiB)},
	}
	if withSlices {
		for i := start; i < start+size; i++ {
			m[resourceapi.QualifiedName(fmt.Sprintf("memorySlice%d", i))] = resourceapi.DeviceCapacity{Value: qty(1)}
		}
	}
	return m
}

func migCounters(e engines, memMiB int64, start, size int) map[string]resourceapi.Counter {
	m := map[string]resourceapi.Counter{
		"multiprocessors": {Value: qty(e.sms)},
		"copy-engines":    {Value: qty(e.copy)},
		"decoders":        {Value: qty(e.dec)},
		"encoders":        {Value: qty(e.enc)},
		"jpeg-engines":    {Value: qty(e.jpeg)},
		"ofa-engines":     {Value: qty(e.ofa)},
		"memory":          {Value: bytesQty(memMiB)},
	}
	for i := start; i < start+size; i++ {
		m[fmt.Sprintf("memory-slice-%d", i)] = resourceapi.Counter{Value: qty(1)}
	}
	return m
}
