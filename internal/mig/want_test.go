package mig

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestParseWant(t *testing.T) {
	got, err := ParseWant("3g.40gb=1, 2g.20gb=1,1g.10gb=2,3G.40GB=2,1g.10gb+me")
	if err != nil {
		t.Fatal(err)
	}
	if s := FormatWant(got); s != "3g.40gb=3,2g.20gb=1,1g.10gb=2,1g.10gb+me=1" {
		t.Errorf("got %s", s)
	}
	for in, msg := range map[string]string{
		"":             "empty demand",
		"3g.40gb=x":    "is not a number",
		"3g.40gb=-1":   "out of range",
		"=2":           "has no profile name",
		"a=1,,b=2":     "empty item",
		"a=99999":      "out of range",
		"a=4000,a=200": "out of range",
	} {
		if _, err := ParseWant(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseWant(%q) err %v, want %q", in, err, msg)
		}
	}
}

func FuzzParseWant(f *testing.F) {
	for _, s := range []string{"3g.40gb=1,2g.20gb=1,1g.10gb=2", "1g.10gb", "x=1,x=2", "=", "1c.3g.40gb=3", "9=1"} {
		f.Add(s)
	}
	c := Builtin()
	p, _ := c.Lookup("H100-80GB")
	f.Fuzz(func(t *testing.T, s string) {
		w, err := ParseWant(s)
		if err != nil {
			return
		}
		total := 0
		for _, x := range w {
			if x.Count < 0 || x.Count > maxWantCount || strings.TrimSpace(x.Profile) == "" {
				t.Fatalf("bad item %+v from %q", x, s)
			}
			total += x.Count
		}
		// FormatWant output parses back to the same demand.
		if f := FormatWant(w); f != "" {
			w2, err := ParseWant(f)
			if err != nil || FormatWant(w2) != f {
				t.Fatalf("%q -> %q -> %v %v", s, f, w2, err)
			}
		}
		// Planning never panics; errors are demand errors.
		pl, err := c.Plan(context.Background(), p, w, PlanOptions{GPUs: 2})
		if err != nil {
			if !errors.Is(err, ErrBadDemand) {
				t.Fatalf("plan %q: %v", s, err)
			}
			return
		}
		if pl.Feasible {
			d, _ := c.Resolve(p, w, 2)
			if err := checkLayouts(p, d, 2, pl.Layouts); err != nil {
				t.Fatalf("plan %q: %v", s, err)
			}
		}
	})
}

// BenchmarkPlan8GPUs plans heavy demands on 8 GPUs (the target is under
// 1 ms per plan, alternatives included for infeasible ones).
func BenchmarkPlan8GPUs(b *testing.B) {
	c := Builtin()
	p, _ := c.Lookup("H100-80GB")
	ctx := context.Background()
	demands := []string{
		"3g.40gb=8,2g.20gb=8,1g.10gb=16",                                   // feasible, fills 8 GPUs
		"1g.10gb=20,1g.20gb=10,2g.20gb=6,3g.40gb=4,4g.40gb=2,1g.10gb+me=4", // feasible, mixed
		"3g.40gb=9,4g.40gb=6,1g.10gb=7",                                    // infeasible: bin packing
		"7g.80gb=2,4g.40gb=4,3g.40gb=6,2g.20gb=6,1g.20gb=8,1g.10gb=12",     // infeasible, heavy
		"1g.10gb=56",                        // feasible, one profile
		"2g.20gb=17,1g.10gb+me=8,3g.40gb=3", // infeasible by slices
		"4g.40gb=4,3g.40gb=4,2g.20gb=8,1g.20gb=3,1g.10gb=2,1g.10gb+me=7", // tight: fits by slices, not by packing
		"1c.3g.40gb=20,2c.3g.40gb=4,1c.7g.80gb=7",                        // compute-instance forms
	}
	var wants [][]Want
	for _, d := range demands {
		w, err := ParseWant(d)
		if err != nil {
			b.Fatal(err)
		}
		wants = append(wants, w)
	}
	// Warm the catalogue's configuration cache.
	if _, err := c.Plan(ctx, p, wants[0], PlanOptions{GPUs: 8}); err != nil {
		b.Fatal(err)
	}
	for i, w := range wants {
		b.Run(strings.ReplaceAll(demands[i], ",", "+"), func(b *testing.B) {
			for b.Loop() {
				if _, err := c.Plan(ctx, p, w, PlanOptions{GPUs: 8}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
