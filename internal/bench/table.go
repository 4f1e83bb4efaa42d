package bench

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gpunode/gpunode/internal/output"
)

func vs(x float64) string {
	if x == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", x)
}

func notes(e *output.ErrWriter, ns []string) {
	for _, n := range ns {
		e.Printf("note: %s\n", n)
	}
}

// WriteTable renders the pairs with the distance matrix. The best and
// minimum figures and the sample counts are -o wide columns.
func (r *NUMAResult) WriteTable(w io.Writer, o output.Options) error {
	g := output.NewGrid("CPU NODE", "MEM NODE", "DISTANCE", "THREADS", "COPY GB/s", "(BEST)", "1-THREAD COPY", "TRIAD GB/s", "(BEST)",
		"MEMCPY GB/s", "1-THREAD MEMCPY MiB/s (AS MBW)", "1-THREAD GO COPY MiB/s", "LATENCY ns", "(MIN)", "COPY vs LOCAL", "TRIAD vs LOCAL", "LATENCY vs LOCAL", "SAMPLES")
	for _, c := range []int{5, 8, 13, 17} {
		g.Columns[c].Wide = true
	}
	for _, p := range r.Pairs {
		one, oneMemcpy, oneGo := "-", "-", "-"
		if p.CopyOneThreadGBps > 0 {
			one = fmt.Sprintf("%.1f", p.CopyOneThreadGBps)
		}
		switch {
		case p.MemcpyOneThreadMbwMiBps > 0:
			oneMemcpy = fmt.Sprintf("%.0f", p.MemcpyOneThreadMbwMiBps)
		case p.Threads == 1 && p.MemcpyMbwMiBps > 0:
			oneMemcpy = fmt.Sprintf("%.0f", p.MemcpyMbwMiBps)
		}
		switch {
		case p.GoCopyOneThreadMbwMiBps > 0:
			oneGo = fmt.Sprintf("%.0f", p.GoCopyOneThreadMbwMiBps)
		case p.Threads == 1 && p.GoCopyMbwMiBps > 0:
			oneGo = fmt.Sprintf("%.0f", p.GoCopyMbwMiBps)
		}
		g.AddRow(fmt.Sprint(p.CPUNode), fmt.Sprint(p.MemNode), fmt.Sprint(p.Distance), fmt.Sprint(p.Threads),
			fmt.Sprintf("%.1f", p.CopyGBps), fmt.Sprintf("%.1f", p.CopyBestGBps), one, fmt.Sprintf("%.1f", p.TriadGBps), fmt.Sprintf("%.1f", p.TriadBestGBps),
			fmt.Sprintf("%.1f", p.MemcpyGBps), oneMemcpy, oneGo,
			fmt.Sprintf("%.1f", p.LatencyNs), fmt.Sprintf("%.1f", p.LatencyMinNs), vs(p.CopyVsLocal), vs(p.TriadVsLocal), vs(p.LatencyVsLocal),
			fmt.Sprintf("%d/%d/%d/%d/%d", len(p.CopySamplesGBps), len(p.TriadSamplesGBps), len(p.MemcpySamplesGBps), len(p.GoCopySamplesGBps), len(p.LatencySamplesNs)))
	}
	if err := output.Print(w, g, o); err != nil || o.NoHeaders {
		return err
	}
	e := &output.ErrWriter{W: w}
	e.Printf("\nnode distances (the kernel's):\n")
	d := output.NewGrid("NODE")
	for _, n := range r.Nodes {
		d.Columns = append(d.Columns, output.Column{Name: fmt.Sprint(n)})
	}
	for i, row := range r.Distances {
		cells := []string{""}
		if i < len(r.Nodes) {
			cells[0] = fmt.Sprint(r.Nodes[i])
		}
		for _, x := range row {
			cells = append(cells, fmt.Sprint(x))
		}
		d.AddRow(cells...)
	}
	if err := output.Print(e, d, o); err != nil {
		return err
	}
	best := "best and minimum in brackets, samples copy/triad/memcpy/Go copy/latency"
	if !o.Wide {
		best = "best, minimum and sample counts with -o wide"
	}
	e.Printf("\narrays %s each (copy and memcpy 16 B, triad 24 B per element counted; MiB/s as mbw counts: one array over the mean pass), chase buffer %s, run bounded to %s; medians of the samples, %s\n",
		output.HumanBytes(r.ArrayBytes), output.HumanBytes(r.LatencyBytes), time.Duration(r.DurationSeconds*float64(time.Second)).Round(time.Millisecond), best)
	switch r.MemcpyRoutine {
	case "":
		e.Printf("memcpy passes: routine not recorded (a result saved before it was)\n")
	case GoMemmoveRoutine:
		e.Printf("memcpy passes: %s, not the C library's memcpy that 'mbw -t1' runs (see the note)\n", r.MemcpyRoutine)
	default:
		e.Printf("memcpy passes: %s, the routine 'mbw -t1' runs; GO COPY: Go's copy (the runtime's memmove, what Go programs get), at most %d passes\n", r.MemcpyRoutine, goCopyPasses)
	}
	notes(e, r.Notes)
	return e.Err
}

// ListItems implements output.Lister: -o custom-columns makes one row per
// node pair.
func (r *NUMAResult) ListItems() any { return r.Pairs }

// WriteTable renders the copy cases and the ratios.
func (r *H2DResult) WriteTable(w io.Writer, o output.Options) error {
	e := &output.ErrWriter{W: w}
	link := "unknown"
	if r.LinkGBps > 0 {
		link = fmt.Sprintf("PCIe %s x%d, %.1f GB/s per direction", r.LinkGen, r.LinkWidth, r.LinkGBps)
	}
	if !o.NoHeaders {
		e.Printf("GPU %d (%s) on NUMA node %d, remote node %s; link %s; %s\n", r.GPU, r.BDF, r.GPUNode, nodeName(r.RemoteNode), link, r.Driver)
	}
	g := output.NewGrid("DIRECTION", "MEMORY", "PLACEMENT", "NODE", "CPUS", "GB/s", "vs LINK", "SAMPLES GB/s")
	g.Columns[7].Wrap = true
	for _, c := range r.Cases {
		s := make([]string, len(c.SamplesGBps))
		for i, x := range c.SamplesGBps {
			s[i] = fmt.Sprintf("%.1f", x)
		}
		g.AddRow(c.Direction, c.Memory, c.Placement, fmt.Sprint(c.Node), c.CPUs, fmt.Sprintf("%.2f", c.GBps), pct(c.VsLink), strings.Join(s, " "))
	}
	if err := output.Print(e, g, o); err != nil || o.NoHeaders {
		return err
	}
	if len(r.Ratios) > 0 {
		e.Printf("\n")
		rg := output.NewGrid("RATIO", "DIRECTION", "OF", "VALUE")
		for _, x := range r.Ratios {
			rg.AddRow(x.Name, x.Direction, x.Of, fmt.Sprintf("%.2fx", x.Ratio))
		}
		if err := output.Print(e, rg, o); err != nil {
			return err
		}
	}
	e.Printf("\n%s\n", r.Method)
	notes(e, r.Notes)
	return e.Err
}

// ListItems implements output.Lister: one row per copy case.
func (r *H2DResult) ListItems() any { return r.Cases }

func pct(x float64) string {
	if x == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*x)
}

// WriteTable renders the medians, spreads and ratios to glibc.
func (r *AllocResult) WriteTable(w io.Writer, o output.Options) error {
	e := &output.ErrWriter{W: w}
	what := strings.Join(r.Command, " ")
	if r.Workload != "" {
		what = "built-in workload " + r.Workload + " (" + what + ")"
	}
	if !o.NoHeaders {
		e.Printf("%s, %d runs per allocator (interleaved)\n", what, r.Repeats)
	}
	g := output.NewGrid("ALLOCATOR", "WALL s", "SPREAD", "MIN-MAX s", "USER s", "SYS s", "MAX RSS", "WALL vs GLIBC", "RSS vs GLIBC", "LIBRARY")
	g.Columns[9].Wrap = true
	for _, run := range r.Runs {
		lo, hi := MinMax(run.WallSeconds)
		lib := run.Library
		if lib == "" {
			lib = "(libc malloc)"
		}
		rss := output.HumanBytes(run.MedianMaxRSSBytes)
		if run.RSSAtFloor {
			rss = "<=" + rss
		}
		g.AddRow(run.Allocator, fmt.Sprintf("%.3f", run.MedianWallSeconds), fmt.Sprintf("%.1f%%", 100*run.WallSpread), fmt.Sprintf("%.3f-%.3f", lo, hi),
			fmt.Sprintf("%.3f", run.MedianUserSeconds), fmt.Sprintf("%.3f", run.MedianSysSeconds), rss, vs(run.WallVsGlibc), vs(run.RSSVsGlibc), lib)
	}
	if err := output.Print(e, g, o); err != nil || o.NoHeaders {
		return err
	}
	e.Printf("medians of every run; spread = 1.4826 x MAD / median of the wall times\n")
	notes(e, r.Notes)
	return e.Err
}

// ListItems implements output.Lister: one row per allocator.
func (r *AllocResult) ListItems() any { return r.Runs }

// WriteTable renders the change of every metric.
func (c *Comparison) WriteTable(w io.Writer, o output.Options) error {
	e := &output.ErrWriter{W: w}
	if !o.NoHeaders {
		e.Printf("%s: %s -> %s\n", c.Kind, c.A, c.B)
	}
	g := output.NewGrid("METRIC", "UNIT", "A", "B", "CHANGE", "NOISE", "VERDICT")
	g.Columns[6].Color = func(v string) string {
		switch v {
		case "better":
			return "green"
		case "worse":
			return "red"
		}
		return ""
	}
	for _, m := range c.Metrics {
		verdict := "within noise"
		switch {
		case !m.WithinNoise && m.Better:
			verdict = "better"
		case !m.WithinNoise:
			verdict = "worse"
		}
		g.AddRow(m.Name, m.Unit, fmt.Sprintf("%.3f", m.A), fmt.Sprintf("%.3f", m.B), fmt.Sprintf("%+.1f%%", m.ChangePct), fmt.Sprintf("±%.1f%%", m.NoisePct), verdict)
	}
	if err := output.Print(e, g, o); err != nil || o.NoHeaders {
		return err
	}
	if err := output.Para(e, "", c.NoiseRule, o); err != nil {
		return err
	}
	return e.Err
}

// ListItems implements output.Lister: one row per metric.
func (c *Comparison) ListItems() any { return c.Metrics }

// WriteTable renders the saved results.
func (l *List) WriteTable(w io.Writer, o output.Options) error {
	g := output.NewGrid("NAME", "KIND", "SAVED")
	for _, r := range l.Results {
		g.AddRow(r.Name, r.Kind, r.SavedAt)
	}
	if err := output.Print(w, g, o); err != nil {
		return err
	}
	if len(l.Results) == 0 && !o.NoHeaders {
		_, err := fmt.Fprintf(w, "no results in %s\n", l.Dir)
		return err
	}
	return nil
}

// ListItems implements output.Lister: one row per saved result.
func (l *List) ListItems() any { return l.Results }
