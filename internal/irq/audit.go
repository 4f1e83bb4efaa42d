package irq

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/topo"
)

// FindingOffNode is the id of the "IRQs served off-node" audit finding.
const FindingOffNode = "irq.off-node"

// Finding is one audit result about IRQ placement. It carries the fields
// every gpunode audit finding has, so that the audit can adopt it as is.
type Finding struct {
	ID       string `json:"id"`
	Severity string `json:"severity"` // "warning"
	Title    string `json:"title"`
	Detail   string `json:"detail"`
	// Evidence lists the offending IRQs ("IRQ 204 (nvidia, GPU4 on node 1):
	// 20204 of 20204 served off-node, routed to CPU 1").
	Evidence []string `json:"evidence"`
	// Fix is the command that repairs it.
	Fix string `json:"fix"`
}

// OffNodeFindings analyses the GPU and NIC IRQs of the host and returns one
// finding when any of them was served by, or is routed to, CPUs outside the
// device's NUMA node; none otherwise.
func OffNodeFindings(ctx context.Context, fsys *hostfs.FS, t *topo.Topology) ([]Finding, error) {
	rep, err := Analyze(ctx, fsys, t, Options{})
	if err != nil {
		return nil, err
	}
	return FindingsFromReport(rep), nil
}

// FindingsFromReport builds the off-node finding from an analysed report.
func FindingsFromReport(rep *Report) []Finding {
	var ev []string
	devs := map[string]bool{}
	for _, d := range rep.Devices {
		for _, q := range d.IRQs {
			if !q.OffNode {
				continue
			}
			devs[d.Name] = true
			route := ""
			if q.Effective != nil {
				route = ", routed to CPU " + q.Effective.String()
			}
			ev = append(ev, fmt.Sprintf("IRQ %d (%s, %s on node %d): %d of %d served off-node%s",
				q.IRQ, orDash(q.Name), d.Name, d.NUMANode, q.OffNodeCount, q.Total, route))
		}
	}
	if len(ev) == 0 {
		return []Finding{}
	}
	names := make([]string, 0, len(devs))
	for n := range devs {
		names = append(names, n)
	}
	sort.Strings(names)
	return []Finding{{
		ID:       FindingOffNode,
		Severity: "warning",
		Title:    fmt.Sprintf("%d GPU/NIC IRQs served off their device's NUMA node", len(ev)),
		Detail: "Interrupts handled by a CPU of another NUMA node cross the socket interconnect and " +
			"interrupt CPUs far from the device (seed 1.4.3). Devices: " + strings.Join(names, ", ") + ".",
		Evidence: ev,
		Fix:      "gpunode irq plan && gpunode irq apply",
	}}
}
