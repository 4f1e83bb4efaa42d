package irq

import (
	"context"
	"fmt"
	"strings"

	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/topo"
)

// CheckOffNode is the id of the IRQ locality check: one check per device
// (subject: its PCI bdf).
const CheckOffNode = "irq.off-node"

// Layer is the layer of the IRQ checks.
const Layer = "irq"

const (
	offNodeReason = "an interrupt handled on a remote node adds cross-socket traffic to every completion and " +
		"interrupts CPUs far from the device; system_tuning.sh pinned all NVIDIA IRQs to CPU 1 whatever the topology."
	offNodeSection = "1.4.3"
	// FixOffNode is the command that re-places the IRQs.
	FixOffNode = "gpunode irq apply"
)

// Source is the IRQ layer's check.Source: one irq.off-node check per GPU
// and NIC, drift when one of its IRQs is routed now (effective affinity,
// else smp_affinity) to CPUs off the device's NUMA node or, with Options.
// Sample, was served off-node during the sample window. Interrupt counts
// since boot never decide: they keep an IRQ fixed since then "off-node"
// until the next reboot.
type Source struct {
	FS *hostfs.FS
	// Topo is the host's topology; nil (discovery failed) makes the
	// source fail, which the audit reports as an error check.
	Topo *topo.Topology
	// Options select the devices and the sample window.
	Options Options
	// Keep, when set, is given the report the checks were made from, so
	// that a caller that also shows the analysis (the agent's IRQ
	// series) does not analyse twice per audit.
	Keep func(*Report)
}

var (
	_ check.Source    = Source{}
	_ check.Describer = Source{}
	_ check.Named     = Source{}
)

// Name implements check.Named.
func (Source) Name() string { return Layer }

// Describe implements check.Describer.
func (Source) Describe() []check.Description {
	return []check.Description{{ID: CheckOffNode, Layer: Layer, Subject: "device (PCI bdf)", Section: offNodeSection,
		Title: "GPU/NIC IRQs routed to (and, with --sample, served on) the device's NUMA node"}}
}

// Checks implements check.Source.
func (s Source) Checks(ctx context.Context) ([]check.Check, error) {
	if s.Topo == nil {
		return nil, fmt.Errorf("no topology")
	}
	rep, err := Analyze(ctx, s.FS, s.Topo, s.Options)
	if err != nil {
		return nil, err
	}
	if s.Keep != nil {
		s.Keep(rep)
	}
	return ChecksFromReport(rep), nil
}

// ChecksFromReport turns an analysed report into irq.off-node checks, one
// per device with IRQs whose NUMA node is known.
func ChecksFromReport(rep *Report) []check.Check {
	var out []check.Check
	for _, d := range rep.Devices {
		if len(d.IRQs) == 0 || d.NodeCPUs.Size() == 0 {
			continue
		}
		c := check.Check{ID: CheckOffNode, Layer: Layer, Subject: d.BDF, Reason: offNodeReason, Section: offNodeSection,
			Expected: fmt.Sprintf("node %d (CPUs %s)", d.NUMANode, d.NodeCPUs.String())}
		var ev []string
		for _, q := range d.IRQs {
			if !q.OffNode {
				continue
			}
			route := q.Affinity.String()
			if q.Effective != nil && q.Effective.Size() > 0 {
				route = q.Effective.String()
			}
			e := fmt.Sprintf("IRQ %d (%s) routed to CPU %s", q.IRQ, orDash(q.Name), route)
			if rep.SampleSeconds > 0 {
				e += fmt.Sprintf(", %d of %d served off-node in the %gs sample", q.WindowOffNode, q.WindowTotal, rep.SampleSeconds)
			}
			ev = append(ev, e)
		}
		if len(ev) == 0 {
			c.Status = check.OK
			c.Current = fmt.Sprintf("%s: %d IRQs on node %d", d.Name, len(d.IRQs), d.NUMANode)
		} else {
			c.Status = check.Drift
			c.Current = fmt.Sprintf("%s: %d of %d IRQs off node %d", d.Name, len(ev), len(d.IRQs), d.NUMANode)
			if len(ev) > 4 {
				ev = append(ev[:4:4], fmt.Sprintf("... %d more ('gpunode irq' lists them)", len(ev)-4))
			}
			c.Detail = strings.Join(ev, "; ")
			c.Fix = []string{FixOffNode}
		}
		out = append(out, c)
	}
	return out
}
