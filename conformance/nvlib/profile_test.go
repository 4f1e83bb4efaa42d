package nvlib

import (
	"flag"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	nvdev "github.com/NVIDIA/go-nvlib/pkg/nvlib/device"

	"github.com/gpunode/gpunode/internal/mig"
)

var randomCases = flag.Int("cases", 20000, "random profile strings to compare")

// corpus is every profile name gpunode or mig-parted has reason to meet,
// plus strings aimed at each rule of the format.
func corpus(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, p := range mig.Builtin().Products() {
		for _, gi := range p.Profiles {
			out = append(out, gi.Name)
			for _, ci := range gi.ComputeInstances {
				out = append(out, ci.Name)
			}
		}
	}
	files, err := filepath.Glob("../../internal/mig/testdata/mig-parted-examples/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("mig-parted examples: %v %v", files, err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		spec, err := mig.ParseMigParted(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, entries := range spec.MigConfigs {
			for _, e := range entries {
				for name := range e.MigDevices {
					out = append(out, name)
				}
			}
		}
	}
	return append(out,
		"", "1g", "g", ".", "..", "...", "1g.", ".5gb", "1g.5gb.", "1c.1g.5gb.6gb",
		"1g.5gb", "1c.1g.5gb", "0g.0gb", "0c.0g.0gb", "5g.5gb", "20000c.3g.999999gb",
		"007g.040gb", "1g.99999999999999999999gb", "9223372036854775807g.1gb", "9223372036854775808g.1gb",
		" 2g.10gb", "2g.10gb ", "2 g.10gb", "2g .10gb", "2g. 10gb", "2g.10 gb", "2g.10g b", "3c . 3g . 20gb",
		"\t1g.5gb", "1g.5gb\n", "1g.5gb\u00a0", "\u20281g.5gb", "1g.5gb\x85", "1g.5gb\xff",
		"1q.1g.10gb", "1c.z1g.10gb", "2g.10gbx", "2g.10", "1G.5GB", "1C.1g.5gb", "+1g.5gb", "-1g.5gb", "1c.-1g.5gb",
		"1g.5gb+", "1g.5gb-", "1g.5gb+,", "1g.5gb+,,", "1g.5gb+me,", "1g.5gb+me,,", "1g.5gb+ me", "1g.5gb+me ",
		"1g.5gb+me", "1g.5gb-me", "1g.5gb+me,me", "1g.5gb-me,me", "1g.5gb+me,gfx", "1g.5gb+gfx,me",
		"1g.5gb+me.all", "1g.5gb+.me", "1g.5gb+me.", "1g.5gb+m..e", "1g.5gb+2me", "1g.5gb+m2", "1g.5gb+M",
		"1g.5gb+m_e", "1g.5gb+mé", "1g.5gb+me+x", "1g.5gb+me-x", "1g.5gb-me+x", "2g.10gb^me", "2g.10gb+gfx,me,xyz",
		"1c.2g.10gb+gfx,me,xyz", "nonsense", "+", "-", "+-", "1g.5gb++", "1g.5gb--", "1g-5gb", "1g+.5gb",
	)
}

// grammar draws a string from a loose profile grammar: mostly well-formed,
// with each part sometimes swapped for a near miss.
func grammar(rng *rand.Rand) string {
	pick := func(xs ...string) string { return xs[rng.Intn(len(xs))] }
	num := func() string {
		if rng.Intn(8) == 0 {
			return pick("", "0", "00", "007", "-1", " 1", "1 ", "x", "99999999999999999999", "9223372036854775807")
		}
		return pick("1", "2", "3", "4", "5", "6", "7", "8", "10", "12", "18", "20", "24", "40", "47", "80", "96", "141", "186")
	}
	unit := func(u string) string {
		if rng.Intn(12) == 0 {
			return pick("", "G", "gb", "g", "c", "b", " "+u, u+" ")
		}
		return u
	}
	var b strings.Builder
	if rng.Intn(3) == 0 {
		b.WriteString(num() + unit("c") + ".")
	}
	b.WriteString(num() + unit("g") + "." + num() + unit("gb"))
	if rng.Intn(10) == 0 {
		b.WriteString(pick(".", ".1gb", ".x"))
	}
	if rng.Intn(2) == 0 {
		b.WriteString(pick("+", "+", "-"))
		names := 1 + rng.Intn(3)
		for i := 0; i < names; i++ {
			if i > 0 {
				b.WriteString(pick(",", ",", ",", ", ", ",,"))
			}
			b.WriteString(pick("me", "me", "gfx", "me.all", "x1", "A", "Zz9", "a.b.c", "", "1me", ".me", "me.", "m_e", " me", "mé", "m-e", "m+e"))
		}
	}
	return b.String()
}

// mutate edits s a few times: insert, delete, replace, duplicate or swap.
func mutate(rng *rand.Rand, s string) string {
	const alphabet = "0123456789cgbx.+-, \tAZ_é\u00a0\x85\xff"
	letters := []rune(alphabet)
	b := []byte(s)
	for n := 1 + rng.Intn(3); n > 0; n-- {
		r := string(letters[rng.Intn(len(letters))])
		i := 0
		if len(b) > 0 {
			i = rng.Intn(len(b))
		}
		switch op := rng.Intn(5); {
		case op == 0 || len(b) == 0:
			b = slices.Insert(b, i, []byte(r)...)
		case op == 1:
			b = slices.Delete(b, i, i+1)
		case op == 2:
			b = slices.Concat(b[:i], []byte(r), b[i+1:])
		case op == 3:
			j := i + rng.Intn(len(b)-i)
			b = slices.Concat(b[:j], b[i:j+1], b[j:])
		default:
			j := rng.Intn(len(b))
			b[i], b[j] = b[j], b[i]
		}
	}
	return string(b)
}

// tally counts what a run compared.
type tally struct{ strings, accepted, rejected, withAttrs, withNeg int }

// compare checks one string against go-nvlib.
func compare(t *testing.T, lib nvdev.Interface, s string, n *tally) {
	t.Helper()
	n.strings++
	want := lib.AssertValidMigProfileFormat(s)
	got, err := mig.ParseMigProfile(s)
	switch {
	case want != nil && err != nil:
		n.rejected++
		if want.Error() != err.Error() {
			t.Errorf("%q: gpunode says %q, go-nvlib %q", s, err, want)
		}
		return
	case want != nil:
		t.Errorf("%q: gpunode accepts (%+v), go-nvlib refuses: %v", s, got, want)
		return
	case err != nil:
		t.Errorf("%q: gpunode refuses (%v), go-nvlib accepts", s, err)
		return
	}
	n.accepted++
	if len(got.Attributes) > 0 {
		n.withAttrs++
	}
	if len(got.NegAttributes) > 0 {
		n.withNeg++
	}
	info := nvdev.MigProfileInfo{C: got.C, G: got.G, GB: got.GB, Attributes: got.Attributes, NegAttributes: got.NegAttributes}
	if !info.Matches(s) {
		t.Errorf("%q: gpunode's parts %+v are not what go-nvlib reads", s, got)
	}
	if info.String() != got.String() {
		t.Errorf("%q: canonical name %q, go-nvlib writes %q", s, got.String(), info.String())
	}
	// Matches must really compare the parts: one part off never matches.
	offs := []nvdev.MigProfileInfo{
		{C: info.C + 1, G: info.G, GB: info.GB, Attributes: info.Attributes, NegAttributes: info.NegAttributes},
		{C: info.C, G: info.G + 1, GB: info.GB, Attributes: info.Attributes, NegAttributes: info.NegAttributes},
		{C: info.C, G: info.G, GB: info.GB + 1, Attributes: info.Attributes, NegAttributes: info.NegAttributes},
		{C: info.C, G: info.G, GB: info.GB, Attributes: append(slices.Clone(info.Attributes), "zz9"), NegAttributes: info.NegAttributes},
	}
	if len(info.Attributes)+len(info.NegAttributes) > 0 {
		offs = append(offs, nvdev.MigProfileInfo{C: info.C, G: info.G, GB: info.GB, Attributes: info.NegAttributes, NegAttributes: info.Attributes})
	}
	for _, off := range offs {
		if off.Matches(s) {
			t.Errorf("%q: go-nvlib also matches %+v; the comparison proves nothing", s, off)
		}
	}
}

func TestProfileSpellingDifferential(t *testing.T) {
	lib := nvdev.New(nil) // the format check needs no NVML
	var fixed, random tally
	for _, s := range corpus(t) {
		compare(t, lib, s, &fixed)
	}
	rng := rand.New(rand.NewSource(20261201))
	for i := 0; i < *randomCases; i++ {
		s := grammar(rng)
		if rng.Intn(3) == 0 {
			s = mutate(rng, s)
		}
		compare(t, lib, s, &random)
		if t.Failed() && i > 100 {
			break // enough examples
		}
	}
	t.Logf("corpus: %d strings, %d accepted (%d with +attributes, %d with -attributes), %d refused",
		fixed.strings, fixed.accepted, fixed.withAttrs, fixed.withNeg, fixed.rejected)
	t.Logf("random: %d strings, %d accepted (%d with +attributes, %d with -attributes), %d refused",
		random.strings, random.accepted, random.withAttrs, random.withNeg, random.rejected)
	// The generator must exercise both sides of every kind.
	if random.strings >= 1000 && (random.accepted < random.strings/5 || random.rejected < random.strings/5 || random.withAttrs == 0 || random.withNeg == 0) {
		t.Errorf("random strings too one-sided: %+v", random)
	}
}

// FuzzProfileSpelling lets the fuzzer look for a string the two read
// differently: go test -fuzz FuzzProfileSpelling.
func FuzzProfileSpelling(f *testing.F) {
	for _, s := range []string{"1g.5gb", "1c.3g.40gb+me", "1g.24gb-me", "1g.24gb+me.all,gfx", "1g.5gb+me,x,", " 1g.5gb"} {
		f.Add(s)
	}
	lib := nvdev.New(nil)
	f.Fuzz(func(t *testing.T, s string) {
		compare(t, lib, s, &tally{})
	})
}
