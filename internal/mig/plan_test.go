package mig

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// oracle decides single-GPU feasibility by brute force, independently of the
// planner's left-to-right enumeration: it expands the demand into instances
// and tries every placement of every instance (same-profile instances take
// increasing starts), checking overlap with a bitmask and the compute and
// media-extension totals at the end.
type oracle struct {
	p    *Product
	memo map[demand]bool
}

func newOracle(p *Product) *oracle { return &oracle{p: p, memo: map[demand]bool{}} }

func (o *oracle) fits(d demand) bool {
	if v, ok := o.memo[d]; ok {
		return v
	}
	v := o.place(d) != nil
	o.memo[d] = v
	return v
}

// place returns a layout (profile, start) pairs or nil.
func (o *oracle) place(d demand) [][2]int {
	p := o.p
	var inst []int
	compute, me := 0, 0
	for i, pr := range p.Profiles {
		if int(d[i]) > pr.MaxCount {
			return nil
		}
		for n := 0; n < int(d[i]); n++ {
			inst = append(inst, i)
			compute += pr.ComputeSlices
			if pr.MediaExtensions {
				me++
			}
		}
	}
	if compute > p.ComputeSlices || me > p.MediaExtensionLimit {
		return nil
	}
	out := make([][2]int, len(inst))
	var rec func(k int, mask uint32) bool
	rec = func(k int, mask uint32) bool {
		if k == len(inst) {
			return true
		}
		pr := p.Profiles[inst[k]]
		for _, st := range pr.Starts {
			if k > 0 && inst[k-1] == inst[k] && st <= out[k-1][1] {
				continue
			}
			if st+pr.MemorySlices > p.MemorySlices {
				continue
			}
			m := uint32((1<<pr.MemorySlices)-1) << st
			if mask&m != 0 {
				continue
			}
			out[k] = [2]int{inst[k], st}
			if rec(k+1, mask|m) {
				return true
			}
		}
		return false
	}
	if rec(0, 0) {
		return out
	}
	return nil
}

// fitsN decides feasibility on n GPUs from the single-GPU oracle by trying
// every split of the demand (no dominance pruning, no configuration list).
func (o *oracle) fitsN(d demand, n int, memo map[memoKey]bool) bool {
	if d.isZero() {
		return true
	}
	if n == 1 {
		return o.fits(d)
	}
	key := memoKey{d, n}
	if v, ok := memo[key]; ok {
		return v
	}
	k := len(o.p.Profiles)
	var part demand
	res := false
	var rec func(i int) bool
	rec = func(i int) bool {
		if i == k {
			if part.isZero() || !o.fits(part) {
				return false
			}
			rest := d
			for j := 0; j < k; j++ {
				rest[j] -= part[j]
			}
			return o.fitsN(rest, n-1, memo)
		}
		for v := 0; v <= int(d[i]); v++ {
			part[i] = uint16(v)
			if rec(i + 1) {
				return true
			}
		}
		part[i] = 0
		return false
	}
	res = rec(0)
	memo[key] = res
	return res
}

// checkLayouts verifies a plan's layouts independently: every instance of
// the demand is placed exactly once, at an allowed start, inside the GPU,
// without overlap, within the per-profile maxima, the compute-slice total
// and the media-extension limit.
func checkLayouts(p *Product, d demand, n int, layouts []GPULayout) error {
	if len(layouts) != n {
		return fmt.Errorf("%d layouts for %d GPUs", len(layouts), n)
	}
	var got demand
	for _, gl := range layouts {
		var mask uint32
		compute, me := 0, 0
		counts := map[string]int{}
		orderSeen := map[int]bool{}
		for _, in := range gl.Instances {
			i, ok := p.Profile(in.Profile)
			if !ok {
				return fmt.Errorf("gpu %d: unknown profile %s", gl.GPU, in.Profile)
			}
			pr := p.Profiles[i]
			if in.ProfileID != pr.ID || in.Placement.Size != pr.MemorySlices {
				return fmt.Errorf("gpu %d: %s: id %d size %d", gl.GPU, in.Profile, in.ProfileID, in.Placement.Size)
			}
			allowed := false
			for _, st := range pr.Starts {
				if st == in.Placement.Start {
					allowed = true
				}
			}
			if !allowed || in.Placement.Start+pr.MemorySlices > p.MemorySlices {
				return fmt.Errorf("gpu %d: %s at %v not an allowed placement", gl.GPU, in.Profile, in.Placement)
			}
			m := uint32((1<<pr.MemorySlices)-1) << in.Placement.Start
			if mask&m != 0 {
				return fmt.Errorf("gpu %d: %s at %v overlaps", gl.GPU, in.Profile, in.Placement)
			}
			mask |= m
			compute += pr.ComputeSlices
			if pr.MediaExtensions {
				me++
			}
			counts[pr.Name]++
			if counts[pr.Name] > pr.MaxCount {
				return fmt.Errorf("gpu %d: %s x%d beyond max %d", gl.GPU, pr.Name, counts[pr.Name], pr.MaxCount)
			}
			if orderSeen[in.Order] {
				return fmt.Errorf("gpu %d: duplicate order %d", gl.GPU, in.Order)
			}
			orderSeen[in.Order] = true
			got[i]++
		}
		if compute > p.ComputeSlices || me > p.MediaExtensionLimit {
			return fmt.Errorf("gpu %d: compute %d media %d beyond limits", gl.GPU, compute, me)
		}
		// Larger instances are created first.
		for a := 1; a < len(gl.Instances); a++ {
			if gl.Instances[a].Placement.Size > gl.Instances[a-1].Placement.Size {
				return fmt.Errorf("gpu %d: creation order puts %s before %s", gl.GPU, gl.Instances[a-1].Profile, gl.Instances[a].Profile)
			}
		}
	}
	if got != d {
		return fmt.Errorf("placed %v, want %v", got, d)
	}
	return nil
}

// forEachDemand calls f for every demand with d[i] in 0..bound(i).
func forEachDemand(k int, bound func(int) int, f func(demand)) {
	var d demand
	var rec func(i int)
	rec = func(i int) {
		if i == k {
			f(d)
			return
		}
		for v := 0; v <= bound(i); v++ {
			d[i] = uint16(v)
			rec(i + 1)
		}
		d[i] = 0
	}
	rec(0)
}

func TestExhaustiveOneGPU(t *testing.T) {
	c, products := allProducts(t)
	for _, p := range products {
		t.Run(p.Key, func(t *testing.T) {
			o := newOracle(p)
			s := c.space(p)
			feasible, total := 0, 0
			// One beyond each maximum, so over-max demands are covered too.
			forEachDemand(len(p.Profiles), func(i int) int { return p.Profiles[i].MaxCount + 1 }, func(d demand) {
				total++
				want := o.fits(d)
				cfgs, got := s.solve(d, 1)
				if got != want {
					t.Fatalf("%s: planner says %v, oracle says %v", s.describe(d), got, want)
				}
				if !got {
					return
				}
				feasible++
				if err := checkLayouts(p, d, 1, s.layouts(cfgs, 1, false, nil)); err != nil {
					t.Fatalf("%s: %v", s.describe(d), err)
				}
			})
			if feasible == 0 || feasible == total {
				t.Fatalf("degenerate space: %d of %d feasible", feasible, total)
			}
			if feasible != len(s.feasible) {
				t.Fatalf("oracle finds %d feasible multisets, planner enumerated %d", feasible, len(s.feasible))
			}
		})
	}
}

func TestExhaustiveTwoGPUs(t *testing.T) {
	c, products := allProducts(t)
	for _, p := range products {
		t.Run(p.Key, func(t *testing.T) {
			o := newOracle(p)
			s := c.space(p)
			memo := map[memoKey]bool{}
			n := 0
			forEachDemand(len(p.Profiles), func(i int) int { return min(2*p.Profiles[i].MaxCount, 3) }, func(d demand) {
				n++
				want := o.fitsN(d, 2, memo)
				cfgs, got := s.solve(d, 2)
				if got != want {
					t.Fatalf("%s on 2 GPUs: planner says %v, oracle says %v", s.describe(d), got, want)
				}
				if got {
					if err := checkLayouts(p, d, 2, s.layouts(cfgs, 2, false, nil)); err != nil {
						t.Fatalf("%s: %v", s.describe(d), err)
					}
				}
			})
			if n < 40 {
				t.Fatalf("only %d demands checked", n)
			}
		})
	}
}

// TestRandomManyGPUs checks 3- and 4-GPU plans against the split oracle on
// random demands (fixed seed).
func TestRandomManyGPUs(t *testing.T) {
	c, _ := allProducts(t)
	rng := rand.New(rand.NewSource(7))
	for _, key := range []string{"A100-40GB", "A30-24GB", "H100-80GB", "MOCK-H100", "SKEW"} {
		p, err := c.Lookup(key)
		if err != nil {
			t.Fatal(err)
		}
		o := newOracle(p)
		s := c.space(p)
		for _, n := range []int{3, 4} {
			memo := map[memoKey]bool{}
			for trial := 0; trial < 150; trial++ {
				var d demand
				for i, pr := range p.Profiles {
					if rng.Intn(3) == 0 {
						d[i] = uint16(rng.Intn(min(pr.MaxCount*n, 5) + 1))
					}
				}
				want := o.fitsN(d, n, memo)
				cfgs, got := s.solve(d, n)
				if got != want {
					t.Fatalf("%s %s on %d GPUs: planner %v, oracle %v", key, s.describe(d), n, got, want)
				}
				if got {
					if err := checkLayouts(p, d, n, s.layouts(cfgs, n, false, nil)); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
}

func TestPlanAlternativesAreFeasible(t *testing.T) {
	c, _ := allProducts(t)
	ctx := context.Background()
	for _, key := range []string{"A100-40GB", "A30-24GB", "B200-180GB", "SKEW", "MOCK-H100"} {
		p, _ := c.Lookup(key)
		o := newOracle(p)
		s := c.space(p)
		infeasible := 0
		forEachDemand(len(p.Profiles), func(i int) int { return p.Profiles[i].MaxCount }, func(d demand) {
			if o.fits(d) {
				return
			}
			infeasible++
			if infeasible%7 != 0 { // a spread sample keeps the test fast
				return
			}
			pl, err := c.Plan(ctx, p, wantsOf(p, d), PlanOptions{GPUs: 1})
			if err != nil {
				t.Fatal(err)
			}
			if pl.Feasible || len(pl.Reasons) == 0 {
				t.Fatalf("%s: feasible=%v reasons=%v", s.describe(d), pl.Feasible, pl.Reasons)
			}
			drops := 0
			for _, a := range pl.Alternatives {
				ws, err := ParseWant(a.Want)
				if err != nil {
					t.Fatalf("alternative %q: %v", a.Want, err)
				}
				ad, err := c.Resolve(p, ws, a.GPUs)
				if err != nil {
					t.Fatal(err)
				}
				if !o.fitsN(ad, a.GPUs, map[memoKey]bool{}) {
					t.Fatalf("%s: alternative %+v is not feasible", s.describe(d), a)
				}
				if a.Kind == "drop" {
					drops++
					// The drop is minimal: the oracle finds no feasible
					// sub-demand that keeps one more instance.
					if best := bestKept(o, d); ad.total() != best {
						t.Fatalf("%s: drop alternative keeps %d instances, best keeps %d", s.describe(d), ad.total(), best)
					}
				}
			}
			if drops == 0 {
				t.Fatalf("%s: no drop alternative", s.describe(d))
			}
		})
		if infeasible == 0 {
			t.Fatalf("%s: no infeasible demand", key)
		}
	}
}

// bestKept is the largest feasible sub-demand size of d, by brute force.
func bestKept(o *oracle, d demand) int {
	best := 0
	k := len(o.p.Profiles)
	forEachDemand(k, func(i int) int { return int(d[i]) }, func(x demand) {
		if x.total() > best && o.fits(x) {
			best = x.total()
		}
	})
	return best
}

func TestExplainSliceTerms(t *testing.T) {
	c := Builtin()
	p, _ := c.Lookup("H100-80GB")
	cases := []struct {
		want, reason string
	}{
		{"3g.40gb=2,1g.10gb=1", "3g.40gb x2 uses all 8 memory slices; 1g.10gb needs 1 more"},
		{"4g.40gb=1,2g.20gb=2", "4g.40gb and 2g.20gb use 6 of 7 compute slices; 2g.20gb needs 2 more"},
		{"1g.10gb+me=2", "2 media-extension instances (1g.10gb+me x2), but a GPU has one media-extension set: at most 1 on the GPU"},
	}
	for _, tc := range cases {
		ws, err := ParseWant(tc.want)
		if err != nil {
			t.Fatal(err)
		}
		// 1g.10gb+me=2 is beyond the per-GPU max: plan it on 2 GPUs' worth
		// of max but check the explanation directly.
		d := demand{}
		for _, w := range ws {
			i, _, err := c.resolveProfile(p, w.Profile)
			if err != nil {
				t.Fatal(err)
			}
			d[i] += uint16(w.Count)
		}
		got := strings.Join(c.space(p).explain(d, 1, c.space(p).newMaxPlaced(d, 1)), " | ")
		if !strings.Contains(got, tc.reason) {
			t.Errorf("%s: reasons %q, want %q", tc.want, got, tc.reason)
		}
	}
}

// syntheticProducts have placement rules under which slice counts alone do
// not decide feasibility (on every catalogued product they do), so the
// exhaustive tests also exercise real placement conflicts.
func syntheticProducts() []Product {
	return []Product{
		{Key: "ODD", ComputeSlices: 4, MemorySlices: 4, MediaExtensionLimit: 1, Source: "test", Profiles: []Profile{
			{ID: 1, Name: "1g.1gb", ComputeSlices: 1, MemorySlices: 1, MaxCount: 4, Starts: []int{0, 1, 2}},
			{ID: 2, Name: "2g.2gb", ComputeSlices: 2, MemorySlices: 2, MaxCount: 1, Starts: []int{1}},
			{ID: 3, Name: "1g.1gb+me", ComputeSlices: 1, MemorySlices: 1, MaxCount: 2, Starts: []int{3}, MediaExtensions: true},
		}},
		{Key: "MOCK-H100", ComputeSlices: 7, MemorySlices: 8, MediaExtensionLimit: 1, Source: "test", Profiles: []Profile{
			{ID: 19, Name: "1g.10gb", ComputeSlices: 1, MemorySlices: 1, MaxCount: 7, Starts: []int{0, 1, 2, 3, 4, 5, 6}},
			{ID: 15, Name: "1g.20gb", ComputeSlices: 1, MemorySlices: 2, MaxCount: 4, Starts: []int{0, 2, 4, 6}},
			{ID: 14, Name: "2g.20gb", ComputeSlices: 2, MemorySlices: 2, MaxCount: 3, Starts: []int{0, 2, 4}},
			{ID: 9, Name: "3g.40gb", ComputeSlices: 3, MemorySlices: 3, MaxCount: 2, Starts: []int{0, 4}},
			{ID: 5, Name: "4g.40gb", ComputeSlices: 4, MemorySlices: 4, MaxCount: 1, Starts: []int{0}},
			{ID: 0, Name: "7g.80gb", ComputeSlices: 7, MemorySlices: 7, MaxCount: 1, Starts: []int{0}},
		}},
		{Key: "SKEW", ComputeSlices: 6, MemorySlices: 8, MediaExtensionLimit: 2, Source: "test", Profiles: []Profile{
			{ID: 1, Name: "1g.1gb", ComputeSlices: 1, MemorySlices: 1, MaxCount: 4, Starts: []int{1, 3, 5, 7}},
			{ID: 2, Name: "1g.2gb", ComputeSlices: 1, MemorySlices: 2, MaxCount: 3, Starts: []int{0, 3, 6}},
			{ID: 3, Name: "2g.3gb", ComputeSlices: 2, MemorySlices: 3, MaxCount: 2, Starts: []int{0, 2, 5}},
			{ID: 4, Name: "1g.1gb+me", ComputeSlices: 1, MemorySlices: 1, MaxCount: 2, Starts: []int{0, 4}, MediaExtensions: true},
		}},
	}
}

func allProducts(t *testing.T) (*Catalogue, []*Product) {
	t.Helper()
	c, err := NewCatalogue(append(builtinProducts(), syntheticProducts()...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c, c.Products()
}

func TestPlacementConflictExplained(t *testing.T) {
	// Find a demand that fits by slice counts but not by placement and
	// check that the explanation talks about placements.
	c, _ := allProducts(t)
	p, _ := c.Lookup("ODD")
	s := c.space(p)
	o := newOracle(p)
	found := false
	forEachDemand(len(p.Profiles), func(i int) int { return p.Profiles[i].MaxCount }, func(d demand) {
		if found || !s.bounded(d, 1) || o.fits(d) {
			return
		}
		found = true
		r := strings.Join(s.explain(d, 1, s.newMaxPlaced(d, 1)), " | ")
		if !strings.Contains(r, "placements do not line up") || !strings.Contains(r, "may start only at") {
			t.Errorf("%s: %s", s.describe(d), r)
		}
	})
	if !found {
		t.Fatal("no placement-only conflict found")
	}
}

func TestResolveErrors(t *testing.T) {
	c := Builtin()
	p, _ := c.Lookup("H100-80GB")
	cases := []struct{ want, msg string }{
		{"3g.20gb=1", `profile "3g.20gb" belongs to A100-40GB, not H100-80GB; on H100-80GB did you mean 3g.40gb?`},
		{"3g.41gb=1", `did you mean 3g.40gb?`},
		{"1g.10gb=8", `1g.10gb x8 exceeds the maximum of 7 per GPU (7 on 1 GPU(s))`},
		{"5c.3g.40gb=1", `is not a compute-instance profile of 3g.40gb`},
		{"42=1", `has no profile with ID 42`},
	}
	for _, tc := range cases {
		ws, err := ParseWant(tc.want)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Resolve(p, ws, 1)
		if err == nil || !errors.Is(err, ErrBadDemand) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: err %v, want %q", tc.want, err, tc.msg)
		}
	}
	// IDs resolve to their GI; CI forms pack into as few GIs as hold them
	// (as mig-parted reuses a GI for consecutive CIs of its profile).
	i3, _ := p.Profile("3g.40gb")
	i1, _ := p.Profile("1g.10gb")
	i7, _ := p.Profile("7g.80gb")
	for _, tc := range []struct {
		want       string
		g3, g1, g7 uint16
	}{
		{"1c.3g.40gb=1,9=1,1G.10GB", 2, 1, 0},
		{"1c.3g.40gb=3", 1, 0, 0},
		{"1c.3g.40gb=4", 2, 0, 0},
		{"2c.3g.40gb=1,1c.3g.40gb=1", 1, 0, 0},
		{"2c.3g.40gb=2", 2, 0, 0},
		{"3c.3g.40gb=2", 2, 0, 0},
		{"4c.7g.80gb=1,3c.7g.80gb=1", 0, 0, 1},
		{"3c.7g.80gb=2,1c.7g.80gb=1", 0, 0, 1},
		{"4c.7g.80gb=1,2c.7g.80gb=2", 0, 0, 2},
	} {
		ws, err := ParseWant(tc.want)
		if err != nil {
			t.Fatal(err)
		}
		d, err := c.Resolve(p, ws, 2)
		if err != nil {
			t.Fatalf("%s: %v", tc.want, err)
		}
		if d[i3] != tc.g3 || d[i1] != tc.g1 || d[i7] != tc.g7 {
			t.Errorf("%s: resolved 3g=%d 1g=%d 7g=%d, want %d %d %d", tc.want, d[i3], d[i1], d[i7], tc.g3, tc.g1, tc.g7)
		}
	}
}

func TestLookup(t *testing.T) {
	c := Builtin()
	cases := map[string]string{
		"NVIDIA H100 80GB HBM3":   "H100-80GB",
		"h100-80gb":               "H100-80GB",
		"NVIDIA A100-SXM4-40GB":   "A100-40GB",
		"A100-SXM4-40GB":          "A100-40GB",
		"a100-80gb":               "A100-80GB",
		"A30-24GB":                "A30-24GB",
		"H100-94GB-NVL":           "H100-94GB-NVL",
		"NVIDIA H100 NVL":         "H100-94GB-NVL",
		"NVIDIA H200":             "H200-141GB",
		"H200-141GB":              "H200-141GB",
		"NVIDIA GH200 480GB":      "GH200-96GB",
		"GH200-96GB":              "GH200-96GB",
		"GH200-144GB":             "GH200-144GB",
		"NVIDIA GH200 144G HBM3e": "GH200-144GB",
		"B200-180GB":              "B200-180GB",
		"NVIDIA B200":             "B200-180GB",
		"0x2330":                  "H100-80GB",
		"0x233010DE":              "H100-80GB",
		"20b7":                    "A30-24GB",
		"0x2901":                  "B200-180GB",
	}
	for in, want := range cases {
		p, err := c.Lookup(in)
		if err != nil || p.Key != want {
			t.Errorf("Lookup(%q) = %v, %v; want %s", in, p, err, want)
		}
	}
	for in, want := range map[string]error{
		"NVIDIA L40S":      ErrNotMIGCapable,
		"Tesla V100-SXM2":  ErrNotMIGCapable,
		"H100-81GB":        ErrUnknownModel,
		"0x1DB6":           ErrUnknownModel,
		"":                 ErrUnknownModel,
		"0x233011DE":       ErrUnknownModel,
		"NVIDIA A100 42GB": ErrUnknownModel,
		"A100":             ErrUnknownModel,
		"GH200":            ErrUnknownModel,
	} {
		if _, err := c.Lookup(in); !errors.Is(err, want) {
			t.Errorf("Lookup(%q) err %v, want %v", in, err, want)
		}
	}
}

func TestPlanPacksComputeInstances(t *testing.T) {
	c := Builtin()
	p, _ := c.Lookup("H100-80GB")
	ws, _ := ParseWant("1c.3g.40gb=4,2c.3g.40gb=1,3g.40gb=1,1g.10gb=1")
	pl, err := c.Plan(context.Background(), p, ws, PlanOptions{GPUs: 2})
	if err != nil || !pl.Feasible {
		t.Fatalf("%v %+v", err, pl)
	}
	// 4 x 1c + 1 x 2c pack into two 3g GIs (3 x 1c | 2c + 1c), plus one
	// full 3g: three 3g.40gb GIs carrying 5 + 1 CIs.
	var gis, cis, slices int
	for _, gl := range pl.Layouts {
		for _, in := range gl.Instances {
			if in.Profile != "3g.40gb" {
				continue
			}
			gis++
			for _, ci := range in.ComputeInstances {
				cis++
				switch ci {
				case "1c.3g.40gb":
					slices++
				case "2c.3g.40gb":
					slices += 2
				case "3g.40gb":
					slices += 3
				}
			}
		}
	}
	if gis != 3 || cis != 6 || slices != 9 {
		t.Errorf("3g GIs %d, CIs %d, CI slices %d; want 3, 6, 9", gis, cis, slices)
	}
}

func TestLookupAmbiguous(t *testing.T) {
	_, err := Builtin().Lookup("a100")
	if err == nil || !strings.Contains(err.Error(), `"a100" is ambiguous: one of A100-40GB, A100-80GB`) {
		t.Errorf("err %v", err)
	}
}

func TestCIOptions(t *testing.T) {
	p, _ := Builtin().Lookup("H100-80GB")
	i, _ := p.Profile("3g.40gb")
	got := strings.Join(CIOptions(p.Profiles[i]), " | ")
	if got != "3 x 1c.3g.40gb | 2c.3g.40gb + 1c.3g.40gb | 3g.40gb" {
		t.Errorf("3g options: %s", got)
	}
	i, _ = p.Profile("7g.80gb")
	opts := CIOptions(p.Profiles[i])
	if opts[0] != "7 x 1c.7g.80gb" || opts[len(opts)-1] != "7g.80gb" {
		t.Errorf("7g options: %v", opts)
	}
	for _, o := range opts {
		if strings.Contains(o, "4c.7g.80gb") && strings.Contains(o, "3c.7g.80gb") && strings.Contains(o, "1c") {
			t.Errorf("7g option %q overcommits 7 compute slices", o)
		}
	}
}

func TestWithOverride(t *testing.T) {
	c := Builtin()
	p, _ := c.Lookup("A30-24GB")
	q := *p
	q.Key = "A30-live"
	q.Source = "nvml"
	q.Profiles = append([]Profile(nil), p.Profiles...)
	q.Profiles[2].MaxCount = 1 // pretend the driver allows one 2g only
	c2, err := c.With(q)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c2.Lookup("0x20B7")
	if err != nil || got.Key != "A30-live" {
		t.Fatalf("override lookup: %v %v", got, err)
	}
	ws, _ := ParseWant("2g.12gb=2")
	if _, err := c2.Resolve(got, ws, 1); err == nil {
		t.Fatal("override max count ignored")
	}
	if _, err := c.Resolve(p, ws, 1); err != nil {
		t.Fatalf("original catalogue changed: %v", err)
	}
}

// TestSliceCountsDecideOneGPU backs a claim of the README: with the
// built-in placement tables, one GPU fits a demand exactly when the
// per-profile maxima and the compute, memory and media-extension totals
// allow it; on the synthetic products placement does bind.
func TestSliceCountsDecideOneGPU(t *testing.T) {
	_, products := allProducts(t)
	for _, p := range products {
		o := newOracle(p)
		conflicts := 0
		forEachDemand(len(p.Profiles), func(i int) int { return p.Profiles[i].MaxCount }, func(d demand) {
			comp, mem, me := 0, 0, 0
			for i, pr := range p.Profiles {
				comp += int(d[i]) * pr.ComputeSlices
				mem += int(d[i]) * pr.MemorySlices
				if pr.MediaExtensions {
					me += int(d[i])
				}
			}
			bySlices := comp <= p.ComputeSlices && mem <= p.MemorySlices && me <= p.MediaExtensionLimit
			if bySlices && !o.fits(d) {
				conflicts++
			}
		})
		synthetic := p.Source == "test"
		if synthetic && p.Key != "MOCK-H100" && conflicts == 0 {
			t.Errorf("%s: expected placement conflicts", p.Key)
		}
		if !synthetic && conflicts != 0 {
			t.Errorf("%s: %d demands fit by slice counts but not by placement", p.Key, conflicts)
		}
	}
}

// TestPlanOverPerGPUMax: a count above the per-GPU maximum is an
// infeasible plan with the reason and the GPUs it needs (it was a usage
// error: no plan, no explanation).
func TestPlanOverPerGPUMax(t *testing.T) {
	c := Builtin()
	p, _ := c.Lookup("H100-80GB")
	for _, tc := range []struct {
		want string
		gpus int
		need int
	}{
		{"1g.10gb=8", 1, 2},
		{"7g.80gb=3", 1, 3},
		{"7g.80gb=3", 2, 3},
		{"1g.10gb=15", 2, 3},
	} {
		ws, err := ParseWant(tc.want)
		if err != nil {
			t.Fatal(err)
		}
		pl, err := c.Plan(context.Background(), p, ws, PlanOptions{GPUs: tc.gpus})
		if err != nil {
			t.Fatalf("%s on %d: %v", tc.want, tc.gpus, err)
		}
		if pl.Feasible || len(pl.Reasons) == 0 || !strings.Contains(pl.Reasons[0], "exceeds the maximum") {
			t.Errorf("%s on %d: feasible=%v reasons %q", tc.want, tc.gpus, pl.Feasible, pl.Reasons)
		}
		if len(pl.Alternatives) != 1 || pl.Alternatives[0].Kind != "more-gpus" || pl.Alternatives[0].GPUs != tc.need {
			t.Errorf("%s on %d: alternatives %+v, want more-gpus with %d", tc.want, tc.gpus, pl.Alternatives, tc.need)
		}
		// The GPUs it names do hold the demand.
		ok, err := c.Plan(context.Background(), p, ws, PlanOptions{GPUs: tc.need})
		if err != nil || !ok.Feasible {
			t.Errorf("%s on %d GPUs: %v feasible=%v", tc.want, tc.need, err, ok != nil && ok.Feasible)
		}
	}
}
