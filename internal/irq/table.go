package irq

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/gpunode/gpunode/internal/output"
)

// WriteTable renders the report: one line per IRQ with where it was served,
// its affinity and the plan, then the irqbalance advice.
func (r *Report) WriteTable(w io.Writer, o output.Options) error {
	host := r.Hostname
	if host == "" {
		host = "(unknown host)"
	}
	offWord := "routed off-node"
	if r.SampleSeconds > 0 {
		offWord = fmt.Sprintf("routed or served off-node in the %gs sample", r.SampleSeconds)
	}
	if !o.NoHeaders {
		fmt.Fprintf(w, "%s: %d IRQs on %d devices (%s), %d %s, %d to change\n",
			o.Paint("bold", host), r.Summary.IRQs, r.Summary.Devices, strings.Join(r.Kinds, ","), r.Summary.OffNode, offWord, r.Summary.Changes)
		if r.Excluded.All.Size() > 0 {
			fmt.Fprintf(w, "CPUs kept free of IRQs: %s\n", r.Excluded.All.String())
		}
	}
	g := output.Grid{Columns: []output.Column{
		{Name: "DEVICE"},
		{Name: "BDF"},
		{Name: "NODE"},
		{Name: "IRQ"},
		{Name: "NAME", Wrap: true},
		{Name: "SERVED (CPU=count)", Wrap: true, Color: func(c string) string {
			if strings.Contains(c, "OFF-NODE") {
				return "red"
			}
			return ""
		}},
		{Name: "AFFINITY", Wrap: true},
		{Name: "PLANNED", Wrap: true, Color: func(c string) string {
			switch {
			case strings.HasPrefix(c, "keep:"):
				return "yellow"
			case !strings.HasSuffix(c, "(as is)") && c != "-":
				return "green"
			}
			return ""
		}},
	}}
	for _, d := range r.Devices {
		node := fmt.Sprint(d.NUMANode)
		if d.NUMANode < 0 {
			node = "?"
		}
		if len(d.IRQs) == 0 {
			g.AddRow(d.Name, d.BDF, node, "-", "(no IRQs found)", "", "", "")
		}
		for _, q := range d.IRQs {
			served := servedString(q.Served, 3)
			switch {
			case q.OffNodeRouted:
				served += " OFF-NODE(routed)"
			case q.OffNode:
				served += fmt.Sprintf(" OFF-NODE(%d in sample)", q.WindowOffNode)
			}
			planned := q.Planned.String()
			switch {
			case q.Reason != "":
				planned = "keep: " + q.Reason
			case q.Change:
			default:
				planned += " (as is)"
			}
			g.AddRow(d.Name, d.BDF, node, fmt.Sprint(q.IRQ), orDash(q.Name), served, orDash(q.Affinity.String()), planned)
		}
	}
	if err := output.Print(w, g, o); err != nil {
		return err
	}
	if o.NoHeaders {
		return nil
	}
	for _, wn := range r.Warnings {
		fmt.Fprintf(w, "%s %s\n", o.Paint("yellow", "warning:"), wn)
	}
	return writeIRQBalance(w, r.IRQBal, o)
}

func writeIRQBalance(w io.Writer, ib IRQBalance, o output.Options) error {
	if !ib.Running {
		_, err := fmt.Fprintln(w, "\nirqbalance is not running.")
		return err
	}
	fmt.Fprintf(w, "\n%s irqbalance is running (pid %s) and re-places IRQs every 10 s; keep it from undoing the plan:\n",
		o.Paint("yellow", "note:"), joinInts(ib.PIDs))
	cfg := ib.ConfigFile
	if cfg == "" {
		cfg = irqbalanceConfigs[0]
	}
	if ib.CurrentBanned != "" {
		fmt.Fprintf(w, "  %s bans CPUs %s today\n", cfg, ib.CurrentBanned)
	}
	fmt.Fprintf(w, "  in %s:\n", cfg)
	if ib.BannedCPUList != "" {
		fmt.Fprintf(w, "    IRQBALANCE_BANNED_CPULIST=%s\n", ib.BannedCPUList)
	}
	if ib.Args != "" {
		if line := "    IRQBALANCE_ARGS=\"" + ib.Args + "\""; o.Wide || len(line) <= output.DefaultWidth {
			fmt.Fprintf(w, "%s\n", line)
		} else {
			// One line of config: wrapped it would not work, so the
			// default table names it and -o wide prints it whole.
			fmt.Fprintf(w, "    IRQBALANCE_ARGS=\"--banirq=N ...\" (%d --banirq options, a %d-column line: -o wide prints it, -o json has it as irqbalance.args)\n",
				strings.Count(ib.Args, "--banirq"), len(line))
		}
		fmt.Fprintf(w, "  or, instead of --banirq, IRQBALANCE_ARGS=\"--policyscript=/etc/gpunode/irqbalance-policy.sh\" with this script:\n")
		for _, l := range strings.Split(strings.TrimRight(ib.PolicyScript, "\n"), "\n") {
			fmt.Fprintf(w, "    %s\n", l)
		}
	}
	_, err := fmt.Fprintln(w, "  then: systemctl restart irqbalance")
	return err
}

func servedString(s []CPUCount, top int) string {
	if len(s) == 0 {
		return "-"
	}
	c := append([]CPUCount(nil), s...)
	sort.SliceStable(c, func(i, j int) bool { return c[i].Count > c[j].Count })
	var parts []string
	for i, x := range c {
		if i == top {
			parts = append(parts, fmt.Sprintf("+%d CPUs", len(c)-top))
			break
		}
		parts = append(parts, fmt.Sprintf("%d=%d", x.CPU, x.Count))
	}
	return strings.Join(parts, " ")
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ",")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
