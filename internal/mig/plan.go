package mig

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// SchemaVersion is the schemaVersion of every mig output model.
const SchemaVersion = "gpunode.mig/v1"

// PlanOptions tune Plan.
type PlanOptions struct {
	// GPUs is the number of GPUs to spread the demand over (default 1).
	GPUs int
	// ComputeInstances adds each GI's compute-instance options.
	ComputeInstances bool
	// MaxStates bounds the exact search of the feasibility decision
	// (default planBudget); a plan that needs more fails with ErrGaveUp.
	MaxStates int
}

// Instance is one GPU instance of a planned layout.
type Instance struct {
	// Order is the creation order on its GPU (1 first; larger first).
	Order         int       `json:"order"`
	Profile       string    `json:"profile"`
	ProfileID     int       `json:"profileID"`
	Placement     Placement `json:"placement"`
	ComputeSlices int       `json:"computeSlices"`
	SMs           int       `json:"sms,omitempty"`
	// ComputeInstances are the CIs to create in this GI: the full-size
	// default, or those a compute-instance form of the demand packed here.
	ComputeInstances []string `json:"computeInstances"`
	// ComputeInstanceOptions are the ways to split the GI into compute
	// instances ("3 x 1c.3g.40gb"); the last one is the default full-size CI.
	ComputeInstanceOptions []string `json:"computeInstanceOptions,omitempty"`
}

// GPULayout is the layout of one GPU.
type GPULayout struct {
	GPU           int        `json:"gpu"`
	Instances     []Instance `json:"instances"`
	ComputeUsed   int        `json:"computeSlicesUsed"`
	ComputeTotal  int        `json:"computeSlicesTotal"`
	MemoryUsed    int        `json:"memorySlicesUsed"`
	MemoryTotal   int        `json:"memorySlicesTotal"`
	FreeMemory    []int      `json:"freeMemorySlices"`
	CreateCommand string     `json:"createCommand,omitempty"`
	// CICommands create the compute instances when some GI gets other than
	// its default CI (CreateCommand then omits -C); <GI ...> stands for the
	// GI id nvidia-smi printed for that placement.
	CICommands []string `json:"ciCommands,omitempty"`
}

// Alternative is a feasible demand close to an infeasible one.
type Alternative struct {
	// Kind is "drop", "shrink" or "more-gpus".
	Kind   string `json:"kind"`
	Change string `json:"change"`
	Want   string `json:"want"`
	GPUs   int    `json:"gpus"`
}

// Plan is the result of planning a demand (the model of `gpunode mig plan`).
type Plan struct {
	SchemaVersion string `json:"schemaVersion"`
	Kind          string `json:"kind"`
	Model         string `json:"model"`
	Source        string `json:"source"`
	GPUs          int    `json:"gpus"`
	// Requested is the demand as given when it used compute-instance
	// forms; Want is then the GI demand they pack into.
	Requested     []Want        `json:"requested,omitempty"`
	Want          []Want        `json:"want"`
	ComputeNeeded int           `json:"computeSlicesNeeded"`
	MemoryNeeded  int           `json:"memorySlicesNeeded"`
	Feasible      bool          `json:"feasible"`
	Layouts       []GPULayout   `json:"layouts,omitempty"`
	Reasons       []string      `json:"reasons,omitempty"`
	Alternatives  []Alternative `json:"alternatives,omitempty"`
	Notes         []string      `json:"notes,omitempty"`
}

// Plan lays wants out on opts.GPUs GPUs of product p. Demand errors
// (unknown profiles, counts beyond the maximum) wrap ErrBadDemand; an
// infeasible demand is not an error: the Plan says why and what would fit.
func (c *Catalogue) Plan(ctx context.Context, p *Product, wants []Want, opts PlanOptions) (*Plan, error) {
	n := opts.GPUs
	if n == 0 {
		n = 1
	}
	if n < 0 || n > 1024 {
		return nil, badDemandf("--gpus %d out of range 1..1024", n)
	}
	d, bins, err := c.resolve(p, wants, n)
	var over overMax
	if errors.As(err, &over) {
		return c.overMaxPlan(ctx, p, d, n, over, opts)
	}
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s := c.space(p)
	comp, mem, _ := s.slices(d)
	pl := &Plan{SchemaVersion: SchemaVersion, Kind: "plan", Model: p.Key, Source: p.Source, GPUs: n,
		Want: wantsOf(p, d), ComputeNeeded: comp, MemoryNeeded: mem}
	if len(bins) > 0 {
		pl.Requested = wants
	}
	if p.Note != "" {
		pl.Notes = append(pl.Notes, p.Note)
	}
	for i, pr := range p.Profiles {
		if d[i] > 0 && pr.Note != "" {
			pl.Notes = append(pl.Notes, pr.Name+": "+pr.Note)
		}
	}
	budget := opts.MaxStates
	if budget <= 0 {
		budget = planBudget
	}
	dec := s.decide(d, n, budget, func() bool { return ctx.Err() != nil })
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("mig plan: %w", err)
	}
	if !dec.decided {
		return nil, fmt.Errorf("mig plan: %w after %d states: neither a layout nor a proof that none exists was found", ErrGaveUp, dec.states)
	}
	if dec.fits {
		pl.Feasible = true
		pl.Layouts = s.layouts(dec.cfgs, n, opts.ComputeInstances, bins)
		return pl, nil
	}
	mp := s.newMaxPlaced(d, n)
	pl.Reasons = s.explain(d, n, mp)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var exact bool
	pl.Alternatives, exact = s.alternatives(d, n, mp)
	if !exact {
		pl.Notes = append(pl.Notes, "alternatives come from a bounded search: closer ones (fewer drops, fewer GPUs) may exist")
	}
	return pl, nil
}

// overMaxPlan is the infeasible plan of a demand with a count above the
// per-GPU maximum times n: the reasons, and the fewest GPUs that hold it
// (decided exactly, from the per-GPU bound up to maxMoreGPUs more).
func (c *Catalogue) overMaxPlan(ctx context.Context, p *Product, d demand, n int, over overMax, opts PlanOptions) (*Plan, error) {
	s := c.space(p)
	comp, mem, _ := s.slices(d)
	pl := &Plan{SchemaVersion: SchemaVersion, Kind: "plan", Model: p.Key, Source: p.Source, GPUs: n,
		Want: wantsOf(p, d), ComputeNeeded: comp, MemoryNeeded: mem, Reasons: over.msgs}
	if over.minGPUs == 0 {
		return pl, nil
	}
	budget := opts.MaxStates
	if budget <= 0 {
		budget = planBudget
	}
	for g := max(over.minGPUs, n+1); g <= min(over.minGPUs+maxMoreGPUs, 1024); g++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("mig plan: %w", err)
		}
		dec := s.decide(d, g, budget, func() bool { return ctx.Err() != nil })
		if dec.decided && dec.fits {
			pl.Alternatives = []Alternative{{Kind: "more-gpus", Change: fmt.Sprintf("use %d GPUs", g), Want: FormatWant(pl.Want), GPUs: g}}
			pl.Reasons = append(pl.Reasons, fmt.Sprintf("the demand needs %d GPUs", g))
			return pl, nil
		}
	}
	pl.Notes = append(pl.Notes, fmt.Sprintf("no layout on up to %d GPUs was found", min(over.minGPUs+maxMoreGPUs, 1024)))
	return pl, nil
}

// maxMoreGPUs bounds the GPUs overMaxPlan tries beyond the per-GPU bound.
const maxMoreGPUs = 16

// layouts turns per-GPU configurations into explicit layouts.
// bins (may be nil) holds, per profile, the CI counts of GIs that
// compute-instance forms of the demand were packed into; they go to the
// first GIs of that profile, the others get the full-size CI.
func (s *space) layouts(cfgs []cfg, n int, withCI bool, bins map[int][][]int) []GPULayout {
	out := make([]GPULayout, 0, n)
	next := map[int]int{}
	for g := 0; g < n; g++ {
		var c cfg
		if g < len(cfgs) {
			c = cfgs[g]
		}
		gl := s.layout(g, s.feasible[c], withCI)
		custom := false
		for k := range gl.Instances {
			in := &gl.Instances[k]
			i, _ := s.p.Profile(in.Profile)
			if b := bins[i]; next[i] < len(b) {
				in.ComputeInstances = ciList(s.p.Profiles[i], b[next[i]])
				next[i]++
				custom = true
			}
		}
		if custom {
			gl.CreateCommand = strings.TrimSuffix(gl.CreateCommand, " -C")
			for _, in := range gl.Instances {
				gl.CICommands = append(gl.CICommands, fmt.Sprintf("nvidia-smi mig -i %d -gi <GI %d:%d> -cci %s",
					g, in.ProfileID, in.Placement.Start, strings.Join(in.ComputeInstances, ",")))
			}
		}
		out = append(out, gl)
	}
	return out
}

func (s *space) layout(g int, l []placed, withCI bool) GPULayout {
	p := s.p
	gl := GPULayout{GPU: g, ComputeTotal: p.ComputeSlices, MemoryTotal: p.MemorySlices, Instances: []Instance{}}
	ordered := append([]placed(nil), l...)
	sort.SliceStable(ordered, func(a, b int) bool {
		pa, pb := p.Profiles[ordered[a].prof], p.Profiles[ordered[b].prof]
		if pa.MemorySlices != pb.MemorySlices {
			return pa.MemorySlices > pb.MemorySlices
		}
		if pa.ComputeSlices != pb.ComputeSlices {
			return pa.ComputeSlices > pb.ComputeSlices
		}
		return ordered[a].start < ordered[b].start
	})
	var used [maxSlices]bool
	var tuples []string
	for i, x := range ordered {
		pr := p.Profiles[x.prof]
		in := Instance{Order: i + 1, Profile: pr.Name, ProfileID: pr.ID, Placement: Placement{x.start, pr.MemorySlices},
			ComputeSlices: pr.ComputeSlices, SMs: pr.SMs, ComputeInstances: []string{pr.Name}}
		if withCI {
			in.ComputeInstanceOptions = CIOptions(pr)
		}
		gl.Instances = append(gl.Instances, in)
		gl.ComputeUsed += pr.ComputeSlices
		gl.MemoryUsed += pr.MemorySlices
		for k := x.start; k < x.start+pr.MemorySlices; k++ {
			used[k] = true
		}
		tuples = append(tuples, fmt.Sprintf("%d:%d", pr.ID, x.start))
	}
	gl.FreeMemory = []int{}
	for k := 0; k < p.MemorySlices; k++ {
		if !used[k] {
			gl.FreeMemory = append(gl.FreeMemory, k)
		}
	}
	if len(tuples) > 0 {
		gl.CreateCommand = fmt.Sprintf("nvidia-smi mig -i %d -cgi %s -C", g, strings.Join(tuples, ","))
	}
	return gl
}

// CIOptions lists the maximal ways to split a GI of profile pr into compute
// instances, most instances first ("3 x 1c.3g.40gb", "2c.3g.40gb +
// 1c.3g.40gb", "3g.40gb").
func CIOptions(pr Profile) []string {
	cis := pr.ComputeInstances
	if len(cis) == 0 {
		return nil
	}
	type combo = []int
	maximal := ciMaximal(pr)
	count := func(c combo) int {
		t := 0
		for _, v := range c {
			t += v
		}
		return t
	}
	sort.SliceStable(maximal, func(a, b int) bool { return count(maximal[a]) > count(maximal[b]) })
	var out []string
	for _, m := range maximal {
		var parts []string
		for i := len(cis) - 1; i >= 0; i-- {
			switch {
			case m[i] == 1:
				parts = append(parts, cis[i].Name)
			case m[i] > 1:
				parts = append(parts, fmt.Sprintf("%d x %s", m[i], cis[i].Name))
			}
		}
		out = append(out, strings.Join(parts, " + "))
	}
	return out
}

// ciMaximal enumerates the maximal multisets (counts per CI profile index)
// of compute instances that fit together in one GI of profile pr, by
// placing CIs left to right on its compute-slice axis.
func ciMaximal(pr Profile) [][]int {
	cis := pr.ComputeInstances
	g := pr.ComputeSlices
	var all [][]int
	cur := make([]int, len(cis))
	var rec func(slot int)
	rec = func(slot int) {
		if slot >= g {
			all = append(all, append([]int(nil), cur...))
			return
		}
		for i, ci := range cis {
			okStart := false
			for _, st := range ci.Starts {
				if st == slot {
					okStart = true
				}
			}
			if !okStart || cur[i] >= ci.MaxCount || slot+ci.ComputeSlices > g {
				continue
			}
			cur[i]++
			rec(slot + ci.ComputeSlices)
			cur[i]--
		}
		rec(slot + 1)
	}
	rec(0)
	seen := map[string]bool{}
	var maximal [][]int
	for _, a := range all {
		ext := false
		for _, b := range all {
			if dominatesInts(b, a) {
				ext = true
				break
			}
		}
		k := fmt.Sprint(a)
		if !ext && !seen[k] {
			seen[k] = true
			maximal = append(maximal, a)
		}
	}
	return maximal
}

// ciBins packs need[i] compute instances of each CI profile i of pr into
// the fewest GIs (mig-parted packs CIs of consecutive entries into one GI
// while they fit, and tries every ordering) and returns each GI's CI counts.
func ciBins(pr Profile, need []int) [][]int {
	maximal := ciMaximal(pr)
	type res struct {
		n    int
		pick []int
	}
	memo := map[string]res{}
	var rec func(rem []int) int
	rec = func(rem []int) int {
		zero := true
		for _, v := range rem {
			if v > 0 {
				zero = false
			}
		}
		if zero {
			return 0
		}
		key := fmt.Sprint(rem)
		if r, ok := memo[key]; ok {
			return r.n
		}
		best, pick := 1<<30, []int(nil)
		for _, m := range maximal {
			next := make([]int, len(rem))
			took := make([]int, len(rem))
			gain := 0
			for i := range rem {
				took[i] = min(rem[i], m[i])
				next[i] = rem[i] - took[i]
				gain += took[i]
			}
			if gain > 0 {
				if v := 1 + rec(next); v < best {
					best, pick = v, took
				}
			}
		}
		memo[key] = res{best, pick}
		return best
	}
	rec(need)
	var bins [][]int
	rem := append([]int(nil), need...)
	for {
		r, ok := memo[fmt.Sprint(rem)]
		if !ok || r.pick == nil {
			return bins
		}
		bins = append(bins, r.pick)
		for i := range rem {
			rem[i] -= r.pick[i]
		}
	}
}

// ciList names the CIs of one GI: counts per CI profile, largest first.
func ciList(pr Profile, counts []int) []string {
	var out []string
	for i := len(pr.ComputeInstances) - 1; i >= 0; i-- {
		for n := 0; n < counts[i]; n++ {
			out = append(out, pr.ComputeInstances[i].Name)
		}
	}
	return out
}

func dominatesInts(b, a []int) bool {
	strict := false
	for i := range a {
		if b[i] < a[i] {
			return false
		}
		if b[i] > a[i] {
			strict = true
		}
	}
	return strict
}

type item struct {
	prof, count, size int
}

// story describes how items overflow a capacity: "3g.40gb x2 uses all 8
// memory slices; 1g.10gb needs 1 more".
func (s *space) story(d demand, size func(int) int, capacity int, what string) string {
	var items []item
	for i := 0; i < s.k; i++ {
		if d[i] > 0 {
			items = append(items, item{i, int(d[i]), size(i)})
		}
	}
	sort.SliceStable(items, func(a, b int) bool { return items[a].size > items[b].size })
	var fit, over []item
	used, need := 0, 0
	for _, it := range items {
		n := 0
		for n < it.count && used+it.size <= capacity && len(over) == 0 {
			used += it.size
			n++
		}
		if n > 0 {
			fit = append(fit, item{it.prof, n, it.size})
		}
		if n < it.count {
			over = append(over, item{it.prof, it.count - n, it.size})
			need += (it.count - n) * it.size
		}
	}
	name := func(list []item) string {
		var parts []string
		for _, it := range list {
			nm := s.p.Profiles[it.prof].Name
			if it.count > 1 {
				nm += fmt.Sprintf(" x%d", it.count)
			}
			parts = append(parts, nm)
		}
		switch len(parts) {
		case 0:
			return "nothing"
		case 1:
			return parts[0]
		}
		return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
	}
	plural := func(list []item, one, many string) string {
		if len(list) == 1 {
			return one
		}
		return many
	}
	usedStr := fmt.Sprintf("%d of %d", used, capacity)
	if used == capacity {
		usedStr = fmt.Sprintf("all %d", capacity)
	}
	return fmt.Sprintf("%s %s %s %s slices; %s %s %d more", name(fit), plural(fit, "uses", "use"), usedStr, what,
		name(over), plural(over, "needs", "need"), need)
}

// explain says in slice terms why d does not fit on n GPUs.
func (s *space) explain(d demand, n int, mp func() (int, demand, bool)) []string {
	p := s.p
	comp, mem, me := s.slices(d)
	var out []string
	gpus := "the GPU"
	if n > 1 {
		gpus = fmt.Sprintf("%d GPUs", n)
	}
	if me > p.MediaExtensionLimit*n {
		var names []string
		for i := 0; i < s.k; i++ {
			if s.me[i] && d[i] > 0 {
				names = append(names, fmt.Sprintf("%s x%d", p.Profiles[i].Name, d[i]))
			}
		}
		out = append(out, fmt.Sprintf("%d media-extension instances (%s), but a GPU has one media-extension set: at most %d on %s",
			me, strings.Join(names, ", "), p.MediaExtensionLimit*n, gpus))
	}
	if comp > p.ComputeSlices*n {
		out = append(out, s.story(d, func(i int) int { return s.comp[i] }, p.ComputeSlices*n, "compute"))
	}
	if mem > p.MemorySlices*n {
		out = append(out, s.story(d, func(i int) int { return s.mem[i] }, p.MemorySlices*n, "memory"))
	}
	if len(out) > 0 {
		return out
	}
	best, part, _ := mp()
	total := d.total()
	if n == 1 {
		l, _ := s.single(part)
		var rest demand
		for i := 0; i < s.k; i++ {
			rest[i] = d[i] - part[i]
		}
		var placedStr []string
		var used [maxSlices]bool
		for _, x := range l {
			pr := p.Profiles[x.prof]
			placedStr = append(placedStr, fmt.Sprintf("%s at %d:%d", pr.Name, x.start, pr.MemorySlices))
			for k := x.start; k < x.start+pr.MemorySlices; k++ {
				used[k] = true
			}
		}
		var free []string
		for k := 0; k < p.MemorySlices; k++ {
			if !used[k] {
				free = append(free, strconv.Itoa(k))
			}
		}
		freeStr := "no memory slice free"
		if len(free) > 0 {
			freeStr = "memory slices " + strings.Join(free, ",") + " free"
		}
		msg := fmt.Sprintf("%d of %d compute and %d of %d memory slices would do, but the placements do not line up", comp, p.ComputeSlices, mem, p.MemorySlices)
		out = append(out, msg)
		var restStr []string
		for i := 0; i < s.k; i++ {
			if rest[i] > 0 {
				pr := p.Profiles[i]
				restStr = append(restStr, fmt.Sprintf("%s (may start only at %s)", pr.Name, pr.PlacementString()))
			}
		}
		out = append(out, fmt.Sprintf("best layout places %d of %d instances (%s), leaving %s; %s does not fit",
			best, total, strings.Join(placedStr, ", "), freeStr, strings.Join(restStr, ", ")))
		return out
	}
	out = append(out, fmt.Sprintf("%d of %d compute and %d of %d memory slices in total would do, but no split over %d GPUs places every instance: at most %d of %d fit",
		comp, p.ComputeSlices*n, mem, p.MemorySlices*n, n, best, total))
	return out
}

// altSearchNodes bounds the feasibility searches made for alternatives.
const altSearchNodes = 1000

// alternatives lists feasible demands close to d: the fewest instances to
// drop, single-instance shrinks, and the number of GPUs d needs.
func (s *space) alternatives(d demand, n int, mp func() (int, demand, bool)) ([]Alternative, bool) {
	p := s.p
	var out []Alternative
	// Checks on more than one GPU may search; keep the total small.
	budget := 256
	if n > 1 {
		budget = 24
	}
	checks := 0
	// Alternatives need not be exhaustive: all their feasibility checks
	// share one node budget, and a check cut short counts as "does not fit".
	spent, incomplete := 0, false
	check := func(x demand, m int) bool {
		dec := s.decide(x, m, max(0, altSearchNodes-spent), nil)
		spent += dec.states
		incomplete = incomplete || !dec.decided
		return dec.fits
	}
	feasible := func(x demand) bool {
		checks++
		return check(x, n)
	}
	// Drops.
	best, part, exact := mp()
	drop := d.total() - best
	if drop > 0 {
		var cands []demand
		var cur demand
		var gen func(i, left int)
		gen = func(i, left int) {
			if len(cands) >= budget {
				return
			}
			if i == s.k {
				if left == 0 {
					x := d
					for j := 0; j < s.k; j++ {
						x[j] -= cur[j]
					}
					cands = append(cands, x)
				}
				return
			}
			for v := min(int(d[i]), left); v >= 0; v-- {
				cur[i] = uint16(v)
				gen(i+1, left-v)
			}
			cur[i] = 0
		}
		gen(0, drop)
		var found []demand
		for _, x := range cands {
			if checks >= budget || len(found) >= 6 {
				break
			}
			if feasible(x) {
				found = append(found, x)
			}
		}
		if len(found) == 0 {
			found = append(found, part)
		}
		sort.SliceStable(found, func(a, b int) bool {
			ca, ma, _ := s.slices(found[a])
			cb, mb, _ := s.slices(found[b])
			if ma != mb {
				return ma > mb
			}
			return ca > cb
		})
		for i, x := range found {
			if i == 3 {
				break
			}
			var dropped demand
			for j := 0; j < s.k; j++ {
				dropped[j] = d[j] - x[j]
			}
			out = append(out, Alternative{Kind: "drop", Change: "drop " + s.describe(dropped), Want: FormatWant(wantsOf(p, x)), GPUs: n})
		}
	}
	// Shrinks: replace one instance by a smaller profile.
	type shrink struct {
		from, to int
		loss     int
	}
	var shrinks []shrink
	for i := 0; i < s.k; i++ {
		if d[i] == 0 {
			continue
		}
		for j := 0; j < s.k; j++ {
			if j == i || s.comp[j] > s.comp[i] || s.mem[j] > s.mem[i] || (s.comp[j] == s.comp[i] && s.mem[j] == s.mem[i]) {
				continue
			}
			if s.me[j] && !s.me[i] {
				continue
			}
			shrinks = append(shrinks, shrink{i, j, (s.mem[i]-s.mem[j])*16 + s.comp[i] - s.comp[j]})
		}
	}
	sort.SliceStable(shrinks, func(a, b int) bool { return shrinks[a].loss < shrinks[b].loss })
	nShrink := 0
	for _, sh := range shrinks {
		if nShrink == 3 || checks >= 2*budget {
			break
		}
		x := d
		x[sh.from]--
		x[sh.to]++
		if int(x[sh.to]) > s.max[sh.to]*n || !feasible(x) {
			continue
		}
		nShrink++
		out = append(out, Alternative{Kind: "shrink",
			Change: fmt.Sprintf("shrink one %s to %s", p.Profiles[sh.from].Name, p.Profiles[sh.to].Name),
			Want:   FormatWant(wantsOf(p, x)), GPUs: n})
	}
	// More GPUs: none fewer than the configuration LP's bound can do.
	first := max(n+1, int(math.Ceil(s.solveLP(d).value-1e-7)))
	for m := first; m <= first+64; m++ {
		if s.bounded(d, m) {
			if check(d, m) {
				out = append(out, Alternative{Kind: "more-gpus", Change: fmt.Sprintf("use %d GPUs", m), Want: FormatWant(wantsOf(p, d)), GPUs: m})
				break
			}
		}
	}
	return out, exact && !incomplete
}

// newMaxPlaced memoises maxPlaced(d, n) for explain and alternatives.
func (s *space) newMaxPlaced(d demand, n int) func() (int, demand, bool) {
	done := false
	var best int
	var part demand
	var exact bool
	return func() (int, demand, bool) {
		if !done {
			best, part, exact = s.maxPlaced(d, n)
			done = true
		}
		return best, part, exact
	}
}

// describe renders a demand as "3g.40gb x2, 1g.10gb".
func (s *space) describe(d demand) string {
	var parts []string
	for _, i := range displayOrder(s.p) {
		switch {
		case d[i] == 1:
			parts = append(parts, s.p.Profiles[i].Name)
		case d[i] > 1:
			parts = append(parts, fmt.Sprintf("%s x%d", s.p.Profiles[i].Name, d[i]))
		}
	}
	return strings.Join(parts, ", ")
}
