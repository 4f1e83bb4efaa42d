package bind

import (
	"fmt"
	"io"
	"strings"

	"github.com/gpunode/gpunode/internal/output"
)

// WriteTable renders the plan for --dry-run.
func (p *Plan) WriteTable(w io.Writer, o output.Options) error {
	g := output.KeyValues()
	row := func(k, v string) { g.AddRow(k, v) }
	row("plan", p.Line)
	tgt := p.Target.Kind
	switch p.Target.Kind {
	case "gpu":
		tgt = fmt.Sprintf("GPU %d %s", *p.Target.Index, p.Target.BDF)
		if p.Target.UUID != "" {
			tgt += " " + p.Target.UUID
		}
		if p.Target.Visible != "" {
			tgt += fmt.Sprintf(" (CUDA_VISIBLE_DEVICES entry %q)", p.Target.Visible)
		}
	case "nic":
		tgt = fmt.Sprintf("NIC %s %s", p.Target.Name, p.Target.BDF)
	case "node":
		tgt = "--node"
	}
	row("target", tgt)
	row("numa node", fmt.Sprintf("%d (from %s)", p.NUMANode, p.NUMASource))
	if p.Target.MemoryNode != nil {
		row("gpu memory node", fmt.Sprint(*p.Target.MemoryNode))
	}
	row("node CPUs", p.NodeCPUs.String())
	ex := []string{}
	for _, e := range []struct{ k, v string }{{"isolated", p.Excluded.Isolated.String()}, {"nohz_full", p.Excluded.NohzFull.String()}, {"housekeeping", p.Excluded.Housekeeping.String()}, {"--exclude-cpus", p.Excluded.User.String()}} {
		if e.v != "" {
			ex = append(ex, e.k+" "+e.v)
		}
	}
	if len(ex) > 0 {
		row("excluded", strings.Join(ex, ", "))
	}
	if p.Isolation != nil {
		row("isolation", p.Isolation.Mode+": "+p.Isolation.Reason)
	}
	if s := p.Share; s != nil {
		row("share", fmt.Sprintf("position %d of local ranks %v on this node: %d of %d usable cores", s.Position, s.Ranks, s.Cores, s.UsableCores))
	}
	row("cpus", fmt.Sprintf("%s (%d cores)", p.CPUs.String(), p.Cores))
	row("memory", fmt.Sprintf("%s %v", p.Mem.Mode, p.Mem.Nodes))
	if p.Sched != nil {
		row("sched", p.Sched.String())
	}
	if p.Cgroup != nil {
		row("cgroup", fmt.Sprintf("%s (cpuset.cpus=%s cpuset.mems=%s)", p.Cgroup.Path, p.Cgroup.CPUs.String(), p.Cgroup.Mems))
	}
	for _, e := range p.Env {
		v := e.Name + "=" + e.Value
		if e.Kept {
			v += " (already set, kept)"
		}
		row("env", v)
	}
	row("command", strings.Join(p.Command, " "))
	if err := output.PrintKeyValues(w, g, o); err != nil {
		return err
	}
	for _, wn := range p.Warnings {
		fmt.Fprintf(w, "%s %s\n", o.Paint("yellow", "warning:"), wn)
	}
	return nil
}
