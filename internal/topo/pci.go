package topo

import (
	"context"
	"fmt"
	"maps"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"

	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/sysfmt"
)

const (
	sysPCI        = "/sys/bus/pci/devices"
	sysNet        = "/sys/class/net"
	sysInfiniband = "/sys/class/infiniband"
	// VendorNVIDIA is NVIDIA's PCI vendor id as sysfs prints it.
	VendorNVIDIA = "0x10de"
)

// isBDF reports whether s is a PCI address in sysfs form (0000:c1:00.0).
func isBDF(s string) bool {
	if len(s) != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.' {
		return false
	}
	for i, r := range s {
		if i == 4 || i == 7 || i == 10 {
			continue
		}
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return s[11] >= '0' && s[11] <= '7'
}

// lastBDF returns the last PCI address among the elements of a sysfs path or
// link target, or "".
func lastBDF(p string) string {
	parts := strings.Split(p, "/")
	for i := len(parts) - 1; i >= 0; i-- {
		if isBDF(parts[i]) {
			return parts[i]
		}
	}
	return ""
}

// classify maps a PCI class and vendor to a device kind, or "".
func classify(class, vendor string) string {
	class = strings.ToLower(strings.TrimPrefix(class, "0x"))
	if len(class) < 4 {
		return ""
	}
	switch {
	case vendor == VendorNVIDIA && (strings.HasPrefix(class, "0300") || strings.HasPrefix(class, "0302")):
		return KindGPU
	case vendor == VendorNVIDIA && strings.HasPrefix(class, "0680"):
		return KindNVSwitch
	case strings.HasPrefix(class, "0200") || strings.HasPrefix(class, "0207"):
		return KindNIC
	case strings.HasPrefix(class, "010802"):
		return KindNVMe
	}
	return ""
}

// PCIIDs are a PCI function's ids, lower case: class ("0x030200"), vendor
// ("0x10de") and, when the modalias gave it, device ("0x2330").
type PCIIDs struct {
	Class, Vendor, Device string
	// FromModalias says the ids came from the modalias attribute (Device
	// is then set).
	FromModalias bool
}

// Kind is the device kind discovery gives a function with these ids
// (KindGPU, KindNIC, KindNVMe, KindNVSwitch), or "".
func (ids PCIIDs) Kind() string { return classify(ids.Class, ids.Vendor) }

// ReadPCIIDs reads the ids of the PCI function in sysfs directory dir
// (/sys/bus/pci/devices/<bdf>). The kernel's modalias attribute holds
// vendor, device and class in one file
// ("pci:v000010DEd00002330sv000010DEsd000016C1bc03sc02i00"), printed from
// the same fields as the vendor, device and class attributes, so one read
// replaces three for every function a scan of the bus looks at. A tree
// without modalias (an older capture), or one the parser does not
// recognise, is read from class and, for the classes gpunode looks at
// (display, network, NVMe, other bridge), vendor; the error is theirs.
// Vendor is empty for other classes then.
func ReadPCIIDs(fsys *hostfs.FS, dir string) (PCIIDs, error) {
	if s, err := fsys.ReadString(dir + "/modalias"); err == nil {
		if ids, ok := parseModalias(s); ok {
			return ids, nil
		}
	}
	class, err := fsys.ReadString(dir + "/class")
	if err != nil {
		return PCIIDs{}, err
	}
	class = strings.ToLower(class)
	if c := strings.TrimPrefix(class, "0x"); !(strings.HasPrefix(c, "03") || strings.HasPrefix(c, "0680") || strings.HasPrefix(c, "02") || strings.HasPrefix(c, "0108")) {
		return PCIIDs{Class: class}, nil
	}
	vendor, err := fsys.ReadString(dir + "/vendor")
	if err != nil {
		return PCIIDs{}, err
	}
	return PCIIDs{Class: class, Vendor: strings.ToLower(vendor)}, nil
}

// parseModalias reads a PCI modalias as the kernel prints it:
// "pci:v%08Xd%08Xsv%08Xsd%08Xbc%02Xsc%02Xi%02X". Vendor and device ids are
// 16-bit, so their first four digits must be 0.
func parseModalias(s string) (PCIIDs, bool) {
	// Field markers and the offset of the hex digits after each.
	const want = len("pci:v00000000d00000000sv00000000sd00000000bc00sc00i00")
	if len(s) != want || !strings.HasPrefix(s, "pci:v") {
		return PCIIDs{}, false
	}
	fields := []struct {
		mark   string
		at, n  int
		keepLo bool // a 16-bit id in 8 digits: keep the last 4
	}{
		{"v", 4, 8, true}, {"d", 13, 8, true}, {"sv", 22, 8, false}, {"sd", 32, 8, false},
		{"bc", 42, 2, false}, {"sc", 46, 2, false}, {"i", 50, 2, false},
	}
	var hex [7]string
	for i, f := range fields {
		if s[f.at:f.at+len(f.mark)] != f.mark {
			return PCIIDs{}, false
		}
		h := s[f.at+len(f.mark) : f.at+len(f.mark)+f.n]
		for _, r := range h {
			if !(r >= '0' && r <= '9' || r >= 'A' && r <= 'F' || r >= 'a' && r <= 'f') {
				return PCIIDs{}, false
			}
		}
		if f.keepLo {
			if h[:4] != "0000" {
				return PCIIDs{}, false
			}
			h = h[4:]
		}
		hex[i] = h
	}
	return PCIIDs{
		Vendor:       "0x" + strings.ToLower(hex[0]),
		Device:       "0x" + strings.ToLower(hex[1]),
		Class:        "0x" + strings.ToLower(hex[4]+hex[5]+hex[6]),
		FromModalias: true,
	}, true
}

// classNames maps PCI addresses to the class device names linked to them
// (network interfaces or InfiniBand devices).
func (d *discoverer) classNames(dir string) map[string][]string {
	out := map[string][]string{}
	// One descriptor for the listing and every link read beneath it.
	cd := d.fs.Dir(dir)
	defer cd.Close()
	names, err := cd.ReadDirNames(".")
	if err != nil {
		d.warnErr(dir, err, true)
		return out
	}
	for _, n := range names {
		target, err := cd.Readlink(n)
		if err != nil {
			d.warnErr(dir+"/"+n, err, false)
			continue
		}
		if strings.Contains(target, "/virtual/") {
			continue
		}
		if bdf := lastBDF(target); bdf != "" {
			out[bdf] = append(out[bdf], n)
		}
	}
	return out
}

func (d *discoverer) pci(ctx context.Context) error {
	t := d.t
	names, err := d.fs.ReadDirNames(sysPCI)
	if err != nil {
		d.warnErr(sysPCI, err, true)
		return nil
	}
	netdevs := d.classNames(sysNet)
	ibdevs := d.classNames(sysInfiniband)
	type candidate struct {
		bdf, kind string
		ids       PCIIDs
	}
	var cands []candidate
	for _, bdf := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		dir := sysPCI + "/" + bdf
		ids, err := ReadPCIIDs(d.fs, dir)
		if err != nil {
			d.warnErr(dir, err, false)
			continue
		}
		if kind := ids.Kind(); kind != "" {
			cands = append(cands, candidate{bdf, kind, ids})
		}
	}
	// Reading a device is a dozen independent system calls: spread the
	// devices over fanOut workers, each with its own warnings, merged back
	// in PCI order.
	devs := make([]PCIDevice, len(cands))
	warns := make([][]Warning, len(cands))
	next := make(chan int, len(cands))
	for i := range cands {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	// Each worker has its own cache of parsed CPU lists, seeded with the
	// NUMA nodes' lists d parsed; the first uses d's (d waits for them).
	if d.lists == nil {
		d.lists = map[string]cpuset.CPUSet{}
	}
	caches := make([]map[string]cpuset.CPUSet, min(fanOut(), len(cands)))
	for w := range caches {
		caches[w] = d.lists
		if w > 0 {
			caches[w] = maps.Clone(d.lists)
		}
	}
	for _, lists := range caches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if ctx.Err() != nil {
					return // pci returns the context's error
				}
				c := cands[i]
				wd := &discoverer{ctx: ctx, fs: d.fs, t: t, lists: lists}
				dev := wd.device(c.bdf, c.kind, c.ids)
				switch c.kind {
				case KindNIC:
					dev.NetDevs, dev.IBDevs = netdevs[c.bdf], ibdevs[c.bdf]
					dev.LinkLayer = wd.linkLayer(c.ids.Class, dev.IBDevs)
				case KindNVMe:
					if ctrls, err := wd.fs.ReadDirNames(sysPCI + "/" + c.bdf + "/nvme"); err == nil && len(ctrls) > 0 {
						dev.Name = ctrls[0]
					}
				}
				devs[i], warns[i] = dev, wd.warnings
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	for i, dev := range devs {
		d.warnings = append(d.warnings, warns[i]...)
		switch dev.Kind {
		case KindGPU:
			t.GPUs = append(t.GPUs, dev)
		case KindNIC:
			t.NICs = append(t.NICs, dev)
		case KindNVMe:
			t.NVMe = append(t.NVMe, dev)
		case KindNVSwitch:
			t.NVSwitches = append(t.NVSwitches, dev)
		}
	}
	name := func(list []PCIDevice, prefix string) {
		sort.Slice(list, func(i, j int) bool { return list[i].BDF < list[j].BDF })
		for i := range list {
			list[i].Index = i
			if list[i].Name == "" {
				list[i].Name = fmt.Sprintf("%s%d", prefix, i)
			}
		}
	}
	for i := range t.NICs {
		switch n := &t.NICs[i]; {
		case len(n.IBDevs) > 0:
			n.Name = n.IBDevs[0]
		case len(n.NetDevs) > 0:
			n.Name = n.NetDevs[0]
		}
	}
	name(t.GPUs, "GPU")
	for i := range t.GPUs {
		t.GPUs[i].Name = fmt.Sprintf("GPU%d", i)
	}
	name(t.NICs, "NIC")
	name(t.NVMe, "NVMe")
	name(t.NVSwitches, "NVSwitch")
	return nil
}

func (d *discoverer) linkLayer(class string, ibdevs []string) string {
	if strings.HasPrefix(strings.TrimPrefix(strings.ToLower(class), "0x"), "0207") {
		return "infiniband"
	}
	for _, ib := range ibdevs {
		p := sysInfiniband + "/" + ib + "/ports/1/link_layer"
		if s, err := d.fs.ReadString(p); err == nil {
			return strings.ToLower(s)
		}
	}
	return "ethernet"
}

func (d *discoverer) device(bdf, kind string, ids PCIIDs) PCIDevice {
	dir := sysPCI + "/" + bdf
	a := d.fs.Dir(dir)
	defer a.Close()
	dev := PCIDevice{Kind: kind, BDF: bdf, VendorID: ids.Vendor, Class: ids.Class, DeviceID: ids.Device, NUMANode: -1, NUMASource: NUMAUnknown}
	if !ids.FromModalias {
		dev.DeviceID = strings.ToLower(d.optAttr(a, "device"))
	}
	if drv, err := a.Readlink("driver"); err == nil {
		dev.Driver = path.Base(drv)
	}
	if resolved, err := a.Real(); err != nil {
		d.warnErr(dir, err, false)
	} else {
		dev.SysfsPath = resolved
		dev.PCIePath = pciePath(resolved)
	}
	s, err := a.ReadString("local_cpulist")
	local, ok := d.parsedList(dir+"/local_cpulist", s, err, true)
	if !ok {
		if s, err := a.ReadString("local_cpus"); err == nil {
			if set, err := sysfmt.ParseCPUMask(s); err == nil {
				local = set
			}
		}
	}
	dev.LocalCPUs = CPUList{local}
	if n, err := a.ReadInt("numa_node"); err == nil && n >= 0 {
		dev.NUMANode, dev.NUMASource = int(n), NUMAFromSysfs
	} else {
		if err != nil {
			d.warnErr(dir+"/numa_node", err, true)
		}
		dev.NUMANode, dev.NUMASource = d.inferNode(local)
	}
	dev.LinkSpeed = ParsePCIeSpeed(d.optAttr(a, "current_link_speed"))
	dev.MaxLinkSpeed = ParsePCIeSpeed(d.optAttr(a, "max_link_speed"))
	dev.LinkWidth = d.optIntAttr(a, "current_link_width")
	dev.MaxLinkWidth = d.optIntAttr(a, "max_link_width")
	cur, top := dev.LinkSpeed.GTs, dev.MaxLinkSpeed.GTs
	if (dev.LinkWidth > 0 && dev.MaxLinkWidth > 0 && dev.LinkWidth < dev.MaxLinkWidth) || (cur > 0 && top > 0 && cur < top) {
		dev.LinkDowngraded = true
	}
	if irqs, err := a.ReadDirNames("msi_irqs"); err == nil {
		for _, s := range irqs {
			if n, err := strconv.Atoi(s); err == nil {
				dev.IRQs = append(dev.IRQs, n)
			}
		}
		sort.Ints(dev.IRQs)
	}
	if len(dev.IRQs) == 0 {
		if n, err := a.ReadInt("irq"); err == nil && n > 0 {
			dev.IRQs = []int{int(n)}
		}
	}
	return dev
}

// optAttr reads an optional attribute; a missing one is "", another
// problem a warning.
func (d *discoverer) optAttr(a *hostfs.Dir, name string) string {
	s, err := a.ReadString(name)
	if err != nil {
		d.warnErr(a.Path()+"/"+name, err, true)
		return ""
	}
	return s
}

func (d *discoverer) optIntAttr(a *hostfs.Dir, name string) int {
	n, err := a.ReadInt(name)
	if err != nil {
		d.warnErr(a.Path()+"/"+name, err, true)
		return 0
	}
	return int(n)
}

// inferNode finds a device's NUMA node from its local CPUs when numa_node is
// -1, as the chapter's fallback chain does.
func (d *discoverer) inferNode(local cpuset.CPUSet) (int, string) {
	withCPUs := 0
	for _, n := range d.t.NUMANodes {
		if n.CPUs.Size() > 0 {
			withCPUs++
		}
	}
	if withCPUs == 1 {
		for _, n := range d.t.NUMANodes {
			if n.CPUs.Size() > 0 {
				return n.ID, NUMAFromSingleNode
			}
		}
	}
	if local.IsEmpty() {
		return -1, NUMAUnknown
	}
	match := -1
	for _, n := range d.t.NUMANodes {
		if n.CPUs.Intersection(local).IsEmpty() {
			continue
		}
		if match >= 0 {
			return -1, NUMAUnknown
		}
		match = n.ID
	}
	if match < 0 {
		return -1, NUMAUnknown
	}
	return match, NUMAFromLocalCPUList
}

// pciePath returns the root complex and the PCI addresses from a resolved
// device path ("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0").
func pciePath(resolved string) []string {
	var out []string
	for _, part := range strings.Split(resolved, "/") {
		switch {
		case strings.HasPrefix(part, "pci") && len(part) > 3 && strings.Contains(part, ":"):
			out = []string{part}
		case isBDF(part) && len(out) > 0:
			out = append(out, part)
		}
	}
	return out
}
