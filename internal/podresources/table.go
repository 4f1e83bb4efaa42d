package podresources

import (
	"fmt"
	"io"
	"strings"

	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/output"
)

// WriteTable prints one row per container, then the failing checks with
// their numbers and fixes, then the summary.
func (r *Report) WriteTable(w io.Writer, o output.Options) error {
	ew := &output.ErrWriter{W: w}
	if r.State != StateRead {
		for _, c := range r.Checks {
			ew.Printf("%s: %s %s\n", c.Key(), c.Status, c.Current)
			if c.Detail != "" {
				ew.Printf("  detail: %s\n", c.Detail)
			}
			for _, f := range c.Fix {
				ew.Printf("  fix: %s\n", f)
			}
		}
		return ew.Err
	}
	verdicts := map[string]check.Check{}
	for _, c := range r.Checks {
		verdicts[c.Subject] = c
	}
	tw := output.NewTabWriter(ew)
	fmt.Fprintln(tw, "NAMESPACE\tPOD\tCONTAINER\tGPUS\tGPU NUMA\tCPUS\tCPU NUMA\tMEM NUMA\tSTATUS")
	for _, p := range r.Pods {
		for _, c := range p.Containers {
			st := "-"
			if v, ok := verdicts[p.Namespace+"/"+p.Name+"/"+c.Name]; ok {
				st = paint(o, v.Status)
			}
			gpus := make([]string, 0, len(c.GPUs))
			for _, g := range c.GPUs {
				gpus = append(gpus, g.label())
			}
			cpus := dash(c.CPUs)
			if c.CPUs != "" && !c.CPUsExclusive {
				cpus += " (shared)"
			}
			mem := dash(joinInts(c.MemoryNUMANodes))
			if c.MemorySource == SourceUnknown && len(c.GPUs) > 0 {
				mem = "?"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Namespace, p.Name, c.Name, dash(strings.Join(gpus, ",")),
				dash(joinInts(c.GPUNUMANodes)), cpus, dash(joinInts(c.CPUNUMANodes)), mem, st)
		}
	}
	tw.Flush()
	first := true
	for _, c := range r.Checks {
		if !c.Status.Failing() {
			continue
		}
		if first {
			ew.Printf("\n")
			first = false
		}
		ew.Printf("%s: %s: %s\n", o.Paint("bold", c.Key()), c.Status, c.Current)
		if c.Expected != "" {
			ew.Printf("  expected: %s\n", c.Expected)
		}
		if c.Detail != "" {
			ew.Printf("  detail: %s\n", c.Detail)
		}
		for _, f := range c.Fix {
			ew.Printf("  fix: %s\n", f)
		}
	}
	for _, m := range r.Warnings {
		ew.Printf("warning: %s\n", m)
	}
	s := r.Summary
	ew.Printf("\n%d pods, %d containers checked: %d ok, %d drift, %d error\n", len(r.Pods), len(r.Checks), s.OK, s.Drift, s.Error)
	return ew.Err
}

func paint(o output.Options, s check.Status) string {
	switch s {
	case check.OK:
		return o.Paint("green", string(s))
	case check.Drift, check.Error:
		return o.Paint("red", string(s))
	}
	return string(s)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
