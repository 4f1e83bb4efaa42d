package testhost

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"k8s.io/utils/cpuset"
)

// Spec describes a synthetic host.
type Spec struct {
	Name     string
	Hostname string
	Kernel   string
	CPUModel string
	// CPU layout: CPUs are numbered like Linux does on x86 servers: all
	// first threads of every core of every socket, then the second threads.
	Sockets        int
	CoresPerSocket int
	ThreadsPerCore int
	NodesPerSocket int // NUMA nodes per socket (NPS on AMD, SNC on Intel)
	CoresPerL3     int // cores sharing one L3; 0 = one L3 per socket
	L3SizeKB       int
	MemPerNodeKB   uint64
	// ExtraNodes are CPU-less NUMA nodes after the CPU nodes (GPU HBM on GH200).
	ExtraNodes []MemNode
	// Distance returns the NUMA distance between nodes i and j.
	Distance func(i, j int) int
	Isolated string // cpulist
	NohzFull string // cpulist; "" writes "(null)"
	// BootArgs are kernel arguments beyond the stock install's, in
	// /proc/cmdline and GRUB_CMDLINE_LINUX_DEFAULT (stock.go).
	BootArgs string
	// Hugepages2M per NUMA node (same for all nodes).
	Hugepages2M int
	Devices     []Device
	// Files are extra host files (path -> content), e.g. /proc/sys knobs.
	Files map[string]string
}

// MemNode is a CPU-less NUMA node.
type MemNode struct {
	MemKB uint64
}

// Device is a PCI function and the bridges above it.
type Device struct {
	BDF string
	// RootComplex is the host bridge directory name ("pci0000:15").
	RootComplex string
	// Bridges lists the PCI addresses of the bridges between the root complex
	// and the device, root port first.
	Bridges     []string
	Vendor      string // "0x10de"
	DeviceID    string // "0x2330"
	Class       string // "0x030200"
	Driver      string
	NUMANode    int    // written to numa_node; -1 allowed
	LocalCPUs   string // cpulist; "" = the CPUs of NUMANode (all CPUs if -1)
	Speed       string // "32.0 GT/s PCIe"
	MaxSpeed    string
	Width       int
	MaxWidth    int
	IRQs        []int
	NetDevs     []string
	IBDevs      []string
	IBLinkLayer string // "InfiniBand" or "Ethernet"
	NVMe        string // controller name
}

// tree accumulates files and links.
type tree struct {
	files map[string]string
	links map[string]string // host path -> absolute host target
	dirs  map[string]bool
}

func (t *tree) file(p, content string) { t.files[p] = content }
func (t *tree) link(p, target string)  { t.links[p] = target }
func (t *tree) dir(p string)           { t.dirs[p] = true }

// Expected returns the snapshot (see Snapshot, directories left out) that
// Write(spec, dir) produces, without touching the disk.
func Expected(spec Spec) (map[string]string, error) {
	t := &tree{files: map[string]string{}, links: map[string]string{}, dirs: map[string]bool{}}
	if err := build(spec, t); err != nil {
		return nil, fmt.Errorf("%s: %w", spec.Name, err)
	}
	out := map[string]string{}
	for p, c := range t.files {
		out[strings.TrimPrefix(p, "/")] = fmt.Sprintf("file %v %q", os.FileMode(0o644), c)
	}
	for p, target := range t.links {
		rel, err := filepath.Rel(path.Dir(p), target)
		if err != nil {
			return nil, err
		}
		out[strings.TrimPrefix(p, "/")] = "link -> " + rel
	}
	return out, nil
}

// Write renders spec into dir (which must not exist or be empty).
func Write(spec Spec, dir string) error {
	t := &tree{files: map[string]string{}, links: map[string]string{}, dirs: map[string]bool{}}
	if err := build(spec, t); err != nil {
		return fmt.Errorf("%s: %w", spec.Name, err)
	}
	for d := range t.dirs {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	paths := make([]string, 0, len(t.files))
	for p := range t.files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(t.files[p]), 0o644); err != nil {
			return err
		}
	}
	for p, target := range t.links {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		rel, err := filepath.Rel(path.Dir(p), target)
		if err != nil {
			return err
		}
		if err := os.Symlink(rel, full); err != nil {
			return err
		}
	}
	return nil
}

func build(s Spec, t *tree) error {
	if s.ThreadsPerCore == 0 {
		s.ThreadsPerCore = 1
	}
	if s.NodesPerSocket == 0 {
		s.NodesPerSocket = 1
	}
	cores := s.Sockets * s.CoresPerSocket
	ncpu := cores * s.ThreadsPerCore
	cpuNodes := s.Sockets * s.NodesPerSocket
	nnodes := cpuNodes + len(s.ExtraNodes)
	coresPerNode := s.CoresPerSocket / s.NodesPerSocket
	if s.CoresPerL3 == 0 {
		s.CoresPerL3 = s.CoresPerSocket
	}
	// cpu id -> (socket, core, node, l3)
	type cpuInfo struct{ socket, core, node, l3, globalCore int }
	infos := make([]cpuInfo, ncpu)
	nodeCPUs := make([][]int, nnodes)
	l3CPUs := map[int][]int{}
	for th := 0; th < s.ThreadsPerCore; th++ {
		for gc := 0; gc < cores; gc++ {
			id := th*cores + gc
			sock := gc / s.CoresPerSocket
			local := gc % s.CoresPerSocket
			node := sock*s.NodesPerSocket + local/coresPerNode
			l3 := gc / s.CoresPerL3
			infos[id] = cpuInfo{socket: sock, core: local, node: node, l3: l3, globalCore: gc}
			nodeCPUs[node] = append(nodeCPUs[node], id)
			l3CPUs[l3] = append(l3CPUs[l3], id)
		}
	}
	all := cpuset.New(seq(ncpu)...)
	t.file("/proc/sys/kernel/hostname", s.Hostname+"\n")
	t.file("/proc/sys/kernel/osrelease", s.Kernel+"\n")
	var ci strings.Builder
	for id := 0; id < ncpu; id++ {
		fmt.Fprintf(&ci, "processor\t: %d\nmodel name\t: %s\nphysical id\t: %d\ncore id\t\t: %d\n\n", id, s.CPUModel, infos[id].socket, infos[id].core)
	}
	t.file("/proc/cpuinfo", ci.String())
	cpu := "/sys/devices/system/cpu"
	t.file(cpu+"/online", all.String()+"\n")
	t.file(cpu+"/possible", all.String()+"\n")
	t.file(cpu+"/present", all.String()+"\n")
	t.file(cpu+"/isolated", s.Isolated+"\n")
	if s.NohzFull == "" {
		t.file(cpu+"/nohz_full", "(null)\n")
	} else {
		t.file(cpu+"/nohz_full", s.NohzFull+"\n")
	}
	if s.ThreadsPerCore > 1 {
		t.file(cpu+"/smt/control", "on\n")
		t.file(cpu+"/smt/active", "1\n")
	} else {
		t.file(cpu+"/smt/control", "notsupported\n")
		t.file(cpu+"/smt/active", "0\n")
	}
	for id := 0; id < ncpu; id++ {
		in := infos[id]
		d := fmt.Sprintf("%s/cpu%d", cpu, id)
		var sib []int
		for th := 0; th < s.ThreadsPerCore; th++ {
			sib = append(sib, th*cores+in.globalCore)
		}
		var pkg []int
		for j := 0; j < ncpu; j++ {
			if infos[j].socket == in.socket {
				pkg = append(pkg, j)
			}
		}
		if id > 0 {
			t.file(d+"/online", "1\n")
		}
		t.file(d+"/topology/core_id", fmt.Sprintf("%d\n", in.core))
		t.file(d+"/topology/physical_package_id", fmt.Sprintf("%d\n", in.socket))
		t.file(d+"/topology/die_id", "0\n")
		t.file(d+"/topology/thread_siblings_list", cpuset.New(sib...).String()+"\n")
		t.file(d+"/topology/core_cpus_list", cpuset.New(sib...).String()+"\n")
		t.file(d+"/topology/core_siblings_list", cpuset.New(pkg...).String()+"\n")
		t.file(d+"/topology/package_cpus_list", cpuset.New(pkg...).String()+"\n")
		t.file(d+"/topology/die_cpus_list", cpuset.New(pkg...).String()+"\n")
		caches := []struct {
			level    int
			typ      string
			size     string
			shared   cpuset.CPUSet
			idx, cid int
		}{
			{1, "Data", "48K", cpuset.New(sib...), 0, in.globalCore},
			{1, "Instruction", "32K", cpuset.New(sib...), 1, in.globalCore},
			{2, "Unified", "2048K", cpuset.New(sib...), 2, in.globalCore},
			{3, "Unified", fmt.Sprintf("%dK", s.L3SizeKB), cpuset.New(l3CPUs[in.l3]...), 3, in.l3},
		}
		for _, c := range caches {
			cd := fmt.Sprintf("%s/cache/index%d", d, c.idx)
			t.file(cd+"/level", fmt.Sprintf("%d\n", c.level))
			t.file(cd+"/type", c.typ+"\n")
			t.file(cd+"/size", c.size+"\n")
			t.file(cd+"/id", fmt.Sprintf("%d\n", c.cid))
			t.file(cd+"/shared_cpu_list", c.shared.String()+"\n")
		}
	}

	node := "/sys/devices/system/node"
	allNodes := cpuset.New(seq(nnodes)...)
	t.file(node+"/online", allNodes.String()+"\n")
	t.file(node+"/possible", allNodes.String()+"\n")
	t.file(node+"/has_cpu", cpuset.New(seq(cpuNodes)...).String()+"\n")
	var memNodes []int
	var totalKB uint64
	for n := 0; n < nnodes; n++ {
		d := fmt.Sprintf("%s/node%d", node, n)
		memKB := s.MemPerNodeKB
		if n >= cpuNodes {
			memKB = s.ExtraNodes[n-cpuNodes].MemKB
		}
		if memKB > 0 {
			memNodes = append(memNodes, n)
		}
		totalKB += memKB
		set := cpuset.New(nodeCPUs[n]...)
		t.file(d+"/cpulist", set.String()+"\n")
		free := memKB / 10 * 9
		hp := 0
		if n < cpuNodes {
			hp = s.Hugepages2M
		}
		t.file(d+"/meminfo", fmt.Sprintf("Node %d MemTotal:       %d kB\nNode %d MemFree:        %d kB\nNode %d MemUsed:        %d kB\nNode %d HugePages_Total: %5d\nNode %d HugePages_Free:  %5d\n",
			n, memKB, n, free, n, memKB-free, n, hp, n, hp))
		var dist []string
		for j := 0; j < nnodes; j++ {
			dist = append(dist, fmt.Sprint(s.Distance(n, j)))
		}
		t.file(d+"/distance", strings.Join(dist, " ")+"\n")
		for _, size := range []string{"2048kB", "1048576kB"} {
			nr := 0
			if size == "2048kB" {
				nr = hp
			}
			hd := d + "/hugepages/hugepages-" + size
			t.file(hd+"/nr_hugepages", fmt.Sprintf("%d\n", nr))
			t.file(hd+"/free_hugepages", fmt.Sprintf("%d\n", nr))
			t.file(hd+"/surplus_hugepages", "0\n")
		}
	}
	t.file(node+"/has_memory", cpuset.New(memNodes...).String()+"\n")
	t.file("/proc/meminfo", fmt.Sprintf("MemTotal:       %d kB\nMemFree:        %d kB\nMemAvailable:   %d kB\nSwapTotal:             0 kB\nSwapFree:              0 kB\nHugePages_Total:   %d\nHugePages_Free:    %d\nHugepagesize:       2048 kB\n",
		totalKB, totalKB/10*9, totalKB/10*9, s.Hugepages2M*cpuNodes, s.Hugepages2M*cpuNodes))

	if err := buildPCI(s, t, nodeCPUs, all); err != nil {
		return err
	}
	buildIRQs(s, t, nodeCPUs, all)
	buildStock(s, t, ncpu, cpuNodes)
	for p, c := range s.Files {
		t.file(p, c)
	}
	return nil
}

func buildPCI(s Spec, t *tree, nodeCPUs [][]int, all cpuset.CPUSet) error {
	seen := map[string]bool{}
	bridge := func(rc string, chain []string, numa int, local string) string {
		dir := "/sys/devices/" + rc
		t.dir(dir)
		for _, b := range chain {
			dir += "/" + b
			if seen[b] {
				continue
			}
			seen[b] = true
			t.file(dir+"/class", "0x060400\n")
			t.file(dir+"/vendor", "0x8086\n")
			t.file(dir+"/device", "0x352a\n")
			t.file(dir+"/modalias", modalias("0x8086", "0x352a", "0x060400"))
			t.file(dir+"/numa_node", fmt.Sprintf("%d\n", numa))
			t.file(dir+"/local_cpulist", local+"\n")
			t.link("/sys/bus/pci/devices/"+b, dir)
			t.link(dir+"/driver", "/sys/bus/pci/drivers/pcieport")
			t.file("/sys/bus/pci/drivers/pcieport/uevent", "")
		}
		return dir
	}
	for _, d := range s.Devices {
		if seen[d.BDF] {
			return fmt.Errorf("device %s listed twice", d.BDF)
		}
		local := d.LocalCPUs
		if local == "" {
			if d.NUMANode >= 0 && d.NUMANode < len(nodeCPUs) {
				local = cpuset.New(nodeCPUs[d.NUMANode]...).String()
			} else {
				local = all.String()
			}
		}
		parent := bridge(d.RootComplex, d.Bridges, d.NUMANode, local)
		seen[d.BDF] = true
		dir := parent + "/" + d.BDF
		t.file(dir+"/class", d.Class+"\n")
		t.file(dir+"/vendor", d.Vendor+"\n")
		t.file(dir+"/device", d.DeviceID+"\n")
		t.file(dir+"/modalias", modalias(d.Vendor, d.DeviceID, d.Class))
		t.file(dir+"/numa_node", fmt.Sprintf("%d\n", d.NUMANode))
		t.file(dir+"/local_cpulist", local+"\n")
		if d.Speed != "" {
			t.file(dir+"/current_link_speed", d.Speed+"\n")
			t.file(dir+"/max_link_speed", d.MaxSpeed+"\n")
			t.file(dir+"/current_link_width", fmt.Sprintf("%d\n", d.Width))
			t.file(dir+"/max_link_width", fmt.Sprintf("%d\n", d.MaxWidth))
		}
		if d.Driver != "" {
			t.link(dir+"/driver", "/sys/bus/pci/drivers/"+d.Driver)
			t.file("/sys/bus/pci/drivers/"+d.Driver+"/uevent", "")
		}
		if len(d.IRQs) > 0 {
			t.file(dir+"/irq", fmt.Sprintf("%d\n", d.IRQs[0]))
			for _, irq := range d.IRQs {
				t.file(fmt.Sprintf("%s/msi_irqs/%d", dir, irq), "msix\n")
			}
		}
		t.link("/sys/bus/pci/devices/"+d.BDF, dir)
		for _, n := range d.NetDevs {
			nd := dir + "/net/" + n
			typ := "1"
			if d.IBLinkLayer == "InfiniBand" {
				typ = "32"
			}
			t.file(nd+"/type", typ+"\n")
			t.link(nd+"/device", dir)
			t.link("/sys/class/net/"+n, nd)
		}
		for _, ib := range d.IBDevs {
			id := dir + "/infiniband/" + ib
			t.file(id+"/ports/1/link_layer", d.IBLinkLayer+"\n")
			t.file(id+"/ports/1/rate", "400 Gb/sec (4X NDR)\n")
			t.link(id+"/device", dir)
			t.link("/sys/class/infiniband/"+ib, id)
		}
		if d.NVMe != "" {
			// Files, not empty directories: git does not keep those.
			t.file(dir+"/nvme/"+d.NVMe+"/model", "SAMSUNG MZQL23T8HCLS-00A07\n")
		}
	}
	// Virtual interfaces must be ignored by discovery.
	t.file("/sys/devices/virtual/net/lo/type", "772\n")
	t.link("/sys/class/net/lo", "/sys/devices/virtual/net/lo")
	return nil
}

// modalias is a PCI function's modalias attribute as the kernel prints it
// (pci:v%08Xd%08Xsv%08Xsd%08Xbc%02Xsc%02Xi%02X), from its vendor, device and
// class attributes; the synthetic functions' subsystem ids are their own.
func modalias(vendor, device, class string) string {
	hex := func(s string) uint64 {
		n, _ := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 32)
		return n
	}
	v, d, c := hex(vendor), hex(device), hex(class)
	return fmt.Sprintf("pci:v%08Xd%08Xsv%08Xsd%08Xbc%02Xsc%02Xi%02X\n", v, d, v, d, c>>16, c>>8&0xff, c&0xff)
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
