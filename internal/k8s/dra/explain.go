package dra

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// explainBudget bounds each search an explanation runs.
const explainBudget = 200_000

// explain says why the claims do not fit on p's node (infeasible: known not
// to fit; otherwise there is nothing to explain), and with o.Explain what
// would fit.
func explain(ctx context.Context, in *Input, p *problem, s *searcher, o Options, infeasible bool) *Explain {
	e := &Explain{}
	if p == nil || !infeasible {
		return e
	}
	// The first request (in allocation order) whose prefix no longer fits.
	type pos struct{ c, r int }
	var order []pos
	for ci, c := range p.claims {
		for ri := range c.requests {
			order = append(order, pos{ci, ri})
		}
	}
	first := -1
	for k := 1; k <= len(order); k++ {
		q := truncate(p, order[k-1].c, order[k-1].r)
		ok, err := solvable(ctx, q)
		if err != nil {
			break
		}
		if !ok {
			first = k - 1
			break
		}
	}
	if first < 0 {
		e.Reason = "the claims do not fit together (gpunode could not single out one request within its budget)"
		return e
	}
	ci, ri := order[first].c, order[first].r
	c := &p.claims[ci]
	req := &c.requests[ri]
	a := &req.alts[0]
	f := &Failing{Claim: c.key, Request: req.name, Class: a.class, Needed: a.count, Matching: a.matched, Tainted: a.tainted}
	for _, d := range a.cands {
		if !p.inUse[d] {
			f.Free++
		}
	}
	if a.all {
		f.Needed = a.matched
	}
	parts := []string{fmt.Sprintf("%d devices match class %s and the selectors", a.matched, a.class)}
	if a.tainted > 0 {
		parts = append(parts, fmt.Sprintf("%d of them have taints the request does not tolerate", a.tainted))
	}
	parts = append(parts, fmt.Sprintf("%d are free; %d needed", f.Free, f.Needed))
	// The limiting constraint, in numbers.
	for _, k := range c.constraints {
		if k.kind != matchConstraint || !k.covers(a) {
			continue
		}
		need := 0
		for _, r := range c.requests {
			if k.covers(&r.alts[0]) {
				need += r.alts[0].count
			}
		}
		free := map[string]int{}
		name := splitAttrName(k.attr)
		for _, r := range c.requests {
			if !k.covers(&r.alts[0]) {
				continue
			}
			for _, d := range r.alts[0].cands {
				if !p.inUse[d] {
					free[attrKey(name.of(&p.devices[d]))]++
				}
			}
		}
		best, bestV := 0, ""
		for v, n := range free {
			if v != "" && (n > best || n == best && v < bestV) {
				best, bestV = n, v
			}
		}
		f.Constraint = fmt.Sprintf("matchAttribute %s: the largest group (%s) has %d free, %d needed", k.attr, strings.SplitN(bestV, ":", 2)[len(strings.SplitN(bestV, ":", 2))-1], best, need)
		parts = append(parts, f.Constraint)
		break
	}
	if f.Constraint == "" {
		// Counter bound: how many of the candidates fit in the counters.
		q := truncate(p, ci, ri)
		sq := newSearcher(ctx, q, explainBudget)
		if ok, got := sq.boundDetail(0, 0); !ok {
			f.Constraint = fmt.Sprintf("at most %d of the %d devices these requests need can be allocated at once (free devices, shared counters of partitionable devices)", got[0], got[1])
			parts = append(parts, f.Constraint)
		}
	}
	e.Failing = f
	e.Reason = fmt.Sprintf("claim %s, request %s: %s", c.key, req.name, strings.Join(parts, "; "))
	if o.Explain {
		e.NearestFits = nearest(ctx, in, p, ci, ri)
	}
	return e
}

// solvable runs the exact search on p with the explanation budget.
func solvable(ctx context.Context, p *problem) (bool, error) {
	s := newSearcher(ctx, p, explainBudget)
	sol, err := s.solve()
	return sol != nil, err
}

// truncate keeps claims before ci and claim ci's requests up to ri.
func truncate(p *problem, ci, ri int) *problem {
	q := *p
	q.claims = slices.Clone(p.claims[:ci+1])
	last := q.claims[ci]
	last.requests = last.requests[:ri+1]
	q.claims[ci] = last
	return &q
}

var quoted = regexp.MustCompile(`'([^']*)'|"([^"]*)"`)

// nearest tries the smallest changes of the failing request: a lower count,
// the claim without one of its constraints, another MIG profile.
func nearest(ctx context.Context, in *Input, p *problem, ci, ri int) []string {
	var out []string
	c := &p.claims[ci]
	req := &c.requests[ri]
	a := &req.alts[0]
	// Lower count.
	if !a.all && len(req.alts) == 1 {
		for n := a.count - 1; n >= 1; n-- {
			q := cloneProblem(p)
			q.claims[ci].requests[ri].alts[0].count = n
			if ok, err := solvable(ctx, q); err == nil && ok {
				out = append(out, fmt.Sprintf("claim %s, request %s: count %d instead of %d fits", c.key, req.name, n, a.count))
				break
			}
		}
	}
	// Without one constraint.
	for k := range c.constraints {
		q := cloneProblem(p)
		q.claims[ci].constraints = slices.Delete(slices.Clone(c.constraints), k, k+1)
		if ok, err := solvable(ctx, q); err == nil && ok {
			kind := "matchAttribute"
			if c.constraints[k].kind == distinctConstraint {
				kind = "distinctAttribute"
			}
			out = append(out, fmt.Sprintf("claim %s without constraint %s %s fits", c.key, kind, c.constraints[k].attr))
		}
	}
	// Another profile: a quoted literal in the request's selectors that is
	// some device's profile attribute, replaced by each other profile.
	claim := in.Claims[ci]
	r := claim.Spec.Devices.Requests[ri]
	if r.Exactly == nil {
		return out
	}
	profiles := map[string]bool{}
	var plist []string
	profileAttr := splitAttrName("gpu.nvidia.com/profile")
	for i := range p.devices {
		if v := profileAttr.of(&p.devices[i]); v.StringValue != nil && !profiles[*v.StringValue] {
			profiles[*v.StringValue] = true
			plist = append(plist, *v.StringValue)
		}
	}
	slices.Sort(plist)
	for si, sel := range r.Exactly.Selectors {
		if sel.CEL == nil {
			continue
		}
		for _, m := range quoted.FindAllStringSubmatch(sel.CEL.Expression, -1) {
			lit := m[1] + m[2]
			if !profiles[lit] {
				continue
			}
			for _, other := range plist {
				if other == lit {
					continue
				}
				mod := claim.DeepCopy()
				mod.Spec.Devices.Requests[ri].Exactly.Selectors[si].CEL.Expression = strings.ReplaceAll(sel.CEL.Expression, lit, other)
				in2 := *in
				in2.Claims = slices.Clone(in.Claims)
				in2.Claims[ci] = mod
				q, err := buildProblem(ctx, &in2, p.node)
				if err != nil {
					continue
				}
				if ok, err := solvable(ctx, q); err == nil && ok {
					out = append(out, fmt.Sprintf("claim %s, request %s: profile %s instead of %s fits", c.key, req.name, other, lit))
					break
				}
			}
		}
	}
	return out
}

func cloneProblem(p *problem) *problem {
	q := *p
	q.claims = slices.Clone(p.claims)
	for i := range q.claims {
		q.claims[i].requests = slices.Clone(q.claims[i].requests)
		for j := range q.claims[i].requests {
			q.claims[i].requests[j].alts = slices.Clone(q.claims[i].requests[j].alts)
		}
	}
	return &q
}
