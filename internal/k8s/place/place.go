package place

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"
)

// SchemaVersion is the version of the JSON report.
const SchemaVersion = "gpunode.k8s.place/v1"

// ClusterLevel is the level reported when the gang is placed in (or measured
// against) the whole cluster.
const ClusterLevel = "cluster"

// Gang is the workload to place: its tasks and topology constraint.
type Gang struct {
	Workload     string // e.g. `Job "training-workers"`
	Style        string // PodGroup, KAI, Volcano, Kueue, levels, none
	Tasks        []*Task
	Required     int // level index the gang must stay inside; -1: none
	RequiredKey  string
	Preferred    int // -1: none
	PreferredKey string
	Mode         string // Volcano hard|soft; "" otherwise
	Notes        []string
}

// Pods is the number of pods of the gang.
func (g *Gang) Pods() int {
	n := 0
	for _, t := range g.Tasks {
		n += t.Count
	}
	return n
}

// MaxSearchSteps bounds the exact multi-task search per domain.
const MaxSearchSteps = 20_000_000

type engine struct {
	c      *Cluster
	topo   *Topology
	g      *Gang
	fits   [][]int32 // [task][node]
	reason []string  // per node: why it takes no pod of the first task that cannot use it
	detail []string
	// shortTask is the task whose pod a too-full node cannot hold (its
	// detail is written only for the nodes the report lists)
	shortTask []int32
	prim      int
	undec     int // domains the multi-task search gave up on
	lastFits  bool
	steps     int
	// the search's bounds: MaxSearchSteps and MaxCountPoints (smaller in
	// tests that reach them)
	maxSteps, maxPoints int
}

func newEngine(c *Cluster, topo *Topology, g *Gang) *engine {
	e := &engine{c: c, topo: topo, g: g, prim: c.Res.primary(), maxSteps: MaxSearchSteps, maxPoints: MaxCountPoints}
	e.fits = make([][]int32, len(g.Tasks))
	e.reason = make([]string, len(c.Nodes))
	e.detail = make([]string, len(c.Nodes))
	e.shortTask = make([]int32, len(c.Nodes))
	for ti, t := range g.Tasks {
		t.req = c.Res.vector(t.Requests)
		e.fits[ti] = make([]int32, len(c.Nodes))
	}
	parallel(len(c.Nodes), func(lo, hi int) { e.evaluate(lo, hi) })
	return e
}

// evaluate computes how many pods of each task nodes [lo, hi) can take.
func (e *engine) evaluate(lo, hi int) {
	c, g := e.c, e.g
	for ni := lo; ni < hi; ni++ {
		n := &c.Nodes[ni]
		fitsSome := false
		for ti, t := range g.Tasks {
			k, why, det := t.fit(n)
			if k > t.Count {
				k = t.Count
			}
			e.fits[ti][ni] = int32(k)
			if k > 0 {
				fitsSome = true
			} else if e.reason[ni] == "" {
				e.reason[ni], e.detail[ni] = why, det
				if why == ReasonTooFull {
					e.shortTask[ni] = int32(ti)
				}
			}
		}
		if fitsSome {
			e.reason[ni], e.detail[ni] = "", ""
		}
	}
}

// domainStats is what best fit ranks a domain by.
type domainStats struct {
	id      int // domain id, -1 for the whole cluster
	caps    []int
	total   int // sum of caps
	free    int64
	need    int64
	nodes   []int
	name    string
	maybeOK bool // every task's capacity covers its count
}

func (e *engine) stats(id int, nodes []int, name string) domainStats {
	return e.statsInto(id, nodes, name, make([]int, len(e.g.Tasks)))
}

func (e *engine) statsInto(id int, nodes []int, name string, caps []int) domainStats {
	s := domainStats{id: id, caps: caps, nodes: nodes, name: name, maybeOK: true}
	for _, ni := range nodes {
		usable := false
		for ti := range e.g.Tasks {
			if f := e.fits[ti][ni]; f > 0 {
				s.caps[ti] += int(f)
				usable = true
			}
		}
		if usable && e.prim >= 0 && e.c.Nodes[ni].Free[e.prim] > 0 {
			s.free += e.c.Nodes[ni].Free[e.prim]
		}
	}
	for ti, t := range e.g.Tasks {
		s.total += s.caps[ti]
		if s.caps[ti] < t.Count {
			s.maybeOK = false
		}
		if e.prim >= 0 {
			s.need += int64(t.Count) * t.req[e.prim]
		}
	}
	return s
}

// better is the best-fit order: least pod capacity left, then least primary
// resource left, then name.
func better(a, b domainStats) bool {
	if a.total != b.total {
		return a.total < b.total
	}
	if a.free-a.need != b.free-b.need {
		return a.free-a.need < b.free-b.need
	}
	return a.name < b.name
}

// levelStats ranks the domains of a level, best fit first among those whose
// capacities cover the gang.
func (e *engine) levelStats(level int) []domainStats {
	ids := e.topo.ByLevel[level]
	out := make([]domainStats, 0, len(ids))
	T := len(e.g.Tasks)
	caps := make([]int, T*len(ids))
	for k, id := range ids {
		d := &e.topo.Domains[id]
		out = append(out, e.statsInto(id, d.Nodes, d.Name, caps[T*k:T*(k+1):T*(k+1)]))
	}
	return out
}

// nodeCount is count pods of the gang's one task on node (an index into
// the cluster's nodes).
type nodeCount struct{ node, count int }

// nodeTask is one pod of task (an index into the gang's tasks) on node.
type nodeTask struct{ node, task int }

// assignment is a placement of the gang: for one task, counts per node;
// for several, one entry per pod.
type assignment struct {
	counts []nodeCount
	pods   []nodeTask
}

// assign returns a placement of the gang on s's nodes, or an empty one and
// false when none exists. For one task the capacity test is exact; for
// several tasks it runs the exact search.
func (e *engine) assign(s domainStats) (assignment, bool) {
	if !s.maybeOK {
		return assignment{}, false
	}
	order := e.fillOrder(s.nodes)
	if len(e.g.Tasks) == 1 {
		var out []nodeCount
		left := e.g.Tasks[0].Count
		for _, ni := range order {
			if left == 0 {
				break
			}
			k := int(e.fits[0][ni])
			if k > left {
				k = left
			}
			if k > 0 {
				out = append(out, nodeCount{node: ni, count: k})
				left -= k
			}
		}
		return assignment{counts: out}, left == 0
	}
	undec := e.undec
	a, ok := e.search(order)
	if !ok && e.undec > undec {
		// the exact search gave up: a greedy fill may still prove a fit
		if a, ok = e.greedy(order); ok {
			e.undec = undec
		}
	}
	return assignment{pods: a}, ok
}

// greedy fills the nodes in order, each with as many pods of each task (in
// task order) as it still holds. It proves a fit when it places every pod,
// and proves nothing when it does not.
func (e *engine) greedy(order []int) ([]nodeTask, bool) {
	rem := make([]int, len(e.g.Tasks))
	left := 0
	for ti, t := range e.g.Tasks {
		rem[ti] = t.Count
		left += t.Count
	}
	var out []nodeTask
	for _, ni := range order {
		if left == 0 {
			break
		}
		w := countWalk{n: &e.c.Nodes[ni], used: make([]int64, len(e.c.Res))}
		for ti, t := range e.g.Tasks {
			k := w.most(t, min(rem[ti], int(e.fits[ti][ni])))
			for r, q := range t.req {
				w.used[r] += int64(k) * q
			}
			w.pods += int64(k)
			rem[ti] -= k
			left -= k
			for ; k > 0; k-- {
				out = append(out, nodeTask{node: ni, task: ti})
			}
		}
	}
	return out, left == 0
}

// fillOrder sorts a domain's usable nodes fullest-first: fewest gang pods
// they can take, then least primary resource free, then name.
func (e *engine) fillOrder(nodes []int) []int {
	type key struct {
		ni, fit int
		free    int64
	}
	ks := make([]key, 0, len(nodes))
	for _, ni := range nodes {
		f := 0
		for ti := range e.g.Tasks {
			f += int(e.fits[ti][ni])
		}
		if f == 0 {
			continue
		}
		var free int64
		if e.prim >= 0 {
			free = e.c.Nodes[ni].Free[e.prim]
		}
		ks = append(ks, key{ni, f, free})
	}
	sort.Slice(ks, func(a, b int) bool {
		if ks[a].fit != ks[b].fit {
			return ks[a].fit < ks[b].fit
		}
		if ks[a].free != ks[b].free {
			return ks[a].free < ks[b].free
		}
		return e.c.Nodes[ks[a].ni].Name < e.c.Nodes[ks[b].ni].Name
	})
	out := make([]int, len(ks))
	for i, k := range ks {
		out[i] = k.ni
	}
	return out
}

// Result of a placement.
type Result struct {
	Fits      bool
	Level     int     // -1: the whole cluster
	Domain    int     // domain id; -1: the whole cluster
	PerNode   [][]int // [task] -> list of node indices, one per pod, in pod order
	Best      *domainStats
	Searched  []LevelSearch
	Undecided int
}

// LevelSearch is what the search saw at one level.
type LevelSearch struct {
	Level   string `json:"level"`
	Domains int    `json:"domains"`
	Fitting int    `json:"fitting"` // domains whose per-task capacities cover the gang
}

func (e *engine) levelName(l int) string {
	if l < 0 {
		return ClusterLevel
	}
	return e.topo.Levels[l]
}

// place runs the search.
func (e *engine) place(ctx context.Context) (*Result, error) {
	r := &Result{Level: -1, Domain: -1}
	lo := 0
	if e.g.Required >= 0 {
		lo = e.g.Required
	}
	for lvl := len(e.topo.Levels) - 1; lvl >= lo; lvl-- {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		all := e.levelStats(lvl)
		cands := make([]domainStats, 0)
		for _, s := range all {
			if s.maybeOK {
				cands = append(cands, s)
			}
		}
		sort.Slice(cands, func(a, b int) bool { return better(cands[a], cands[b]) })
		r.Searched = append(r.Searched, LevelSearch{Level: e.levelName(lvl), Domains: len(all), Fitting: len(cands)})
		for i := range cands {
			if a, ok := e.assign(cands[i]); ok {
				r.Fits, r.Level, r.Domain = true, lvl, cands[i].id
				s := cands[i]
				r.Best = &s
				r.PerNode = e.expand(a)
				r.Undecided = e.undec
				return r, nil
			}
		}
	}
	if e.g.Required < 0 {
		all := make([]int, len(e.c.Nodes))
		for i := range all {
			all[i] = i
		}
		s := e.stats(-1, all, ClusterLevel)
		fit := 0
		if s.maybeOK {
			fit = 1
		}
		r.Searched = append(r.Searched, LevelSearch{Level: ClusterLevel, Domains: 1, Fitting: fit})
		if a, ok := e.assign(s); ok {
			r.Fits, r.Level, r.Domain, r.Best = true, -1, -1, &s
			r.PerNode = e.expand(a)
		}
	}
	r.Undecided = e.undec
	return r, nil
}

// expand turns an assignment into per-task node lists.
func (e *engine) expand(a assignment) [][]int {
	out := make([][]int, len(e.g.Tasks))
	for _, p := range a.counts {
		for k := 0; k < p.count; k++ {
			out[0] = append(out[0], p.node)
		}
	}
	for _, p := range a.pods {
		out[p.task] = append(out[p.task], p.node)
	}
	return out
}

// MaxSearchStates bounds the states the multi-task search keeps per
// domain (each is two small vectors): past it the domain is undecided.
const MaxSearchStates = 1 << 20

// maxParetoStates is the largest layer the search prunes to its
// Pareto-minimal states (a quadratic pass); larger layers are only
// deduplicated, which keeps the search exact but wider.
const maxParetoStates = 2048

// search decides exactly whether the tasks fit on nodes (in fill order) and
// returns (node, task) pairs, one per pod. State: the demand still unplaced.
// A node that holds a state's whole demand ends the search; otherwise the
// node takes one of its maximal count vectors. States whose demand the
// nodes left cannot cover (per task, in pod slots or in any resource) are
// dropped, equal ones kept once, and in small layers only Pareto-minimal
// demands are kept (a smaller demand is absorbable whenever a larger one
// is, since what a node can hold is closed under taking fewer pods).
// Every state made, and every comparison, is a step; past e.maxSteps
// steps, MaxSearchStates states or an incomplete count enumeration the
// domain is undecided (e.undec), never "does not fit".
func (e *engine) search(order []int) ([]nodeTask, bool) {
	e.steps = 0 // the bound is per domain
	T := len(e.g.Tasks)
	demand := make([]int, T)
	for ti, t := range e.g.Tasks {
		demand[ti] = t.Count
	}
	type state struct {
		rem    []int
		parent int
		take   []int
	}
	layers := [][]state{{{rem: demand, parent: -1}}}
	finish := func(li, si int) []nodeTask {
		var out []nodeTask
		for l := li; l > 0; l-- {
			st := layers[l][si]
			ni := order[l-1]
			for ti, k := range st.take {
				for j := 0; j < k; j++ {
					out = append(out, nodeTask{node: ni, task: ti})
				}
			}
			si = st.parent
		}
		// pods in node fill order
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
		return out
	}
	if sumInts(demand) == 0 {
		return nil, true
	}
	cover := e.suffixCover(order)
	if !cover.covers(0, demand, e) {
		return nil, false // the domain's nodes together are too small
	}
	maxCache := map[string]countSet{}
	kept := 0
	var key []byte
	for li, ni := range order {
		cur := layers[li]
		for si, st := range cur {
			e.steps++
			if e.holdsAll(ni, st.rem) {
				layers = append(layers, []state{{rem: make([]int, T), parent: si, take: st.rem}})
				return finish(li+1, 0), true
			}
		}
		if li == len(order)-1 {
			break
		}
		counts := e.maximalCounts(ni, demand, maxCache)
		if !counts.complete {
			e.undec++
			return nil, false
		}
		var next []state
		seen := map[string]bool{}
		for si, st := range cur {
			for _, c := range counts.vecs {
				e.steps++
				if e.steps > e.maxSteps {
					e.undec++
					return nil, false
				}
				rem := make([]int, T)
				take := make([]int, T)
				for ti := range rem {
					k := min(c[ti], st.rem[ti])
					take[ti] = k
					rem[ti] = st.rem[ti] - k
				}
				if !cover.covers(li+1, rem, e) {
					continue
				}
				key = key[:0]
				for _, x := range rem {
					key = binary.AppendUvarint(key, uint64(x))
				}
				if seen[string(key)] {
					continue
				}
				seen[string(key)] = true
				if kept++; kept > MaxSearchStates {
					e.undec++
					return nil, false
				}
				next = append(next, state{rem: rem, parent: si, take: take})
			}
		}
		if len(next) == 0 {
			return nil, false
		}
		if len(next) <= maxParetoStates {
			// pruning compares states pairwise: count that work too
			if T == 2 {
				e.steps += len(next)
			} else {
				e.steps += len(next) * len(next)
			}
			if e.steps > e.maxSteps {
				e.undec++
				return nil, false
			}
			next = paretoMin(next, func(s state) []int { return s.rem })
		}
		layers = append(layers, next)
	}
	return nil, false
}

func sumInts(v []int) int {
	s := 0
	for _, x := range v {
		s += x
	}
	return s
}

// holdsAll says whether node ni holds rem[t] pods of every task t at once.
func (e *engine) holdsAll(ni int, rem []int) bool {
	n := &e.c.Nodes[ni]
	var pods int64
	for ti, k := range rem {
		if k > int(e.fits[ti][ni]) {
			return false
		}
		pods += int64(k)
	}
	if pods > n.FreePods {
		return false
	}
	for r := range n.Free {
		var u int64
		for ti, k := range rem {
			u += int64(k) * e.g.Tasks[ti].req[r]
		}
		if u > 0 && u > n.Free[r] {
			return false
		}
	}
	return true
}

// suffixCover is, for each position of a fill order, what the nodes from
// there on can hold at most: per task, in pod slots and per resource. A
// demand above it in any of them cannot be placed on those nodes.
type suffixCover struct {
	tasks [][]int   // [pos][task] sum of per-task fits
	pods  []int64   // [pos]
	free  [][]int64 // [pos][resource] sum of non-negative free
}

func (e *engine) suffixCover(order []int) suffixCover {
	T, R := len(e.g.Tasks), len(e.c.Res)
	n := len(order)
	sc := suffixCover{tasks: make([][]int, n+1), pods: make([]int64, n+1), free: make([][]int64, n+1)}
	sc.tasks[n], sc.free[n] = make([]int, T), make([]int64, R)
	for i := n - 1; i >= 0; i-- {
		node := &e.c.Nodes[order[i]]
		sc.tasks[i] = append([]int(nil), sc.tasks[i+1]...)
		for ti := range sc.tasks[i] {
			sc.tasks[i][ti] += int(e.fits[ti][order[i]])
		}
		sc.pods[i] = sc.pods[i+1] + max(node.FreePods, 0)
		sc.free[i] = append([]int64(nil), sc.free[i+1]...)
		for r := range sc.free[i] {
			sc.free[i][r] += max(node.Free[r], 0)
		}
	}
	return sc
}

// covers says whether the nodes from position pos on may hold rem.
func (sc suffixCover) covers(pos int, rem []int, e *engine) bool {
	var pods int64
	for ti, k := range rem {
		if k > sc.tasks[pos][ti] {
			return false
		}
		pods += int64(k)
	}
	if pods > sc.pods[pos] {
		return false
	}
	for r := range sc.free[pos] {
		var u int64
		for ti, k := range rem {
			u += int64(k) * e.g.Tasks[ti].req[r]
		}
		if u > 0 && u > sc.free[pos][r] {
			return false
		}
	}
	return true
}

// paretoMin keeps the states whose vectors no other state's vector is
// componentwise <= (the first of equal vectors is kept).
func paretoMin[S any](in []S, vec func(S) []int) []S {
	if len(in) > 0 && len(vec(in[0])) == 2 {
		return paretoMin2(in, vec)
	}
	sort.SliceStable(in, func(a, b int) bool {
		sa, sb := 0, 0
		for _, x := range vec(in[a]) {
			sa += x
		}
		for _, x := range vec(in[b]) {
			sb += x
		}
		return sa < sb
	})
	var out []S
	for _, s := range in {
		v := vec(s)
		dominated := false
		for _, o := range out {
			w := vec(o)
			le := true
			for i := range v {
				if w[i] > v[i] {
					le = false
					break
				}
			}
			if le {
				dominated = true
				break
			}
		}
		if !dominated {
			out = append(out, s)
		}
	}
	return out
}

// paretoMin2 is paretoMin for two tasks in O(n log n): in order of the first
// coordinate (then the second), a vector survives iff its second coordinate
// is below every earlier one's.
func paretoMin2[S any](in []S, vec func(S) []int) []S {
	sort.SliceStable(in, func(a, b int) bool {
		va, vb := vec(in[a]), vec(in[b])
		if va[0] != vb[0] {
			return va[0] < vb[0]
		}
		return va[1] < vb[1]
	})
	var out []S
	best := 0
	for i, s := range in {
		v := vec(s)
		if i == 0 || v[1] < best {
			out = append(out, s)
			best = v[1]
		}
	}
	return out
}

// MaxCountPoints bounds the per-node enumeration of pod-count vectors in
// maximalCounts (the partial vectors over every task but the last that a node
// can hold). Past it the node's vectors are incomplete and the domain's search
// is undecided, never "does not fit".
const MaxCountPoints = 1 << 22

// countSet is the maximal pod-count vectors of one node; complete is false
// when the enumeration stopped at MaxCountPoints.
type countSet struct {
	vecs     [][]int
	complete bool
}

// maximalCounts lists the maximal per-task pod counts node ni can hold
// together (each at most the task's demand and the node's fit), cached by
// the node's free resources and per-task limits.
//
// It walks every count vector of the tasks but the last that the node can
// hold, and gives the last task the most pods that still fit (m). Such a
// vector p+m(p) is maximal exactly when no single extra pod of an earlier
// task fits beside m(p) pods of the last: m never grows when p grows, so a
// vector that dominates p+m(p) has the same m, and then so does p plus one
// pod of a task it has more of. Only maximal vectors are kept, none is
// dropped, and the walk is bounded by MaxCountPoints.
func (e *engine) maximalCounts(ni int, demand []int, cache map[string]countSet) countSet {
	n := &e.c.Nodes[ni]
	T := len(e.g.Tasks)
	lim := make([]int, T)
	for ti := range lim {
		lim[ti] = min(int(e.fits[ti][ni]), demand[ti])
	}
	key := fmt.Sprint(n.Free, n.FreePods, lim)
	if v, ok := cache[key]; ok {
		return v
	}
	w := countWalk{n: n, tasks: e.g.Tasks, lim: lim, cur: make([]int, T), used: make([]int64, len(n.Free)), budget: e.maxPoints}
	w.walk(0)
	out := countSet{vecs: w.out, complete: w.budget >= 0}
	if !out.complete {
		out.vecs = nil
	}
	cache[key] = out
	return out
}

// countWalk is the state of maximalCounts' depth-first walk.
type countWalk struct {
	n      *Node
	tasks  []*Task
	lim    []int
	cur    []int   // counts of tasks [0, depth)
	used   []int64 // resources those counts use
	pods   int64
	budget int
	out    [][]int
}

// room says whether k more pods of task t fit beside what the walk holds.
func (w *countWalk) room(t *Task, k int64, extraPods int64, extra []int64) bool {
	if w.pods+extraPods+k > w.n.FreePods {
		return false
	}
	for r, q := range t.req {
		if q == 0 {
			continue
		}
		u := w.used[r] + k*q
		if extra != nil {
			u += extra[r]
		}
		if u > w.n.Free[r] {
			return false
		}
	}
	return true
}

// most is how many pods of task t fit beside what the walk holds, at most
// limit.
func (w *countWalk) most(t *Task, limit int) int {
	k := int64(limit)
	if left := w.n.FreePods - w.pods; left < k {
		k = max(left, 0)
	}
	for r, q := range t.req {
		if q <= 0 {
			continue
		}
		if left := (w.n.Free[r] - w.used[r]) / q; left < k {
			k = max(left, 0)
		}
	}
	return int(k)
}

func (w *countWalk) walk(ti int) {
	if w.budget < 0 {
		return
	}
	w.budget--
	last := len(w.tasks) - 1
	if ti == last {
		t := w.tasks[last]
		m := w.most(t, w.lim[last])
		// p+m(p) is maximal unless one more pod of an earlier task fits beside m
		mreq := make([]int64, len(w.used))
		for r, q := range t.req {
			mreq[r] = int64(m) * q
		}
		for i := 0; i < last; i++ {
			if w.cur[i] < w.lim[i] && w.room(w.tasks[i], 1, int64(m), mreq) {
				return
			}
		}
		v := make([]int, len(w.tasks))
		copy(v, w.cur[:last])
		v[last] = m
		w.out = append(w.out, v)
		return
	}
	t := w.tasks[ti]
	for k := 0; k <= w.lim[ti]; k++ {
		if k > 0 && !w.room(t, 1, 0, nil) {
			break
		}
		if k > 0 {
			for r, q := range t.req {
				w.used[r] += q
			}
			w.pods++
		}
		w.cur[ti] = k
		w.walk(ti + 1)
		if w.budget < 0 {
			break
		}
	}
	for r, q := range t.req {
		w.used[r] -= int64(w.cur[ti]) * q
	}
	w.pods -= int64(w.cur[ti])
	w.cur[ti] = 0
}
