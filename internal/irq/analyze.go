package irq

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/sysfmt"
	"github.com/gpunode/gpunode/internal/topo"
)

// allKinds are the device kinds accepted by Options.Kinds.
func allKinds() []string {
	return []string{topo.KindGPU, topo.KindNIC, topo.KindNVMe, topo.KindNVSwitch}
}

// defaultKinds are the kinds planned when none are named. A function, not a
// package variable: Analyze hands the slice to the report.
func defaultKinds() []string { return []string{topo.KindGPU, topo.KindNIC} }

// Options select devices and the CPUs to keep free.
type Options struct {
	// Kinds are the device kinds to include (default gpu and nic).
	Kinds []string
	// Avoid and RankCPUs are never given an IRQ.
	Avoid    cpuset.CPUSet
	RankCPUs cpuset.CPUSet
	// Sample, when > 0, reads /proc/interrupts twice, Sample apart, and
	// counts the interrupts served in between (IRQ.Window*): an IRQ that
	// a CPU off its node served in the window is off-node. Without it only
	// the routing (effective affinity) decides; the counts since boot are
	// history and never make an IRQ off-node.
	Sample time.Duration
	// wait sleeps between the two samples (tests replace it).
	wait func(ctx context.Context, d time.Duration) error
}

// MaxSample bounds Options.Sample.
const MaxSample = 5 * time.Minute

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// ParseKinds parses a --devices value ("gpu,nic"; "all").
func ParseKinds(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return defaultKinds(), nil
	}
	seen := map[string]bool{}
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.ToLower(strings.TrimSpace(p))
		switch p {
		case "all":
			return allKinds(), nil
		case "gpus", "nics":
			p = strings.TrimSuffix(p, "s")
		}
		if !slices.Contains(allKinds(), p) {
			return nil, fmt.Errorf("--devices: unknown device kind %q (want gpu, nic, nvme, nvswitch or all)", p)
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out, nil
}

// Analyze reads the IRQs of the selected devices of t and plans their
// affinity. Host files that are missing become warnings, and so do
// /proc/interrupts rows that do not parse (they are skipped); a
// /proc/interrupts whose header does not parse is an error.
// errNotInterrupts marks a /proc/interrupts refused before it is read
// whole: its first line is longer than any real header.
var errNotInterrupts = errors.New("not a /proc/interrupts table")

// readInterrupts reads /proc/interrupts, bounded: the header line (one
// "CPUn" per column, at most maxColumns) is looked at first, in one read of
// maxHeaderBytes, and a file whose first line does not end there (one
// 20 MB line, 200k columns) is refused without reading the rest. The
// whole file is then read within hostfs.MaxFileSize, and ParseInterrupts
// bounds every line (maxLineBytes).
func readInterrupts(fsys *hostfs.FS) ([]byte, error) {
	head, err := fsys.ReadHead("/proc/interrupts", maxHeaderBytes+1)
	if err != nil {
		return nil, err
	}
	if len(head) > maxHeaderBytes && bytes.IndexByte(head, '\n') < 0 {
		return nil, fmt.Errorf("/proc/interrupts line 1: longer than %d bytes (%d CPU columns at most): %w", maxHeaderBytes, maxColumns, errNotInterrupts)
	}
	return fsys.ReadFile("/proc/interrupts")
}

func Analyze(ctx context.Context, fsys *hostfs.FS, t *topo.Topology, o Options) (*Report, error) {
	if len(o.Kinds) == 0 {
		o.Kinds = defaultKinds()
	}
	rep := &Report{SchemaVersion: SchemaVersion, Hostname: t.Hostname, Kinds: o.Kinds, Devices: []Device{}, Warnings: []string{}}
	warn := func(format string, args ...any) { rep.Warnings = append(rep.Warnings, fmt.Sprintf(format, args...)) }

	if o.Sample < 0 || o.Sample > MaxSample {
		return nil, fmt.Errorf("sample window %s: want 0 to %s", o.Sample, MaxSample)
	}
	var table, before *Interrupts
	if b, err := readInterrupts(fsys); err != nil {
		if errors.Is(err, errNotInterrupts) {
			return nil, err
		}
		warn("/proc/interrupts: %v (served-where counts unknown)", unwrapPath(err))
	} else if table, err = ParseInterrupts(b); err != nil {
		return nil, err
	} else {
		rep.Warnings = append(rep.Warnings, table.Warnings...)
	}
	if o.Sample > 0 && table != nil {
		wait := o.wait
		if wait == nil {
			wait = sleepCtx
		}
		if err := wait(ctx, o.Sample); err != nil {
			return nil, err
		}
		b, err := readInterrupts(fsys)
		if err != nil {
			return nil, fmt.Errorf("/proc/interrupts after the %s sample: %w", o.Sample, err)
		}
		before = table
		if table, err = ParseInterrupts(b); err != nil {
			return nil, err
		}
		rep.SampleSeconds = o.Sample.Seconds()
	}
	prev := map[int]map[int]uint64{} // IRQ -> CPU -> count at the first sample
	if before != nil {
		for _, r := range before.Rows {
			if r.IRQ < 0 {
				continue
			}
			m := map[int]uint64{}
			for i, c := range r.Counts {
				if i < len(before.CPUs) {
					m[before.CPUs[i]] = c
				}
			}
			prev[r.IRQ] = m
		}
	}
	// Index the table once: devices look their rows up by PCI address,
	// then every IRQ by number.
	byBDF := map[string][]*Row{}
	byIRQ := map[int]*Row{}
	if table != nil {
		for i := range table.Rows {
			r := &table.Rows[i]
			if r.IRQ < 0 {
				continue
			}
			byIRQ[r.IRQ] = r
			if r.BDF != "" {
				byBDF[r.BDF] = append(byBDF[r.BDF], r)
			}
		}
	}

	excl := t.IsolatedCPUs.Union(t.NohzFullCPUs.CPUSet).Union(o.Avoid).Union(o.RankCPUs)
	rep.Excluded = Excluded{Isolated: t.IsolatedCPUs, NohzFull: t.NohzFullCPUs, Avoid: topo.NewCPUList(o.Avoid), RankCPUs: topo.NewCPUList(o.RankCPUs), All: topo.NewCPUList(excl)}
	pl := newPlanner(t, excl)
	// Most IRQs of a host share a handful of affinity lists ("0-223",
	// one node's CPUs): each distinct list is parsed once per analysis.
	lists := cpuLists{}

	for _, kind := range o.Kinds {
		for _, d := range devicesOf(t, kind) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			dev := Device{Kind: d.Kind, Name: d.Name, BDF: d.BDF, Driver: d.Driver, NUMANode: d.NUMANode, NUMASource: d.NUMASource, IRQs: []IRQ{}}
			nodeCPUs := cpuset.New()
			if n := t.NodeByID(d.NUMANode); n != nil && d.NUMANode >= 0 {
				nodeCPUs = n.CPUs.CPUSet
			}
			dev.NodeCPUs = topo.NewCPUList(nodeCPUs)
			src := map[int]string{}
			for _, n := range d.IRQs {
				src[n] = "msi_irqs"
			}
			for _, r := range byBDF[d.BDF] {
				if src[r.IRQ] == "" {
					src[r.IRQ] = "interrupts"
				} else {
					src[r.IRQ] = "msi_irqs+interrupts"
				}
			}
			nums := make([]int, 0, len(src))
			for n := range src {
				nums = append(nums, n)
			}
			sort.Ints(nums)
			for _, n := range nums {
				q := IRQ{IRQ: n, Source: src[n], Served: []CPUCount{}}
				if row := byIRQ[n]; row != nil {
					q.Name = row.Name()
					for i, c := range row.Counts {
						if c == 0 || i >= len(table.CPUs) {
							continue
						}
						cpu := table.CPUs[i]
						q.Served = append(q.Served, CPUCount{CPU: cpu, Count: c})
						q.Total += c
						off := nodeCPUs.Size() > 0 && !nodeCPUs.Contains(cpu)
						if off {
							q.OffNodeCount += c
						}
						if before != nil {
							d := c - min(c, prev[n][cpu])
							q.WindowTotal += d
							if off {
								q.WindowOffNode += d
							}
						}
					}
				} else if table != nil {
					warn("IRQ %d of %s (%s) is in msi_irqs but not in /proc/interrupts", n, d.Name, d.BDF)
				}
				aff, err := lists.readAffinity(fsys, n)
				if err != nil {
					warn("%v", err)
				}
				q.Affinity = topo.NewCPUList(aff)
				// Where the interrupt is routed now: the effective
				// affinity when the kernel has it, else the requested one.
				route := aff
				if eff, err := lists.read(fsys, fmt.Sprintf("/proc/irq/%d/effective_affinity_list", n)); err == nil {
					e := topo.NewCPUList(eff)
					q.Effective = &e
					if eff.Size() > 0 {
						route = eff
					}
				} else if !errors.Is(err, fs.ErrNotExist) {
					warn("%v", err)
				}
				if nodeCPUs.Size() > 0 && route.Size() > 0 && !route.IsSubsetOf(nodeCPUs) {
					q.OffNode, q.OffNodeRouted = true, true
				}
				if q.WindowOffNode > 0 {
					q.OffNode = true
				}
				dev.IRQs = append(dev.IRQs, q)
			}
			pl.plan(d, &dev)
			for _, q := range dev.IRQs {
				rep.Summary.IRQs++
				if q.OffNode {
					rep.Summary.OffNode++
				}
				if q.Change {
					rep.Summary.Changes++
				}
			}
			rep.Devices = append(rep.Devices, dev)
		}
	}
	rep.Summary.Devices = len(rep.Devices)
	ib, err := DetectIRQBalance(fsys)
	if err != nil {
		warn("irqbalance: %v", err)
	}
	ib.fill(rep)
	rep.IRQBal = ib
	return rep, nil
}

func devicesOf(t *topo.Topology, kind string) []topo.PCIDevice {
	switch kind {
	case topo.KindGPU:
		return t.GPUs
	case topo.KindNIC:
		return t.NICs
	case topo.KindNVMe:
		return t.NVMe
	case topo.KindNVSwitch:
		return t.NVSwitches
	}
	return nil
}

// cpuLists remembers the CPU lists parsed so far, by their text. A
// cpuset.CPUSet is never changed in place, so one parsed set serves every
// IRQ whose file holds the same text.
type cpuLists map[string]cpuset.CPUSet

// read reads the CPU list file p, parsing its text only the first time it
// is seen.
func (m cpuLists) read(fsys *hostfs.FS, p string) (cpuset.CPUSet, error) {
	s, err := fsys.ReadString(p)
	if err != nil {
		return cpuset.New(), err
	}
	if set, ok := m[s]; ok {
		return set, nil
	}
	set, err := sysfmt.ParseCPUList(s)
	if err != nil {
		return cpuset.New(), fmt.Errorf("%s: %w", p, err)
	}
	m[s] = set
	return set, nil
}

// readAffinity reads smp_affinity_list, falling back to the hex smp_affinity.
func (m cpuLists) readAffinity(fsys *hostfs.FS, n int) (cpuset.CPUSet, error) {
	p := fmt.Sprintf("/proc/irq/%d/smp_affinity_list", n)
	set, err := m.read(fsys, p)
	if err == nil {
		return set, nil
	}
	mp := fmt.Sprintf("/proc/irq/%d/smp_affinity", n)
	s, merr := fsys.ReadString(mp)
	if merr != nil {
		return cpuset.New(), err
	}
	set, merr = sysfmt.ParseCPUMask(s)
	if merr != nil {
		return cpuset.New(), fmt.Errorf("%s: %w", mp, merr)
	}
	return set, nil
}

func readList(fsys *hostfs.FS, p string) (cpuset.CPUSet, error) {
	s, err := fsys.ReadString(p)
	if err != nil {
		return cpuset.New(), err
	}
	set, err := sysfmt.ParseCPUList(s)
	if err != nil {
		return cpuset.New(), fmt.Errorf("%s: %w", p, err)
	}
	return set, nil
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// planner hands out one CPU per IRQ, round-robin over the physical cores of
// each node (one cursor per node), preferring the cores with the fewest
// planned IRQs.
type planner struct {
	t      *topo.Topology
	excl   cpuset.CPUSet
	cursor map[string]int
	load   map[int]int // planned IRQs per CPU
	// cores are the usable cores of each pool (by cursor key): the
	// devices of one node share them.
	cores map[string][]int
}

func newPlanner(t *topo.Topology, excl cpuset.CPUSet) *planner {
	return &planner{t: t, excl: excl, cursor: map[string]int{}, load: map[int]int{}, cores: map[string][]int{}}
}

// coreCPUs returns one CPU per physical core of set (the lowest usable
// thread), ordered by CPU id.
func (p *planner) coreCPUs(set cpuset.CPUSet) []int {
	online := set.Intersection(p.t.OnlineCPUs.CPUSet)
	var out []int
	for _, core := range p.t.CoreGroups(online) {
		out = append(out, core.List()[0])
	}
	return out
}

func (p *planner) plan(d topo.PCIDevice, dev *Device) {
	var pool cpuset.CPUSet
	key := strconv.Itoa(d.NUMANode)
	switch {
	case dev.NodeCPUs.Size() > 0:
		pool = dev.NodeCPUs.CPUSet
	case d.LocalCPUs.Size() > 0:
		pool = d.LocalCPUs.CPUSet
		key = "local:" + d.LocalCPUs.String()
	default:
		pool = p.t.OnlineCPUs.CPUSet
		key = "all"
	}
	cores, ok := p.cores[key]
	if !ok {
		cores = p.coreCPUs(pool.Difference(p.excl))
		p.cores[key] = cores
	}
	for i := range dev.IRQs {
		q := &dev.IRQs[i]
		if len(cores) == 0 {
			q.Planned = topo.NewCPUList(cpuset.New())
			q.Reason = fmt.Sprintf("no usable CPU on %s after excluding %s", poolName(d), orNone(p.excl.String()))
			continue
		}
		// The least-loaded core, searching from the node's cursor: a plain
		// round-robin within a node, and devices of unknown node (whose pool
		// spans nodes) fill the cores the others left free.
		start := p.cursor[key] % len(cores)
		best := start
		for k := 1; k < len(cores); k++ {
			if i := (start + k) % len(cores); p.load[cores[i]] < p.load[cores[best]] {
				best = i
			}
		}
		c := cores[best]
		p.load[c]++
		p.cursor[key] = best + 1
		q.Planned = topo.NewCPUList(cpuset.New(c))
		q.Change = !q.Affinity.Equals(q.Planned.CPUSet)
	}
}

func poolName(d topo.PCIDevice) string {
	if d.NUMANode >= 0 {
		return fmt.Sprintf("NUMA node %d", d.NUMANode)
	}
	return "the device's local CPUs"
}

func orNone(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}
