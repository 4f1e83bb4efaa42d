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

// WriteTable renders the pairs with the distance matrix.
func (r *NUMAResult) WriteTable(w io.Writer, o output.Options) error {
	e := &output.ErrWriter{W: w}
	tw := output.NewTabWriter(e)
	fmt.Fprintf(tw, "CPU NODE\tMEM NODE\tDISTANCE\tTHREADS\tCOPY GB/s\t(BEST)\t1-THREAD COPY\tTRIAD GB/s\t(BEST)\tMEMCPY GB/s\t1-THREAD MEMCPY MiB/s (AS MBW)\tLATENCY ns\t(MIN)\tCOPY vs LOCAL\tTRIAD vs LOCAL\tLATENCY vs LOCAL\tSAMPLES\n")
	for _, p := range r.Pairs {
		one, oneMemcpy := "-", "-"
		if p.CopyOneThreadGBps > 0 {
			one = fmt.Sprintf("%.1f", p.CopyOneThreadGBps)
		}
		switch {
		case p.MemcpyOneThreadMbwMiBps > 0:
			oneMemcpy = fmt.Sprintf("%.0f", p.MemcpyOneThreadMbwMiBps)
		case p.Threads == 1 && p.MemcpyMbwMiBps > 0:
			oneMemcpy = fmt.Sprintf("%.0f", p.MemcpyMbwMiBps)
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%.1f\t%.1f\t%s\t%.1f\t%.1f\t%.1f\t%s\t%.1f\t%.1f\t%s\t%s\t%s\t%d/%d/%d/%d\n", p.CPUNode, p.MemNode, p.Distance, p.Threads,
			p.CopyGBps, p.CopyBestGBps, one, p.TriadGBps, p.TriadBestGBps, p.MemcpyGBps, oneMemcpy, p.LatencyNs, p.LatencyMinNs, vs(p.CopyVsLocal), vs(p.TriadVsLocal), vs(p.LatencyVsLocal),
			len(p.CopySamplesGBps), len(p.TriadSamplesGBps), len(p.MemcpySamplesGBps), len(p.LatencySamplesNs))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	e.Printf("\nnode distances (the kernel's):\n")
	tw = output.NewTabWriter(e)
	fmt.Fprintf(tw, "NODE")
	for _, n := range r.Nodes {
		fmt.Fprintf(tw, "\t%d", n)
	}
	fmt.Fprintln(tw)
	for i, row := range r.Distances {
		if i < len(r.Nodes) {
			fmt.Fprintf(tw, "%d", r.Nodes[i])
		}
		for _, d := range row {
			fmt.Fprintf(tw, "\t%d", d)
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	e.Printf("\narrays %s each (copy and memcpy 16 B, triad 24 B per element counted; MiB/s as mbw counts: one array over the mean pass), chase buffer %s, run bounded to %s; medians of the samples, best in brackets; samples copy/triad/memcpy/latency\n",
		output.HumanBytes(r.ArrayBytes), output.HumanBytes(r.LatencyBytes), time.Duration(r.DurationSeconds*float64(time.Second)).Round(time.Millisecond))
	notes(e, r.Notes)
	return e.Err
}

// WriteTable renders the copy cases and the ratios.
func (r *H2DResult) WriteTable(w io.Writer, o output.Options) error {
	e := &output.ErrWriter{W: w}
	link := "unknown"
	if r.LinkGBps > 0 {
		link = fmt.Sprintf("PCIe %s x%d, %.1f GB/s per direction", r.LinkGen, r.LinkWidth, r.LinkGBps)
	}
	e.Printf("GPU %d (%s) on NUMA node %d, remote node %s; link %s; %s\n", r.GPU, r.BDF, r.GPUNode, nodeName(r.RemoteNode), link, r.Driver)
	tw := output.NewTabWriter(e)
	fmt.Fprintf(tw, "DIRECTION\tMEMORY\tPLACEMENT\tNODE\tCPUS\tGB/s\tvs LINK\tSAMPLES GB/s\n")
	for _, c := range r.Cases {
		s := make([]string, len(c.SamplesGBps))
		for i, x := range c.SamplesGBps {
			s[i] = fmt.Sprintf("%.1f", x)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%.2f\t%s\t%s\n", c.Direction, c.Memory, c.Placement, c.Node, c.CPUs, c.GBps, pct(c.VsLink), strings.Join(s, " "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Ratios) > 0 {
		e.Printf("\n")
		tw = output.NewTabWriter(e)
		fmt.Fprintf(tw, "RATIO\tDIRECTION\tOF\tVALUE\n")
		for _, x := range r.Ratios {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%.2fx\n", x.Name, x.Direction, x.Of, x.Ratio)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	e.Printf("\n%s\n", r.Method)
	notes(e, r.Notes)
	return e.Err
}

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
	e.Printf("%s, %d runs per allocator (interleaved)\n", what, r.Repeats)
	tw := output.NewTabWriter(e)
	fmt.Fprintf(tw, "ALLOCATOR\tWALL s\tSPREAD\tMIN-MAX s\tUSER s\tSYS s\tMAX RSS\tWALL vs GLIBC\tRSS vs GLIBC\tLIBRARY\n")
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
		fmt.Fprintf(tw, "%s\t%.3f\t%.1f%%\t%.3f-%.3f\t%.3f\t%.3f\t%s\t%s\t%s\t%s\n", run.Allocator, run.MedianWallSeconds, 100*run.WallSpread, lo, hi,
			run.MedianUserSeconds, run.MedianSysSeconds, rss, vs(run.WallVsGlibc), vs(run.RSSVsGlibc), lib)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	e.Printf("medians of every run; spread = 1.4826 x MAD / median of the wall times\n")
	notes(e, r.Notes)
	return e.Err
}

// WriteTable renders the change of every metric.
func (c *Comparison) WriteTable(w io.Writer, o output.Options) error {
	e := &output.ErrWriter{W: w}
	e.Printf("%s: %s -> %s\n", c.Kind, c.A, c.B)
	tw := output.NewTabWriter(e)
	fmt.Fprintf(tw, "METRIC\tUNIT\tA\tB\tCHANGE\tNOISE\tVERDICT\n")
	for _, m := range c.Metrics {
		verdict := "within noise"
		switch {
		case !m.WithinNoise && m.Better:
			verdict = o.Paint("green", "better")
		case !m.WithinNoise:
			verdict = o.Paint("red", "worse")
		}
		fmt.Fprintf(tw, "%s\t%s\t%.3f\t%.3f\t%+.1f%%\t±%.1f%%\t%s\n", m.Name, m.Unit, m.A, m.B, m.ChangePct, m.NoisePct, verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	e.Printf("%s\n", c.NoiseRule)
	return e.Err
}

// WriteTable renders the saved results.
func (l *List) WriteTable(w io.Writer, o output.Options) error {
	e := &output.ErrWriter{W: w}
	tw := output.NewTabWriter(e)
	fmt.Fprintf(tw, "NAME\tKIND\tSAVED\n")
	for _, r := range l.Results {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Name, r.Kind, r.SavedAt)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(l.Results) == 0 {
		e.Printf("no results in %s\n", l.Dir)
	}
	return e.Err
}
