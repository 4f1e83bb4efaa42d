package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gpunode/gpunode/internal/topo"
)

// NUMASchema identifies the JSON/YAML layout of NUMAResult.
const NUMASchema = "gpunode.bench.numa/v1"

// NUMAResult is one 'gpunode bench numa' run.
type NUMAResult struct {
	SchemaVersion string `json:"schemaVersion"`
	Host          string `json:"host,omitempty"`
	Kernel        string `json:"kernel,omitempty"`
	CPUModel      string `json:"cpuModel,omitempty"`
	// Time is when the run started (UTC, RFC 3339).
	Time string `json:"time,omitempty"`
	// DurationSeconds bounds the whole run (allocation and first touch
	// included); each kernel of each pair gets its share.
	DurationSeconds float64 `json:"durationSeconds"`
	// ArrayBytes is the size of each of the three STREAM arrays (all
	// threads together); LatencyBytes the pointer-chase buffer.
	ArrayBytes   uint64 `json:"arrayBytes"`
	LatencyBytes uint64 `json:"latencyBytes"`
	// MemcpyRoutine is the routine of the memcpy passes: the C library's
	// memcpy, as 'mbw -t1' runs it (e.g. "glibc 2.36 memcpy (libc.so.6)"),
	// or GoMemmoveRoutine where libc.so.6 cannot be loaded (a note says
	// why). The goCopy figures are always Go's copy.
	MemcpyRoutine string `json:"memcpyRoutine"`
	// Nodes are the NUMA node ids, in the order of the rows and columns of
	// Distances (the kernel's node distance matrix).
	Nodes     []int      `json:"nodes"`
	Pairs     []NUMAPair `json:"pairs"`
	Distances [][]int    `json:"distances"`
	Notes     []string   `json:"notes"`
}

// NUMAPair is one (CPU node, memory node) measurement. GB/s are 10^9 bytes
// per second counting bytes read plus written (STREAM's convention).
type NUMAPair struct {
	CPUNode  int     `json:"cpuNode"`
	MemNode  int     `json:"memNode"`
	Distance int     `json:"distance,omitempty"`
	Threads  int     `json:"threads"`
	CPUs     string  `json:"cpus"`
	CopyGBps float64 `json:"copyGBps"`
	// CopyMbwMiBps is the copy counted as mbw counts it: MiB of one array
	// copied over the mean pass time (mbw's AVG line), from the same passes.
	CopyMbwMiBps float64 `json:"copyMbwMiBps"`
	// CopyOneThreadGBps is the copy of one thread (the node's first CPU)
	// on the local pair, beside the every-CPU figure, as STREAM users
	// compare them (0: not measured, the pair is remote or has one thread);
	// CopyOneThreadMbwMiBps the same passes as mbw counts them.
	CopyOneThreadGBps     float64 `json:"copyOneThreadGBps,omitempty"`
	CopyOneThreadMbwMiBps float64 `json:"copyOneThreadMbwMiBps,omitempty"`
	// MemcpyMbwMiBps is the copy as 'mbw -t1' runs it: the same arrays
	// copied with the C library's memcpy (NUMAResult.MemcpyRoutine; Go's
	// copy where it cannot be loaded), counted as mbw counts them.
	// Debian's mbw 1.2.2 runs glibc's memcpy for -t1 although it labels
	// the lines DUMB (and the element loop for -t0, labelled MEMCPY; see
	// docs/BANDWIDTH.md). MemcpyGBps is the median of the same passes
	// counting read plus written; MemcpyOneThreadMbwMiBps the one-thread
	// passes of a local pair, beside CopyOneThreadGBps.
	MemcpyGBps              float64 `json:"memcpyGBps"`
	MemcpyMbwMiBps          float64 `json:"memcpyMbwMiBps"`
	MemcpyOneThreadMbwMiBps float64 `json:"memcpyOneThreadMbwMiBps,omitempty"`
	// GoCopyMbwMiBps is the same copy with Go's copy (the runtime's
	// memmove: what a Go program on the node gets), a few passes
	// (goCopyPasses) counted as mbw counts; GoCopyOneThreadMbwMiBps the
	// one-thread passes of a local pair.
	GoCopyMbwMiBps          float64 `json:"goCopyMbwMiBps"`
	GoCopyOneThreadMbwMiBps float64 `json:"goCopyOneThreadMbwMiBps,omitempty"`
	TriadGBps               float64 `json:"triadGBps"`
	LatencyNs               float64 `json:"latencyNs"`
	// The best samples (STREAM reports the best pass; the fastest chase
	// sample is the closest to idle latency on a busy machine).
	CopyBestGBps  float64 `json:"copyBestGBps"`
	TriadBestGBps float64 `json:"triadBestGBps"`
	LatencyMinNs  float64 `json:"latencyMinNs"`
	// Ratios to the CPU node's local pair (remote/local); absent for the
	// local pair itself.
	CopyVsLocal    float64 `json:"copyVsLocal,omitempty"`
	TriadVsLocal   float64 `json:"triadVsLocal,omitempty"`
	LatencyVsLocal float64 `json:"latencyVsLocal,omitempty"`
	// PagesOnNode is how many sampled pages of the arrays the kernel
	// reports on MemNode (move_pages), of PagesSampled.
	PagesOnNode  int `json:"pagesOnNode"`
	PagesSampled int `json:"pagesSampled"`
	// Every sample (one per pass over the arrays; one per chase chunk).
	CopySamplesGBps   []float64 `json:"copySamplesGBps"`
	TriadSamplesGBps  []float64 `json:"triadSamplesGBps"`
	MemcpySamplesGBps []float64 `json:"memcpySamplesGBps"`
	GoCopySamplesGBps []float64 `json:"goCopySamplesGBps"`
	LatencySamplesNs  []float64 `json:"latencySamplesNs"`
}

// NUMAOptions tune RunNUMA.
type NUMAOptions struct {
	// Duration bounds the whole run, allocation and first touch included
	// (default 10 s); each kernel (copy, triad, latency) of each pair gets
	// an equal share of what is left, and buffers are sized to fit it.
	Duration time.Duration
	// Threads per CPU node (0: every online CPU of the node).
	Threads int
	// ArrayBytes and LatencyBytes override the sizes derived from the L3
	// caches (tests).
	ArrayBytes, LatencyBytes uint64
	// CPUNodes and MemNodes restrict the pairs (nil: all).
	CPUNodes, MemNodes []int
	Progress           Progress
	// measure replaces the live kernels (tests of the report pipeline).
	measure numaMeasurer
	// openLibc replaces dlopenLibc, the loader of the memcpy passes'
	// routine (tests: a failing one for the fallback to Go's copy).
	openLibc libcOpener
}

// bwSamples are the passes of one bandwidth run (GB/s, read plus
// written) and the page placement probe.
type bwSamples struct {
	copy, triad, memcpy, goCopy []float64
	on, sampled                 int
}

// numaMeasurer runs the kernels of one pair.
type numaMeasurer interface {
	// bandwidth runs each of ops for an equal part of d, d in all.
	bandwidth(ctx context.Context, cpus []int, node int, arrayBytes uint64, ops []streamOp, d time.Duration) (bwSamples, error)
	latency(ctx context.Context, cpu int, node int, bufBytes uint64, d time.Duration) ([]float64, error)
}

// numaPlan is what RunNUMA will measure.
type numaPlan struct {
	pairs        []NUMAPair
	cpus         map[int][]int // CPU node -> CPUs used
	arrayBytes   uint64
	latencyBytes uint64
	notes        []string
}

const (
	minArrayBytes   = 64 << 20
	maxArrayBytes   = 4 << 30
	minLatencyBytes = 128 << 20
	maxLatencyBytes = 1 << 30
	// floorBytes is the smallest buffer a cap leaves.
	floorBytes = 4 << 20
	// touchBytesPerSecond is the first-touch rate the duration cap assumes
	// (a slow, loaded VM); a quarter of --duration goes to allocation.
	touchBytesPerSecond = 1 << 30
)

// capBuffers shrinks the three arrays and the chase buffer, in proportion,
// so that they take at most limit bytes together.
func capBuffers(arr, lat, limit uint64) (uint64, uint64) {
	need := 3*arr + lat
	if need <= limit {
		return arr, lat
	}
	arr = max(uint64(float64(arr)*float64(limit)/float64(need)), floorBytes) &^ 4095
	lat = max(uint64(float64(lat)*float64(limit)/float64(need)), floorBytes) &^ 4095
	return arr, lat
}

// planNUMA chooses the pairs, CPUs and sizes from the topology.
func planNUMA(t *topo.Topology, o NUMAOptions) (*numaPlan, error) {
	p := &numaPlan{cpus: map[int][]int{}}
	var l3Total, l3Max uint64
	for _, c := range t.L3Caches {
		l3Total += c.SizeBytes
		l3Max = max(l3Max, c.SizeBytes)
	}
	if l3Total == 0 {
		p.notes = append(p.notes, "no L3 cache size known: using the minimum buffer sizes")
	}
	p.arrayBytes = o.ArrayBytes
	if p.arrayBytes == 0 {
		p.arrayBytes = min(max(4*l3Total, minArrayBytes), maxArrayBytes)
	}
	p.latencyBytes = o.LatencyBytes
	if p.latencyBytes == 0 {
		p.latencyBytes = min(max(8*l3Max, minLatencyBytes), maxLatencyBytes)
	}
	// Bounded by the run's duration (one first touch of every buffer per
	// pair at a slow rate within a quarter of it) and by free memory (half
	// the smallest free of the memory nodes measured).
	if o.Duration > 0 && o.ArrayBytes == 0 && o.LatencyBytes == 0 {
		pairs := max(1, len(t.NUMANodes)*len(t.NUMANodes))
		limit := uint64(o.Duration.Seconds() / 4 * touchBytesPerSecond / float64(pairs))
		a, l := capBuffers(p.arrayBytes, p.latencyBytes, limit)
		if a != p.arrayBytes {
			p.notes = append(p.notes, fmt.Sprintf("buffers limited by --duration %s to %d MiB per array and %d MiB for the chase (a longer --duration measures beyond the caches)", o.Duration, a>>20, l>>20))
		}
		p.arrayBytes, p.latencyBytes = a, l
	}
	var freeMin uint64
	for _, n := range t.NUMANodes {
		if n.MemFreeBytes > 0 && (o.MemNodes == nil || slices.Contains(o.MemNodes, n.ID)) && (freeMin == 0 || n.MemFreeBytes < freeMin) {
			freeMin = n.MemFreeBytes
		}
	}
	if freeMin > 0 {
		a, l := capBuffers(p.arrayBytes, p.latencyBytes, freeMin/2)
		if a != p.arrayBytes || l != p.latencyBytes {
			p.notes = append(p.notes, fmt.Sprintf("buffers limited by free memory (%d MiB free on the fullest node measured) to %d MiB per array and %d MiB for the chase", freeMin>>20, a>>20, l>>20))
		}
		p.arrayBytes, p.latencyBytes = a, l
	}
	var cpuNodes, memNodes []int
	for _, n := range t.NUMANodes {
		if cpus := onlineCPUs(t, n); len(cpus) > 0 && (o.CPUNodes == nil || slices.Contains(o.CPUNodes, n.ID)) {
			if o.Threads > 0 {
				if o.Threads > len(cpus) {
					return nil, inputf("--threads %d: node %d has %d online CPUs", o.Threads, n.ID, len(cpus))
				}
				cpus = cpus[:o.Threads]
			}
			cpuNodes = append(cpuNodes, n.ID)
			p.cpus[n.ID] = cpus
		}
		if n.MemTotalBytes > 0 && (o.MemNodes == nil || slices.Contains(o.MemNodes, n.ID)) {
			memNodes = append(memNodes, n.ID)
			need := 3*p.arrayBytes + p.latencyBytes
			if n.MemFreeBytes > 0 && need > n.MemFreeBytes/2 {
				p.notes = append(p.notes, fmt.Sprintf("node %d has %d MiB free; the buffers need %d MiB", n.ID, n.MemFreeBytes>>20, need>>20))
			}
		}
	}
	for _, want := range [][]int{o.CPUNodes, o.MemNodes} {
		for _, id := range want {
			if t.NodeByID(id) == nil {
				return nil, inputf("no NUMA node %d", id)
			}
		}
	}
	if len(cpuNodes) == 0 || len(memNodes) == 0 {
		return nil, inputf("no NUMA node with online CPUs and none with memory to measure")
	}
	for _, x := range cpuNodes {
		for _, y := range memNodes {
			pair := NUMAPair{CPUNode: x, MemNode: y, Threads: len(p.cpus[x]), CPUs: topo.NewCPUList(cpusetOf(p.cpus[x])).String()}
			if n := t.NodeByID(x); n != nil {
				pair.Distance = distanceTo(t, n, y)
			}
			p.pairs = append(p.pairs, pair)
		}
	}
	if len(t.NUMANodes) == 1 {
		p.notes = append(p.notes, "one NUMA node: only the local pair is measured; remote pairs need a machine with two or more nodes")
	}
	return p, nil
}

// onlineCPUs lists a node's online CPUs, one CPU of every physical core
// first, then the SMT siblings (so --threads N spreads over cores).
func onlineCPUs(t *topo.Topology, n topo.NUMANode) []int {
	set := n.CPUs.CPUSet.Intersection(t.OnlineCPUs.CPUSet)
	if t.OnlineCPUs.CPUSet.Size() == 0 {
		set = n.CPUs.CPUSet
	}
	var first, rest []int
	for _, core := range t.CoreGroups(set) {
		l := core.List()
		if len(l) == 0 {
			continue
		}
		first = append(first, l[0])
		rest = append(rest, l[1:]...)
	}
	return append(first, rest...)
}

func distanceTo(t *topo.Topology, n *topo.NUMANode, to int) int {
	for i, m := range t.NUMANodes {
		if m.ID == to && i < len(n.Distances) {
			return n.Distances[i]
		}
	}
	return 0
}

// RunNUMA measures every (CPU node, memory node) pair of t on this machine.
func RunNUMA(ctx context.Context, t *topo.Topology, o NUMAOptions) (*NUMAResult, error) {
	if o.Duration <= 0 {
		o.Duration = 10 * time.Second
	}
	begin := time.Now()
	end := begin.Add(o.Duration)
	if o.Progress == nil {
		o.Progress = NoProgress{}
	}
	p, err := planNUMA(t, o)
	if err != nil {
		return nil, err
	}
	if o.openLibc == nil {
		o.openLibc = dlopenLibc
	}
	mc := chooseMemcpy(o.openLibc)
	if mc.release != nil {
		defer mc.release()
	}
	m := o.measure
	if m == nil {
		m = liveNUMA{memcpy: mc.copy}
	}
	r := &NUMAResult{SchemaVersion: NUMASchema, Host: t.Hostname, Kernel: t.Kernel, CPUModel: t.CPUModel,
		Time: time.Now().UTC().Format(time.RFC3339), DurationSeconds: o.Duration.Seconds(),
		ArrayBytes: p.arrayBytes, LatencyBytes: p.latencyBytes, MemcpyRoutine: mc.name, Notes: p.notes}
	if mc.note != "" {
		r.Notes = append(r.Notes, mc.note)
	}
	for _, n := range t.NUMANodes {
		r.Nodes = append(r.Nodes, n.ID)
		r.Distances = append(r.Distances, slices.Clone(n.Distances))
	}
	o.Progress.Start("numa", 3*len(p.pairs), o.Duration)
	defer o.Progress.Done()
	// Work is counted in kernel passes of equal share: copy, triad,
	// memcpy and Go's copy over every CPU of the node, the latency chase,
	// and, on a local pair of more than one CPU, copy, memcpy and Go's
	// copy of one thread. Go's copy stops after goCopyPasses: what it
	// leaves of its share goes to the kernels after it.
	allOps := []streamOp{opCopy, opTriad, opMemcpy, opGoCopy}
	oneOps := []streamOp{opCopy, opMemcpy, opGoCopy}
	unitsOf := func(pair NUMAPair) int {
		u := len(allOps) + 1
		if pair.CPUNode == pair.MemNode && len(p.cpus[pair.CPUNode]) > 1 {
			u += len(oneOps)
		}
		return u
	}
	unitsLeft := 0
	for _, pair := range p.pairs {
		unitsLeft += unitsOf(pair)
	}
	// share is the time of units kernels, their buffers' mapping and first
	// touch included: their part of what is left, less a third kept for
	// overshoot (a kernel's warm-up and last pass, unmapping).
	share := func(units int) time.Duration {
		d := max(time.Until(end)*2/3*time.Duration(units)/time.Duration(max(unitsLeft, 1)), time.Millisecond)
		unitsLeft -= units
		return d
	}
	for i := range p.pairs {
		pair := &p.pairs[i]
		cpus := p.cpus[pair.CPUNode]
		if pair.CPUNode == pair.MemNode && len(cpus) > 1 {
			// One thread beside all of them.
			s1, err := m.bandwidth(ctx, cpus[:1], pair.MemNode, p.arrayBytes, oneOps, share(len(oneOps)))
			if err != nil {
				return nil, fmt.Errorf("CPU node %d, memory node %d, one thread: %w", pair.CPUNode, pair.MemNode, err)
			}
			pair.CopyOneThreadGBps, pair.CopyOneThreadMbwMiBps = round3(Median(s1.copy)), round3(mbwMiBps(s1.copy))
			pair.MemcpyOneThreadMbwMiBps = round3(mbwMiBps(s1.memcpy))
			pair.GoCopyOneThreadMbwMiBps = round3(mbwMiBps(s1.goCopy))
		}
		s, err := m.bandwidth(ctx, cpus, pair.MemNode, p.arrayBytes, allOps, share(len(allOps)))
		if err != nil {
			return nil, fmt.Errorf("CPU node %d, memory node %d: %w", pair.CPUNode, pair.MemNode, err)
		}
		o.Progress.Add(2)
		lat, err := m.latency(ctx, cpus[0], pair.MemNode, p.latencyBytes, share(1))
		if err != nil {
			return nil, fmt.Errorf("CPU node %d, memory node %d latency: %w", pair.CPUNode, pair.MemNode, err)
		}
		o.Progress.Add(1)
		c, tr := s.copy, s.triad
		pair.CopySamplesGBps, pair.TriadSamplesGBps, pair.MemcpySamplesGBps, pair.LatencySamplesNs = c, tr, s.memcpy, lat
		pair.GoCopySamplesGBps = s.goCopy
		pair.GoCopyMbwMiBps = round3(mbwMiBps(s.goCopy))
		pair.CopyGBps, pair.TriadGBps, pair.LatencyNs = round3(Median(c)), round3(Median(tr)), round3(Median(lat))
		pair.CopyMbwMiBps = round3(mbwMiBps(c))
		pair.MemcpyGBps, pair.MemcpyMbwMiBps = round3(Median(s.memcpy)), round3(mbwMiBps(s.memcpy))
		_, pair.CopyBestGBps = MinMax(c)
		_, pair.TriadBestGBps = MinMax(tr)
		pair.LatencyMinNs, _ = MinMax(lat)
		pair.PagesOnNode, pair.PagesSampled = s.on, s.sampled
		if s.sampled > 0 && s.on < s.sampled {
			r.Notes = append(r.Notes, fmt.Sprintf("CPU node %d, memory node %d: only %d of %d sampled pages were on node %d", pair.CPUNode, pair.MemNode, s.on, s.sampled, pair.MemNode))
		}
	}
	addLocalRatios(p.pairs)
	r.Pairs = p.pairs
	if r.Notes == nil {
		r.Notes = []string{}
	}
	return r, nil
}

// mbwMiBps is copy samples (GB/s counting read plus written) as mbw
// reports them: MiB of one array over the mean pass time. A sample s of an
// array of B bytes took 2B/(s*1e9) seconds, so the figure is
// B/2^20 / mean(2B/(s_i*1e9)) = 1e9 / (2^21 * mean(1/s_i)).
func mbwMiBps(samples []float64) float64 {
	var inv float64
	n := 0
	for _, s := range samples {
		if s > 0 {
			inv += 1 / s
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return 1e9 / float64(1<<21) / (inv / float64(n))
}

func addLocalRatios(pairs []NUMAPair) {
	local := map[int]NUMAPair{}
	for _, p := range pairs {
		if p.CPUNode == p.MemNode {
			local[p.CPUNode] = p
		}
	}
	for i := range pairs {
		p := &pairs[i]
		l, ok := local[p.CPUNode]
		if !ok || p.CPUNode == p.MemNode {
			continue
		}
		p.CopyVsLocal = round3(ratio(p.CopyGBps, l.CopyGBps))
		p.TriadVsLocal = round3(ratio(p.TriadGBps, l.TriadGBps))
		p.LatencyVsLocal = round3(ratio(p.LatencyNs, l.LatencyNs))
	}
}

// liveNUMA runs the kernels on this machine.
type liveNUMA struct {
	// memcpy is the routine of the memcpy passes (memcpyRoutine.copy).
	memcpy func(dst, src []byte)
}

const triadScalar = 3.0

type streamOp int

const (
	opCopy streamOp = iota
	opTriad
	// opMemcpy is the C library's memcpy (liveNUMA.memcpy), opGoCopy Go's.
	opMemcpy
	opGoCopy
)

// goCopyPasses bounds the passes of Go's copy (warm-up excluded): mbw's
// -n 10. The figure sits beside the memcpy passes, which take the time.
const goCopyPasses = 10

type streamWorker struct {
	ops  chan streamOp
	done chan span
}

// span is when one worker's pass started and ended.
type span struct{ start, end time.Time }

// bandwidth runs ops with one worker per CPU, each pinned to its CPU with
// its memory bound to node, over its share of the arrays.
func (l liveNUMA) bandwidth(ctx context.Context, cpus []int, node int, arrayBytes uint64, ops []streamOp, d time.Duration) (bwSamples, error) {
	var out bwSamples
	n := len(cpus)
	per := int(arrayBytes) / n
	per -= per % 4096
	if per < 4096 {
		return out, inputf("arrays of %d bytes for %d threads", arrayBytes, n)
	}
	if len(ops) == 0 {
		return out, nil
	}
	memcpy := l.memcpy
	if memcpy == nil {
		memcpy = goCopy
	}
	// d includes the mapping and first touch of the arrays: what they
	// took is not measured (a loaded machine's page faults cost seconds).
	began := time.Now()
	workers := make([]streamWorker, n)
	ready := make(chan error, n)
	type probe struct{ on, sampled int }
	probes := make(chan probe, n)
	for i := range workers {
		w := streamWorker{ops: make(chan streamOp), done: make(chan span, 1)}
		workers[i] = w
		go func(cpu int) {
			// Locked and never unlocked: the thread is retired at the end.
			if err := boundThread([]int{cpu}, node); err != nil {
				ready <- err
				return
			}
			var bufs [3][]byte
			defer func() {
				for _, b := range bufs {
					unmap(b)
				}
			}()
			for k := range bufs {
				b, err := mapOnNode(per, node)
				if err != nil {
					ready <- err
					return
				}
				bufs[k] = b
			}
			a, b, c := float64s(bufs[0]), float64s(bufs[1]), float64s(bufs[2])
			for j := range a { // first touch, by this thread
				a[j], b[j], c[j] = 1, 2, 0
			}
			on, s := pagesOnNode(bufs[0], node)
			probes <- probe{on, s}
			ready <- nil
			for op := range w.ops {
				start := time.Now()
				switch op {
				case opCopy:
					streamCopy(c, a)
				case opTriad:
					streamTriad(a, b, c)
				case opMemcpy:
					memcpy(bufs[2], bufs[0])
				case opGoCopy:
					copy(bufs[2], bufs[0])
				}
				w.done <- span{start, time.Now()}
			}
		}(cpus[i])
	}
	defer func() {
		for _, w := range workers {
			close(w.ops)
		}
	}()
	var firstErr error
	for range workers {
		if e := <-ready; e != nil && firstErr == nil {
			firstErr = e
		}
	}
	if firstErr != nil {
		// Workers that did start wait on ops; the deferred close ends them.
		return out, firstErr
	}
	for range workers {
		pr := <-probes
		if pr.sampled > 0 {
			out.on += pr.on
			out.sampled += pr.sampled
		}
	}
	total := float64(per/8*n) * 8
	// A pass lasts from the first worker's start to the last worker's end
	// (the hand-off to the first worker is not counted; a late worker is).
	pass := func(op streamOp) time.Duration {
		for _, w := range workers {
			w.ops <- op
		}
		var first, last time.Time
		for i, w := range workers {
			s := <-w.done
			if i == 0 || s.start.Before(first) {
				first = s.start
			}
			if i == 0 || s.end.After(last) {
				last = s.end
			}
		}
		return last.Sub(first)
	}
	d = max(d-time.Since(began), 0) / time.Duration(len(ops))
	for _, op := range ops {
		bytes, dst, passes := 2*total, &out.copy, maxSamples
		switch op {
		case opTriad:
			bytes, dst = 3*total, &out.triad
		case opMemcpy:
			dst = &out.memcpy
		case opGoCopy:
			dst, passes = &out.goCopy, goCopyPasses
		}
		deadline := time.Now().Add(d)
		if el := pass(op); el*time.Duration(minSamples+1) > d { // warm-up, excluded
			// Passes are long for the share: no more than fit.
			deadline = time.Now().Add(d - el)
		}
		for i := 0; i < passes && (i == 0 || time.Now().Before(deadline)); i++ {
			if ctx.Err() != nil {
				return bwSamples{}, ctx.Err()
			}
			el := pass(op)
			*dst = append(*dst, round3(bytes/el.Seconds()/1e9))
		}
	}
	return out, nil
}

// streamCopy is STREAM's copy loop (ordinary stores), not memmove: Go's
// memmove streams large copies with non-temporal stores, which STREAM's
// kernel does not.
//
//go:noinline
func streamCopy(c, a []float64) {
	c = c[:len(a)]
	for j := range a {
		c[j] = a[j]
	}
}

// streamTriad is STREAM's triad: a = b + q*c.
//
//go:noinline
func streamTriad(a, b, c []float64) {
	b, c = b[:len(a)], c[:len(a)]
	for j := range a {
		a[j] = b[j] + triadScalar*c[j]
	}
}

const (
	minSamples = 3
	maxSamples = 100000
	lineBytes  = 64
	chaseChunk = 1 << 14 // loads per latency sample (a few ms: short samples dodge preemption)
)

// latency chases a random cyclic permutation of the buffer's cache lines
// (each load's address depends on the previous load) from one pinned CPU.
func (liveNUMA) latency(ctx context.Context, cpu int, node int, bufBytes uint64, d time.Duration) ([]float64, error) {
	type out struct {
		s   []float64
		err error
	}
	res := make(chan out, 1)
	// d includes the mapping and the building of the chase.
	deadline := time.Now().Add(d)
	go func() {
		// Locked and never unlocked: the thread is retired at the end.
		if err := boundThread([]int{cpu}, node); err != nil {
			res <- out{err: err}
			return
		}
		buf, err := mapOnNode(int(bufBytes), node)
		if err != nil {
			res <- out{err: err}
			return
		}
		defer unmap(buf)
		words := uint64s(buf)
		buildChase(words, newRand())
		var samples []float64
		var p uint64
		p = chase(words, p, chaseChunk) // warm-up, excluded
		for i := 0; i < maxSamples && (i == 0 || time.Now().Before(deadline)); i++ {
			if ctx.Err() != nil {
				res <- out{err: ctx.Err()}
				return
			}
			start := time.Now()
			p = chase(words, p, chaseChunk)
			samples = append(samples, round3(float64(time.Since(start).Nanoseconds())/chaseChunk))
		}
		if p == ^uint64(0) { // keeps the chase live
			samples = nil
		}
		res <- out{s: samples}
	}()
	o := <-res
	if o.err != nil {
		return nil, o.err
	}
	if len(o.s) == 0 {
		return nil, errors.New("pointer chase produced no samples")
	}
	return o.s, nil
}

// buildChase links the first word of every cache line of words into one
// cycle through all lines in a random order: the first word of a line holds
// the index of the next line's first word, so no prefetcher can guess it.
func buildChase(words []uint64, r *rand.Rand) {
	const stride = lineBytes / 8
	n := len(words) / stride
	order := make([]uint32, n)
	for i := range order {
		order[i] = uint32(i)
	}
	for i := n - 1; i > 0; i-- {
		j := r.IntN(i)
		order[i], order[j] = order[j], order[i]
	}
	for i := range n {
		from, to := order[i], order[(i+1)%n]
		words[uint64(from)*stride] = uint64(to) * stride
	}
}

// chase follows n links from p.
func chase(words []uint64, p uint64, n int) uint64 {
	for range n {
		p = words[p]
	}
	return p
}

// newRand is the fixed-seed generator of the chase order.
func newRand() *rand.Rand { return rand.New(rand.NewPCG(1, 2)) }
