package dra

import (
	"fmt"
	"io"

	"github.com/gpunode/gpunode/internal/output"
)

// SchemaAllocate is the schema of `gpunode k8s dra allocate -o json`.
const SchemaAllocate = "gpunode.k8s.dra.allocate/v1"

// Report is the result of `k8s dra allocate`.
type Report struct {
	SchemaVersion string       `json:"schemaVersion"`
	Nodes         []NodeReport `json:"nodes"`
	// Fits: some node fits (exit 0), else exit 1, or 3 when some node is
	// undecided.
	Fits bool `json:"-"`
	// Undecided: some node was not decided within the timeout.
	Undecided bool `json:"-"`
}

// NodeReport is one node's answer.
type NodeReport struct {
	Node        string            `json:"node"`
	Fits        bool              `json:"fits"`
	Allocations []ClaimAllocation `json:"allocations"`
	Explain     *Explain          `json:"explain"`
	// Undecided: not decided within the timeout (fits is then false, as
	// the scheduler treats it; explain.reason names what was left).
	Undecided bool `json:"undecided,omitempty"`
}

// ClaimAllocation is one claim's devices.
type ClaimAllocation struct {
	Claim   string         `json:"claim"`
	Results []DeviceResult `json:"results"`
}

// DeviceResult is one allocated device, as in status.allocation.devices.results.
type DeviceResult struct {
	Request string `json:"request"`
	Driver  string `json:"driver"`
	Pool    string `json:"pool"`
	Device  string `json:"device"`
}

// Explain says who decided and, for a node that does not fit, why.
type Explain struct {
	// Solver is who decided: "upstream" (k8s.io/dynamic-resource-allocation's
	// allocator) or "gpunode" (the exact search).
	Solver         string   `json:"solver,omitempty"`
	Reason         string   `json:"reason,omitempty"`
	Failing        *Failing `json:"failing,omitempty"`
	NearestFits    []string `json:"nearestFits,omitempty"`
	Upstream       string   `json:"upstream,omitempty"`
	UpstreamMillis float64  `json:"upstreamMillis,omitempty"`
	GpunodeMillis  float64  `json:"gpunodeMillis,omitempty"`
	Note           string   `json:"note,omitempty"`
}

// Failing is the first request that cannot be satisfied, in numbers.
type Failing struct {
	Claim    string `json:"claim"`
	Request  string `json:"request"`
	Class    string `json:"class"`
	Needed   int    `json:"needed"`
	Matching int    `json:"matching"`
	Tainted  int    `json:"tainted,omitempty"`
	Free     int    `json:"free"`
	// Constraint is the limiting constraint or counter bound, in words.
	Constraint string `json:"constraint,omitempty"`
}

// ListItems implements output.Lister: one row per node.
func (r *Report) ListItems() any { return r.Nodes }

// WriteTable renders the report for people.
func (r *Report) WriteTable(w io.Writer, o output.Options) error {
	g := output.NewGrid("NODE", "FITS", "CLAIM", "REQUEST", "DEVICE")
	for _, n := range r.Nodes {
		fits := "no"
		if n.Fits {
			fits = "yes"
		}
		if len(n.Allocations) == 0 {
			g.AddRow(n.Node, fits, "-", "-", "-")
		}
		for _, a := range n.Allocations {
			for _, d := range a.Results {
				g.AddRow(n.Node, fits, a.Claim, d.Request, d.Driver+"/"+d.Pool+"/"+d.Device)
			}
		}
	}
	if err := output.Print(w, g, o); err != nil || o.NoHeaders {
		return err
	}
	for _, n := range r.Nodes {
		if n.Explain == nil {
			continue
		}
		e := n.Explain
		var lines []string
		if e.Reason != "" {
			lines = append(lines, "why: "+e.Reason)
		}
		for _, f := range e.NearestFits {
			lines = append(lines, "nearest fit: "+f)
		}
		if e.Upstream != "" {
			lines = append(lines, e.Upstream)
		}
		if e.Note != "" {
			lines = append(lines, e.Note)
		}
		if len(lines) == 0 {
			continue
		}
		if _, err := fmt.Fprintf(w, "\n%s (decided by %s):\n", n.Node, e.Solver); err != nil {
			return err
		}
		for _, l := range lines {
			if err := output.Para(w, "  ", l, o); err != nil {
				return err
			}
		}
	}
	return nil
}
