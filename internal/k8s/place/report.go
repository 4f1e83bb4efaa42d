package place

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/gpunode/gpunode/internal/output"
)

// Report is the result of `gpunode k8s place` (schema gpunode.k8s.place/v1).
type Report struct {
	SchemaVersion string `json:"schemaVersion"`
	// Verdict is VerdictFits, VerdictDoesNotFit or VerdictUndecided: the
	// last when no domain was found to fit and the exact search gave up on
	// some (they may fit). Fits is Verdict == VerdictFits.
	Verdict    string      `json:"verdict"`
	Fits       bool        `json:"fits"`
	Domain     DomainRef   `json:"domain"`
	Placements []Placement `json:"placements"`
	Explain    Explain     `json:"explain"`
}

// DomainRef names a domain: level is the label key (Volcano: tier-<n>,
// the whole cluster: "cluster"), name the label value or HyperNode name.
// When the gang does not fit it is the best domain at the required level.
type DomainRef struct {
	Level string `json:"level"`
	Name  string `json:"name"`
}

// Placement is one pod on one node.
type Placement struct {
	Pod  string `json:"pod"`
	Task string `json:"task"`
	Node string `json:"node"`
}

// Explain says how the answer was found and, when there is none, why.
type Explain struct {
	Workload      string         `json:"workload"`
	Style         string         `json:"style"`
	Pods          int            `json:"pods"`
	Tasks         []TaskInfo     `json:"tasks"`
	Levels        []string       `json:"levels"`
	Required      string         `json:"required"`
	Preferred     string         `json:"preferred,omitempty"`
	PreferredMet  *bool          `json:"preferredMet,omitempty"`
	Mode          string         `json:"mode,omitempty"`
	Nodes         int            `json:"nodes"`
	UsableNodes   int            `json:"usableNodes"`
	Search        []LevelSearch  `json:"search"`
	FreeResource  string         `json:"freeResource,omitempty"` // what tree rows' free counts
	Tree          []TreeRow      `json:"tree"`
	Excluded      map[string]int `json:"excluded"`
	ExcludedNodes []ExcludedNode `json:"excludedNodes,omitempty"`
	Shortfall     *Shortfall     `json:"shortfall,omitempty"`
	Nearest       *Nearest       `json:"nearest,omitempty"`
	Notes         []string       `json:"notes,omitempty"`
}

// TaskInfo is one task of the gang.
type TaskInfo struct {
	Name     string            `json:"name"`
	Pods     int               `json:"pods"`
	Requests map[string]string `json:"requests"`
}

// TreeRow is one domain of the tree around the answer.
type TreeRow struct {
	Depth    int    `json:"depth"`
	Level    string `json:"level"`
	Name     string `json:"name"`
	Nodes    int    `json:"nodes"`
	Capacity int    `json:"capacity"` // gang pods its usable nodes can take (sum over tasks)
	Free     string `json:"free"`     // free primary resource on usable nodes
	Mark     string `json:"mark,omitempty"`
}

// ExcludedNode is a node that can take no pod of the gang, and why.
type ExcludedNode struct {
	Node   string `json:"node"`
	Reason string `json:"reason"`
	Detail string `json:"detail,omitempty"`
}

// Shortfall is how far the best domain at the required level is from
// holding the gang.
type Shortfall struct {
	Domain   DomainRef `json:"domain"`
	Capacity int       `json:"capacity"`
	Pods     int       `json:"pods"`
	Resource string    `json:"resource,omitempty"`
	Amount   string    `json:"amount,omitempty"`
}

// Nearest lists the nearest fits.
type Nearest struct {
	FewerPods   *Sized     `json:"fewerPods,omitempty"`
	HigherLevel *DomainRef `json:"higherLevel,omitempty"`
	Move        *Move      `json:"move,omitempty"`
}

// Sized is a smaller gang that fits in a domain at the required level.
type Sized struct {
	Pods   int       `json:"pods"`
	Domain DomainRef `json:"domain"`
}

// Move is a set of bound pods whose removal would make the gang fit.
type Move struct {
	Domain DomainRef `json:"domain"`
	Pods   []string  `json:"pods"` // namespace/name on node
}

// The verdicts of a placement.
const (
	VerdictFits       = "fits"
	VerdictDoesNotFit = "does-not-fit"
	VerdictUndecided  = "undecided"
)

// Undecided says whether the search gave up before it could say the gang
// does not fit.
func (r *Report) Undecided() bool { return r.Verdict == VerdictUndecided }

// MaxListed bounds the rows of lists in the report.
const MaxListed = 20

// Place runs the search and builds the report.
func Place(ctx context.Context, c *Cluster, topo *Topology, g *Gang) (*Report, error) {
	return newEngine(c, topo, g).report(ctx)
}

func (e *engine) report(ctx context.Context) (*Report, error) {
	c, topo, g := e.c, e.topo, e.g
	r, err := e.place(ctx)
	if err != nil {
		return nil, err
	}
	rep := &Report{SchemaVersion: SchemaVersion, Verdict: VerdictDoesNotFit, Fits: r.Fits, Placements: []Placement{}}
	switch {
	case r.Fits:
		rep.Verdict = VerdictFits
	case r.Undecided > 0:
		rep.Verdict = VerdictUndecided
	}
	x := &rep.Explain
	x.Workload, x.Style, x.Pods, x.Mode = g.Workload, g.Style, g.Pods(), g.Mode
	x.Levels = append([]string{}, topo.Levels...)
	x.Required = ClusterLevel
	if g.Required >= 0 {
		x.Required = g.RequiredKey
	}
	x.Preferred = g.PreferredKey
	x.Nodes = len(c.Nodes)
	x.Search = r.Searched
	x.Notes = append(x.Notes, g.Notes...)
	for _, t := range g.Tasks {
		ti := TaskInfo{Name: t.Name, Pods: t.Count, Requests: map[string]string{}}
		for name, q := range t.Requests {
			if !q.IsZero() {
				ti.Requests[string(name)] = q.String()
			}
		}
		x.Tasks = append(x.Tasks, ti)
	}
	x.Excluded = map[string]int{}
	for ni := range c.Nodes {
		if e.reason[ni] == "" {
			x.UsableNodes++
		} else {
			x.Excluded[e.reason[ni]]++
		}
	}
	if c.Ignored > 0 {
		x.Notes = append(x.Notes, fmt.Sprintf("%d bound pods name nodes that are not in --nodes; not counted", c.Ignored))
	}
	if r.Undecided > 0 {
		bound := fmt.Sprintf("its bounds (%d search steps per domain, %d pod-count vectors per node)", e.maxSteps, e.maxPoints)
		if r.Fits {
			x.Notes = append(x.Notes, fmt.Sprintf("the exact multi-task search could not decide %d domains within %s; the answer fits, but an undecided domain may have been a tighter fit", r.Undecided, bound))
		} else {
			x.Notes = append(x.Notes, fmt.Sprintf("UNDECIDED: the exact multi-task search could not decide %d domains within %s, and no other domain fits; the gang may fit in an undecided one (fewer tasks, or fewer pods per task, keep the search small)", r.Undecided, bound))
		}
	}
	e.lastFits = r.Fits
	center := -1
	if r.Fits {
		center = r.Domain
		rep.Domain = e.ref(r.Domain)
		for ti, t := range g.Tasks {
			for k, ni := range r.PerNode[ti] {
				rep.Placements = append(rep.Placements, Placement{Pod: t.PodNames[k], Task: t.Name, Node: c.Nodes[ni].Name})
			}
		}
		if g.Preferred >= 0 {
			met := r.Level >= g.Preferred
			x.PreferredMet = &met
		}
	} else {
		best := e.bestAt(g.Required)
		center = best.id
		rep.Domain = e.ref(best.id)
		e.whyNot(x, best)
	}
	if e.prim >= 0 {
		x.FreeResource = string(c.Res[e.prim])
	}
	x.Tree = e.tree(center)
	e.excludedExamples(x, center)
	return rep, nil
}

func (e *engine) ref(id int) DomainRef {
	if id < 0 {
		return DomainRef{Level: ClusterLevel, Name: ClusterLevel}
	}
	d := &e.topo.Domains[id]
	return DomainRef{Level: e.topo.Levels[d.Level], Name: d.Name}
}

func (e *engine) allNodes() []int {
	all := make([]int, len(e.c.Nodes))
	for i := range all {
		all[i] = i
	}
	return all
}

func (e *engine) statsOf(id int) domainStats {
	if id < 0 {
		return e.stats(-1, e.allNodes(), ClusterLevel)
	}
	return e.stats(id, e.topo.Domains[id].Nodes, e.topo.Domains[id].Name)
}

// bestAt returns the domain at level (the cluster for -1) closest to
// holding the gang: the most pods of it, then the most primary resource.
func (e *engine) bestAt(level int) domainStats {
	if level < 0 || len(e.topo.ByLevel[level]) == 0 {
		return e.statsOf(-1)
	}
	var best domainStats
	for i, s := range e.levelStats(level) {
		cover := 0
		for ti, t := range e.g.Tasks {
			cover += min(s.caps[ti], t.Count)
		}
		bc := 0
		for ti, t := range e.g.Tasks {
			if i > 0 {
				bc += min(best.caps[ti], t.Count)
			}
		}
		if i == 0 || cover > bc || cover == bc && (s.free > best.free || s.free == best.free && s.name < best.name) {
			best = s
		}
	}
	return best
}

func (e *engine) whyNot(x *Explain, best domainStats) {
	sf := &Shortfall{Domain: e.ref(best.id), Capacity: best.total}
	var shortAmt int64
	for ti, t := range e.g.Tasks {
		if d := t.Count - best.caps[ti]; d > 0 {
			sf.Pods += d
			if e.prim >= 0 {
				shortAmt += int64(d) * t.req[e.prim]
			}
		}
	}
	if sf.Pods == 0 && len(e.g.Tasks) > 1 && e.undec == 0 {
		x.Notes = append(x.Notes, "every task fits in the best domain on its own, but not all of them together")
	}
	if e.g.Required >= 0 && len(e.topo.ByLevel[e.g.Required]) == 0 {
		x.Notes = append(x.Notes, fmt.Sprintf("no node is in a %s domain (the label is missing, or a label of an outer level is)", e.g.RequiredKey))
	}
	if e.prim >= 0 && shortAmt > 0 {
		sf.Resource = string(e.c.Res[e.prim])
		sf.Amount = e.c.Res.Format(e.prim, shortAmt)
	}
	x.Shortfall = sf
	n := &Nearest{}
	// fewer pods (one task): the biggest gang one domain at the required level holds
	if len(e.g.Tasks) == 1 && best.total > 0 {
		n.FewerPods = &Sized{Pods: min(best.caps[0], e.g.Tasks[0].Count-1), Domain: e.ref(best.id)}
	}
	// a higher level
	for lvl := e.g.Required - 1; lvl >= 0 && e.g.Required >= 0 && n.HigherLevel == nil; lvl-- {
		cands := e.levelStats(lvl)
		sort.Slice(cands, func(a, b int) bool { return better(cands[a], cands[b]) })
		for _, s := range cands {
			if _, ok := e.assign(s); ok {
				ref := e.ref(s.id)
				n.HigherLevel = &ref
				break
			}
		}
	}
	if n.HigherLevel == nil && e.g.Required >= 0 {
		if _, ok := e.assign(e.statsOf(-1)); ok {
			ref := e.ref(-1)
			n.HigherLevel = &ref
		}
	}
	if len(e.g.Tasks) == 1 && sf.Pods > 0 {
		n.Move = e.moves(best, sf.Pods)
	}
	if n.FewerPods != nil || n.HigherLevel != nil || n.Move != nil {
		x.Nearest = n
	}
}

// moves picks bound pods in best whose removal frees room for short more
// gang pods: greedily, the node and count of its largest pods that buy the
// most gang pods per moved pod. Not necessarily minimal.
func (e *engine) moves(best domainStats, short int) *Move {
	t := e.g.Tasks[0]
	type cand struct {
		ni   int
		pods []BoundPod
	}
	var cs []cand
	for _, ni := range best.nodes {
		r := e.reason[ni]
		if r != "" && r != ReasonTooFull {
			continue
		}
		n := &e.c.Nodes[ni]
		pods := append([]BoundPod(nil), n.Pods...)
		sort.Slice(pods, func(a, b int) bool {
			if e.prim >= 0 && pods[a].Req[e.prim] != pods[b].Req[e.prim] {
				return pods[a].Req[e.prim] > pods[b].Req[e.prim]
			}
			return pods[a].Pod.Name < pods[b].Pod.Name
		})
		if len(pods) > 64 {
			pods = pods[:64]
		}
		cs = append(cs, cand{ni, pods})
	}
	taken := make([]int, len(cs)) // pods moved per candidate
	gainAt := func(ci, m int) int {
		n := e.c.Nodes[cs[ci].ni]
		free := append([]int64(nil), n.Free...)
		freePods := n.FreePods
		for _, p := range cs[ci].pods[:m] {
			for r := range free {
				free[r] += p.Req[r]
			}
			freePods++
		}
		k := freePods
		for r, want := range t.req {
			if want > 0 {
				q := int64(0)
				if free[r] > 0 {
					q = free[r] / want
				}
				k = min(k, q)
			}
		}
		return int(k)
	}
	// next[ci]: the fewest more pods to move on candidate ci for a gain,
	// and that gain (0: none); recomputed only for the candidate taken
	type step struct{ m, gain int }
	nextStep := func(ci int) step {
		base := gainAt(ci, taken[ci])
		for m := taken[ci] + 1; m <= len(cs[ci].pods); m++ {
			if g := gainAt(ci, m) - base; g > 0 {
				return step{m - taken[ci], g}
			}
		}
		return step{}
	}
	steps := make([]step, len(cs))
	for ci := range cs {
		steps[ci] = nextStep(ci)
	}
	var moved []string
	for short > 0 && len(moved) < 1<<16 {
		bi := -1
		for ci, st := range steps {
			if st.gain == 0 {
				continue
			}
			if bi < 0 {
				bi = ci
				continue
			}
			b := steps[bi]
			// best gain per moved pod, then the bigger gain
			if st.gain*b.m > b.gain*st.m || st.gain*b.m == b.gain*st.m && st.gain > b.gain {
				bi = ci
			}
		}
		if bi < 0 {
			return nil
		}
		st := steps[bi]
		for _, p := range cs[bi].pods[taken[bi] : taken[bi]+st.m] {
			moved = append(moved, fmt.Sprintf("%s/%s on %s", p.Pod.Namespace, p.Pod.Name, e.c.Nodes[cs[bi].ni].Name))
		}
		taken[bi] += st.m
		short -= st.gain
		steps[bi] = nextStep(bi)
	}
	if short > 0 {
		return nil
	}
	return &Move{Domain: e.ref(best.id), Pods: moved}
}

func (e *engine) row(id, depth int, mark string) TreeRow {
	s := e.statsOf(id)
	ref := e.ref(id)
	free := "-"
	if e.prim >= 0 {
		free = e.c.Res.Format(e.prim, s.free)
	}
	return TreeRow{Depth: depth, Level: ref.Level, Name: ref.Name, Nodes: len(s.nodes), Capacity: s.total, Free: free, Mark: mark}
}

// tree lists the center's ancestors, its siblings (the center and the
// largest others, at most MaxListed/2) and its children (at most MaxListed/2).
func (e *engine) tree(center int) []TreeRow {
	mark := "best at required level"
	if center < 0 {
		rows := []TreeRow{e.row(-1, 0, "")}
		if len(e.topo.Levels) > 0 {
			rows = append(rows, e.pickRows(e.topo.ByLevel[0], -1, 1)...)
		}
		return rows
	}
	var chain []int
	for d := e.topo.Domains[center].Parent; d >= 0 && len(chain) < 64; d = e.topo.Domains[d].Parent {
		chain = append([]int{d}, chain...)
	}
	rows := []TreeRow{e.row(-1, 0, "")}
	for i, d := range chain {
		rows = append(rows, e.row(d, i+1, ""))
	}
	depth := len(chain) + 1
	var sibs []int
	if p := e.topo.Domains[center].Parent; p >= 0 {
		sibs = e.topo.Domains[p].Children
	} else {
		sibs = e.topo.ByLevel[e.topo.Domains[center].Level]
	}
	for _, r := range e.pickRows(sibs, center, depth) {
		if r.Name == e.topo.Domains[center].Name && r.Level == e.topo.Levels[e.topo.Domains[center].Level] {
			r.Mark = mark
			if e.lastFits {
				r.Mark = "answer"
			}
			rows = append(rows, r)
			kids := e.topo.Domains[center].Children
			rows = append(rows, e.pickRows(kids, -1, depth+1)...)
			continue
		}
		rows = append(rows, r)
	}
	return rows
}

// pickRows returns rows for ids: must (if >= 0) and the ones with most
// capacity, at most MaxListed/2, in name order, plus a summary row.
func (e *engine) pickRows(ids []int, must, depth int) []TreeRow {
	type sc struct {
		id  int
		cap int
	}
	all := make([]sc, 0, len(ids))
	for _, id := range ids {
		all = append(all, sc{id, e.statsOf(id).total})
	}
	sort.Slice(all, func(a, b int) bool {
		if (all[a].id == must) != (all[b].id == must) {
			return all[a].id == must
		}
		if all[a].cap != all[b].cap {
			return all[a].cap > all[b].cap
		}
		return e.topo.Domains[all[a].id].Name < e.topo.Domains[all[b].id].Name
	})
	keep := all
	if len(keep) > MaxListed/2 {
		keep = keep[:MaxListed/2]
	}
	sort.Slice(keep, func(a, b int) bool { return e.topo.Domains[keep[a].id].Name < e.topo.Domains[keep[b].id].Name })
	var rows []TreeRow
	for _, k := range keep {
		rows = append(rows, e.row(k.id, depth, ""))
	}
	if rest := len(all) - len(keep); rest > 0 {
		rows = append(rows, TreeRow{Depth: depth, Level: rows[0].Level, Name: fmt.Sprintf("... and %d more", rest), Capacity: -1, Free: "", Nodes: -1})
	}
	return rows
}

func (e *engine) excludedExamples(x *Explain, center int) {
	nodes := e.allNodes()
	if center >= 0 {
		nodes = append(append([]int(nil), e.topo.Domains[center].Nodes...), nodes...)
	}
	seen := map[int]bool{}
	for _, ni := range nodes {
		if len(x.ExcludedNodes) >= MaxListed {
			break
		}
		if e.reason[ni] == "" || seen[ni] {
			continue
		}
		seen[ni] = true
		det := e.detail[ni]
		if e.reason[ni] == ReasonTooFull {
			det = e.g.Tasks[e.shortTask[ni]].shortOf(e.c, &e.c.Nodes[ni])
		}
		x.ExcludedNodes = append(x.ExcludedNodes, ExcludedNode{Node: e.c.Nodes[ni].Name, Reason: e.reason[ni], Detail: det})
	}
}

// WriteTable renders the report for people.
func (r *Report) WriteTable(w io.Writer, o output.Options) error {
	if o.NoHeaders {
		// the placements only, for scripts
		if !r.Fits {
			return nil
		}
		return output.Print(w, r.placementGrid(len(r.Placements)), o)
	}
	ew := &output.ErrWriter{W: w}
	x := &r.Explain
	var tasks []string
	for _, t := range x.Tasks {
		var req []string
		for k, v := range t.Requests {
			req = append(req, k+"="+v)
		}
		sort.Strings(req)
		name := t.Name
		if name != "" {
			name += ": "
		}
		tasks = append(tasks, fmt.Sprintf("%s%d x {%s}", name, t.Pods, strings.Join(req, ", ")))
	}
	ew.Printf("%s: %d pods (%s)\n", x.Workload, x.Pods, strings.Join(tasks, "; "))
	lv := "none"
	if len(x.Levels) > 0 {
		lv = strings.Join(x.Levels, " > ")
	}
	ew.Printf("style %s, levels %s, required %s", x.Style, lv, x.Required)
	if x.Preferred != "" {
		ew.Printf(", preferred %s", x.Preferred)
	}
	if x.Mode != "" {
		ew.Printf(", mode %s", x.Mode)
	}
	ew.Printf("\n%d nodes, %d usable\n", x.Nodes, x.UsableNodes)
	var searched []string
	for _, s := range x.Search {
		searched = append(searched, fmt.Sprintf("%s (%d of %d domains big enough)", s.Level, s.Fitting, s.Domains))
	}
	if len(searched) > 0 {
		ew.Printf("searched %s\n", strings.Join(searched, ", then "))
	}
	ew.Printf("\n")
	if r.Fits {
		nodes := map[string]bool{}
		for _, p := range r.Placements {
			nodes[p.Node] = true
		}
		ew.Printf("%s: %s=%s holds all %d pods on %d nodes\n\n", o.Paint("green", "FITS"), r.Domain.Level, r.Domain.Name, len(r.Placements), len(nodes))
	} else if r.Undecided() {
		ew.Printf("%s inside one %s: the exact search gave up (see the notes)\n\n", o.Paint("yellow", "UNDECIDED"), x.Required)
	} else {
		ew.Printf("%s inside one %s\n\n", o.Paint("red", "DOES NOT FIT"), x.Required)
	}
	tree := output.NewGrid("DOMAIN", "NODES", "GANG PODS", "FREE "+x.FreeResource, "")
	for _, row := range x.Tree {
		name := strings.Repeat("  ", row.Depth) + row.Level + "=" + row.Name
		if row.Level == ClusterLevel {
			name = strings.Repeat("  ", row.Depth) + ClusterLevel
		}
		if row.Nodes < 0 {
			tree.AddRow(strings.Repeat("  ", row.Depth) + row.Name)
			continue
		}
		mark := ""
		if row.Mark != "" {
			mark = "<- " + row.Mark
		}
		tree.AddRow(name, strconv.Itoa(row.Nodes), strconv.Itoa(row.Capacity), row.Free, mark)
	}
	if err := output.Print(ew, tree, o); err != nil {
		return err
	}
	if r.Fits {
		ew.Printf("\n")
		if err := output.Print(ew, r.placementGrid(MaxListed), o); err != nil {
			return err
		}
		if x.PreferredMet != nil && !*x.PreferredMet {
			ew.Printf("preferred level %s not met: no single %s domain holds the gang\n", x.Preferred, x.Preferred)
		}
	}
	if sf := x.Shortfall; sf != nil {
		ew.Printf("\nwhy: the best %s domain, %s, holds %d of the pods", sf.Domain.Level, sf.Domain.Name, min(sf.Capacity, x.Pods))
		if sf.Pods > 0 {
			ew.Printf(": %s short", plural(sf.Pods, "pod"))
			if sf.Amount != "" {
				ew.Printf(" (%s %s)", sf.Amount, sf.Resource)
			}
		}
		ew.Printf("\n")
	}
	if len(x.Excluded) > 0 {
		var parts []string
		for _, k := range []string{ReasonCordoned, ReasonNotReady, ReasonTainted, ReasonAffinity, ReasonTooFull} {
			if n := x.Excluded[k]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, ReasonText(k)))
			}
		}
		ew.Printf("\nexcluded nodes: %s\n", strings.Join(parts, ", "))
		ex := output.NewGrid("NODE", "REASON", "DETAIL")
		ex.Indent = "  "
		ex.Columns[2].Wrap = true
		for _, n := range x.ExcludedNodes {
			ex.AddRow(n.Node, ReasonText(n.Reason), n.Detail)
		}
		eo := o
		eo.NoHeaders = true // a list under a title: no header line
		if err := output.Print(ew, ex, eo); err != nil {
			return err
		}
	}
	if n := x.Nearest; n != nil {
		ew.Printf("\nnearest fit:\n")
		if n.FewerPods != nil {
			ew.Printf("  fewer pods: %d of the %d pods fit in %s=%s\n", n.FewerPods.Pods, x.Pods, n.FewerPods.Domain.Level, n.FewerPods.Domain.Name)
		}
		if n.HigherLevel != nil {
			ew.Printf("  a higher level: the whole gang fits in %s=%s\n", n.HigherLevel.Level, n.HigherLevel.Name)
		}
		if n.Move != nil {
			ew.Printf("  move %s out of %s=%s:\n", plural(len(n.Move.Pods), "busy pod"), n.Move.Domain.Level, n.Move.Domain.Name)
			for i, p := range n.Move.Pods {
				if i == MaxListed {
					ew.Printf("    ... and %d more\n", len(n.Move.Pods)-MaxListed)
					break
				}
				ew.Printf("    %s\n", p)
			}
		}
	}
	for _, s := range x.Notes {
		ew.Printf("note: %s\n", s)
	}
	return ew.Err
}

// ListItems implements output.Lister: one row per placed pod.
func (r *Report) ListItems() any { return r.Placements }

// placementGrid is the table of placed pods: the first limit, then a line
// saying how many more -o json lists (--no-headers lists them all: a
// script reads every row as a placement).
func (r *Report) placementGrid(limit int) output.Grid {
	g := output.NewGrid("POD", "TASK", "NODE")
	for i, p := range r.Placements {
		if i == limit {
			g.AddRow(fmt.Sprintf("... and %d more (-o json lists them)", len(r.Placements)-limit))
			break
		}
		task := p.Task
		if task == "" {
			task = "-"
		}
		g.AddRow(p.Pod, task, p.Node)
	}
	return g
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
