package topo

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/sysfmt"
)

const (
	sysCPU  = "/sys/devices/system/cpu"
	sysNode = "/sys/devices/system/node"
)

// discoverer carries the state of one discovery run. Two discoverers work
// on disjoint parts of one Topology concurrently (CPUs; NUMA nodes and PCI),
// each collecting its own warnings.
type discoverer struct {
	// ctx is the discovery's context: the per-CPU and per-node loops stop
	// when it is cancelled (Discover then returns its error).
	ctx      context.Context
	fs       *hostfs.FS
	t        *Topology
	warnings []Warning
	// singleNodeFallback is set when sysfs lists no NUMA node and the
	// machine is treated as one node holding every online CPU.
	singleNodeFallback bool
	// o narrows what is read (see Options).
	o Options
	// lists caches parsed CPU lists by their text: the devices of one
	// NUMA node share one local_cpulist, which is also the node's cpulist,
	// and a CPUSet is immutable, so each distinct list is parsed once.
	// Only one goroutine uses a discoverer's cache.
	lists map[string]cpuset.CPUSet
}

// parseList parses a cpulist through d's cache.
func (d *discoverer) parseList(s string) (cpuset.CPUSet, error) {
	if set, ok := d.lists[s]; ok {
		return set, nil
	}
	set, err := sysfmt.ParseCPUList(s)
	if err != nil {
		return set, err
	}
	if d.lists == nil {
		d.lists = map[string]cpuset.CPUSet{}
	}
	if len(d.lists) < maxCachedLists {
		d.lists[s] = set
	}
	return set, nil
}

// maxCachedLists bounds a discoverer's cache of parsed CPU lists.
const maxCachedLists = 1024

func (d *discoverer) warn(path, format string, args ...any) {
	d.warnings = append(d.warnings, Warning{Path: path, Message: fmt.Sprintf(format, args...)})
}

// warnErr records err as a warning unless it is "file does not exist" and the
// file is optional.
func (d *discoverer) warnErr(p string, err error, optional bool) {
	if optional && errors.Is(err, fs.ErrNotExist) {
		return
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		d.warn(pe.Path, "%v", pe.Err)
		return
	}
	d.warn(p, "%v", err)
}

// Discover reads the machine's topology through fsys. It fails only when the
// context is cancelled or nothing at all can be learnt about the CPUs; every
// other problem becomes a Warning.
//
// On hosts with more than two CPUs to run on, CPUs are read in one goroutine
// while NUMA nodes and PCI devices are read in others (see fanOut).
func Discover(ctx context.Context, fsys *hostfs.FS) (*Topology, error) {
	return DiscoverWith(ctx, fsys, Options{})
}

// Options narrow what DiscoverWith reads.
type Options struct {
	// NoDevices skips the PCI bus (GPUs, NICs, NVMe, NVSwitches, their
	// links): for callers that need only CPUs, NUMA nodes and memory, such
	// as 'bind --node N' with no NIC, where the PCI scan was most of
	// bind's own start-up. The topology's device lists are then empty.
	NoDevices bool
	// NoHostInfo skips what only describes the host: its name, kernel
	// release, CPU model and the NUMA nodes' hugepage pools.
	NoHostInfo bool
}

// DiscoverWith is Discover reading only what o asks for.
func DiscoverWith(ctx context.Context, fsys *hostfs.FS, o Options) (*Topology, error) {
	t := &Topology{SchemaVersion: SchemaVersion}
	cpuD := &discoverer{ctx: ctx, fs: fsys, t: t, o: o}
	devD := &discoverer{ctx: ctx, fs: fsys, t: t, o: o}
	var devErr error
	var wg sync.WaitGroup
	devices := func() {
		devD.nodes()
		if !o.NoDevices {
			devErr = devD.pci(ctx)
		}
	}
	if fanOut() > 1 && !o.NoDevices {
		wg.Add(1)
		go func() {
			defer wg.Done()
			devices()
		}()
	} else {
		devices()
	}
	if !o.NoHostInfo {
		t.Hostname = cpuD.optString("/proc/sys/kernel/hostname")
		t.Kernel = cpuD.optString("/proc/sys/kernel/osrelease")
		t.CPUModel = cpuD.cpuModel()
	}
	cpuErr := cpuD.cpus()
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if cpuErr != nil {
		return nil, cpuErr
	}
	if devErr != nil {
		return nil, devErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d := &discoverer{ctx: ctx, fs: fsys, t: t, warnings: append(cpuD.warnings, devD.warnings...)}
	if devD.singleNodeFallback {
		t.NUMANodes[0].CPUs = t.OnlineCPUs
	}
	d.finishCPUs()
	d.gpuMemoryNodes()
	t.Links = computeLinks(t)
	d.topologyWarnings()
	t.Warnings = d.warnings
	t.normalize()
	return t, nil
}

// normalize replaces nil slices with empty ones so that JSON consumers always
// see arrays.
func (t *Topology) normalize() {
	for _, p := range []*[]PCIDevice{&t.GPUs, &t.NICs, &t.NVMe, &t.NVSwitches} {
		if *p == nil {
			*p = []PCIDevice{}
		}
	}
	if t.Links == nil {
		t.Links = []Link{}
	}
	if t.Warnings == nil {
		t.Warnings = []Warning{}
	}
	if t.L3Caches == nil {
		t.L3Caches = []Cache{}
	}
	if t.Sockets == nil {
		t.Sockets = []Socket{}
	}
}

func (d *discoverer) optString(p string) string {
	s, err := d.fs.ReadString(p)
	if err != nil {
		d.warnErr(p, err, true)
		return ""
	}
	return s
}

// cpuinfoHead is how much of /proc/cpuinfo cpuModel reads.
const cpuinfoHead = 8 << 10

func (d *discoverer) cpuModel() string {
	// The model is in the first processor's lines; the whole file is
	// hundreds of KiB and slow to generate on big hosts.
	b, err := d.fs.ReadHead("/proc/cpuinfo", cpuinfoHead)
	if err != nil {
		d.warnErr("/proc/cpuinfo", err, true)
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "model name", "Model", "cpu model":
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// cpuList reads a cpulist file; missing optional files give the empty set.
func (d *discoverer) cpuList(p string, optional bool) (cpuset.CPUSet, bool) {
	s, err := d.fs.ReadString(p)
	return d.parsedList(p, s, err, optional)
}

// parsedList is cpuList for a read already made (s, err of file p).
func (d *discoverer) parsedList(p, s string, err error, optional bool) (cpuset.CPUSet, bool) {
	if err != nil {
		d.warnErr(p, err, optional)
		return cpuset.New(), false
	}
	set, err := d.parseList(s)
	if err != nil {
		d.warn(p, "%v", err)
		return cpuset.New(), false
	}
	return set, true
}

func (d *discoverer) cpus() error {
	t := d.t
	names, err := d.fs.ReadDirNames(sysCPU)
	if err != nil {
		return fmt.Errorf("read CPU topology: %w", err)
	}
	var ids []int
	for _, n := range names {
		if id, ok := numbered(n, "cpu"); ok {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return fmt.Errorf("read CPU topology: no cpuN directories in %s", sysCPU)
	}
	sort.Ints(ids)
	online, ok := d.cpuList(sysCPU+"/online", false)
	if !ok {
		online = cpuset.New(ids...)
	}
	t.OnlineCPUs = CPUList{online}
	iso, _ := d.cpuList(sysCPU+"/isolated", true)
	t.IsolatedCPUs = CPUList{iso}
	nohz, _ := d.cpuList(sysCPU+"/nohz_full", true)
	t.NohzFullCPUs = CPUList{nohz}

	// Threads of one core share core, package and die ids: each id is read
	// from one CPU of its group, and the group's cpulist spreads it to the
	// others. This keeps discovery at a few hundred reads on big hosts.
	t.CPUs = make([]CPU, 0, len(ids))
	index := map[int]int{}
	for _, id := range ids {
		index[id] = len(t.CPUs)
		t.CPUs = append(t.CPUs, CPU{ID: id, Online: online.Contains(id), NUMANode: -1, L3: -1, Core: -1, Socket: -1, Die: -1,
			Isolated: iso.Contains(id), NohzFull: nohz.Contains(id), Siblings: CPUList{cpuset.New()}})
	}
	d.groups(index, "physical_package_id", "core_siblings_list", false, func(c *CPU, id int, _ cpuset.CPUSet) { c.Socket = id })
	d.groups(index, "die_id", "die_cpus_list", true, func(c *CPU, id int, _ cpuset.CPUSet) { c.Die = max(id, 0) })
	d.groups(index, "core_id", "thread_siblings_list", false, func(c *CPU, id int, m cpuset.CPUSet) { c.Core, c.Siblings = id, CPUList{m} })
	for i := range t.CPUs {
		if err := d.ctx.Err(); err != nil {
			return err
		}
		c := &t.CPUs[i]
		if !c.Online || c.L3 >= 0 {
			continue
		}
		g := d.l3(fmt.Sprintf("%s/cpu%d", sysCPU, c.ID))
		if g < 0 {
			continue
		}
		for _, s := range t.L3Caches[g].CPUs.List() {
			if j, ok := index[s]; ok && t.CPUs[j].Online && t.CPUs[j].L3 < 0 {
				t.CPUs[j].L3 = g
			}
		}
		if c.L3 < 0 {
			c.L3 = g
		}
	}
	return nil
}

// groups reads, for each group of online CPUs sharing a topology id (a
// package, die or core), the id file and member list of the group's first
// CPU and applies them to every member. When optional files are missing the
// CPUs keep a zero id.
func (d *discoverer) groups(index map[int]int, idFile, listFile string, optional bool, set func(*CPU, int, cpuset.CPUSet)) {
	t := d.t
	done := make([]bool, len(t.CPUs))
	for i := range t.CPUs {
		if d.ctx.Err() != nil {
			return // Discover returns the context's error
		}
		c := &t.CPUs[i]
		if !c.Online || done[i] {
			continue
		}
		dir := fmt.Sprintf("%s/cpu%d/topology", sysCPU, c.ID)
		id := 0
		if v, err := d.fs.ReadInt(dir + "/" + idFile); err == nil {
			id = int(v)
		} else {
			d.warnErr(dir+"/"+idFile, err, optional)
			if !optional {
				id = -1
			}
		}
		members, ok := d.cpuList(dir+"/"+listFile, optional)
		if !ok || !members.Contains(c.ID) {
			members = cpuset.New(c.ID)
		}
		for _, m := range members.List() {
			if j, ok := index[m]; ok && t.CPUs[j].Online && !done[j] {
				set(&t.CPUs[j], id, members)
				done[j] = true
			}
		}
	}
}

// l3 reads the last-level cache group of the CPU directory cpuDir, adds it
// to Topology.L3Caches and returns its index, or -1. index3 is the L3 on
// every architecture Linux supports; other indexes are scanned only when
// index3 is missing or not level 3.
func (d *discoverer) l3(cpuDir string) int {
	cacheDir := cpuDir + "/cache"
	dir := ""
	if lvl, err := d.fs.ReadInt(cacheDir + "/index3/level"); err == nil && lvl == 3 {
		dir = cacheDir + "/index3"
	} else {
		names, err := d.fs.ReadDirNames(cacheDir)
		if err != nil {
			d.warnErr(cacheDir, err, true)
			return -1
		}
		for _, n := range names {
			if !strings.HasPrefix(n, "index") || n == "index3" {
				continue
			}
			if lvl, err := d.fs.ReadInt(cacheDir + "/" + n + "/level"); err == nil && lvl == 3 {
				dir = cacheDir + "/" + n
				break
			}
		}
	}
	if dir == "" {
		return -1
	}
	set, ok := d.cpuList(dir+"/shared_cpu_list", false)
	if !ok {
		return -1
	}
	id := len(d.t.L3Caches)
	if v, err := d.fs.ReadInt(dir + "/id"); err == nil {
		id = int(v)
	}
	var size uint64
	if s, err := d.fs.ReadString(dir + "/size"); err == nil {
		size, _ = sysfmt.ParseBytes(s) // "32768K"; 0 when unreadable
	}
	d.t.L3Caches = append(d.t.L3Caches, Cache{ID: id, Level: 3, SizeBytes: size, CPUs: CPUList{set}})
	return len(d.t.L3Caches) - 1
}

func (d *discoverer) nodes() {
	t := d.t
	names, err := d.fs.ReadDirNames(sysNode)
	var ids []int
	for _, n := range names {
		if id, ok := numbered(n, "node"); ok {
			ids = append(ids, id)
		}
	}
	if err != nil || len(ids) == 0 {
		if err != nil {
			d.warnErr(sysNode, err, true)
		}
		d.warn(sysNode, "no NUMA nodes listed (kernel without NUMA support?); treating the machine as one node")
		// The CPUs are filled in by finishCPUs once CPU discovery is done.
		n := NUMANode{ID: 0, Distances: []int{10}}
		if b, err := d.fs.ReadFile("/proc/meminfo"); err != nil {
			d.warnErr("/proc/meminfo", err, false)
		} else if mi, err := sysfmt.ParseMeminfo(b); err != nil {
			d.warn("/proc/meminfo", "%v", err)
		} else {
			n.MemTotalBytes, n.MemFreeBytes = mi["MemTotal"], mi["MemFree"]
		}
		d.singleNodeFallback = true
		t.NUMANodes = []NUMANode{n}
		return
	}
	sort.Ints(ids)
	for _, id := range ids {
		if d.ctx.Err() != nil {
			return // Discover returns the context's error
		}
		dir := fmt.Sprintf("%s/node%d", sysNode, id)
		n := NUMANode{ID: id}
		cpus, _ := d.cpuList(dir+"/cpulist", false)
		n.CPUs = CPUList{cpus}
		if b, err := d.fs.ReadFile(dir + "/meminfo"); err != nil {
			d.warnErr(dir+"/meminfo", err, false)
		} else if mi, err := sysfmt.ParseNodeMeminfo(b); err != nil {
			d.warn(dir+"/meminfo", "%v", err)
		} else {
			n.MemTotalBytes, n.MemFreeBytes = mi["MemTotal"], mi["MemFree"]
		}
		if s, err := d.fs.ReadString(dir + "/distance"); err != nil {
			d.warnErr(dir+"/distance", err, false)
		} else if dist, err := sysfmt.ParseDistances(s); err != nil {
			d.warn(dir+"/distance", "%v", err)
		} else if len(dist) != len(ids) {
			d.warn(dir+"/distance", "%d entries for %d nodes; ignored", len(dist), len(ids))
		} else {
			n.Distances = dist
		}
		if !d.o.NoHostInfo {
			n.HugePages = d.hugePages(dir + "/hugepages")
		}
		t.NUMANodes = append(t.NUMANodes, n)
	}
}

func (d *discoverer) hugePages(dir string) []HugePages {
	names, err := d.fs.ReadDirNames(dir)
	if err != nil {
		d.warnErr(dir, err, true)
		return nil
	}
	var out []HugePages
	for _, n := range names {
		kb, ok := strings.CutPrefix(n, "hugepages-")
		if !ok {
			continue
		}
		size, err := strconv.ParseUint(strings.TrimSuffix(kb, "kB"), 10, 64)
		if err != nil {
			d.warn(dir+"/"+n, "bad hugepage size in name")
			continue
		}
		hp := HugePages{SizeBytes: size << 10}
		if v, err := d.fs.ReadInt(dir + "/" + n + "/nr_hugepages"); err == nil {
			hp.Total = uint64(v)
		} else {
			d.warnErr(dir+"/"+n+"/nr_hugepages", err, false)
		}
		if v, err := d.fs.ReadInt(dir + "/" + n + "/free_hugepages"); err == nil {
			hp.Free = uint64(v)
		} else {
			d.warnErr(dir+"/"+n+"/free_hugepages", err, true)
		}
		out = append(out, hp)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].SizeBytes < out[j].SizeBytes })
	return out
}

// finishCPUs assigns NUMA nodes to CPUs and builds sockets.
func (d *discoverer) finishCPUs() {
	t := d.t
	nodeOf := map[int]int{}
	for _, n := range t.NUMANodes {
		for _, c := range n.CPUs.List() {
			nodeOf[c] = n.ID
		}
	}
	sockets := map[int]*Socket{}
	socketCPUs := map[int][]int{}
	coreSeen := map[[2]int]bool{}
	for i := range t.CPUs {
		c := &t.CPUs[i]
		if nd, ok := nodeOf[c.ID]; ok {
			c.NUMANode = nd
		}
		if !c.Online {
			continue
		}
		if c.Siblings.Size() > 1 {
			t.SMTActive = true
		}
		s := sockets[c.Socket]
		if s == nil {
			s = &Socket{ID: c.Socket}
			sockets[c.Socket] = s
		}
		socketCPUs[c.Socket] = append(socketCPUs[c.Socket], c.ID)
		if !coreSeen[[2]int{c.Socket, c.Core}] {
			coreSeen[[2]int{c.Socket, c.Core}] = true
			s.Cores++
		}
		if c.NUMANode >= 0 && !slices.Contains(s.NUMANodes, c.NUMANode) {
			s.NUMANodes = append(s.NUMANodes, c.NUMANode)
		}
	}
	for _, s := range sockets {
		s.CPUs = CPUList{cpuset.New(socketCPUs[s.ID]...)}
		sort.Ints(s.NUMANodes)
		t.Sockets = append(t.Sockets, *s)
	}
	sort.Slice(t.Sockets, func(i, j int) bool { return t.Sockets[i].ID < t.Sockets[j].ID })
}

// numbered parses names such as "cpu12" or "node3".
func numbered(name, prefix string) (int, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok || rest == "" {
		return 0, false
	}
	for _, r := range rest {
		if r < '0' || r > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil
}

// fanOut is how many goroutines discovery reads with. Reads are system
// calls of a few microseconds each: spreading them over goroutines saves
// wall time only when CPUs are idle to run them, and on two CPUs the
// hand-offs cost more than they save (about 10% more CPU per discovery,
// BenchmarkDiscoverDGX, with no gain in wall time), so discovery reads in
// one goroutine there and uses one goroutine per spare CPU above that.
func fanOut() int {
	if n := runtime.GOMAXPROCS(0); n > 2 {
		return n - 1
	}
	return 1
}
