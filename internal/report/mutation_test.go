package report

// Tests of the page's decisions on a hand-built topology: every expected
// fragment is written out as the page must show it (class names, colours,
// labels), not built from the package's own code. Each case pins one choice
// at its edge (a limit at, below and above; a branch taken and not taken).

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/irq"
	"github.com/gpunode/gpunode/internal/topo"
	"github.com/gpunode/gpunode/internal/tune"
)

func cpus(ids ...int) topo.CPUList { return topo.NewCPUList(cpuset.New(ids...)) }

// smallTopo: socket 0 holds node 0 (CPUs 0-1, a NIC) and node 1 (CPUs
// 2-3, no NIC); node 2 has no CPUs (GPU memory). GPU0 sits behind a PCIe
// switch on node 0, GPU1 under a root port on node 1, GPU2 on no node.
func smallTopo() *topo.Topology {
	g1 := 1
	return &topo.Topology{
		CPUs: []topo.CPU{
			{ID: 0, Socket: 0, NUMANode: 0}, {ID: 1, Socket: 0, NUMANode: 0},
			{ID: 2, Socket: 0, NUMANode: 1}, {ID: 3, Socket: 0, NUMANode: 1},
		},
		NUMANodes: []topo.NUMANode{
			{ID: 0, CPUs: cpus(0, 1), MemTotalBytes: 1 << 30},
			{ID: 1, CPUs: cpus(2, 3), MemTotalBytes: 1 << 30},
			{ID: 2, CPUs: cpus(), GPU: &g1, MemTotalBytes: 1 << 30},
		},
		GPUs: []topo.PCIDevice{
			{Kind: topo.KindGPU, Name: "GPU0", BDF: "0000:1b:00.0", NUMANode: 0,
				PCIePath:  []string{"pci0000:00", "0000:00:01.0", "0000:1a:00.0", "0000:1b:00.0"},
				LinkWidth: 16, MaxLinkWidth: 16, LinkSpeed: topo.ParsePCIeSpeed("32.0 GT/s PCIe")},
			{Kind: topo.KindGPU, Name: "GPU1", BDF: "0000:41:00.0", NUMANode: 1,
				PCIePath:  []string{"pci0000:40", "0000:40:01.0", "0000:41:00.0"},
				LinkWidth: 8, MaxLinkWidth: 16, LinkDowngraded: true},
			{Kind: topo.KindGPU, Name: "GPU2", BDF: "0000:81:00.0", NUMANode: -1,
				PCIePath: []string{"0000:81:00.0"}},
		},
		NICs: []topo.PCIDevice{
			{Kind: topo.KindNIC, Name: "mlx5_0", BDF: "0000:1c:00.0", NUMANode: 0,
				PCIePath: []string{"pci0000:00", "0000:00:01.0", "0000:1a:00.0", "0000:1c:00.0"}},
		},
		Links: []topo.Link{
			{A: "GPU0", B: "mlx5_0", Class: "PIX"},
			{A: "mlx5_0", B: "GPU1", Class: "SYS"}, // the other order
		},
	}
}

func page(t *testing.T, in Input) string {
	t.Helper()
	if in.Report == nil {
		in.Report = &tune.Report{Profile: "base"}
	}
	b, err := HTML(in)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustHave(t *testing.T, p string, frags ...string) {
	t.Helper()
	for _, f := range frags {
		if !strings.Contains(p, f) {
			t.Errorf("page lacks %s", f)
		}
	}
}

func mustLack(t *testing.T, p string, frags ...string) {
	t.Helper()
	for _, f := range frags {
		if strings.Contains(p, f) {
			t.Errorf("page has %s", f)
		}
	}
}

// deviceGroup returns the <g ...> opening tag of the named device.
func deviceGroup(t *testing.T, p, name string) string {
	t.Helper()
	m := regexp.MustCompile(`<g class="([^"]*)" data-name="` + regexp.QuoteMeta(name) + `"[^>]*><title>([^<]*)</title><rect [^>]*stroke="([^"]*)"`).FindStringSubmatch(p)
	if m == nil {
		t.Fatalf("no element for %s", name)
	}
	return fmt.Sprintf("class=%q title=%q stroke=%q", m[1], m[2], m[3])
}

func TestPageTitle(t *testing.T) {
	mustHave(t, page(t, Input{}), "<title>gpunode report</title>")
	p := page(t, Input{Report: &tune.Report{Hostname: "node7"}})
	mustHave(t, p, "<title>gpunode report: node7</title>", "<h1>gpunode report: node7</h1>")
}

func TestLinkMatrixCells(t *testing.T) {
	tp := smallTopo()
	p := page(t, Input{Topo: tp})
	mustHave(t, p,
		`<h2>GPU/NIC link classes</h2>`,
		`<table id="links"><tr><th></th><th>mlx5_0</th></tr>`,
		`<tr><th>GPU0</th><td class="lc-PIX">PIX</td></tr>`,
		`<tr><th>GPU1</th><td class="lc-SYS">SYS</td></tr>`,
		`<tr><th>GPU2</th><td class="lc--">-</td></tr>`)
	// GPUs without NICs, and NICs without GPUs: no matrix.
	noNIC := smallTopo()
	noNIC.NICs = nil
	mustLack(t, page(t, Input{Topo: noNIC}), `GPU/NIC link classes`)
	noGPU := smallTopo()
	noGPU.GPUs = nil
	mustLack(t, page(t, Input{Topo: noGPU}), `GPU/NIC link classes`)
}

func TestDeviceMarks(t *testing.T) {
	p := page(t, Input{Topo: smallTopo()})
	// GPU0: a NIC on its node, full link, behind a switch.
	if got, want := deviceGroup(t, p, "GPU0"), `class="gpu" title="GPU0 0000:1b:00.0, NUMA node 0, link x16 32.0 GT/s" stroke="#1a7f37"`; got != want {
		t.Errorf("GPU0: %s, want %s", got, want)
	}
	// GPU1: no NIC on node 1, link x8 of x16.
	if got, want := deviceGroup(t, p, "GPU1"), `class="gpu bad downgraded" title="GPU1 0000:41:00.0, NUMA node 1, link x8/x16 ↓" stroke="#bc4c00"`; got != want {
		t.Errorf("GPU1: %s, want %s", got, want)
	}
	mustHave(t, p, `stroke="#bc4c00" stroke-width="1.5" stroke-dasharray="4 2"/>`)
	// GPU2: no NUMA node at all.
	if got, want := deviceGroup(t, p, "GPU2"), `class="gpu bad" title="GPU2 0000:81:00.0, NUMA node -1, link " stroke="#cf222e"`; got != want {
		t.Errorf("GPU2: %s, want %s", got, want)
	}
	if got, want := deviceGroup(t, p, "mlx5_0"), `class="nic" title="mlx5_0 0000:1c:00.0, NUMA node 0, link " stroke="#0969da"`; got != want {
		t.Errorf("mlx5_0: %s, want %s", got, want)
	}
	// A NIC on node 0 counts for node 0 (node numbers start at 0).
	mustLack(t, p, `class="gpu bad" data-name="GPU0"`)
	mustHave(t, p, `<text x="12" y="`, `NUMA node unknown</text>`)
	// Same link width as the maximum: no "/x".
	tp := smallTopo()
	tp.GPUs[1].MaxLinkWidth = 8
	tp.GPUs[1].LinkDowngraded = false
	if got, want := deviceGroup(t, page(t, Input{Topo: tp}), "GPU1"), `class="gpu bad" title="GPU1 0000:41:00.0, NUMA node 1, link x8" stroke="#cf222e"`; got != want {
		t.Errorf("GPU1 at full width: %s, want %s", got, want)
	}
	// No unknown-node device: no unknown row.
	tp.GPUs = tp.GPUs[:2]
	mustLack(t, page(t, Input{Topo: tp}), `NUMA node unknown`)
	// An NVSwitch has its own colours.
	tp.NVSwitches = []topo.PCIDevice{{Kind: topo.KindNVSwitch, Name: "nvsw0", BDF: "0000:05:00.0", NUMANode: 0}}
	if got, want := deviceGroup(t, page(t, Input{Topo: tp}), "nvsw0"), `class="nvswitch" title="nvsw0 0000:05:00.0, NUMA node 0, link " stroke="#8250df"`; got != want {
		t.Errorf("nvsw0: %s, want %s", got, want)
	}
}

func TestGroupsAndNodes(t *testing.T) {
	p := page(t, Input{Topo: smallTopo()})
	// Four or more path elements: a PCIe switch; three: a root port;
	// fewer than two: "?".
	mustHave(t, p,
		// labels are cut to 30 characters
		`>PCIe switch · pci0000:00/0000…</text></g>`,
		`>root port pci0000:40/0000:40:…</text></g>`,
		`>root port ?</text></g>`,
		`>NUMA node 0</text>`, `>CPUs 0-1</text>`, `>CPUs 2-3</text>`,
		`>memory of GPU1</text>`,
		`<g class="socket" data-socket="0">`, `>socket 0</text>`)
	if n := strings.Count(p, `<g class="socket"`); n != 1 {
		t.Errorf("%d sockets drawn, want 1 (two nodes share socket 0)", n)
	}
	// The CPU-less node is drawn in its own row, below the socket.
	sock := strings.Index(p, `<g class="socket"`)
	mem := strings.Index(p, `<g class="numa" data-node="2">`)
	if sock < 0 || mem < sock {
		t.Errorf("CPU-less node 2 not drawn after the socket")
	}
	// A node with CPUs but no GPU memory and an empty CPU list prints "none".
	tp := smallTopo()
	tp.NUMANodes[2].GPU = nil
	mustHave(t, page(t, Input{Topo: tp}), `>CPUs none</text>`)
	// Groups sort by key within a node.
	tp = smallTopo()
	tp.NICs = append(tp.NICs, topo.PCIDevice{Kind: topo.KindNIC, Name: "mlx5_9", NUMANode: 0,
		PCIePath: []string{"pci0000:00", "0000:00:00.5", "0000:01:00.0"}})
	p = page(t, Input{Topo: tp})
	a, b := strings.Index(p, `data-name="mlx5_9"`), strings.Index(p, `data-name="GPU0"`)
	if a < 0 || b < 0 || a > b {
		t.Errorf("groups of node 0 not in key order (%d, %d)", a, b)
	}
	// A node whose CPUs no CPU entry places on a socket goes to the
	// socket-less row too (after node 2, in node order).
	tp = smallTopo()
	tp.NUMANodes = append(tp.NUMANodes, topo.NUMANode{ID: 3, CPUs: cpus(8)})
	p = page(t, Input{Topo: tp})
	n2, n3 := strings.Index(p, `<g class="numa" data-node="2">`), strings.Index(p, `<g class="numa" data-node="3">`)
	if n2 < 0 || n3 < n2 {
		t.Errorf("node 3 (no socket known) not drawn after node 2 in the socket-less row (%d, %d)", n2, n3)
	}
	// Two sockets: both drawn, in socket order.
	tp = smallTopo()
	tp.CPUs[2].Socket, tp.CPUs[3].Socket = 1, 1
	p = page(t, Input{Topo: tp})
	s0, s1 := strings.Index(p, `data-socket="0"`), strings.Index(p, `data-socket="1"`)
	if s0 < 0 || s1 < 0 || s0 > s1 {
		t.Errorf("sockets not both drawn in order (%d, %d)", s0, s1)
	}
}

func TestTruncateEdges(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"GPU-ABCDEFG", 12, "GPU-ABCDEFG"},    // one below
		{"GPU-ABCDEFGH", 12, "GPU-ABCDEFGH"},  // at
		{"GPU-ABCDEFGHI", 12, "GPU-ABCDEFG…"}, // one above
		{"ééééééééééééé", 12, "ééééééééééé…"}, // runes, not bytes
	} {
		if got := truncate(c.in, c.n); got != c.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
	tp := smallTopo()
	tp.GPUs[0].Name = "GPU-ABCDEFGHI"
	mustHave(t, page(t, Input{Topo: tp}), `font-weight="600">GPU-ABCDEFG…</text>`)
}

// The picture draws at most 512 devices (maxDevicesDrawn): 511, 512 and
// 513 GPUs on one node.
func TestDeviceLimitEdge(t *testing.T) {
	for _, c := range []struct{ n, want int }{{511, 511}, {512, 512}, {513, 512}} {
		tp := &topo.Topology{
			CPUs:      []topo.CPU{{ID: 0}},
			NUMANodes: []topo.NUMANode{{ID: 0, CPUs: cpus(0)}},
		}
		for i := 0; i < c.n; i++ {
			tp.GPUs = append(tp.GPUs, topo.PCIDevice{Kind: topo.KindGPU, Name: fmt.Sprintf("GPU%d", i), NUMANode: 0})
		}
		b, err := HTML(Input{Report: &tune.Report{}, Topo: tp})
		if err != nil {
			t.Fatal(err)
		}
		if got := bytes.Count(b, []byte(`<g class="gpu bad" data-name=`)); got != c.want {
			t.Errorf("%d GPUs: %d drawn, want %d", c.n, got, c.want)
		}
	}
}

func TestIRQTable(t *testing.T) {
	eff := cpus(5)
	empty := cpus()
	in := Input{IRQ: &irq.Report{Devices: []irq.Device{
		{Kind: "gpu", Name: "GPU0", BDF: "0000:1b:00.0", NUMANode: 0, NodeCPUs: cpus(0, 1, 2, 3), IRQs: []irq.IRQ{
			{IRQ: 40, Affinity: cpus(0, 1), Effective: &eff, OffNode: true},
			{IRQ: 41, Affinity: cpus(2), Effective: &empty},
			{IRQ: 42, Affinity: cpus(3), OffNode: true},
		}},
		{Kind: "nic", Name: "mlx5_0", BDF: "0000:1c:00.0", NUMANode: 0, NodeCPUs: cpus(0, 1), IRQs: []irq.IRQ{
			{IRQ: 50, Affinity: cpus(1)},
		}},
	}}}
	p := page(t, in)
	mustHave(t, p,
		`<tr><td>GPU0</td><td>gpu</td><td>0000:1b:00.0</td><td>0</td><td>0-3</td><td>3</td><td class="st st-drift">2</td><td>40→5, 41→2, 42→3</td></tr>`,
		`<tr><td>mlx5_0</td><td>nic</td><td>0000:1c:00.0</td><td>0</td><td>0-1</td><td>1</td><td class="st st-ok">0</td><td>50→1</td></tr>`)
}

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/small.html")

// The page of smallTopo, byte for byte (layout constants, colours and
// labels all show in it), plus a property computed separately: every
// device rectangle lies inside its switch box, at least 8 px (the padding)
// from each edge, and no two devices overlap.
func TestSmallPageGolden(t *testing.T) {
	tp := smallTopo()
	for i := 0; i < 14; i++ { // a tall switch box
		tp.NICs = append(tp.NICs, topo.PCIDevice{Kind: topo.KindNIC, Name: fmt.Sprintf("eth%d", i), BDF: fmt.Sprintf("0000:42:00.%d", i), NUMANode: 1,
			PCIePath: []string{"pci0000:40", "0000:40:01.0", "0000:41:00.0", fmt.Sprintf("0000:42:00.%d", i)}})
	}
	p := page(t, Input{Topo: tp, Generated: "2026-01-01T00:00:00Z", Version: "v0.0.0-test",
		Report: &tune.Report{Hostname: "small", Profile: "base"}})
	golden := filepath.Join("testdata", "small.html")
	if *updateGolden {
		if err := os.WriteFile(golden, []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if p != string(want) {
		t.Errorf("page differs from %s (go test -run TestSmallPageGolden -update-golden to rewrite)", golden)
	}
	// The independent property.
	box := regexp.MustCompile(`<g class="pcie-switch"><rect x="(\d+)" y="(\d+)" width="(\d+)" height="(\d+)"`)
	dev := regexp.MustCompile(`<g class="[a-z ]+" data-name="[^"]*"[^>]*><title>[^<]*</title><rect x="(\d+)" y="(\d+)" width="(\d+)" height="(\d+)"`)
	type rect struct{ x, y, w, h int }
	parse := func(m []string) rect {
		var r rect
		fmt.Sscan(m[1]+" "+m[2]+" "+m[3]+" "+m[4], &r.x, &r.y, &r.w, &r.h)
		return r
	}
	var boxes, devs []rect
	for _, m := range box.FindAllStringSubmatch(p, -1) {
		boxes = append(boxes, parse(m))
	}
	for _, m := range dev.FindAllStringSubmatch(p, -1) {
		devs = append(devs, parse(m))
	}
	if len(devs) != len(tp.GPUs)+len(tp.NICs) {
		t.Fatalf("%d device rectangles, %d devices", len(devs), len(tp.GPUs)+len(tp.NICs))
	}
	for i, d := range devs {
		in := false
		for _, b := range boxes {
			if d.x-b.x >= 8 && b.x+b.w-(d.x+d.w) >= 8 && d.y > b.y && b.y+b.h-(d.y+d.h) >= 8 {
				in = true
			}
		}
		if !in {
			t.Errorf("device %d %+v not inside a switch box with 8 px padding", i, d)
		}
		for _, e := range devs[i+1:] {
			if d.x < e.x+e.w && e.x < d.x+d.w && d.y < e.y+e.h && e.y < d.y+d.h {
				t.Errorf("devices %+v and %+v overlap", d, e)
			}
		}
	}
}
