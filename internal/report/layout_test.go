package report

// Tests of the page's layout and order decisions: the topology picture
// stays within maxSVGWidth (boxes nest and never overlap), the audit table
// is in severity order with one copy of a shared fix, and saved benches
// show their figures.

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/bench"
	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/topo"
	"github.com/gpunode/gpunode/internal/tune"
)

// big16 is 2 sockets of 4 NUMA nodes, 16 CPUs each; every node has two
// GPUs, each under its own PCIe switch, and a NIC beside the first: 8
// nodes, 16 GPUs, 8 NICs, 16 switch groups.
func big16() *topo.Topology {
	tp := &topo.Topology{}
	for n := 0; n < 8; n++ {
		var ids []int
		for c := 0; c < 16; c++ {
			id := n*16 + c
			ids = append(ids, id)
			tp.CPUs = append(tp.CPUs, topo.CPU{ID: id, Socket: n / 4, NUMANode: n})
		}
		tp.NUMANodes = append(tp.NUMANodes, topo.NUMANode{ID: n, CPUs: cpus(ids...), MemTotalBytes: 96 << 30, MemFreeBytes: 90 << 30})
		root := fmt.Sprintf("pci0000:%02x", n*0x20)
		for g := 0; g < 2; g++ {
			port := fmt.Sprintf("0000:%02x:0%d.0", n*0x20, g+1)
			sw := fmt.Sprintf("0000:%02x:00.0", n*0x20+g*8+1)
			bdf := fmt.Sprintf("0000:%02x:00.0", n*0x20+g*8+2)
			tp.GPUs = append(tp.GPUs, topo.PCIDevice{Kind: topo.KindGPU, Name: fmt.Sprintf("GPU%d", 2*n+g), BDF: bdf, NUMANode: n,
				PCIePath: []string{root, port, sw, bdf}, LinkWidth: 16, MaxLinkWidth: 16, LinkSpeed: topo.ParsePCIeSpeed("32.0 GT/s PCIe")})
			if g == 0 {
				nic := fmt.Sprintf("0000:%02x:00.0", n*0x20+3)
				tp.NICs = append(tp.NICs, topo.PCIDevice{Kind: topo.KindNIC, Name: fmt.Sprintf("mlx5_%d", n), BDF: nic, NUMANode: n,
					PCIePath: []string{root, port, sw, nic}})
			}
		}
	}
	return tp
}

type box struct{ x, y, w, h int }

func (b box) inside(o box) bool {
	return b.x >= o.x && b.y >= o.y && b.x+b.w <= o.x+o.w && b.y+b.h <= o.y+o.h
}

func (b box) overlaps(o box) bool {
	return b.x < o.x+o.w && o.x < b.x+b.w && b.y < o.y+o.h && o.y < b.y+b.h
}

// rects returns the first <rect> of every <g class="CLASS..."> in the SVG.
func rects(t *testing.T, p, class string) []box {
	t.Helper()
	re := regexp.MustCompile(`<g class="` + class + `[^"]*"[^>]*>(?:<title>[^<]*</title>)?<rect x="(\d+)" y="(\d+)" width="(\d+)" height="(\d+)"`)
	var out []box
	for _, m := range re.FindAllStringSubmatch(p, -1) {
		var v [4]int
		for i := range v {
			v[i], _ = strconv.Atoi(m[i+1])
		}
		out = append(out, box{v[0], v[1], v[2], v[3]})
	}
	return out
}

// checkNesting asserts the picture's geometry: the SVG is at most maxW
// wide, everything lies inside it, devices inside a switch box, switch
// boxes inside a NUMA node, CPU nodes inside a socket, and no two boxes of
// one kind overlap.
func checkNesting(t *testing.T, p string, maxW int) {
	t.Helper()
	m := regexp.MustCompile(`id="topo-svg" width="(\d+)" height="(\d+)"`).FindStringSubmatch(p)
	if m == nil {
		t.Fatal("no SVG")
	}
	w, _ := strconv.Atoi(m[1])
	h, _ := strconv.Atoi(m[2])
	if w > maxW {
		t.Errorf("SVG %d px wide, more than %d", w, maxW)
	}
	all := box{0, 0, w, h}
	kinds := map[string][]box{}
	for _, k := range []string{"socket", "numa", "pcie-switch", "gpu", "nic", "nvswitch"} {
		kinds[k] = rects(t, p, k)
		for i, b := range kinds[k] {
			if !b.inside(all) {
				t.Errorf("%s %d %+v outside the %dx%d picture", k, i, b, w, h)
			}
			for _, o := range kinds[k][i+1:] {
				if b.overlaps(o) {
					t.Errorf("%s boxes %+v and %+v overlap", k, b, o)
				}
			}
		}
	}
	within := func(k string, parents ...string) {
		for _, b := range kinds[k] {
			ok := false
			for _, pk := range parents {
				for _, o := range kinds[pk] {
					ok = ok || b.inside(o)
				}
			}
			if !ok {
				t.Errorf("%s %+v inside no %v", k, b, parents)
			}
		}
	}
	within("gpu", "pcie-switch")
	within("nic", "pcie-switch")
	within("nvswitch", "pcie-switch")
}

func TestBig16FitsAndNests(t *testing.T) {
	tp := big16()
	p := page(t, Input{Topo: tp})
	checkNesting(t, p, maxSVGWidth)
	if n := len(rects(t, p, "gpu")); n != 16 {
		t.Fatalf("%d GPUs drawn, want 16", n)
	}
	// Two groups a node: 368 px; four nodes (1,532 px) do not fit in a
	// socket of 1,296: the fourth wraps under the first.
	nodes := rects(t, p, "numa")
	if len(nodes) != 8 {
		t.Fatalf("%d nodes drawn", len(nodes))
	}
	if nodes[3].x != nodes[0].x || nodes[3].y <= nodes[0].y+nodes[0].h {
		t.Errorf("node 3 %+v not wrapped under node 0 %+v", nodes[3], nodes[0])
	}
	if nodes[2].y != nodes[0].y || nodes[2].x <= nodes[1].x {
		t.Errorf("node 2 %+v not beside node 1 %+v", nodes[2], nodes[1])
	}
	socks := rects(t, p, "socket")
	if len(socks) != 2 || socks[1].y <= socks[0].y+socks[0].h-1 {
		t.Errorf("sockets %+v: the second should sit under the first", socks)
	}
	for i, n := range nodes {
		if !n.inside(socks[i/4]) {
			t.Errorf("node %d %+v outside socket %d %+v", i, n, i/4, socks[i/4])
		}
	}
}

// Every fixture host fits; the CPU nodes of amd-8numa (2 sockets of 4)
// stack their sockets rather than grow to 1,756 px as they did.
func TestFixturesFit(t *testing.T) {
	for _, host := range []string{"dgx-h100", "gh200", "amd-8numa", "downgraded", "vm-2vcpu", "mixed-pcie"} {
		t.Run(host, func(t *testing.T) {
			b, err := HTML(fixtureInput(t, host))
			if err != nil {
				t.Fatal(err)
			}
			checkNesting(t, string(b), maxSVGWidth)
		})
	}
}

// A node with more PCIe groups than fit side by side wraps them into rows.
func TestNodeGroupsWrap(t *testing.T) {
	tp := &topo.Topology{CPUs: []topo.CPU{{ID: 0}}, NUMANodes: []topo.NUMANode{{ID: 0, CPUs: cpus(0)}}}
	for i := 0; i < nodeMaxCols+1; i++ {
		tp.GPUs = append(tp.GPUs, topo.PCIDevice{Kind: topo.KindGPU, Name: fmt.Sprintf("GPU%d", i), NUMANode: 0,
			PCIePath: []string{"pci0000:00", fmt.Sprintf("0000:00:%02x.0", i), "x"}})
	}
	p := page(t, Input{Topo: tp})
	checkNesting(t, p, maxSVGWidth)
	g := rects(t, p, "pcie-switch")
	last := len(g) - 1
	if g[last-1].y != g[0].y || g[last].x != g[0].x || g[last].y <= g[0].y {
		t.Errorf("groups %+v: %d in the first row, then a second row", g, nodeMaxCols)
	}
	if nodeMaxCols != 7 {
		t.Errorf("nodeMaxCols = %d, want 7 at 1,320 px", nodeMaxCols)
	}
}

func TestFlowEdges(t *testing.T) {
	// limit 100, gap 12: a box of w fits after x when x+w+12 <= 100.
	for _, c := range []struct {
		w       int
		wrapped bool
	}{{38, false}, {39, true}, {37, false}} { // 38+12 = 50 (x after first box) + 38 + 12 = 100: at the edge
		f := newFlow(0, 0, 100)
		f.place(38, 10)
		x, y := f.place(c.w, 5)
		if (y > 0) != c.wrapped || (c.wrapped && (x != 0 || y != 10+gap)) {
			t.Errorf("w=%d: placed at (%d,%d), wrapped=%v", c.w, x, y, c.wrapped)
		}
	}
	// A box wider than the limit gets a row of its own, and counts in w.
	f := newFlow(5, 0, 100)
	if x, y := f.place(300, 10); x != 5 || y != 0 || f.w != 5+300+gap {
		t.Errorf("wide box at (%d,%d), w %d", x, y, f.w)
	}
	if x, y := f.place(10, 10); x != 5 || y != 10+gap || f.bottom() != 10+gap+10 {
		t.Errorf("box after a wide one at (%d,%d), bottom %d", x, y, f.bottom())
	}
}

func TestNodeTextWidth(t *testing.T) {
	// "CPUs 0-3" is 8 runes, the memory line 34: 16 + 6*34.
	n := topo.NUMANode{CPUs: cpus(0, 1, 2, 3), MemTotalBytes: 1000 << 30, MemFreeBytes: 999 << 30}
	if got, want := nodeTextWidth(n), 16+6*len("memory 1000.0 GiB (999.0 GiB free)"); got != want {
		t.Errorf("nodeTextWidth = %d, want %d", got, want)
	}
	// A long CPU list counts 60 runes at most (it is cut there).
	var ids []int
	for i := 0; i < 200; i += 2 {
		ids = append(ids, i)
	}
	if got := nodeTextWidth(topo.NUMANode{CPUs: cpus(ids...)}); got != 16+6*60 {
		t.Errorf("nodeTextWidth of a long list = %d, want %d", got, 16+6*60)
	}
	tp := &topo.Topology{CPUs: []topo.CPU{{ID: 0}}, NUMANodes: []topo.NUMANode{{ID: 0, CPUs: cpus(ids...)}}}
	tp.CPUs[0].NUMANode = 0
	if r := rects(t, page(t, Input{Topo: tp}), "numa"); len(r) != 1 || r[0].w != 16+6*60 {
		t.Errorf("node box %+v, want %d wide", r, 16+6*60)
	}
}

func auditOrder(p string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<tr class="check" data-status="([a-z-]+)"><td class="st st-[a-z-]+">[a-z-]+</td><td><code>([^<]*)</code>`).FindAllStringSubmatch(p, -1) {
		out = append(out, m[1]+" "+m[2])
	}
	return out
}

func TestAuditOrderWhyAndFixes(t *testing.T) {
	shared := "printf 'vm.swappiness = 0\\n' > /etc/sysctl.d/90-gpunode.conf"
	cs := []check.Check{
		{ID: "b", Status: check.OK, Reason: "ok why"},
		{ID: "z", Status: check.Drift, Reason: "z matters", Fix: []string{shared, "sysctl --system"}},
		{ID: "a", Subject: "2", Status: check.Drift, Fix: []string{shared}},
		{ID: "a", Subject: "1", Status: check.Drift, Fix: []string{"own fix"}},
		{ID: "i", Status: check.Info},
		{ID: "e", Status: check.Error, Detail: "cannot read"},
		{ID: "p", Status: check.PendingReboot},
		{ID: "m", Status: check.Absent},
	}
	orig := fmt.Sprint(cs)
	p := page(t, Input{Report: &tune.Report{Checks: cs}})
	want := []string{"error e", "drift a/1", "drift a/2", "drift z", "pending-reboot p", "absent m", "info i", "ok b"}
	if got := auditOrder(p); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("rows %v, want %v", got, want)
	}
	if fmt.Sprint(cs) != orig {
		t.Error("the report's checks were reordered")
	}
	mustHave(t, p,
		`<th>why</th>`,
		`<td class="why">z matters</td>`,
		`<td class="why">ok why</td>`,
		`<td>cannot read</td>`,
		// a/1's own fix is the first; the shared one is printed at a/2, the
		// first row that has it, and z links to it.
		`<code class="fix" id="fix-1">own fix</code>`,
		`<code class="fix" id="fix-2">printf &#39;vm.swappiness = 0\n&#39; &gt; /etc/sysctl.d/90-gpunode.conf</code>`,
		`<a class="fix-ref" href="#fix-2">same fix as a/2</a><br><code class="fix" id="fix-3">sysctl --system</code>`)
	if n := strings.Count(p, "vm.swappiness = 0"); n != 1 {
		t.Errorf("shared fix printed %d times, want once", n)
	}
}

func saved(t *testing.T, name string, v any) *bench.Saved {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	kind := map[string]string{"*bench.NUMAResult": bench.KindNUMA, "*bench.H2DResult": bench.KindH2D, "*bench.AllocResult": bench.KindAlloc}[fmt.Sprintf("%T", v)]
	return &bench.Saved{SchemaVersion: bench.SavedSchema, Name: name, Kind: kind, SavedAt: "2026-01-02T03:04:05Z", Result: raw}
}

func TestBenchFigures(t *testing.T) {
	numa := &bench.NUMAResult{Nodes: []int{0, 1}, ArrayBytes: 840 << 20, LatencyBytes: 840 << 20, DurationSeconds: 3600,
		Pairs: []bench.NUMAPair{
			{CPUNode: 0, MemNode: 0, Distance: 10, CopyGBps: 200, TriadGBps: 220, LatencyNs: 90},
			{CPUNode: 0, MemNode: 1, Distance: 21, CopyGBps: 95.24, TriadGBps: 104.8, LatencyNs: 189, CopyVsLocal: 0.476},
			{CPUNode: 1, MemNode: 1, Distance: 10, CopyGBps: 199, TriadGBps: 219, LatencyNs: 91},
			// a pair on a node the list lacks: a column of its own
			{CPUNode: 1, MemNode: 3, Distance: 32, CopyGBps: 50, TriadGBps: 55, LatencyNs: 300, CopyVsLocal: 0.25},
		}, Notes: []string{"a note"}}
	h2d := &bench.H2DResult{GPU: 0, BDF: "0000:21:00.0", GPUNode: 1, RemoteNode: 4, LinkGen: "Gen5", LinkWidth: 16, LinkGBps: 63,
		Cases:  []bench.H2DCase{{Direction: "h2d", Memory: "pinned", Placement: "local", Node: 1, CPUs: "8-15", GBps: 50, VsLink: 0.7936}},
		Ratios: []bench.H2DRatio{{Name: "local/remote", Direction: "h2d", Of: "pinned", Ratio: 1.25}}, Method: "cuMemcpy method"}
	alloc := &bench.AllocResult{Workload: "threads", Command: []string{"w"}, Repeats: 3, Runs: []bench.AllocRun{
		{Allocator: "glibc", WallSeconds: []float64{1.2, 1.0, 1.1}, MedianWallSeconds: 1.1, MedianUserSeconds: 2.2, MedianSysSeconds: 0.1, MedianMaxRSSBytes: 100 << 20, WallSpread: 0.135},
		{Allocator: "jemalloc", Library: "/j.so", WallSeconds: []float64{0.5, 0.6}, MedianWallSeconds: 0.55, MedianMaxRSSBytes: 80 << 20, RSSAtFloor: true, WallVsGlibc: 0.5, RSSVsGlibc: 0.8},
	}}
	bad := &bench.Saved{Name: "broken", Kind: bench.KindNUMA, Result: json.RawMessage(`{"pairs": 3}`)}
	p := page(t, Input{Bench: []*bench.Saved{saved(t, "n1", numa), saved(t, "h1", h2d), saved(t, "a1", alloc), bad, nil}})
	mustHave(t, p,
		`<h3>numa · n1 · saved 2026-01-02T03:04:05Z</h3>`,
		`<tr><th>CPU node \ memory node</th><th>0</th><th>1</th><th>3</th></tr>`,
		`<tr><th>0</th><td class="num local">copy 200.0 GB/s<br>triad 220.0 GB/s<br>latency 90.0 ns<br>distance 10</td><td class="num">copy 95.2 GB/s<br>triad 104.8 GB/s<br>latency 189.0 ns<br>distance 21<br>copy 0.48x of local</td><td>-</td></tr>`,
		`<tr><th>1</th><td>-</td><td class="num local">copy 199.0 GB/s`,
		`distance 32<br>copy 0.25x of local</td></tr>`,
		`arrays 840.0 MiB each, chase buffer 840.0 MiB; run bounded to 1h0m0s`,
		`<li>a note</li>`,
		`GPU 0 (0000:21:00.0) on NUMA node 1; remote node 4; link PCIe Gen5 x16, 63.0 GB/s per direction`,
		`<tr><td>h2d</td><td>pinned</td><td>local</td><td>1</td><td>8-15</td><td class="num">50.00</td><td class="num">79%</td></tr>`,
		`<tr><td>local/remote</td><td>h2d</td><td>pinned</td><td class="num">1.25x</td></tr>`,
		`built-in workload threads · <code>w</code> · 3 runs per allocator`,
		`<tr><td>glibc</td><td class="num">1.100</td><td class="num">13.5%</td><td class="num">1.000-1.200</td><td class="num">2.200</td><td class="num">0.100</td><td class="num">100.0 MiB</td><td class="num">-</td><td class="num">-</td><td>(libc malloc)</td></tr>`,
		`<tr><td>jemalloc</td><td class="num">0.550</td><td class="num">0.0%</td><td class="num">0.500-0.600</td><td class="num">0.000</td><td class="num">0.000</td><td class="num">&lt;=80.0 MiB</td><td class="num">0.50x</td><td class="num">0.80x</td><td>/j.so</td></tr>`,
		`<p class="st-error">cannot show: the result does not have the layout of a numa result</p>`)
	mustLack(t, p, "json:")
	// no link rate known: no link clause; a node list with a duplicate.
	h2d.LinkGBps = 0
	numa.Nodes = []int{1, 1, 0}
	p = page(t, Input{Bench: []*bench.Saved{saved(t, "h2", h2d), saved(t, "n2", numa)}})
	mustLack(t, p, "link PCIe")
	mustHave(t, p, `<tr><th>CPU node \ memory node</th><th>1</th><th>0</th><th>3</th></tr>`, `<tr><th>1</th><td class="num local">copy 199.0`)
	if minMax(nil) != "-" || percent(0) != "-" || ratio(0) != "-" {
		t.Error("an absent figure is not printed as -")
	}
}

// A socket whose row of nodes is exactly as wide as a socket may be
// (maxSVGWidth less a gap each side) keeps it on one row and makes the
// picture exactly maxSVGWidth wide; 6 px more and the second node wraps.
func TestSocketRowEdge(t *testing.T) {
	// Node A: five PCIe groups, 5*178+12 = 902 px. Node B: no devices, as
	// wide as its CPU list: 12 + (902+12) + (w+12) = 1296 at w = 358.
	// "CPUs " and a list of 52 characters (0,10,100,102,...,122) is 57
	// runes: 16+6*57 = 358; one of 53 (0,100,...,124) is 364.
	withWidth := func(w int) topo.CPUList {
		ids := []int{0, 10}
		if w == 364 {
			ids = []int{0}
		}
		for i := 100; len(ids) < 14; i += 2 {
			ids = append(ids, i)
		}
		l := cpus(ids...)
		if got := nodeTextWidth(topo.NUMANode{CPUs: l}); got != w {
			t.Fatalf("CPUs %s: %d px, want %d", l, got, w)
		}
		return l
	}
	for _, c := range []struct {
		w       int
		wrapped bool
	}{{358, false}, {364, true}} {
		tp := &topo.Topology{
			CPUs:      []topo.CPU{{ID: 1000, Socket: 0, NUMANode: 0}, {ID: 0, Socket: 0, NUMANode: 1}},
			NUMANodes: []topo.NUMANode{{ID: 0, CPUs: cpus(1000)}, {ID: 1, CPUs: withWidth(c.w)}},
		}
		for i := 0; i < 5; i++ {
			tp.GPUs = append(tp.GPUs, topo.PCIDevice{Kind: topo.KindGPU, Name: fmt.Sprintf("GPU%d", i), NUMANode: 0,
				PCIePath: []string{"pci0000:00", fmt.Sprintf("0000:00:%02x.0", i), "x"}})
		}
		p := page(t, Input{Topo: tp})
		checkNesting(t, p, maxSVGWidth)
		n := rects(t, p, "numa")
		if len(n) != 2 || n[0].w != 902 || n[1].w != c.w {
			t.Fatalf("node boxes %+v, want widths 902 and %d", n, c.w)
		}
		if got := n[1].y > n[0].y; got != c.wrapped {
			t.Errorf("node B %d px: wrapped %v, want %v (%+v)", c.w, got, c.wrapped, n)
		}
		if !c.wrapped && !strings.Contains(p, fmt.Sprintf(`id="topo-svg" width="%d"`, maxSVGWidth)) {
			t.Errorf("a full socket row: SVG not %d px wide", maxSVGWidth)
		}
	}
}

// A device whose PCIe path has exactly two elements (an endpoint on the
// root bus) is grouped by them; one element is the "?" group.
func TestGroupKeyEdge(t *testing.T) {
	tp := &topo.Topology{CPUs: []topo.CPU{{ID: 0}}, NUMANodes: []topo.NUMANode{{ID: 0, CPUs: cpus(0)}},
		NICs: []topo.PCIDevice{
			{Kind: topo.KindNIC, Name: "eth0", NUMANode: 0, PCIePath: []string{"pci0", "0000:01"}},
			{Kind: topo.KindNIC, Name: "eth1", NUMANode: 0, PCIePath: []string{"0000:02"}},
		}}
	p := page(t, Input{Topo: tp})
	mustHave(t, p, `>root port pci0/0000:01</text></g>`, `>root port ?</text></g>`)
}
