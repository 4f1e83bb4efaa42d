package mig

import (
	"context"
	"errors"
	"math/rand"
	"testing"
)

// randomDemand draws a demand near the capacity of n GPUs of s's product:
// the sum of n random feasible configurations, then a few instances more
// or fewer, so that both answers and the LP's boundary cases occur.
func randomDemand(rng *rand.Rand, s *space, feasible []cfg, n int) demand {
	var d demand
	for g := 0; g < n; g++ {
		var f cfg
		if n > 16 || rng.Intn(2) == 0 {
			f = s.maximal[rng.Intn(len(s.maximal))]
		} else {
			f = feasible[rng.Intn(len(feasible))]
		}
		for i := 0; i < s.k; i++ {
			d[i] += uint16(f[i])
		}
	}
	for e := rng.Intn(max(3, n/2)); e > 0; e-- {
		i := rng.Intn(s.k)
		if rng.Intn(3) == 0 && d[i] > 0 {
			d[i]--
		} else {
			d[i]++
		}
	}
	return d
}

func feasibleList(s *space) []cfg {
	out := make([]cfg, 0, len(s.feasible))
	for f := range s.feasible {
		out = append(out, f)
	}
	// Map order is random: sort for reproducible draws.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && lessCfg(out[j], out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// checkDecision fails unless a "fits" decision is a real layout of d on at
// most n GPUs: every GPU's multiset is feasible and together they are d.
func checkDecision(t *testing.T, s *space, d demand, n int, dec decision) {
	t.Helper()
	if !dec.fits {
		return
	}
	if len(dec.cfgs) > n {
		t.Fatalf("%s on %d GPUs: the layout uses %d GPUs", s.describe(d), n, len(dec.cfgs))
	}
	var sum demand
	for _, c := range dec.cfgs {
		if _, ok := s.feasible[c]; !ok {
			t.Fatalf("%s on %d GPUs: configuration %v is not feasible on one GPU", s.describe(d), n, c)
		}
		for i := 0; i < s.k; i++ {
			sum[i] += uint16(c[i])
		}
	}
	if sum != d {
		t.Fatalf("%s on %d GPUs: the layout holds %s", s.describe(d), n, s.describe(sum))
	}
}

// TestDecideMatchesExhaustiveSearch compares the LP-guided decision with
// the plain exhaustive search on 3 to 6 GPUs of every built-in product: an
// LP certificate that proved a feasible demand infeasible, or a rounding
// that built a wrong layout, fails here.
func TestDecideMatchesExhaustiveSearch(t *testing.T) {
	c := Builtin()
	rng := rand.New(rand.NewSource(7))
	for _, p := range c.Products() {
		key := p.Key
		s := c.space(p)
		feasible := feasibleList(s)
		fits, not := 0, 0
		for trial := 0; trial < 400; trial++ {
			n := 3 + rng.Intn(4)
			d := randomDemand(rng, s, feasible, n)
			dec := s.decide(d, n, 1<<30, nil)
			_, want, complete := s.search(d, n, nil)
			if !dec.decided || !complete {
				t.Fatalf("%s %s on %d GPUs: undecided", key, s.describe(d), n)
			}
			if dec.fits != want {
				t.Fatalf("%s %s on %d GPUs: decide says %v, exhaustive search %v", key, s.describe(d), n, dec.fits, want)
			}
			checkDecision(t, s, d, n, dec)
			if want {
				fits++
			} else {
				not++
			}
		}
		if fits == 0 || not == 0 {
			t.Fatalf("%s: the draw gave %d feasible and %d infeasible demands; both must occur", key, fits, not)
		}
	}
}

// TestDecideManyGPUsAlwaysDecides: on 256 and 1,024 GPUs the decision never
// gives up under the default budget, and every layout it builds is valid.
func TestDecideManyGPUsAlwaysDecides(t *testing.T) {
	c := Builtin()
	rng := rand.New(rand.NewSource(11))
	for _, key := range []string{"H100-80GB", "A30-24GB", "A100-40GB"} {
		p, err := c.Lookup(key)
		if err != nil {
			t.Fatal(err)
		}
		s := c.space(p)
		feasible := feasibleList(s)
		for _, n := range []int{256, 1024} {
			fits, not := 0, 0
			for trial := 0; trial < 60; trial++ {
				d := randomDemand(rng, s, feasible, n)
				dec := s.decide(d, n, planBudget, nil)
				if !dec.decided {
					t.Fatalf("%s %s on %d GPUs: gave up after %d states", key, s.describe(d), n, dec.states)
				}
				checkDecision(t, s, d, n, dec)
				if dec.fits {
					fits++
				} else {
					not++
				}
			}
			if fits == 0 || not == 0 {
				t.Fatalf("%s on %d GPUs: %d feasible, %d infeasible draws; both must occur", key, n, fits, not)
			}
		}
	}
}

// TestCertificateIsExact: a certificate is only accepted when the integer
// inequality really separates the demand; weights that merely come close
// (a demand exactly at capacity) are refused.
func TestCertificateIsExact(t *testing.T) {
	c := Builtin()
	p, _ := c.Lookup("H100-80GB")
	s := c.space(p)
	seven, _ := p.Profile("7g.80gb")
	var d demand
	d[seven] = 5
	var y [MaxProfiles]float64
	y[seven] = 1 // every GPU holds at most one 7g
	if _, _, ok := s.certifies(y, d, 5); ok {
		t.Fatal("5 x 7g.80gb on 5 GPUs was certified infeasible")
	}
	w, capacity, ok := s.certifies(y, d, 4)
	if !ok || capacity != 1 || w[seven] != 1 {
		t.Fatalf("5 x 7g.80gb on 4 GPUs: certificate %v cap %d ok %v", w, capacity, ok)
	}
	if lp := s.solveLP(d); lp.value < 4.999 || lp.value > 5.001 {
		t.Fatalf("LP value of 5 x 7g.80gb is %v, want 5", lp.value)
	}
}

// TestPlanGivesUpWithinBudget: a plan whose search budget runs out fails
// with ErrGaveUp (exit 3), never with an answer it could not prove.
func TestPlanGivesUpWithinBudget(t *testing.T) {
	c := Builtin()
	p, _ := c.Lookup("H100-80GB")
	s := c.space(p)
	rng := rand.New(rand.NewSource(5))
	feasible := feasibleList(s)
	const n = 64
	for trial := 0; trial < 200; trial++ {
		d := randomDemand(rng, s, feasible, n)
		if dec := s.decide(d, n, 1, nil); dec.decided {
			continue // settled without search: slice caps, LP certificate or an integral LP
		}
		w := wantsOf(p, d)
		_, err := c.Plan(context.Background(), p, w, PlanOptions{GPUs: n, MaxStates: 1})
		if !errors.Is(err, ErrGaveUp) {
			t.Fatalf("%s with a 1-state budget: %v, want ErrGaveUp", s.describe(d), err)
		}
		if _, err := c.Plan(context.Background(), p, w, PlanOptions{GPUs: n}); err != nil {
			t.Fatalf("%s with the default budget: %v", s.describe(d), err)
		}
		return
	}
	t.Fatal("no demand needed a search: the draw is too easy to test the budget")
}
