package report

import (
	"fmt"
	"sort"
	"time"

	"github.com/gpunode/gpunode/internal/bench"
	"github.com/gpunode/gpunode/internal/output"
)

// benchView is one saved result as the page shows it: its figures by
// kind, or Err when the result cannot be decoded.
type benchView struct {
	Kind, Name, SavedAt string
	Err                 string
	NUMA                *numaView
	H2D                 *bench.H2DResult
	Alloc               *bench.AllocResult
	Notes               []string
}

// numaView is a NUMA result as a matrix: a row per CPU node, a column per
// memory node, each cell one measured pair (nil where none was).
type numaView struct {
	Nodes  []int
	Rows   []numaRow
	Sizes  string
	Bounds string
}

type numaRow struct {
	CPUNode int
	Cells   []*bench.NUMAPair
}

func benchViews(saved []*bench.Saved) []benchView {
	out := make([]benchView, 0, len(saved))
	for _, s := range saved {
		if s == nil {
			continue
		}
		v := benchView{Kind: s.Kind, Name: s.Name, SavedAt: s.SavedAt}
		d, err := s.Decoded()
		if err != nil {
			// bench.LoadAll refuses such a file; a caller's own list may
			// not. The decoder's words are not the reader's.
			v.Err = fmt.Sprintf("the result does not have the layout of a %s result", s.Kind)
			out = append(out, v)
			continue
		}
		switch r := d.(type) {
		case *bench.NUMAResult:
			v.NUMA, v.Notes = numaMatrix(r), r.Notes
		case *bench.H2DResult:
			v.H2D, v.Notes = r, r.Notes
		case *bench.AllocResult:
			v.Alloc, v.Notes = r, r.Notes
		}
		out = append(out, v)
	}
	return out
}

// numaMatrix lays the pairs out by CPU node and memory node. The nodes
// are the result's own list, with any node a pair names but the list
// lacks added in numeric order.
func numaMatrix(r *bench.NUMAResult) *numaView {
	known := map[int]bool{}
	var nodes []int
	for _, n := range r.Nodes {
		if !known[n] {
			known[n] = true
			nodes = append(nodes, n)
		}
	}
	var extra []int
	for _, p := range r.Pairs {
		for _, n := range []int{p.CPUNode, p.MemNode} {
			if !known[n] {
				known[n] = true
				extra = append(extra, n)
			}
		}
	}
	sort.Ints(extra)
	nodes = append(nodes, extra...)
	col := map[int]int{}
	for i, n := range nodes {
		col[n] = i
	}
	v := &numaView{Nodes: nodes,
		Sizes:  fmt.Sprintf("arrays %s each, chase buffer %s", output.HumanBytes(r.ArrayBytes), output.HumanBytes(r.LatencyBytes)),
		Bounds: fmt.Sprintf("run bounded to %s", time.Duration(r.DurationSeconds*float64(time.Second)).Round(time.Millisecond))}
	rows := map[int]*numaRow{}
	for i := range r.Pairs {
		p := &r.Pairs[i]
		row := rows[p.CPUNode]
		if row == nil {
			row = &numaRow{CPUNode: p.CPUNode, Cells: make([]*bench.NUMAPair, len(nodes))}
			rows[p.CPUNode] = row
		}
		row.Cells[col[p.MemNode]] = p
	}
	for _, n := range nodes {
		if row := rows[n]; row != nil {
			v.Rows = append(v.Rows, *row)
		}
	}
	return v
}

// ratio prints a ratio to a reference ("0.48x"), "-" when there is none.
func ratio(x float64) string {
	if x == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", x)
}

// percent prints a share ("79%"), "-" when there is none.
func percent(x float64) string {
	if x == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*x)
}

// minMax is the range of xs ("1.000-1.200"), "-" when empty.
func minMax(xs []float64) string {
	if len(xs) == 0 {
		return "-"
	}
	lo, hi := bench.MinMax(xs)
	return fmt.Sprintf("%.3f-%.3f", lo, hi)
}

// rss is a run's median peak RSS; "<=" marks a figure at gpunode's own
// floor (see bench.AllocRun.RSSAtFloor).
func rss(r bench.AllocRun) string {
	s := output.HumanBytes(r.MedianMaxRSSBytes)
	if r.RSSAtFloor {
		s = "<=" + s
	}
	return s
}

// library is the preloaded allocator file, or glibc's own.
func library(r bench.AllocRun) string {
	if r.Library == "" {
		return "(libc malloc)"
	}
	return r.Library
}
