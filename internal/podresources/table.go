package podresources

import (
	"io"
	"slices"
	"strings"

	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/output"
)

// WriteTable prints one row per container, then the failing checks with
// their numbers and fixes, then the summary.
func (r *Report) WriteTable(w io.Writer, o output.Options) error {
	ew := &output.ErrWriter{W: w}
	if r.State != StateRead {
		if o.NoHeaders {
			return nil
		}
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
	g := output.NewGrid("NAMESPACE", "POD", "CONTAINER", "GPUS", "GPU NUMA", "CPUS", "CPU NUMA", "MEM NUMA", "STATUS")
	g.Columns[3].Wrap, g.Columns[5].Wrap = true, true
	g.Columns[8].Color = check.StatusColor
	type row struct {
		sev   int
		cells []string
	}
	var rows []row
	for _, p := range r.Pods {
		for _, c := range p.Containers {
			st, sev := "-", check.Info.Severity()
			if v, ok := verdicts[p.Namespace+"/"+p.Name+"/"+c.Name]; ok {
				st, sev = string(v.Status), v.Status.Severity()
			}
			gpus := make([]string, 0, len(c.GPUs))
			for _, g := range c.GPUs {
				gpus = append(gpus, g.label())
			}
			cpus := output.Dash(c.CPUs)
			if c.CPUs != "" && !c.CPUsExclusive {
				cpus += " (shared)"
			}
			mem := output.Dash(joinInts(c.MemoryNUMANodes))
			if c.MemorySource == SourceUnknown && len(c.GPUs) > 0 {
				mem = "?"
			}
			rows = append(rows, row{sev, []string{p.Namespace, p.Name, c.Name, output.Dash(strings.Join(gpus, ",")),
				output.Dash(joinInts(c.GPUNUMANodes)), cpus, output.Dash(joinInts(c.CPUNUMANodes)), mem, st}})
		}
	}
	// by severity (error, drift, ..., ok), then namespace, pod, container
	slices.SortStableFunc(rows, func(a, b row) int { return a.sev - b.sev })
	for _, x := range rows {
		g.AddRow(x.cells...)
	}
	if err := output.Print(ew, g, o); err != nil || o.NoHeaders {
		return err
	}
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

// ListItems implements output.Lister: one row per pod.
func (r *Report) ListItems() any { return r.Pods }
