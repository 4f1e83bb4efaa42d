// Package benchplot draws gpunode bench results (NUMA heat maps, bar
// charts) with gonum/plot. It is apart from package bench so that what
// reads saved results (the report, the agent's /report.html) does not link
// gonum and its fonts.
package benchplot

import (
	"github.com/gpunode/gpunode/internal/bench"

	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// PlotFormat returns the plot format ("svg" or "png") of a file name.
func PlotFormat(file string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(file)); ext {
	case ".svg", ".png":
		return ext[1:], nil
	default:
		return "", inputf("--plot %s: want a .svg or .png file", file)
	}
}

// Plot renders a result (heat maps for NUMA, bars for h2d and alloc) in
// format "svg" or "png".
func Plot(v any, format string) ([]byte, error) {
	var plots []*plot.Plot
	var err error
	switch r := v.(type) {
	case *bench.NUMAResult:
		plots, err = numaPlots(r)
	case *bench.H2DResult:
		plots, err = h2dPlots(r)
	case *bench.AllocResult:
		plots, err = allocPlots(r)
	default:
		return nil, fmt.Errorf("cannot plot a %T", v)
	}
	if err != nil {
		return nil, err
	}
	return renderRow(plots, format)
}

func renderRow(plots []*plot.Plot, format string) ([]byte, error) {
	w := vg.Length(len(plots)) * 11 * vg.Centimeter
	h := 10 * vg.Centimeter
	var canvas vg.CanvasWriterTo
	switch format {
	case "svg":
		canvas = vgsvg.New(w, h)
	case "png":
		canvas = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(110))}
	default:
		return nil, inputf("plot format %q", format)
	}
	dc := draw.New(canvas)
	tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadX: vg.Millimeter * 4, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	cs := plot.Align([][]*plot.Plot{plots}, tiles, dc)
	for i, p := range plots {
		p.Draw(cs[0][i])
	}
	var b bytes.Buffer
	if _, err := canvas.WriteTo(&b); err != nil {
		return nil, fmt.Errorf("render %s: %w", format, err)
	}
	return b.Bytes(), nil
}

// WritePlot renders v to w.
func WritePlot(w io.Writer, v any, format string) error {
	b, err := Plot(v, format)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// grid is a CPU-node x memory-node matrix for a heat map.
type grid struct {
	cols, rows []int // memory nodes, CPU nodes
	z          [][]float64
}

func (g grid) Dims() (int, int)   { return len(g.cols), len(g.rows) }
func (g grid) Z(c, r int) float64 { return g.z[r][c] }
func (g grid) X(c int) float64    { return float64(c) }
func (g grid) Y(r int) float64    { return float64(r) }
func (g grid) minMax() (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, row := range g.z {
		for _, v := range row {
			if !math.IsNaN(v) {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	if lo == hi {
		lo = 0
	}
	return lo, hi
}

func numaGrid(r *bench.NUMAResult, f func(bench.NUMAPair) float64) grid {
	var g grid
	idx := func(list *[]int, v int) int {
		for i, x := range *list {
			if x == v {
				return i
			}
		}
		*list = append(*list, v)
		return len(*list) - 1
	}
	for _, p := range r.Pairs {
		idx(&g.cols, p.MemNode)
		idx(&g.rows, p.CPUNode)
	}
	g.z = make([][]float64, len(g.rows))
	for i := range g.z {
		g.z[i] = make([]float64, len(g.cols))
		for j := range g.z[i] {
			g.z[i][j] = math.NaN()
		}
	}
	for _, p := range r.Pairs {
		g.z[idx(&g.rows, p.CPUNode)][idx(&g.cols, p.MemNode)] = f(p)
	}
	return g
}

func numaPlots(r *bench.NUMAResult) ([]*plot.Plot, error) {
	if len(r.Pairs) == 0 {
		return nil, fmt.Errorf("no NUMA pairs to plot")
	}
	var out []*plot.Plot
	for _, m := range []struct {
		title, unit string
		f           func(bench.NUMAPair) float64
		reverse     bool
	}{
		{"copy bandwidth", "GB/s", func(p bench.NUMAPair) float64 { return p.CopyGBps }, true},
		{"triad bandwidth", "GB/s", func(p bench.NUMAPair) float64 { return p.TriadGBps }, true},
		{"load-to-use latency", "ns", func(p bench.NUMAPair) float64 { return p.LatencyNs }, false},
	} {
		g := numaGrid(r, m.f)
		p := plot.New()
		p.Title.Text = m.title + " (" + m.unit + ")"
		p.X.Label.Text = "memory node"
		p.Y.Label.Text = "CPU node"
		pal := moreland.SmoothBlueRed()
		lo, hi := g.minMax()
		pal.SetMin(lo)
		pal.SetMax(hi)
		colors := pal.Palette(64)
		h := plotter.NewHeatMap(g, colors)
		h.Min, h.Max = lo, hi
		h.Rasterized = false
		if m.reverse {
			h = plotter.NewHeatMap(g, reversed{colors})
			h.Min, h.Max = lo, hi
		}
		p.Add(h)
		var labels plotter.XYLabels
		for ri := range g.rows {
			for ci := range g.cols {
				if v := g.z[ri][ci]; !math.IsNaN(v) {
					labels.XYs = append(labels.XYs, plotter.XY{X: float64(ci), Y: float64(ri)})
					labels.Labels = append(labels.Labels, fmt.Sprintf("%.1f", v))
				}
			}
		}
		l, err := plotter.NewLabels(labels)
		if err != nil {
			return nil, err
		}
		for i := range l.TextStyle {
			l.TextStyle[i].XAlign, l.TextStyle[i].YAlign = draw.XCenter, draw.YCenter
			l.TextStyle[i].Color = color.Black
		}
		p.Add(l)
		p.NominalX(nodeNames(g.cols)...)
		p.NominalY(nodeNames(g.rows)...)
		p.X.Min, p.X.Max = -0.5, float64(len(g.cols))-0.5
		p.Y.Min, p.Y.Max = -0.5, float64(len(g.rows))-0.5
		out = append(out, p)
	}
	return out, nil
}

// reversed flips a palette: red is always the bad end (low bandwidth, high
// latency).
type reversed struct {
	p interface{ Colors() []color.Color }
}

func (r reversed) Colors() []color.Color {
	c := r.p.Colors()
	out := make([]color.Color, len(c))
	for i := range c {
		out[i] = c[len(c)-1-i]
	}
	return out
}

func nodeNames(ids []int) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = fmt.Sprint(id)
	}
	return out
}

func barPlot(title, unit string, names []string, values []float64, ref float64, refName string) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = unit
	bars, err := plotter.NewBarChart(plotter.Values(values), vg.Points(30))
	if err != nil {
		return nil, err
	}
	bars.Color = color.RGBA{R: 59, G: 76, B: 192, A: 255}
	bars.LineStyle.Width = 0
	p.Add(bars)
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = math.Pi / 5
	p.X.Tick.Label.XAlign = draw.XRight
	p.Y.Min = 0
	top := ref
	var labels plotter.XYLabels
	for i, v := range values {
		top = max(top, v)
		labels.XYs = append(labels.XYs, plotter.XY{X: float64(i), Y: v})
		labels.Labels = append(labels.Labels, fmt.Sprintf("%.3g", v))
	}
	p.Y.Max = top * 1.15
	if l, err := plotter.NewLabels(labels); err == nil {
		for i := range l.TextStyle {
			l.TextStyle[i].XAlign = draw.XCenter
		}
		l.Offset = vg.Point{Y: vg.Points(3)}
		p.Add(l)
	}
	if ref > 0 {
		line, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: ref}, {X: float64(len(values)) - 0.5, Y: ref}})
		if err != nil {
			return nil, err
		}
		line.Color = color.RGBA{R: 180, G: 4, B: 38, A: 255}
		line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(line)
		p.Legend.Add(refName, line)
		p.Legend.Top = true
	}
	return p, nil
}

func h2dPlots(r *bench.H2DResult) ([]*plot.Plot, error) {
	if len(r.Cases) == 0 {
		return nil, fmt.Errorf("no copy cases to plot")
	}
	var out []*plot.Plot
	for _, dir := range []string{bench.HostToDevice, bench.DeviceToHost} {
		var names []string
		var vals []float64
		for _, c := range r.Cases {
			if c.Direction == dir {
				names = append(names, c.Memory+" "+c.Placement+fmt.Sprintf(" (n%d)", c.Node))
				vals = append(vals, c.GBps)
			}
		}
		if len(vals) == 0 {
			continue
		}
		p, err := barPlot(fmt.Sprintf("GPU %d %s", r.GPU, dir), "GB/s", names, vals, r.LinkGBps, fmt.Sprintf("PCIe %s x%d", r.LinkGen, r.LinkWidth))
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func allocPlots(r *bench.AllocResult) ([]*plot.Plot, error) {
	if len(r.Runs) == 0 {
		return nil, fmt.Errorf("no allocator runs to plot")
	}
	var names []string
	var wall, rss []float64
	for _, run := range r.Runs {
		names = append(names, run.Allocator)
		wall = append(wall, run.MedianWallSeconds)
		rss = append(rss, float64(run.MedianMaxRSSBytes)/(1<<20))
	}
	pw, err := barPlot("median wall time", "s", names, wall, 0, "")
	if err != nil {
		return nil, err
	}
	pr, err := barPlot("median peak RSS", "MiB", names, rss, 0, "")
	if err != nil {
		return nil, err
	}
	return []*plot.Plot{pw, pr}, nil
}

// inputErr is an error of the request: errors.Is(err, bench.ErrInput),
// with the message alone (as package bench's own).
type inputErr struct{ err error }

func (e inputErr) Error() string   { return e.err.Error() }
func (e inputErr) Unwrap() []error { return []error{bench.ErrInput, e.err} }

func inputf(format string, args ...any) error { return inputErr{fmt.Errorf(format, args...)} }
