package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/bind"
	"github.com/gpunode/gpunode/internal/goldenfile"
	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/output"
	"github.com/gpunode/gpunode/internal/testhost"
	"github.com/gpunode/gpunode/internal/topo"
)

var update = flag.Bool("update", false, "rewrite golden files")

func fixture(t *testing.T, name string) *topo.Topology {
	t.Helper()
	fs, err := hostfs.New(testhost.Path(t, name))
	if err != nil {
		t.Fatal(err)
	}
	tp, err := topo.Discover(context.Background(), fs)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func render(t *testing.T, v any, f output.Format) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := output.Write(&b, f, v, output.Options{}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// fakeNUMA models a machine: bandwidth falls and latency rises with the
// distance, and every call is recorded.
type fakeNUMA struct {
	mu    sync.Mutex
	calls []string
	// shares are the measuring times RunNUMA handed out
	shares []time.Duration
	sleep  bool // spend each share, as the live kernels do
	dist   func(cpuNode, memNode int) int
	node   func(cpu int) int
}

func (f *fakeNUMA) bandwidth(_ context.Context, cpus []int, node int, arrayBytes uint64, ops []streamOp, share time.Duration) (bwSamples, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.shares = append(f.shares, share)
	if f.sleep {
		time.Sleep(share)
	}
	f.calls = append(f.calls, fmt.Sprintf("bw cpus=%d first=%d node=%d bytes=%d ops=%d", len(cpus), cpus[0], node, arrayBytes, len(ops)))
	d := float64(f.dist(f.node(cpus[0]), node))
	base := 2000 / d
	s := bwSamples{on: 64, sampled: 64}
	for _, op := range ops {
		switch op {
		case opCopy:
			s.copy = []float64{base * 0.98, base, base * 1.01}
		case opTriad:
			s.triad = []float64{base * 1.1, base * 1.1, base * 1.12}
		case opMemcpy:
			s.memcpy = []float64{base * 1.5, base * 1.5}
		case opGoCopy:
			s.goCopy = []float64{base * 1.6, base * 2}
		}
	}
	return s, nil
}

func (f *fakeNUMA) latency(_ context.Context, cpu int, node int, bufBytes uint64, share time.Duration) ([]float64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.shares = append(f.shares, share)
	if f.sleep {
		time.Sleep(share)
	}
	f.calls = append(f.calls, fmt.Sprintf("lat cpu=%d node=%d bytes=%d", cpu, node, bufBytes))
	d := float64(f.dist(f.node(cpu), node))
	return []float64{9 * d, 9.1 * d, 9 * d}, nil
}

func newFakeNUMA(tp *topo.Topology) *fakeNUMA {
	return &fakeNUMA{
		dist: func(x, y int) int { return distanceTo(tp, tp.NodeByID(x), y) },
		node: func(cpu int) int {
			for _, c := range tp.CPUs {
				if c.ID == cpu {
					return c.NUMANode
				}
			}
			return -1
		},
	}
}

func TestNUMAPipelineDGX(t *testing.T) {
	tp := fixture(t, "dgx-h100")
	f := newFakeNUMA(tp)
	released := 0
	r, err := RunNUMA(context.Background(), tp, NUMAOptions{Duration: time.Hour, measure: f, openLibc: fakeLibc("2.36", nil, &released)})
	if err != nil {
		t.Fatal(err)
	}
	// 2 CPU nodes x 2 memory nodes; arrays 4x the two 105 MiB L3s, chase
	// buffer 8x one L3; one thread per online CPU of the node (112), cores
	// first.
	if len(r.Pairs) != 4 {
		t.Fatalf("pairs: %d", len(r.Pairs))
	}
	wantCalls := []string{
		// local pairs: one thread over the same arrays first
		"bw cpus=1 first=0 node=0 bytes=880803840 ops=3",
		"bw cpus=112 first=0 node=0 bytes=880803840 ops=4", "lat cpu=0 node=0 bytes=880803840",
		"bw cpus=112 first=0 node=1 bytes=880803840 ops=4", "lat cpu=0 node=1 bytes=880803840",
		"bw cpus=112 first=56 node=0 bytes=880803840 ops=4", "lat cpu=56 node=0 bytes=880803840",
		"bw cpus=1 first=56 node=1 bytes=880803840 ops=3",
		"bw cpus=112 first=56 node=1 bytes=880803840 ops=4", "lat cpu=56 node=1 bytes=880803840",
	}
	if !slices.Equal(f.calls, wantCalls) {
		t.Errorf("calls:\n%s\nwant\n%s", strings.Join(f.calls, "\n"), strings.Join(wantCalls, "\n"))
	}
	if r.Pairs[0].CopyOneThreadGBps != 200 || r.Pairs[1].CopyOneThreadGBps != 0 || r.Pairs[0].CopyOneThreadMbwMiBps == 0 {
		t.Errorf("one-thread copy: %+v", r.Pairs[0])
	}
	// memcpy passes: 300 GB/s read+written is 150e9 B of one array per
	// second, as mbw counts it in MiB/s; one-thread and every-CPU alike.
	if want := round3(300e9 / 2 / (1 << 20)); r.Pairs[0].MemcpyGBps != 300 || r.Pairs[0].MemcpyMbwMiBps != want || r.Pairs[0].MemcpyOneThreadMbwMiBps != want || r.Pairs[1].MemcpyOneThreadMbwMiBps != 0 {
		t.Errorf("memcpy: %v %v %v, want 300 GB/s, %v MiB/s", r.Pairs[0].MemcpyGBps, r.Pairs[0].MemcpyMbwMiBps, r.Pairs[0].MemcpyOneThreadMbwMiBps, want)
	}
	// Go's copy beside it: passes of 320 and 400 GB/s read+written took
	// 2B/320e9 and 2B/400e9 s; mbw's figure is B over their mean.
	if want := round3(1e9 / (1 << 21) / ((1.0/320 + 1.0/400) / 2)); r.Pairs[0].GoCopyMbwMiBps != want || r.Pairs[0].GoCopyOneThreadMbwMiBps != want ||
		r.Pairs[1].GoCopyOneThreadMbwMiBps != 0 || len(r.Pairs[1].GoCopySamplesGBps) != 2 {
		t.Errorf("Go copy: %v %v %v, want %v MiB/s", r.Pairs[0].GoCopyMbwMiBps, r.Pairs[0].GoCopyOneThreadMbwMiBps, r.Pairs[1].GoCopySamplesGBps, want)
	}
	if r.MemcpyRoutine != "glibc 2.36 memcpy (libc.so.6)" || released != 1 {
		t.Errorf("memcpy routine %q, library released %d times", r.MemcpyRoutine, released)
	}
	p01 := r.Pairs[1]
	if p01.CPUNode != 0 || p01.MemNode != 1 || p01.Distance != 21 {
		t.Fatalf("pair 1: %+v", p01)
	}
	// Remote/local from the medians: bandwidth scales 10/21, latency 21/10.
	if p01.CopyVsLocal != round3(10.0/21) || p01.LatencyVsLocal != 2.1 {
		t.Errorf("ratios: copy %v latency %v", p01.CopyVsLocal, p01.LatencyVsLocal)
	}
	if r.Pairs[0].CopyVsLocal != 0 || r.Pairs[0].CopyGBps != 200 || r.Pairs[0].CopyBestGBps != 202 || r.Pairs[0].LatencyMinNs != 90 || r.Pairs[1].LatencyMinNs != 189 {
		t.Errorf("local pair: %+v", r.Pairs[0])
	}
	if !slices.Equal(r.Distances[1], []int{21, 10}) {
		t.Errorf("distances %v", r.Distances)
	}
	r.Time = ""
	goldenfile.Check(t, "testdata/numa-dgx.txt", render(t, r, output.Table), *update)
	// The JSON contract of the issue.
	var doc struct {
		SchemaVersion string `json:"schemaVersion"`
		MemcpyRoutine string `json:"memcpyRoutine"`
		Pairs         []struct {
			CPUNode        *int     `json:"cpuNode"`
			MemNode        *int     `json:"memNode"`
			CopyGBps       *float64 `json:"copyGBps"`
			TriadGBps      *float64 `json:"triadGBps"`
			LatencyNs      *float64 `json:"latencyNs"`
			MemcpyMbwMiBps *float64 `json:"memcpyMbwMiBps"`
			GoCopyMbwMiBps *float64 `json:"goCopyMbwMiBps"`
		} `json:"pairs"`
		Distances [][]int `json:"distances"`
	}
	if err := json.Unmarshal(render(t, r, output.JSON), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.SchemaVersion != "gpunode.bench.numa/v1" || doc.MemcpyRoutine != r.MemcpyRoutine || len(doc.Pairs) != 4 || len(doc.Distances) != 2 {
		t.Fatalf("json: %+v", doc)
	}
	for _, p := range doc.Pairs {
		if p.CPUNode == nil || p.MemNode == nil || p.CopyGBps == nil || p.TriadGBps == nil || p.LatencyNs == nil || p.MemcpyMbwMiBps == nil || p.GoCopyMbwMiBps == nil {
			t.Errorf("json pair misses a field: %+v", p)
		}
	}
}

func TestNUMAPlan(t *testing.T) {
	one := fixture(t, "vm-2vcpu")
	p, err := planNUMA(one, NUMAOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// One 32 MiB L3: arrays 4x32 = 128 MiB, chase 8x32 = 256 MiB.
	if len(p.pairs) != 1 || p.arrayBytes != 128<<20 || p.latencyBytes != 256<<20 {
		t.Errorf("vm plan: pairs %d array %d latency %d", len(p.pairs), p.arrayBytes, p.latencyBytes)
	}
	if !slices.ContainsFunc(p.notes, func(s string) bool { return strings.Contains(s, "remote pairs need") }) {
		t.Errorf("one-node note missing: %v", p.notes)
	}
	// GH200: memory-only nodes are memory nodes, not CPU nodes.
	gh := fixture(t, "gh200")
	p, err = planNUMA(gh, NUMAOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.pairs) != 2 || p.pairs[1].MemNode != 1 || p.pairs[1].Distance != 80 {
		t.Errorf("gh200 pairs: %+v", p.pairs)
	}
	// --threads takes one CPU per core first (SMT siblings last).
	dgx := fixture(t, "dgx-h100")
	p, err = planNUMA(dgx, NUMAOptions{Threads: 3, CPUNodes: []int{1}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.cpus[1], []int{56, 57, 58}) || len(p.pairs) != 2 {
		t.Errorf("threads: %v pairs %d", p.cpus[1], len(p.pairs))
	}
	for _, o := range []NUMAOptions{{Threads: 113}, {CPUNodes: []int{7}}, {MemNodes: []int{9}}} {
		if _, err := planNUMA(dgx, o); !errors.Is(err, ErrInput) {
			t.Errorf("%+v: err %v, want ErrInput", o, err)
		}
	}
}

// TestChaseIsOneCycle: the chase visits every line once before it returns.
func TestChaseIsOneCycle(t *testing.T) {
	words := make([]uint64, 8*1000)
	buildChase(words, newRand())
	seen := map[uint64]bool{}
	p := uint64(0)
	for range 1000 {
		if seen[p] || p%8 != 0 {
			t.Fatalf("revisited or misaligned %d after %d steps", p, len(seen))
		}
		seen[p] = true
		p = words[p]
	}
	if p != 0 || len(seen) != 1000 {
		t.Fatalf("cycle of %d lines ends at %d", len(seen), p)
	}
}

// fakeCopier models PCIe copies: pinned local at the link rate share
// given, pageable and remote slower; it records the node of every buffer.
type fakeCopier struct {
	mu      sync.Mutex
	gpuNode int
	nodes   map[*byte]int
	pinned  map[*byte]bool
	log     []string
	openErr error
}

func (f *fakeCopier) Name() string { return "fake" }

func (f *fakeCopier) Open(_ context.Context, bdf string, size int) (CopyDevice, error) {
	if f.openErr != nil {
		return nil, f.openErr
	}
	f.log = append(f.log, fmt.Sprintf("open %s %d", bdf, size))
	return f, nil
}

func (f *fakeCopier) Pin(host []byte) (func() error, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pinned[&host[0]] = true
	return func() error {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.pinned, &host[0])
		return nil
	}, nil
}

func (f *fakeCopier) Copy(host []byte, dir string, loops int) (time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	gbps := 50.0
	if dir == DeviceToHost {
		gbps = 52
	}
	if !f.pinned[&host[0]] {
		gbps /= 2
	}
	if f.nodes[&host[0]] != f.gpuNode {
		gbps *= 0.8
	}
	return time.Duration(float64(len(host)*loops) / gbps), nil // ns at GB/s
}

func (f *fakeCopier) Close() error { f.log = append(f.log, "close"); return nil }

func TestH2DPipeline(t *testing.T) {
	tp := fixture(t, "amd-8numa")
	f := &fakeCopier{gpuNode: 1, nodes: map[*byte]int{}, pinned: map[*byte]bool{}}
	var placed []string
	o := H2DOptions{GPU: "0", Size: 1 << 20, Copier: f,
		place: func(cpus []int, node int) error {
			placed = append(placed, fmt.Sprintf("%s@%d", topo.NewCPUList(cpusetOf(cpus)), node))
			return nil
		},
		hostMem: func(size, node int) ([]byte, func(), error) {
			b := make([]byte, size)
			f.mu.Lock()
			f.nodes[&b[0]] = node
			f.mu.Unlock()
			return b, func() {}, nil
		}}
	r, err := RunH2D(context.Background(), tp, o)
	if err != nil {
		t.Fatal(err)
	}
	// GPU 0 is on node 1; the farthest node with CPUs is node 4 (32). The
	// bindings are gpunode bind's: --gpu 0 and --node 4, both --mem bind.
	local, err := bind.Resolve(context.Background(), tp, bind.Request{GPU: "0", Mem: bind.MemBind}, bind.Sources{})
	if err != nil {
		t.Fatal(err)
	}
	four := 4
	remote, err := bind.Resolve(context.Background(), tp, bind.Request{Node: &four, Mem: bind.MemBind}, bind.Sources{})
	if err != nil {
		t.Fatal(err)
	}
	wantPlaced := []string{local.CPUs.String() + "@1", remote.CPUs.String() + "@4"}
	if !slices.Equal(placed, wantPlaced) || r.GPUNode != 1 || r.RemoteNode != 4 {
		t.Errorf("placed %v (want %v), nodes %d/%d", placed, wantPlaced, r.GPUNode, r.RemoteNode)
	}
	if r.LinkGen != "Gen5" || r.LinkWidth != 16 || r.LinkGBps != 63.015 {
		t.Errorf("link %s x%d %.3f", r.LinkGen, r.LinkWidth, r.LinkGBps)
	}
	if len(r.Cases) != 8 {
		t.Fatalf("cases %d", len(r.Cases))
	}
	// 1 MiB x 16 loops at 50 GB/s -> 50 (rounded to ns), pageable half.
	c := r.Cases[2] // pinned h2d local
	if c.Memory != Pinned || c.Direction != HostToDevice || c.Placement != Local || len(c.SamplesGBps) != 3 || c.GBps < 49.9 || c.GBps > 50.1 {
		t.Errorf("pinned h2d local: %+v", c)
	}
	if c.VsLink < 0.79 || c.VsLink > 0.80 {
		t.Errorf("vs link %v", c.VsLink)
	}
	want := map[string]float64{"local/remote h2d pinned": 1.25, "pinned/pageable h2d local": 2, "local/remote d2h pageable": 1.25, "pinned/pageable d2h remote": 2}
	for _, x := range r.Ratios {
		k := x.Name + " " + x.Direction + " " + x.Of
		if w, ok := want[k]; ok {
			if x.Ratio < w-0.01 || x.Ratio > w+0.01 {
				t.Errorf("%s = %v, want %v", k, x.Ratio, w)
			}
			delete(want, k)
		}
	}
	if len(want) > 0 {
		t.Errorf("ratios missing: %v (have %+v)", want, r.Ratios)
	}
	if len(f.pinned) != 0 || !slices.Equal(f.log, []string{"open 0000:21:00.0 1048576", "close"}) {
		t.Errorf("left pinned %d, log %v", len(f.pinned), f.log)
	}
	r.Time = ""
	goldenfile.Check(t, "testdata/h2d-amd.txt", render(t, r, output.Table), *update)
}

// TestH2DNoDriver loads the real CUDA copier where no driver library is
// (a name that cannot exist, and on a GPU-less CI machine libcuda.so.1
// itself): the error says there is no driver, before anything is bound.
func TestH2DNoDriver(t *testing.T) {
	tp := fixture(t, "dgx-h100")
	for _, lib := range []string{"libcuda-gpunode-test-missing.so.1", "libcuda.so.1"} {
		if lib == "libcuda.so.1" {
			if _, err := (CUDA{}).Open(context.Background(), "0000:18:00.0", 4096); err == nil || !errors.Is(err, ErrNoDriver) {
				t.Logf("a CUDA driver is installed here (%v); the no-driver case is the missing name only", err)
				continue
			}
		}
		placed := false
		_, err := RunH2D(context.Background(), tp, H2DOptions{Copier: CUDA{Library: lib}, Size: 4096,
			place: func([]int, int) error { placed = true; return nil }})
		if !errors.Is(err, ErrNoDriver) || !strings.Contains(err.Error(), "no NVIDIA driver: "+lib+" could not be loaded") {
			t.Errorf("%s: err = %v", lib, err)
		}
		if placed {
			t.Errorf("%s: bound a thread without a driver", lib)
		}
	}
	// A bad GPU is the user's error.
	if _, err := RunH2D(context.Background(), tp, H2DOptions{GPU: "9", Copier: &fakeCopier{}}); !errors.Is(err, ErrInput) {
		t.Errorf("GPU 9: %v", err)
	}
}

func TestLinkGBps(t *testing.T) {
	for _, c := range []struct {
		speed string
		width int
		want  float64
	}{
		{"32.0 GT/s PCIe", 16, 63.015}, {"16.0 GT/s PCIe", 16, 31.508}, {"8.0 GT/s PCIe", 16, 15.754},
		{"5.0 GT/s PCIe", 8, 4}, {"64.0 GT/s PCIe", 16, 121}, {"", 16, 0}, {"32.0 GT/s PCIe", 0, 0},
	} {
		if got := round3(topo.LinkGBps(topo.ParsePCIeSpeed(c.speed), c.width)); got != c.want {
			t.Errorf("%q x%d = %v, want %v", c.speed, c.width, got, c.want)
		}
	}
}

// ldCache builds an ld.so.cache in the new format.
func ldCache(entries [][2]string, flags int32) []byte {
	var strs bytes.Buffer
	type ent struct{ k, v uint32 }
	start := uint32(ldCacheHeader + len(entries)*ldCacheEntry)
	var es []ent
	for _, e := range entries {
		k := start + uint32(strs.Len())
		strs.WriteString(e[0] + "\x00")
		v := start + uint32(strs.Len())
		strs.WriteString(e[1] + "\x00")
		es = append(es, ent{k, v})
	}
	var b bytes.Buffer
	b.WriteString(ldCacheMagic)
	le := binary.LittleEndian
	_ = binary.Write(&b, le, uint32(len(entries)))
	_ = binary.Write(&b, le, uint32(strs.Len()))
	b.Write(make([]byte, 4+4+12))
	for _, e := range es {
		_ = binary.Write(&b, le, flags)
		_ = binary.Write(&b, le, e.k)
		_ = binary.Write(&b, le, e.v)
		_ = binary.Write(&b, le, uint32(0))
		_ = binary.Write(&b, le, uint64(0))
	}
	b.Write(strs.Bytes())
	return b.Bytes()
}

func TestParseLDCache(t *testing.T) {
	b := ldCache([][2]string{{"libz.so.1", "/lib/x86_64-linux-gnu/libz.so.1"}, {"libjemalloc.so.2", "/opt/je/libjemalloc.so.2"}}, 0x0303)
	got, err := ParseLDCache(b)
	if err != nil {
		t.Fatal(err)
	}
	want := []LDCacheEntry{{"libz.so.1", "/lib/x86_64-linux-gnu/libz.so.1", 0x0303}, {"libjemalloc.so.2", "/opt/je/libjemalloc.so.2", 0x0303}}
	if !slices.Equal(got, want) {
		t.Errorf("got %+v", got)
	}
	// Behind an old-format header, offsets stay relative to the new one.
	if got2, err := ParseLDCache(append([]byte("ld.so-1.7.0\x00\x00\x00\x00\x00"), b...)); err != nil || !slices.Equal(got2, want) {
		t.Errorf("after old header: %+v %v", got2, err)
	}
	for name, bad := range map[string][]byte{
		"no magic":  []byte("hello"),
		"truncated": b[:30],
		"too many":  append(append([]byte{}, b[:20]...), 0xff, 0xff, 0xff, 0x00),
		"offset":    corrupt(b, ldCacheHeader+4, 0xfffffff0),
	} {
		if _, err := ParseLDCache(bad); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func corrupt(b []byte, at int, v uint32) []byte {
	c := slices.Clone(b)
	binary.LittleEndian.PutUint32(c[at:], v)
	return c
}

func FuzzParseLDCache(f *testing.F) {
	f.Add(ldCache([][2]string{{"libjemalloc.so.2", "/usr/lib/libjemalloc.so.2"}}, 0x0303))
	f.Add([]byte(ldCacheMagic))
	f.Add(append([]byte("old format\x00"), ldCache([][2]string{{"a", "/a"}, {"", ""}}, -1)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		es, err := ParseLDCache(b)
		if err != nil {
			return
		}
		if len(es)*ldCacheEntry > len(b) {
			t.Fatalf("%d entries from %d bytes", len(es), len(b))
		}
		// Write the entries as a new cache (flags per entry) and parse
		// it: the same entries.
		pairs := make([][2]string, len(es))
		for i, e := range es {
			if strings.ContainsRune(e.Name, 0) || strings.ContainsRune(e.Path, 0) {
				t.Fatalf("entry %d holds a NUL: %+v", i, e)
			}
			pairs[i] = [2]string{e.Name, e.Path}
		}
		c := ldCache(pairs, 0)
		for i, e := range es {
			binary.LittleEndian.PutUint32(c[ldCacheHeader+i*ldCacheEntry:], uint32(e.Flags))
		}
		again, err := ParseLDCache(c)
		if err != nil || !slices.Equal(again, es) {
			t.Fatalf("%d entries -> %d bytes -> %+v, %v", len(es), len(c), again, err)
		}
	})
}

func writeTree(t *testing.T, files map[string][]byte) *hostfs.FS {
	t.Helper()
	root := t.TempDir()
	for p, b := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fs, err := hostfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func TestFindAllocators(t *testing.T) {
	// From the cache (a non-standard directory), tcmalloc from the lib dirs.
	fs := writeTree(t, map[string][]byte{
		"etc/ld.so.cache":                           ldCache([][2]string{{"libjemalloc.so.2", "/opt/je/libjemalloc.so.2"}, {"libgone.so.1", "/nope/libgone.so.1"}}, 0x0303),
		"opt/je/libjemalloc.so.2":                   []byte("elf"),
		"usr/lib/x86_64-linux-gnu/libtcmalloc.so.4": []byte("elf"),
	})
	libs, notes := FindAllocators(fs)
	want := []AllocLibrary{{Glibc, ""}, {Jemalloc, "/opt/je/libjemalloc.so.2"}, {Tcmalloc, "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4"}}
	if !slices.Equal(libs, want) || len(notes) != 0 {
		t.Errorf("libs %+v notes %v", libs, notes)
	}
	// Nothing installed: glibc only, with the packages to install.
	libs, notes = FindAllocators(writeTree(t, map[string][]byte{"etc/ld.so.cache": []byte("garbage")}))
	if len(libs) != 1 || len(notes) != 3 || !strings.Contains(strings.Join(notes, ";"), "apt-get install libjemalloc2") {
		t.Errorf("libs %+v notes %v", libs, notes)
	}
	// tcmalloc_minimal when the full one is missing.
	libs, _ = FindAllocators(writeTree(t, map[string][]byte{"usr/lib64/libtcmalloc_minimal.so.4": []byte("elf")}))
	if len(libs) != 2 || libs[1].Path != "/usr/lib64/libtcmalloc_minimal.so.4" {
		t.Errorf("minimal: %+v", libs)
	}
}

func TestRunAllocPipeline(t *testing.T) {
	var envs [][]string
	walls := map[string][]float64{"": {1.0, 1.2, 1.1}, "/j.so": {0.5, 0.55, 0.6}}
	calls := map[string]int{}
	run := func(_ context.Context, argv, env []string) (sample, error) {
		envs = append(envs, env)
		pre := ""
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, "LD_PRELOAD="); ok {
				pre = v
			}
		}
		i := calls[pre]
		calls[pre]++
		rss := uint64(100 << 20)
		if pre != "" {
			rss = 80 << 20
		}
		return sample{wall: walls[pre][i], user: 2 * walls[pre][i], sys: 0.1, maxRSS: rss, source: RSSFromVmHWM}, nil
	}
	r, err := RunAlloc(context.Background(), AllocOptions{Command: []string{"w"}, Workload: "threads", Repeats: 3,
		Allocators: []AllocLibrary{{Glibc, ""}, {Jemalloc, "/j.so"}}, Environ: []string{"A=1", "LD_PRELOAD=/old.so"}, run: run})
	if err != nil {
		t.Fatal(err)
	}
	// Interleaved, the old LD_PRELOAD dropped.
	if len(envs) != 6 || !slices.Equal(envs[0], []string{"A=1"}) || !slices.Equal(envs[1], []string{"A=1", "LD_PRELOAD=/j.so"}) {
		t.Errorf("envs %v", envs)
	}
	g, j := r.Runs[0], r.Runs[1]
	if g.MedianWallSeconds != 1.1 || j.MedianWallSeconds != 0.55 || j.WallVsGlibc != 0.5 || j.RSSVsGlibc != 0.8 || g.WallVsGlibc != 0 {
		t.Errorf("glibc %+v\njemalloc %+v", g, j)
	}
	if !slices.Equal(j.WallSeconds, []float64{0.5, 0.55, 0.6}) || len(j.MaxRSSBytes) != 3 {
		t.Errorf("samples %+v", j)
	}
	goldenfile.Check(t, "testdata/alloc.txt", render(t, r, output.Table), *update)
	var doc struct {
		SchemaVersion string `json:"schemaVersion"`
		Runs          []struct {
			Allocator   string    `json:"allocator"`
			Library     *string   `json:"library"`
			WallSeconds []float64 `json:"wallSeconds"`
			MaxRSSBytes []uint64  `json:"maxRSSBytes"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(render(t, r, output.JSON), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.SchemaVersion != "gpunode.bench.alloc/v1" || len(doc.Runs) != 2 || doc.Runs[1].Library == nil || *doc.Runs[1].Library != "/j.so" || len(doc.Runs[0].MaxRSSBytes) != 3 {
		t.Errorf("json %+v", doc)
	}
	if _, err := RunAlloc(context.Background(), AllocOptions{Allocators: []AllocLibrary{{Glibc, ""}}}); !errors.Is(err, ErrInput) {
		t.Errorf("no command: %v", err)
	}
}

func TestPeakLine(t *testing.T) {
	if v, ok := parsePeakLine("noise\n" + peakLine + "12345\n"); !ok || v != 12345 {
		t.Errorf("got %d %v", v, ok)
	}
	if _, ok := parsePeakLine("nothing"); ok {
		t.Error("parsed nothing")
	}
	fs := writeTree(t, map[string][]byte{"proc/self/status": []byte("Name:\tx\nVmHWM:\t   2048 kB\nVmRSS:\t1 kB\n")})
	var b bytes.Buffer
	if err := ReportPeakRSS(fs, &b); err != nil || b.String() != peakLine+"2097152\n" {
		t.Errorf("%q %v", b.String(), err)
	}
}

func TestSaveLoadCompare(t *testing.T) {
	fs := writeTree(t, map[string][]byte{"var/lib/.keep": nil})
	mk := func(copies []float64, lat []float64) *NUMAResult {
		return &NUMAResult{SchemaVersion: NUMASchema, Pairs: []NUMAPair{{CPUNode: 0, MemNode: 0, CopyGBps: Median(copies), CopySamplesGBps: copies,
			TriadGBps: 10, TriadSamplesGBps: []float64{10, 10, 10}, LatencyNs: Median(lat), LatencySamplesNs: lat}}}
	}
	before := mk([]float64{100, 102, 98, 101}, []float64{90, 91, 89})
	after := mk([]float64{120, 121, 119, 122}, []float64{90.5, 89, 91})
	p, err := Save(fs, DefaultDir, "before", before)
	if err != nil || p != "/var/lib/gpunode/bench/before.json" {
		t.Fatalf("save: %s %v", p, err)
	}
	if _, err := Save(fs, DefaultDir, "after", after); err != nil {
		t.Fatal(err)
	}
	if _, err := Save(fs, DefaultDir, "../x", after); !errors.Is(err, ErrInput) {
		t.Errorf("bad name: %v", err)
	}
	a, err := Load(fs, DefaultDir, "before")
	if err != nil {
		t.Fatal(err)
	}
	v, err := a.Decoded()
	if err != nil || v.(*NUMAResult).Pairs[0].CopyGBps != 100.5 {
		t.Fatalf("decoded %+v %v", v, err)
	}
	b, _ := Load(fs, DefaultDir, "after")
	c, err := Compare(a, b)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Metric{}
	for _, m := range c.Metrics {
		got[m.Name] = m
	}
	if m := got["cpu0-mem0 copy"]; m.WithinNoise || !m.Better || m.ChangePct < 19 || m.ChangePct > 20 {
		t.Errorf("copy: %+v", m)
	}
	if m := got["cpu0-mem0 latency"]; !m.WithinNoise {
		t.Errorf("latency should be within noise: %+v", m)
	}
	if m := got["cpu0-mem0 triad"]; !m.WithinNoise || m.ChangePct != 0 {
		t.Errorf("triad: %+v", m)
	}
	goldenfile.Check(t, "testdata/compare.txt", render(t, c, output.Table), *update)
	// Kinds must match.
	alloc := &AllocResult{SchemaVersion: AllocSchema}
	if _, err := Save(fs, DefaultDir, "alloc1", alloc); err != nil {
		t.Fatal(err)
	}
	x, _ := Load(fs, DefaultDir, "alloc1")
	if _, err := Compare(a, x); !errors.Is(err, ErrInput) {
		t.Errorf("kinds: %v", err)
	}
	all, errs := LoadAll(fs, DefaultDir)
	if len(all) != 3 || len(errs) != 0 {
		t.Errorf("all %d errs %v", len(all), errs)
	}
	latest, _ := Latest(fs, DefaultDir)
	if latest[KindNUMA].Name != "after" || latest[KindAlloc].Name != "alloc1" {
		t.Errorf("latest %+v", latest)
	}
	if _, err := Load(fs, DefaultDir, "missing"); !errors.Is(err, ErrInput) {
		t.Errorf("missing: %v", err)
	}
	if all, errs := LoadAll(fs, "/nowhere"); all != nil || errs != nil {
		t.Errorf("no dir: %v %v", all, errs)
	}
}

func TestBarAppearsAfterThreshold(t *testing.T) {
	var w bytes.Buffer
	b := NewBar(&w)
	b.Start("x", 10, 10*time.Millisecond)
	b.Add(1)
	if b.Shown() {
		t.Fatal("bar shown for a short run")
	}
	b.Threshold = 0
	b.Add(1)
	if !b.Shown() {
		t.Fatal("bar not shown after the threshold")
	}
	b.Done()
	if !strings.Contains(w.String(), "x") {
		t.Errorf("bar output %q", w.String())
	}
	var w2 bytes.Buffer
	b2 := NewBar(&w2)
	b2.Start("long", 3, 5*time.Second)
	if !b2.Shown() {
		t.Error("bar not shown for a long estimate")
	}
	b2.Done()
}

func TestStats(t *testing.T) {
	if Median([]float64{3, 1, 2}) != 2 || Median([]float64{4, 1, 2, 3}) != 2.5 || Median(nil) != 0 {
		t.Error("median")
	}
	if s := RelSpread([]float64{10, 10, 10}); s != 0 {
		t.Errorf("spread %v", s)
	}
	if s := RelSpread([]float64{9, 10, 11}); s < 0.148 || s > 0.149 {
		t.Errorf("spread %v", s)
	}
}

// TestNUMADurationAndMemoryBound: --duration bounds the whole run (each
// kernel's share is at most two thirds of the time left when it is handed
// out, so shares spent one after the other add up to at most --duration;
// the run, with a second more for a loaded machine) and the buffers (a
// first touch of all of them per pair within a quarter of it at 1 GiB/s);
// free memory caps them to half the least free node.
func TestNUMADurationAndMemoryBound(t *testing.T) {
	tp := fixture(t, "dgx-h100")
	for _, d := range []time.Duration{500 * time.Millisecond, 10 * time.Second} {
		f := newFakeNUMA(tp)
		f.sleep = d < time.Second
		t0 := time.Now()
		r, err := RunNUMA(context.Background(), tp, NUMAOptions{Duration: d, measure: f, openLibc: fakeLibc("", errors.New("no libc here"), nil)})
		took := time.Since(t0)
		if err != nil {
			t.Fatal(err)
		}
		var sum time.Duration
		for _, s := range f.shares {
			sum += s
		}
		// The shares are the bound (they add up to at most d); the wall
		// time only has to show the run is not unbounded (it was 38 s for
		// 500 ms), with room for a loaded CI machine's oversleeping.
		if len(f.shares) != 10 || (f.sleep && (sum > d || took > d+time.Second)) {
			t.Fatalf("%s: shares %v add up to %s, run took %s", d, f.shares, sum, took)
		}
		limit := uint64(d.Seconds() / 4 * touchBytesPerSecond / 4)
		if need := 3*r.ArrayBytes + r.LatencyBytes; need > limit+2*4096 || need < limit/2 {
			t.Fatalf("%s: buffers %d + %d bytes for a limit of %d", d, r.ArrayBytes, r.LatencyBytes, limit)
		}
		if !strings.Contains(strings.Join(r.Notes, "\n"), "buffers limited by --duration "+d.String()) {
			t.Fatalf("%s: notes %q", d, r.Notes)
		}
	}
	// Half the free memory of the least free node, below and above it.
	low := *tp
	low.NUMANodes = slices.Clone(tp.NUMANodes)
	low.NUMANodes[1].MemFreeBytes = 200 << 20
	p, err := planNUMA(&low, NUMAOptions{Duration: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if need := 3*p.arrayBytes + p.latencyBytes; need > 100<<20 || !strings.Contains(strings.Join(p.notes, "\n"), "buffers limited by free memory (200 MiB free") {
		t.Fatalf("200 MiB free: %d bytes, notes %q", need, p.notes)
	}
	low.NUMANodes[1].MemFreeBytes = 64 << 30
	low.NUMANodes[0].MemFreeBytes = 64 << 30
	p, _ = planNUMA(&low, NUMAOptions{Duration: time.Hour})
	if 3*p.arrayBytes+p.latencyBytes != 3*840<<20+840<<20 {
		t.Fatalf("64 GiB free: capped to %d", p.arrayBytes)
	}
}

// TestMbwMiBps: one array's MiB over the mean pass time.
func TestMbwMiBps(t *testing.T) {
	// 10 and 20 GB/s counting read plus written: passes of a 1 GB array
	// took 0.2 s and 0.1 s; mbw: 1e9/2^20 MiB / 0.15 s.
	got := mbwMiBps([]float64{10, 20})
	want := 1e9 / (1 << 20) / 0.15
	if d := got - want; d > 0.01 || d < -0.01 {
		t.Fatalf("got %f want %f", got, want)
	}
	if mbwMiBps(nil) != 0 {
		t.Fatal("no samples")
	}
}
