// Package report renders gpunode's one-page HTML report: a topology picture
// drawn as inline SVG (sockets, NUMA nodes with their CPUs and memory, PCIe
// switches with the GPUs and NICs under them, NVSwitches, GPU/NIC link
// classes; GPUs without a NIC on their node and downgraded PCIe links
// marked), the audit table, IRQ placement per device and the saved
// benchmark results with their figures. The page is self-contained: no
// script, no external stylesheet, font or image, nothing fetched.
//
// The page is laid out for a 1,400 px window. The picture is at most
// maxSVGWidth wide: sockets, the NUMA nodes in a socket and the PCIe groups
// in a node each flow into further rows (flow) instead of widening it. The
// audit rows are in the order of every check table (check.SortBySeverity:
// error, drift, pending-reboot, absent, info, ok; then id and subject) with
// the check's reason as "why"; fixes wrap inside their cell, and a fix
// several checks share is printed at its first row, later rows linking to
// it (auditRows). A saved NUMA result is a matrix of CPU node by memory
// node; h2d and alloc results are their cases and runs (benchViews).
//
// SVG elements carry classes tests and users can select on: every NUMA node
// is one <g class="numa">, every GPU one <g class="gpu">, every NIC one
// <g class="nic">; "bad" marks a misaligned GPU, "downgraded" a device whose
// link trained below its capability.
package report

import (
	"bytes"
	"fmt"
	"html/template"
	"sort"
	"strings"

	"github.com/gpunode/gpunode/internal/bench"
	"github.com/gpunode/gpunode/internal/irq"
	"github.com/gpunode/gpunode/internal/output"
	"github.com/gpunode/gpunode/internal/topo"
	"github.com/gpunode/gpunode/internal/tune"
)

// Input is what one page shows; every field but Report may be nil.
type Input struct {
	Report *tune.Report
	Topo   *topo.Topology
	IRQ    *irq.Report
	// Bench are saved benchmark results (bench.LoadAll).
	Bench []*bench.Saved
	// Generated is the time shown in the footer (RFC 3339).
	Generated string
	// Version is gpunode's version.
	Version string
}

// maxDevicesDrawn bounds the picture (a generated 1024-CPU host has 64 GPUs).
const maxDevicesDrawn = 512

// HTML renders the page.
func HTML(in Input) ([]byte, error) {
	if in.Report == nil {
		return nil, fmt.Errorf("report: no audit report")
	}
	d := pageData{Input: in, Title: "gpunode report", Audit: auditRows(in.Report.Checks), Benches: benchViews(in.Bench)}
	if in.Report.Hostname != "" {
		d.Title += ": " + in.Report.Hostname
	}
	if in.Topo != nil {
		d.SVG = template.HTML(topoSVG(in.Topo))
		d.Matrix = linkMatrix(in.Topo)
	}
	var buf bytes.Buffer
	if err := pageTmpl().Execute(&buf, d); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return buf.Bytes(), nil
}

type pageData struct {
	Input
	Title   string
	SVG     template.HTML
	Matrix  *matrix
	Audit   []auditRow
	Benches []benchView
}

type matrix struct {
	NICs []string
	Rows []matrixRow
}

type matrixRow struct {
	GPU   string
	Cells []string
}

func linkMatrix(t *topo.Topology) *matrix {
	if len(t.GPUs) == 0 || len(t.NICs) == 0 {
		return nil
	}
	cls := map[[2]string]string{}
	for _, l := range t.Links {
		cls[[2]string{l.A, l.B}] = l.Class
		cls[[2]string{l.B, l.A}] = l.Class
	}
	m := &matrix{}
	for _, n := range t.NICs {
		m.NICs = append(m.NICs, n.Name)
	}
	for _, g := range t.GPUs {
		r := matrixRow{GPU: g.Name}
		for _, n := range t.NICs {
			c := cls[[2]string{g.Name, n.Name}]
			if c == "" {
				c = "-"
			}
			r.Cells = append(r.Cells, c)
		}
		m.Rows = append(m.Rows, r)
	}
	return m
}

func pageTmpl() *template.Template {
	return template.Must(template.New("page").Funcs(template.FuncMap{
		"join":      strings.Join,
		"bytes":     output.HumanBytes,
		"ratio":     ratio,
		"percent":   percent,
		"minMax":    minMax,
		"rss":       rss,
		"library":   library,
		"percentOf": func(x float64) float64 { return 100 * x },
		"irqCPUs": func(q irq.IRQ) string {
			if q.Effective != nil && q.Effective.Size() > 0 {
				return q.Effective.String()
			}
			return q.Affinity.String()
		},
		"offNode": func(d irq.Device) int {
			n := 0
			for _, q := range d.IRQs {
				if q.OffNode {
					n++
				}
			}
			return n
		},
	}).Parse(pageHTML))
}

const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>{{.Title}}</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5em;color:#1d2329;background:#fff}
h1{font-size:1.5em;margin:0 0 .2em}h2{font-size:1.15em;margin:1.6em 0 .5em;border-bottom:1px solid #d0d7de;padding-bottom:.2em}
.meta{color:#57606a}
table{border-collapse:collapse;font-size:.85em;max-width:100%}td,th{border:1px solid #d0d7de;padding:.25em .5em;vertical-align:top;text-align:left;overflow-wrap:anywhere}
#audit{table-layout:fixed;width:100%}
code.fix{display:block;white-space:pre-wrap;overflow-wrap:anywhere;margin:0 0 .3em}
#topo-svg{max-width:100%;height:auto}
.bench h3{font-size:1em;margin:1.2em 0 .4em}
td.num{text-align:right;font-variant-numeric:tabular-nums}td.local{background:#dafbe1}
th{background:#f6f8fa}
.st{font-weight:600;white-space:nowrap}
.st-ok{background:#dafbe1}.st-drift{background:#ffebe9}.st-error{background:#ff8182}.st-pending-reboot{background:#fff8c5}
.st-absent{background:#f6f8fa;color:#57606a}.st-info{background:#ddf4ff}
code{font-size:.95em;background:#f6f8fa;padding:0 .2em}
.summary span{display:inline-block;margin-right:.8em;padding:.1em .5em;border-radius:.3em}
.lc-PIX,.lc-PXB{background:#dafbe1}.lc-PHB,.lc-NODE{background:#fff8c5}.lc-SYS{background:#ffebe9}
svg text{font-family:system-ui,sans-serif}
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<div class="meta">profile <b>{{.Report.Profile}}</b>{{with .Topo}} · {{.CPUModel}} · kernel {{.Kernel}}{{end}}{{with .Generated}} · {{.}}{{end}}{{with .Version}} · gpunode {{.}}{{end}}</div>
<p class="summary"><span class="st-ok">ok {{.Report.Summary.OK}}</span><span class="st-drift">drift {{.Report.Summary.Drift}}</span><span class="st-error">error {{.Report.Summary.Error}}</span><span class="st-pending-reboot">pending-reboot {{.Report.Summary.PendingReboot}}</span><span class="st-absent">absent {{.Report.Summary.Absent}}</span><span class="st-info">info {{.Report.Summary.Info}}</span></p>
{{if .SVG}}<h2>Topology</h2>
<div id="topology">{{.SVG}}</div>
{{end}}{{with .Matrix}}<h2>GPU/NIC link classes</h2>
<table id="links"><tr><th></th>{{range .NICs}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr><th>{{.GPU}}</th>{{range .Cells}}<td class="lc-{{.}}">{{.}}</td>{{end}}</tr>
{{end}}</table>
<p class="meta">PIX/PXB: behind one PCIe switch tree · PHB: same root complex · NODE: same NUMA node · SYS: across the CPU interconnect</p>
{{end}}<h2>Audit</h2>
<table id="audit"><colgroup><col style="width:9%"><col style="width:13%"><col style="width:6%"><col style="width:10%"><col style="width:10%"><col style="width:13%"><col style="width:18%"><col style="width:21%"></colgroup>
<tr><th>status</th><th>check</th><th>layer</th><th>current</th><th>expected</th><th>detail</th><th>why</th><th>fix</th></tr>
{{range .Audit}}<tr class="check" data-status="{{.Status}}"><td class="st st-{{.Status}}">{{.Status}}</td><td><code>{{.Key}}</code></td><td>{{.Layer}}</td><td>{{.CurrentText}}</td><td>{{.ExpectedText}}</td><td>{{.Detail}}</td><td class="why">{{.Reason}}</td><td>{{range .Fixes}}{{if .First}}<code class="fix" id="{{.ID}}">{{.Text}}</code>{{else}}<a class="fix-ref" href="#{{.ID}}">same fix as {{.FirstKey}}</a><br>{{end}}{{end}}</td></tr>
{{end}}</table>
{{with .IRQ}}<h2>IRQ placement</h2>
<table id="irqs"><tr><th>device</th><th>kind</th><th>bdf</th><th>NUMA node</th><th>node CPUs</th><th>IRQs</th><th>off-node</th><th>routed to</th></tr>
{{range .Devices}}<tr><td>{{.Name}}</td><td>{{.Kind}}</td><td>{{.BDF}}</td><td>{{.NUMANode}}</td><td>{{.NodeCPUs}}</td><td>{{len .IRQs}}</td><td class="st {{if offNode .}}st-drift{{else}}st-ok{{end}}">{{offNode .}}</td><td>{{range $i, $q := .IRQs}}{{if $i}}, {{end}}{{$q.IRQ}}→{{irqCPUs $q}}{{end}}</td></tr>
{{end}}</table>
{{end}}{{with .Benches}}<h2>Saved benchmarks</h2>
{{range .}}<div class="bench" data-kind="{{.Kind}}"><h3>{{.Kind}} · {{.Name}} · saved {{.SavedAt}}</h3>
{{with .Err}}<p class="st-error">cannot show: {{.}}</p>{{end}}{{with .NUMA}}<table class="numa-matrix"><tr><th>CPU node \ memory node</th>{{range .Nodes}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr><th>{{.CPUNode}}</th>{{range .Cells}}{{if .}}<td class="num{{if eq .CPUNode .MemNode}} local{{end}}">copy {{printf "%.1f" .CopyGBps}} GB/s<br>triad {{printf "%.1f" .TriadGBps}} GB/s<br>latency {{printf "%.1f" .LatencyNs}} ns<br>distance {{.Distance}}{{with .CopyVsLocal}}<br>copy {{ratio .}} of local{{end}}</td>{{else}}<td>-</td>{{end}}{{end}}</tr>
{{end}}</table>
<p class="meta">GB/s: 10^9 bytes read plus written per second, medians of the samples (STREAM's convention); green: the CPU node's own memory; {{.Sizes}}; {{.Bounds}}</p>
{{end}}{{with .H2D}}<p class="meta">GPU {{.GPU}} ({{.BDF}}{{with .Name}}, {{.}}{{end}}) on NUMA node {{.GPUNode}}; remote node {{.RemoteNode}}{{if .LinkGBps}}; link PCIe {{.LinkGen}} x{{.LinkWidth}}, {{printf "%.1f" .LinkGBps}} GB/s per direction{{end}}</p>
<table class="h2d"><tr><th>direction</th><th>memory</th><th>placement</th><th>node</th><th>CPUs</th><th>GB/s</th><th>vs link</th></tr>
{{range .Cases}}<tr><td>{{.Direction}}</td><td>{{.Memory}}</td><td>{{.Placement}}</td><td>{{.Node}}</td><td>{{.CPUs}}</td><td class="num">{{printf "%.2f" .GBps}}</td><td class="num">{{percent .VsLink}}</td></tr>
{{end}}</table>
{{with .Ratios}}<table class="h2d-ratios"><tr><th>ratio</th><th>direction</th><th>of</th><th>value</th></tr>
{{range .}}<tr><td>{{.Name}}</td><td>{{.Direction}}</td><td>{{.Of}}</td><td class="num">{{ratio .Ratio}}</td></tr>
{{end}}</table>
{{end}}<p class="meta">{{.Method}}</p>
{{end}}{{with .Alloc}}<p class="meta">{{with .Workload}}built-in workload {{.}} · {{end}}<code>{{join .Command " "}}</code> · {{.Repeats}} runs per allocator</p>
<table class="alloc"><tr><th>allocator</th><th>wall s</th><th>spread</th><th>min-max s</th><th>user s</th><th>sys s</th><th>max RSS</th><th>wall vs glibc</th><th>RSS vs glibc</th><th>library</th></tr>
{{range .Runs}}<tr><td>{{.Allocator}}</td><td class="num">{{printf "%.3f" .MedianWallSeconds}}</td><td class="num">{{printf "%.1f%%" (percentOf .WallSpread)}}</td><td class="num">{{minMax .WallSeconds}}</td><td class="num">{{printf "%.3f" .MedianUserSeconds}}</td><td class="num">{{printf "%.3f" .MedianSysSeconds}}</td><td class="num">{{rss .}}</td><td class="num">{{ratio .WallVsGlibc}}</td><td class="num">{{ratio .RSSVsGlibc}}</td><td>{{library .}}</td></tr>
{{end}}</table>
<p class="meta">medians of every run; spread = 1.4826 x MAD / median of the wall times</p>
{{end}}{{with .Notes}}<ul class="notes">{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}</div>
{{end}}{{end}}{{with .Report.Warnings}}<h2>Warnings</h2><ul>{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}
</body>
</html>
`

// svg builds the topology picture. Every text goes through esc.
type svg struct {
	b strings.Builder
}

func esc(s string) string { return template.HTMLEscapeString(s) }

func (s *svg) f(format string, args ...any) { fmt.Fprintf(&s.b, format, args...) }

// switchGroup is the devices under one root port of one NUMA node.
type switchGroup struct {
	key     string
	bridged bool // a PCIe switch sits between the root port and a device
	devs    []topo.PCIDevice
}

const (
	devW, devH   = 150, 26
	groupPad     = 8
	groupW       = devW + 2*groupPad
	nodeHeader   = 64
	groupHeader  = 22
	socketHeader = 26
	gap          = 12
)

func groupsOf(t *topo.Topology, node int) []*switchGroup {
	idx := map[string]*switchGroup{}
	var out []*switchGroup
	n := 0
	for _, list := range [][]topo.PCIDevice{t.GPUs, t.NICs, t.NVSwitches} {
		for _, d := range list {
			if d.NUMANode != node || n >= maxDevicesDrawn {
				continue
			}
			n++
			key := "?"
			if len(d.PCIePath) >= 2 {
				key = d.PCIePath[0] + "/" + d.PCIePath[1]
			}
			g := idx[key]
			if g == nil {
				g = &switchGroup{key: key}
				idx[key] = g
				out = append(out, g)
			}
			if len(d.PCIePath) > 3 {
				g.bridged = true
			}
			g.devs = append(g.devs, d)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

// maxSVGWidth is the widest the picture is laid out: a 1,400 px window
// less the page's margins. Sockets, NUMA nodes and PCIe groups flow into
// further rows instead of growing the picture sideways (an 8-node host
// with 16 GPUs stays within it); a single node wider than a window still
// scales down with the page (CSS max-width).
const maxSVGWidth = 1320

// nodeMaxCols is how many PCIe groups one NUMA node shows side by side:
// as many as fit in a socket box of maxSVGWidth.
const nodeMaxCols = (maxSVGWidth - 4*gap - gap) / (groupW + gap)

// flow places boxes left to right from (start, y), wrapping to a new row
// when the next box would end past limit (a box wider than limit gets a
// row of its own). width is the right edge of the widest row plus one gap.
type flow struct {
	start, limit  int
	x, y, rowH, w int
	n             int // boxes in the current row
}

func newFlow(start, y, limit int) *flow {
	return &flow{start: start, limit: limit, x: start, y: y, w: start}
}

func (f *flow) place(w, h int) (int, int) {
	if f.n > 0 && f.x+w+gap > f.limit {
		f.y += f.rowH + gap
		f.x, f.rowH, f.n = f.start, 0, 0
	}
	x, y := f.x, f.y
	f.x += w + gap
	f.n++
	f.rowH = max(f.rowH, h)
	f.w = max(f.w, f.x)
	return x, y
}

// bottom is the lower edge of the last row.
func (f *flow) bottom() int { return f.y + f.rowH }

// nodeTextWidth is the width the node's two lines of text need at 10 px
// (about 6 px a character, the CPU list cut at 60) plus the margins.
func nodeTextWidth(n topo.NUMANode) int {
	cpus := n.CPUs.String()
	lines := []string{"CPUs " + cpus, "memory " + output.HumanBytes(n.MemTotalBytes) + " (" + output.HumanBytes(n.MemFreeBytes) + " free)"}
	w := 0
	for _, l := range lines {
		w = max(w, min(len([]rune(l)), 60))
	}
	return 16 + 6*w
}

func groupHeight(g *switchGroup) int { return groupHeader + len(g.devs)*(devH+4) + 2*groupPad }

// pos is an offset inside the box that holds it.
type pos struct{ x, y int }

func topoSVG(t *topo.Topology) string {
	// Nodes by socket; CPU-less nodes (GPU memory, CXL) in their own row.
	socketOf := map[int]int{}
	for _, c := range t.CPUs {
		if _, ok := socketOf[c.NUMANode]; !ok {
			socketOf[c.NUMANode] = c.Socket
		}
	}
	type col struct {
		node   topo.NUMANode
		groups []*switchGroup
		at     []pos // of each group, inside the node
		w, h   int
	}
	bySocket := map[int][]*col{}
	var sockets []int
	var memOnly []*col
	unknown := groupsOf(t, -1)
	for _, n := range t.NUMANodes {
		c := &col{node: n, groups: groupsOf(t, n.ID)}
		f := newFlow(gap, nodeHeader, gap+nodeMaxCols*(groupW+gap))
		for _, g := range c.groups {
			x, y := f.place(groupW, groupHeight(g))
			c.at = append(c.at, pos{x, y})
		}
		c.w = max(200, f.w, nodeTextWidth(n))
		c.h = nodeHeader
		if len(c.groups) > 0 {
			c.h = f.bottom() + groupPad
		}
		sock, ok := socketOf[n.ID]
		if !ok || n.CPUs.Size() == 0 {
			memOnly = append(memOnly, c)
			continue
		}
		if _, seen := bySocket[sock]; !seen {
			sockets = append(sockets, sock)
		}
		bySocket[sock] = append(bySocket[sock], c)
	}
	sort.Ints(sockets)
	localNIC := map[int]bool{}
	for _, n := range t.NICs {
		if n.NUMANode >= 0 {
			localNIC[n.NUMANode] = true
		}
	}

	var s svg
	var body strings.Builder
	drawGroup := func(g *switchGroup, gx, gy int) {
		h := groupHeight(g)
		label := "root port " + g.key
		if g.bridged {
			label = "PCIe switch · " + g.key
		}
		fmt.Fprintf(&body, `<g class="pcie-switch"><rect x="%d" y="%d" width="%d" height="%d" rx="4" fill="#f6f8fa" stroke="#8c959f"/>`, gx, gy, groupW, h)
		fmt.Fprintf(&body, `<text x="%d" y="%d" font-size="9" fill="#57606a">%s</text></g>`, gx+4, gy+14, esc(truncate(label, 30)))
		for i, d := range g.devs {
			dy := gy + groupHeader + groupPad + i*(devH+4)
			cls, fill, stroke, dash := d.Kind, "#ddf4ff", "#0969da", ""
			switch d.Kind {
			case topo.KindGPU:
				fill, stroke = "#dafbe1", "#1a7f37"
				if d.NUMANode < 0 || !localNIC[d.NUMANode] {
					cls += " bad"
					stroke = "#cf222e"
				}
			case topo.KindNVSwitch:
				fill, stroke = "#fbefff", "#8250df"
			}
			link := ""
			if d.LinkWidth > 0 {
				link = fmt.Sprintf("x%d", d.LinkWidth)
				if d.MaxLinkWidth > 0 && d.MaxLinkWidth != d.LinkWidth {
					link += fmt.Sprintf("/x%d", d.MaxLinkWidth)
				}
			}
			if d.LinkSpeed.Text != "" {
				link += " " + strings.TrimSuffix(d.LinkSpeed.Text, " PCIe")
			}
			if d.LinkDowngraded {
				cls += " downgraded"
				stroke, dash = "#bc4c00", ` stroke-dasharray="4 2"`
				link += " ↓"
			}
			fmt.Fprintf(&body, `<g class="%s" data-name="%s" data-bdf="%s"><title>%s %s, NUMA node %d, link %s</title>`, cls, esc(d.Name), esc(d.BDF), esc(d.Name), esc(d.BDF), d.NUMANode, esc(link))
			fmt.Fprintf(&body, `<rect x="%d" y="%d" width="%d" height="%d" rx="3" fill="%s" stroke="%s" stroke-width="1.5"%s/>`, gx+groupPad, dy, devW, devH, fill, stroke, dash)
			fmt.Fprintf(&body, `<text x="%d" y="%d" font-size="11" font-weight="600">%s</text>`, gx+groupPad+5, dy+17, esc(truncate(d.Name, 12)))
			fmt.Fprintf(&body, `<text x="%d" y="%d" font-size="9" text-anchor="end" fill="#57606a">%s</text></g>`, gx+groupPad+devW-4, dy+17, esc(link))
		}
	}
	drawNode := func(c *col, nx, ny int) {
		n := c.node
		cpus := n.CPUs.String()
		if cpus == "" {
			cpus = "none"
		}
		what := fmt.Sprintf("CPUs %s", cpus)
		if n.GPU != nil {
			what = fmt.Sprintf("memory of GPU%d", *n.GPU)
		}
		fmt.Fprintf(&body, `<g class="numa" data-node="%d"><rect x="%d" y="%d" width="%d" height="%d" rx="6" fill="#fff" stroke="#57606a" stroke-width="1.5"/>`, n.ID, nx, ny, c.w, c.h)
		fmt.Fprintf(&body, `<text x="%d" y="%d" font-size="13" font-weight="700">NUMA node %d</text>`, nx+8, ny+18, n.ID)
		fmt.Fprintf(&body, `<text x="%d" y="%d" font-size="10">%s</text>`, nx+8, ny+34, esc(truncate(what, 60)))
		fmt.Fprintf(&body, `<text x="%d" y="%d" font-size="10">memory %s (%s free)</text></g>`, nx+8, ny+48, esc(output.HumanBytes(n.MemTotalBytes)), esc(output.HumanBytes(n.MemFreeBytes)))
		for i, g := range c.groups {
			drawGroup(g, nx+c.at[i].x, ny+c.at[i].y)
		}
	}
	// Sockets flow across the picture; inside each, its nodes flow.
	outer := newFlow(gap, gap, maxSVGWidth)
	for _, sock := range sockets {
		cols := bySocket[sock]
		inner := newFlow(gap, socketHeader, maxSVGWidth-2*gap)
		at := make([]pos, len(cols))
		for i, c := range cols {
			x, y := inner.place(c.w, c.h)
			at[i] = pos{x, y}
		}
		w, h := inner.w, inner.bottom()+gap
		x, y := outer.place(w, h)
		fmt.Fprintf(&body, `<g class="socket" data-socket="%d"><rect x="%d" y="%d" width="%d" height="%d" rx="8" fill="#eef1f4" stroke="#24292f" stroke-width="2"/>`, sock, x, y, w, h)
		fmt.Fprintf(&body, `<text x="%d" y="%d" font-size="14" font-weight="700">socket %d</text></g>`, x+10, y+18, sock)
		for i, c := range cols {
			drawNode(c, x+at[i].x, y+at[i].y)
		}
	}
	width := outer.w
	y := outer.bottom() + gap
	if len(memOnly) > 0 {
		f := newFlow(gap, y, maxSVGWidth)
		for _, c := range memOnly {
			nx, ny := f.place(c.w, c.h)
			drawNode(c, nx, ny)
		}
		width = max(width, f.w)
		y = f.bottom() + gap
	}
	if len(unknown) > 0 {
		fmt.Fprintf(&body, `<text x="%d" y="%d" font-size="12" font-weight="700" fill="#cf222e">NUMA node unknown</text>`, gap, y+14)
		f := newFlow(gap, y+20, maxSVGWidth)
		for _, g := range unknown {
			gx, gy := f.place(groupW, groupHeight(g))
			drawGroup(g, gx, gy)
		}
		width = max(width, f.w)
		y = f.bottom() + gap
	}
	// Legend.
	fmt.Fprintf(&body, `<g class="legend"><rect x="%d" y="%d" width="14" height="10" fill="#dafbe1" stroke="#1a7f37"/><text x="%d" y="%d" font-size="10">GPU</text>`, gap, y, gap+18, y+9)
	fmt.Fprintf(&body, `<rect x="%d" y="%d" width="14" height="10" fill="#ddf4ff" stroke="#0969da"/><text x="%d" y="%d" font-size="10">NIC</text>`, gap+60, y, gap+78, y+9)
	fmt.Fprintf(&body, `<rect x="%d" y="%d" width="14" height="10" fill="#fff" stroke="#cf222e" stroke-width="1.5"/><text x="%d" y="%d" font-size="10">GPU without a NIC on its node</text>`, gap+120, y, gap+138, y+9)
	fmt.Fprintf(&body, `<rect x="%d" y="%d" width="14" height="10" fill="#fff" stroke="#bc4c00" stroke-dasharray="4 2" stroke-width="1.5"/><text x="%d" y="%d" font-size="10">PCIe link below capability (width/max, ↓)</text></g>`, gap+310, y, gap+328, y+9)
	y += 20
	width = max(width, 600)
	s.f(`<svg xmlns="http://www.w3.org/2000/svg" id="topo-svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="topology">`, width, y, width, y)
	s.b.WriteString(body.String())
	s.b.WriteString(`</svg>`)
	return s.b.String()
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
