package container

import (
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gpunode/gpunode/internal/output"
)

// WriteTable implements output.Tabler.
func (r Report) WriteTable(w io.Writer, _ output.Options) error {
	tw := output.NewTabWriter(w)
	fmt.Fprintln(tw, "CHECK\tSTATUS\tCURRENT\tEXPECTED")
	for _, c := range r.Checks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Key(), c.Status, orDash(c.CurrentText()), orDash(c.ExpectedText()))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range r.Checks {
		if c.Detail == "" && len(c.Fix) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s (%s, seed %s)\n", c.Key(), c.Status, orDash(c.Section))
		if c.Detail != "" {
			fmt.Fprintf(w, "  %s\n", c.Detail)
		}
		for _, f := range c.Fix {
			fmt.Fprintf(w, "  fix: %s\n", f)
		}
	}
	s := r.Summary
	_, err := fmt.Fprintf(w, "\n%d ok, %d drift, %d error, %d absent, %d info\n", s.OK, s.Drift, s.Error, s.Absent, s.Info)
	return err
}

// WriteTable implements output.Tabler: the placement, the shell line and
// (kubernetes) the pod fragment.
func (f Flags) WriteTable(w io.Writer, _ output.Options) error {
	var gs []string
	for _, g := range f.GPUs {
		gs = append(gs, fmt.Sprintf("%d (%s, NUMA %d)", g.Index, g.BDF, g.NUMANode))
	}
	tw := output.NewTabWriter(w)
	fmt.Fprintf(tw, "RUNTIME\t%s\n", f.Runtime)
	if len(gs) > 0 {
		fmt.Fprintf(tw, "GPUS\t%s\n", strings.Join(gs, ", "))
	}
	fmt.Fprintf(tw, "CPUS\t%s\n", f.CPUs.String())
	fmt.Fprintf(tw, "MEMS\t%s\n", f.Mems)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%s\n", f.Line)
	if f.Pod != nil {
		b, err := yaml.Marshal(f.Pod)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "\n%s", b)
	}
	for _, x := range f.Warnings {
		fmt.Fprintf(w, "warning: %s\n", x)
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
