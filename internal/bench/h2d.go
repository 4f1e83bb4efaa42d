package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/gpunode/gpunode/internal/bind"
	"github.com/gpunode/gpunode/internal/topo"
)

// H2DSchema identifies the JSON/YAML layout of H2DResult.
const H2DSchema = "gpunode.bench.h2d/v1"

// nvbandwidth's documented copy-engine defaults.
const (
	DefaultH2DSize    = 512 << 20
	DefaultH2DLoops   = 16
	DefaultH2DSamples = 3
)

// Directions, memory kinds and placements of a copy case.
const (
	HostToDevice = "h2d"
	DeviceToHost = "d2h"
	Pinned       = "pinned"
	Pageable     = "pageable"
	Local        = "local"
	Remote       = "remote"
)

// ErrNoDriver is returned by RunH2D when the CUDA driver cannot be loaded.
var ErrNoDriver = errors.New("no NVIDIA driver")

// H2DResult is one 'gpunode bench h2d' run.
type H2DResult struct {
	SchemaVersion string `json:"schemaVersion"`
	Time          string `json:"time,omitempty"`
	GPU           int    `json:"gpu"`
	BDF           string `json:"bdf"`
	Name          string `json:"name,omitempty"`
	Driver        string `json:"driver,omitempty"`
	// GPUNode is the GPU's NUMA node (as gpunode bind finds it);
	// RemoteNode the farthest node with CPUs and memory (-1: none).
	GPUNode    int `json:"gpuNode"`
	RemoteNode int `json:"remoteNode"`
	// Link is the GPU's PCIe link as trained, and its theoretical rate in
	// one direction.
	LinkGen   string     `json:"linkGen,omitempty"`
	LinkWidth int        `json:"linkWidth,omitempty"`
	LinkGBps  float64    `json:"linkGBps,omitempty"`
	SizeBytes uint64     `json:"sizeBytes"`
	Loops     int        `json:"loops"`
	Samples   int        `json:"samples"`
	Method    string     `json:"method"`
	Cases     []H2DCase  `json:"cases"`
	Ratios    []H2DRatio `json:"ratios"`
	Notes     []string   `json:"notes"`
}

// H2DCase is one direction x memory kind x placement. GB/s are 10^9 bytes
// per second of data copied.
type H2DCase struct {
	Direction   string    `json:"direction"`
	Memory      string    `json:"memory"`
	Placement   string    `json:"placement"`
	Node        int       `json:"node"`
	CPUs        string    `json:"cpus"`
	GBps        float64   `json:"gbps"`
	VsLink      float64   `json:"vsLink,omitempty"`
	SamplesGBps []float64 `json:"samplesGBps"`
}

// H2DRatio compares two cases: local/remote (same direction and memory) or
// pinned/pageable (same direction and placement).
type H2DRatio struct {
	Name      string  `json:"name"`
	Direction string  `json:"direction"`
	Of        string  `json:"of"` // the memory kind or placement held fixed
	Ratio     float64 `json:"ratio"`
}

// Copier is a GPU copy engine (the CUDA driver, or a fake in tests).
type Copier interface {
	// Open prepares the GPU at PCI address bdf for copies of size bytes.
	Open(ctx context.Context, bdf string, size int) (CopyDevice, error)
	// Name names the implementation ("cuda 12.4" ...).
	Name() string
}

// CopyDevice copies between host buffers and one GPU's memory. Its methods
// are called from the goroutine (locked OS thread) that owns the buffer.
type CopyDevice interface {
	// Pin page-locks host (registers it with the driver) until unpin.
	Pin(host []byte) (unpin func() error, err error)
	// Copy copies host to the device (h2d) or back (d2h) loops times and
	// returns the time taken, the copies complete.
	Copy(host []byte, direction string, loops int) (time.Duration, error)
	Close() error
}

// H2DOptions tune RunH2D.
type H2DOptions struct {
	GPU      string // index, UUID or PCI address (bind's --gpu)
	Size     int    // bytes per copy (default DefaultH2DSize)
	Loops    int    // copies per sample (default DefaultH2DLoops)
	Samples  int    // samples per case (default DefaultH2DSamples)
	Copier   Copier
	Sources  bind.Sources
	Progress Progress
	// place and hostMem replace the thread binding and the host buffer
	// mapping (tests of the report pipeline on fixture topologies).
	place   func(cpus []int, node int) error
	hostMem func(size, node int) (buf []byte, free func(), err error)
}

// h2dPlacement is one binding, from bind.Resolve.
type h2dPlacement struct {
	name string
	plan *bind.Plan
}

// planH2D resolves the GPU and the two bindings with gpunode bind's logic:
// the GPU's own (--gpu G --mem bind) and the farthest node's (--node F --mem
// bind).
func planH2D(ctx context.Context, t *topo.Topology, o H2DOptions) (*H2DResult, []h2dPlacement, error) {
	if o.GPU == "" {
		o.GPU = "0"
	}
	local, err := bind.Resolve(ctx, t, bind.Request{GPU: o.GPU, Mem: bind.MemBind}, o.Sources)
	if err != nil {
		if errors.Is(err, bind.ErrInput) {
			return nil, nil, inputErr{err}
		}
		return nil, nil, err
	}
	if local.Target.Kind != "gpu" || local.Target.Index == nil {
		return nil, nil, inputf("--gpu %s is not a GPU", o.GPU)
	}
	r := &H2DResult{SchemaVersion: H2DSchema, Time: time.Now().UTC().Format(time.RFC3339), GPU: *local.Target.Index,
		BDF: local.Target.BDF, GPUNode: local.NUMANode, RemoteNode: -1,
		SizeBytes: uint64(o.Size), Loops: o.Loops, Samples: o.Samples, Notes: []string{},
		Method: fmt.Sprintf("cuMemcpyHtoD/DtoH of %d MiB, %d copies per sample then cuCtxSynchronize, median of %d samples, one warm-up copy excluded (defaults: nvbandwidth's 512 MiB, 16 copies, 3 samples)", o.Size>>20, o.Loops, o.Samples)}
	if d := t.Device(local.Target.BDF); d != nil {
		r.LinkGen, r.LinkWidth = d.LinkSpeed.GenName(), d.LinkWidth
		r.LinkGBps = round3(topo.LinkGBps(d.LinkSpeed, d.LinkWidth))
		r.Name = d.Name
	}
	places := []h2dPlacement{{Local, local}}
	far := farthestNode(t, local.NUMANode)
	if far < 0 {
		r.Notes = append(r.Notes, "one NUMA node with CPUs and memory: only the GPU's own node is measured; remote cases need two or more")
	} else {
		n := far
		remote, err := bind.Resolve(ctx, t, bind.Request{Node: &n, Mem: bind.MemBind}, bind.Sources{})
		if err != nil {
			return nil, nil, fmt.Errorf("binding to node %d: %w", far, err)
		}
		r.RemoteNode = far
		places = append(places, h2dPlacement{Remote, remote})
	}
	return r, places, nil
}

// farthestNode is the node with online CPUs and memory at the largest
// distance from node (ties: the lowest id), or -1.
func farthestNode(t *topo.Topology, node int) int {
	from := t.NodeByID(node)
	best, bestD := -1, -1
	for _, n := range t.NUMANodes {
		if n.ID == node || n.CPUs.Size() == 0 || n.MemTotalBytes == 0 {
			continue
		}
		d := 0
		if from != nil {
			d = distanceTo(t, from, n.ID)
		}
		if d > bestD {
			best, bestD = n.ID, d
		}
	}
	return best
}

// RunH2D measures host-to-device and device-to-host copies for the GPU.
func RunH2D(ctx context.Context, t *topo.Topology, o H2DOptions) (*H2DResult, error) {
	if o.Size <= 0 {
		o.Size = DefaultH2DSize
	}
	if o.Loops <= 0 {
		o.Loops = DefaultH2DLoops
	}
	if o.Samples <= 0 {
		o.Samples = DefaultH2DSamples
	}
	if o.Progress == nil {
		o.Progress = NoProgress{}
	}
	if o.Copier == nil {
		o.Copier = CUDA{}
	}
	if o.place == nil {
		o.place = boundThread
	}
	if o.hostMem == nil {
		o.hostMem = func(size, node int) ([]byte, func(), error) {
			b, err := mapOnNode(size, node)
			if err != nil {
				return nil, nil, err
			}
			touch(b) // first touch by the bound thread
			return b, func() { unmap(b) }, nil
		}
	}
	r, places, err := planH2D(ctx, t, o)
	if err != nil {
		return nil, err
	}
	dev, err := o.Copier.Open(ctx, r.BDF, o.Size)
	if err != nil {
		return nil, err
	}
	defer dev.Close()
	r.Driver = o.Copier.Name()
	if in, ok := dev.(interface{ Info() string }); ok {
		r.Driver = in.Info()
	}
	steps := len(places) * 4 * (o.Samples + 1)
	o.Progress.Start("h2d", steps, time.Duration(steps)*time.Duration(o.Loops)*10*time.Millisecond)
	defer o.Progress.Done()
	for _, pl := range places {
		cases, err := runPlacement(ctx, dev, pl, o)
		if err != nil {
			return nil, fmt.Errorf("%s (node %d): %w", pl.name, pl.plan.NUMANode, err)
		}
		for i := range cases {
			if r.LinkGBps > 0 {
				cases[i].VsLink = round3(cases[i].GBps / r.LinkGBps)
			}
		}
		r.Cases = append(r.Cases, cases...)
	}
	r.Ratios = h2dRatios(r.Cases)
	return r, nil
}

// runPlacement runs the four cases of one binding on a locked OS thread
// pinned to the binding's CPUs, with its memory policy, and a host buffer
// mbind'ed to the node and first touched there.
func runPlacement(ctx context.Context, dev CopyDevice, pl h2dPlacement, o H2DOptions) ([]H2DCase, error) {
	type out struct {
		cases []H2DCase
		err   error
	}
	ch := make(chan out, 1)
	go func() {
		// Locked and never unlocked: the thread is retired at the end.
		node := pl.plan.NUMANode
		if err := o.place(pl.plan.CPUs.List(), node); err != nil {
			ch <- out{err: err}
			return
		}
		var cases []H2DCase
		for _, mem := range []string{Pageable, Pinned} {
			buf, free, err := o.hostMem(o.Size, node)
			if err != nil {
				ch <- out{err: err}
				return
			}
			unpin := func() error { return nil }
			if mem == Pinned {
				if unpin, err = dev.Pin(buf); err != nil {
					free()
					ch <- out{err: err}
					return
				}
			}
			for _, dir := range []string{HostToDevice, DeviceToHost} {
				c := H2DCase{Direction: dir, Memory: mem, Placement: pl.name, Node: node, CPUs: pl.plan.CPUs.String()}
				if _, err := dev.Copy(buf, dir, 1); err != nil { // warm-up
					err = fmt.Errorf("%s %s: %w", dir, mem, err)
					_ = unpin()
					free()
					ch <- out{err: err}
					return
				}
				o.Progress.Add(1)
				for range o.Samples {
					if ctx.Err() != nil {
						_ = unpin()
						free()
						ch <- out{err: ctx.Err()}
						return
					}
					el, err := dev.Copy(buf, dir, o.Loops)
					if err != nil || el <= 0 {
						if err == nil {
							err = errors.New("copy took no time")
						}
						_ = unpin()
						free()
						ch <- out{err: fmt.Errorf("%s %s: %w", dir, mem, err)}
						return
					}
					c.SamplesGBps = append(c.SamplesGBps, round3(float64(o.Size)*float64(o.Loops)/el.Seconds()/1e9))
					o.Progress.Add(1)
				}
				c.GBps = round3(Median(c.SamplesGBps))
				cases = append(cases, c)
			}
			err = unpin()
			free()
			if err != nil {
				ch <- out{err: err}
				return
			}
		}
		ch <- out{cases: cases}
	}()
	res := <-ch
	return res.cases, res.err
}

func h2dRatios(cases []H2DCase) []H2DRatio {
	get := func(dir, mem, place string) float64 {
		for _, c := range cases {
			if c.Direction == dir && c.Memory == mem && c.Placement == place {
				return c.GBps
			}
		}
		return 0
	}
	var out []H2DRatio
	for _, dir := range []string{HostToDevice, DeviceToHost} {
		for _, mem := range []string{Pinned, Pageable} {
			if l, rm := get(dir, mem, Local), get(dir, mem, Remote); l > 0 && rm > 0 {
				out = append(out, H2DRatio{Name: "local/remote", Direction: dir, Of: mem, Ratio: round3(l / rm)})
			}
		}
		for _, place := range []string{Local, Remote} {
			if p, pg := get(dir, Pinned, place), get(dir, Pageable, place); p > 0 && pg > 0 {
				out = append(out, H2DRatio{Name: "pinned/pageable", Direction: dir, Of: place, Ratio: round3(p / pg)})
			}
		}
	}
	if out == nil {
		out = []H2DRatio{}
	}
	return out
}

// nodeName renders a node id for tables.
func nodeName(n int) string {
	if n < 0 {
		return "-"
	}
	return strconv.Itoa(n)
}
