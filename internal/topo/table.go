package topo

import (
	"fmt"
	"io"
	"strings"

	"github.com/gpunode/gpunode/internal/output"
)

// legend explains the link classes in the order nvidia-smi lists them.
func legend() [][2]string {
	return [][2]string{
		{LinkSelf, "Self"},
		{LinkSYS, "Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)"},
		{LinkNODE, "Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node"},
		{LinkPHB, "Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)"},
		{LinkPXB, "Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)"},
		{LinkPIX, "Connection traversing at most a single PCIe bridge"},
		{"NV#", "Connection traversing a bonded set of # NVLinks"},
	}
}

// WriteTable renders the topology as the union of `numactl -H`, `lscpu` and
// `nvidia-smi topo -m`.
func (t *Topology) WriteTable(w io.Writer, o output.Options) error {
	ew := &output.ErrWriter{W: w}
	smt := "off"
	if t.SMTActive {
		smt = "on"
	}
	host := t.Hostname
	if host == "" {
		host = "(unknown host)"
	}
	if !o.NoHeaders {
		ew.Printf("%s", o.Paint("bold", host))
		if t.Kernel != "" {
			ew.Printf("  kernel %s", t.Kernel)
		}
		ew.Printf("\n")
		if t.CPUModel != "" {
			ew.Printf("%s\n", t.CPUModel)
		}
		ew.Printf("%d socket(s), %d NUMA node(s), %d CPUs (%d cores, SMT %s), %d GPU(s), %d NIC(s), %d NVMe, %d NVSwitch(es)\n",
			len(t.Sockets), len(t.NUMANodes), t.OnlineCPUs.Size(), t.Cores(), smt, len(t.GPUs), len(t.NICs), len(t.NVMe), len(t.NVSwitches))
		if t.IsolatedCPUs.Size() > 0 || t.NohzFullCPUs.Size() > 0 {
			ew.Printf("isolated CPUs: %s  nohz_full CPUs: %s\n", orNone(t.IsolatedCPUs.String()), orNone(t.NohzFullCPUs.String()))
		}
	}

	numa := output.NewGrid("NODE", "CPUS", "MEMORY", "FREE", "HUGEPAGES", "GPUS", "NICS")
	for _, n := range t.NUMANodes {
		cpus := n.CPUs.String()
		if cpus == "" {
			cpus = "-"
			if n.GPU != nil {
				cpus = fmt.Sprintf("- (GPU%d memory)", *n.GPU)
			}
		}
		numa.AddRow(fmt.Sprint(n.ID), cpus, output.HumanBytes(n.MemTotalBytes), output.HumanBytes(n.MemFreeBytes),
			hugeSummary(n.HugePages), namesOnNode(t.GPUs, n.ID), namesOnNode(t.NICs, n.ID))
	}
	if o.NoHeaders {
		// rows of the main table only, for scripts
		return output.Print(w, numa, o)
	}
	ew.Printf("\n%s\n", o.Paint("bold", "NUMA nodes"))
	if err := output.Print(ew, numa, o); err != nil {
		return err
	}
	if len(t.NUMANodes) > 0 && len(t.NUMANodes[0].Distances) > 0 {
		ew.Printf("\nnode distances:\n")
		d := output.NewGrid("node")
		for _, n := range t.NUMANodes {
			d.Columns = append(d.Columns, output.Column{Name: fmt.Sprint(n.ID)})
		}
		for _, n := range t.NUMANodes {
			cells := []string{fmt.Sprintf("%d:", n.ID)}
			for _, v := range n.Distances {
				cells = append(cells, fmt.Sprint(v))
			}
			d.AddRow(cells...)
		}
		if err := output.Print(ew, d, o); err != nil {
			return err
		}
	}

	devs := matrixDevices(t)
	if len(devs) > 0 {
		ew.Printf("\n%s\n", o.Paint("bold", "GPU/NIC topology"))
		label := func(d *PCIDevice) string {
			if d.Kind == KindNIC {
				return fmt.Sprintf("NIC%d", d.Index)
			}
			return d.Name
		}
		class := make(map[[2]string]string, 2*len(t.Links))
		for _, l := range t.Links {
			class[[2]string{l.A, l.B}], class[[2]string{l.B, l.A}] = l.Class, l.Class
		}
		m := output.NewGrid("")
		for _, d := range devs {
			m.Columns = append(m.Columns, output.Column{Name: label(d)})
		}
		m.Columns = append(m.Columns, output.Column{Name: "CPU Affinity"}, output.Column{Name: "NUMA Affinity"})
		for _, a := range devs {
			cells := []string{label(a)}
			for _, b := range devs {
				c := class[[2]string{a.Name, b.Name}]
				if a.Name == b.Name {
					c = LinkSelf
				}
				cells = append(cells, c)
			}
			numa := "N/A"
			if a.NUMANode >= 0 {
				numa = fmt.Sprint(a.NUMANode)
			}
			m.AddRow(append(cells, orNA(a.LocalCPUs.String()), numa)...)
		}
		if err := output.Print(ew, m, o); err != nil {
			return err
		}
		ew.Printf("\nLegend:\n\n")
		for _, l := range legend() {
			ew.Printf("  %-4s = %s\n", l[0], l[1])
		}
		if len(t.NICs) > 0 {
			ew.Printf("\nNIC Legend:\n\n")
			for _, n := range t.NICs {
				ew.Printf("  NIC%d: %s\n", n.Index, n.Name)
			}
		}
	}

	all := append(append(append(append([]PCIDevice{}, t.GPUs...), t.NICs...), t.NVMe...), t.NVSwitches...)
	if len(all) > 0 {
		ew.Printf("\n%s\n", o.Paint("bold", "PCI devices"))
		g := output.NewGrid("NAME", "KIND", "BDF", "ID", "NUMA", "LOCAL CPUS", "LINK", "DRIVER", "IRQS")
		inferred := false
		for _, d := range all {
			numa := "?"
			if d.NUMANode >= 0 {
				numa = fmt.Sprint(d.NUMANode)
				if d.NUMASource != NUMAFromSysfs {
					numa += "*"
					inferred = true
				}
			}
			link := "-"
			if d.LinkWidth > 0 || d.LinkSpeed.Text != "" {
				link = fmt.Sprintf("x%d %s", d.LinkWidth, d.LinkSpeed.GenName())
				if d.LinkDowngraded {
					link += fmt.Sprintf(" (max x%d %s)", d.MaxLinkWidth, d.MaxLinkSpeed.GenName())
				}
			}
			g.AddRow(d.Name, string(d.Kind), d.BDF, strings.TrimPrefix(d.VendorID, "0x")+":"+strings.TrimPrefix(d.DeviceID, "0x"), numa,
				orNA(d.LocalCPUs.String()), link, orNone(d.Driver), fmt.Sprint(len(d.IRQs)))
		}
		if err := output.Print(ew, g, o); err != nil {
			return err
		}
		if inferred {
			ew.Printf("(* NUMA node inferred: numa_node was -1)\n")
		}
	}
	if len(t.Warnings) > 0 {
		ew.Printf("\n%s\n", o.Paint("yellow", fmt.Sprintf("Warnings (%d):", len(t.Warnings))))
		for _, x := range t.Warnings {
			wn := fmt.Sprint(x)
			for i, l := range output.Wrap(wn, output.DefaultWidth-4) {
				if o.Wide {
					l = wn
				}
				if i == 0 {
					ew.Printf("  - %s\n", l)
				} else {
					ew.Printf("    %s\n", l)
				}
				if o.Wide {
					break
				}
			}
		}
	}
	return ew.Err
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func orNA(s string) string {
	if s == "" {
		return "N/A"
	}
	return s
}

func namesOnNode(devs []PCIDevice, node int) string {
	var names []string
	for _, d := range devs {
		if d.NUMANode == node {
			names = append(names, d.Name)
		}
	}
	if len(names) == 0 {
		return "-"
	}
	return strings.Join(names, ",")
}

func hugeSummary(hp []HugePages) string {
	var parts []string
	for _, h := range hp {
		if h.Total > 0 {
			parts = append(parts, fmt.Sprintf("%dx%s (%d free)", h.Total, output.HumanBytes(h.SizeBytes), h.Free))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}
