package mig

import (
	"errors"
	"math"
)

// ErrGaveUp is returned when a plan search spent its budget before it found
// a layout or proved that none exists (exit 3: the answer is unknown, not no).
var ErrGaveUp = errors.New("gave up")

// The configuration LP of a product.
//
// Covering a demand d with n GPUs means choosing, for each GPU, one maximal
// configuration (every subset of a feasible multiset is feasible, so a GPU
// never needs less than a maximal one): integer counts x_m >= 0, one per
// maximal configuration m, with sum(x) <= n and sum(x_m * m) >= d
// componentwise. Its linear relaxation is small (one row per profile, one
// column per maximal configuration) and strong: it already knows every
// placement rule, because the columns are real layouts. It is solved through
// its dual,
//
//	maximise d·y  subject to  m·y <= 1 for every maximal m,  y >= 0,
//
// whose origin is feasible, so a plain primal simplex needs no first phase.
// Floating point only finds candidates: a demand is declared infeasible
// only by an integer certificate checked exactly (certifies), and feasible
// only by an explicit per-GPU layout.

// lpResult is the optimum of the configuration LP for one demand.
type lpResult struct {
	// value is the fractional number of GPUs the demand needs.
	value float64
	// y is the dual optimum: a weight per profile such that no GPU holds
	// more than weight 1.
	y [MaxProfiles]float64
	// x is the primal optimum: a fractional count per maximal configuration.
	x []float64
}

// lpEps is the tolerance of the simplex's sign tests; the LP's data are
// small integers, so its vertices have small denominators.
const lpEps = 1e-9

// solveLP solves the configuration LP of d. It is bounded because every
// profile appears in some maximal configuration; a pivot limit guards the
// loop all the same (Bland's rule cannot cycle, so the limit is never the
// reason it stops on valid data).
func (s *space) solveLP(d demand) lpResult {
	k, rows := s.k, len(s.maximal)
	cols := k + rows // y_0..y_{k-1}, then one slack per row
	width := cols + 1
	t := make([]float64, (rows+1)*width) // last row: reduced costs; last column: right-hand side
	at := func(r, c int) *float64 { return &t[r*width+c] }
	for r, m := range s.maximal {
		for i := 0; i < k; i++ {
			*at(r, i) = float64(m[i])
		}
		*at(r, k+r) = 1
		*at(r, cols) = 1
	}
	obj := rows
	for i := 0; i < k; i++ {
		*at(obj, i) = -float64(d[i])
	}
	basis := make([]int, rows)
	for r := range basis {
		basis[r] = k + r
	}
	for pivots := 0; pivots < 64*(rows+k); pivots++ {
		enter := -1
		for c := 0; c < cols; c++ { // Bland: the lowest improving column
			if *at(obj, c) < -lpEps {
				enter = c
				break
			}
		}
		if enter < 0 {
			break
		}
		leave, best := -1, math.Inf(1)
		for r := 0; r < rows; r++ {
			a := *at(r, enter)
			if a <= lpEps {
				continue
			}
			ratio := *at(r, cols) / a
			if ratio < best-lpEps || (ratio < best+lpEps && leave >= 0 && basis[r] < basis[leave]) {
				leave, best = r, ratio
			}
		}
		if leave < 0 {
			break // unbounded: cannot happen, see above
		}
		p := *at(leave, enter)
		for c := 0; c < width; c++ {
			*at(leave, c) /= p
		}
		for r := 0; r <= rows; r++ {
			if r == leave {
				continue
			}
			f := *at(r, enter)
			if f == 0 {
				continue
			}
			for c := 0; c < width; c++ {
				*at(r, c) -= f * *at(leave, c)
			}
		}
		basis[leave] = enter
	}
	res := lpResult{value: *at(obj, cols), x: make([]float64, rows)}
	for r, b := range basis {
		if b < k {
			res.y[b] = *at(r, cols)
		}
	}
	for r := 0; r < rows; r++ {
		res.x[r] = *at(obj, k+r) // the dual value of row r is its slack's reduced cost
	}
	return res
}

// certifyScales are the denominators tried when turning a floating dual
// into integer weights.
var certifyScales = [...]int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 15, 16, 18, 20, 21, 24, 28, 30, 35, 36, 40, 42, 48, 56, 60, 63, 70, 72, 84, 105, 120, 140, 168, 210, 252, 280, 420, 840, 2520, 27720}

// certifies looks for integer weights w >= 0 that prove d cannot fit on n
// GPUs: w·d > n · max over maximal configurations of w·m. The check is
// exact integer arithmetic, so a true result is a proof whatever rounding
// the simplex did; it returns the weights and the per-GPU capacity.
func (s *space) certifies(y [MaxProfiles]float64, d demand, n int) (w [MaxProfiles]int, capacity int, ok bool) {
	for _, scale := range certifyScales {
		for i := 0; i < s.k; i++ {
			w[i] = max(0, int(math.Round(y[i]*float64(scale))))
		}
		capacity = 0
		for _, m := range s.maximal {
			v := 0
			for i := 0; i < s.k; i++ {
				v += w[i] * int(m[i])
			}
			capacity = max(capacity, v)
		}
		need := 0
		for i := 0; i < s.k; i++ {
			need += w[i] * int(d[i])
		}
		if capacity > 0 && need > n*capacity {
			return w, capacity, true
		}
	}
	return w, 0, false
}

// lpInfeasible reports whether the configuration LP proves that d needs
// more than n GPUs.
func (s *space) lpInfeasible(d demand, n int) bool {
	lp := s.solveLP(d)
	if lp.value <= float64(n)+1e-7 {
		return false
	}
	_, _, ok := s.certifies(lp.y, d, n)
	return ok
}

// planBudget bounds the exact searches one feasibility decision may make
// (nodes of search, summed over its calls).
const planBudget = 200_000

// firstLookNodes is the share of a decision's budget the plain search gets
// before the LP rounding takes over.
const firstLookNodes = 256

// decision is the answer to "does d fit on n GPUs".
type decision struct {
	cfgs []cfg // one configuration per used GPU, when it fits
	fits bool
	// decided is false when the search gave up (it ran out of budget or
	// stop asked it to end) before it could prove either answer.
	decided bool
	// states counts the search nodes visited.
	states int
}

// decide answers whether d fits on n GPUs of the product, exactly, with
// bounded cost: slice-count caps and the configuration LP's integer
// certificate prove infeasibility; rounding the LP optimum down and
// searching the small remainder exactly builds a layout; only demands in
// the LP's integrality gap fall through to the full search, under budget.
// stop, if not nil, is polled during searches and ends them early.
func (s *space) decide(d demand, n int, budget int, stop func() bool) decision {
	if d.isZero() {
		return decision{fits: true, decided: true}
	}
	if n <= 0 || !s.bounded(d, n) {
		return decision{decided: true}
	}
	spent := 0
	run := func(x demand, m int) (cfgs []cfg, ok, complete bool) {
		last := 0
		cfgs, ok, complete = s.search(x, m, func(nodes int) bool {
			last = nodes
			return spent+nodes > budget || (nodes%1024 == 0 && stop != nil && stop())
		})
		spent += last
		return cfgs, ok, complete
	}
	if n <= 2 {
		cfgs, ok, complete := run(d, n)
		return decision{cfgs: cfgs, fits: ok, decided: complete, states: spent}
	}
	// The plain search, heaviest configurations first, finds the most
	// compact layouts and settles easy demands at once; give it a small
	// share of the budget before the LP.
	look := 0
	cfgs, ok, complete := s.search(d, n, func(nodes int) bool {
		look = nodes
		return nodes > min(firstLookNodes, budget) || (nodes%1024 == 0 && stop != nil && stop())
	})
	spent += look
	if complete {
		return decision{cfgs: cfgs, fits: ok, decided: true, states: spent}
	}
	lp := s.solveLP(d)
	if lp.value > float64(n)+1e-7 {
		if _, _, ok := s.certifies(lp.y, d, n); ok {
			return decision{decided: true, states: spent}
		}
	}
	// Round down, then loosen: give back slack GPUs of each used
	// configuration so the exact search of the remainder has room.
	for _, loosen := range [...]int{0, 1, 2} {
		base, rem, used := s.roundDown(lp.x, d, loosen)
		if used > n {
			continue
		}
		cfgs, ok, _ := run(rem, n-used)
		if ok {
			return decision{cfgs: append(base, cfgs...), fits: true, decided: true, states: spent}
		}
		if spent > budget {
			break
		}
	}
	cfgs, ok, complete = run(d, n)
	return decision{cfgs: cfgs, fits: ok, decided: complete, states: spent}
}

// roundDown takes floor(x_m) - loosen copies of each maximal configuration
// (clipped to what d still needs) and returns them, what d needs beyond
// them, and how many GPUs they use.
func (s *space) roundDown(x []float64, d demand, loosen int) (base []cfg, rem demand, used int) {
	rem = d
	for r, v := range x {
		copies := int(math.Floor(v+1e-9)) - loosen
		for ; copies > 0 && !rem.isZero(); copies-- {
			var c cfg
			for i := 0; i < s.k; i++ {
				c[i] = uint8(min(uint16(s.maximal[r][i]), rem[i]))
				rem[i] -= uint16(c[i])
			}
			base = append(base, c)
		}
	}
	return base, rem, len(base)
}
