package container

import (
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/output"
)

// ListItems implements output.Lister: one row per check.
func (r Report) ListItems() any { return r.Checks }

// WriteTable implements output.Tabler: the shared check table
// (check.Table: sorted by severity, findings and fixes under it), then the
// summary line.
func (r Report) WriteTable(w io.Writer, o output.Options) error {
	if err := (check.Table{Checks: r.Checks}).Write(w, o); err != nil {
		return err
	}
	if o.NoHeaders {
		return nil
	}
	_, err := fmt.Fprintf(w, "\n%s\n", r.Summary)
	return err
}

// WriteTable implements output.Tabler: the placement, the shell line and
// (kubernetes) the pod fragment.
func (f Flags) WriteTable(w io.Writer, o output.Options) error {
	var gs []string
	for _, g := range f.GPUs {
		gs = append(gs, fmt.Sprintf("%d (%s, NUMA %d)", g.Index, g.BDF, g.NUMANode))
	}
	g := output.KeyValues()
	g.AddRow("RUNTIME", f.Runtime)
	if len(gs) > 0 {
		g.AddRow("GPUS", strings.Join(gs, ", "))
	}
	g.AddRow("CPUS", f.CPUs.String())
	g.AddRow("MEMS", f.Mems)
	if err := output.PrintKeyValues(w, g, o); err != nil {
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
