package reserved

import (
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/gpunode/gpunode/internal/k8s/kubeletcfg"
)

// -cases is the suite-wide case count (run.sh passes it to every package).
var cases = flag.Int("cases", 10000, "random reservation maps to compare")

// Keys and values every single-entry comparison crosses.
var (
	corpusKeys = []string{
		"cpu", "memory", "ephemeral-storage", "pid",
		"hugepages-2Mi", "hugepages-1Gi", "nvidia.com/gpu", "storage",
		"CPU", " cpu", "", "pids",
	}
	corpusValues = []string{
		"0", "1", "-1", "+1", "-0", "100m", "1.5", "0.0005", "0.0004999",
		"1499u", "1500u", "1n", "999999n", "1Gi", "512Mi", "1e3", "1E3",
		"1e-3", "5e-7", "1Ki", "1KiB", "1ki", "10G", "0x10", "abc", "",
		" 1", "1 ", "1.", ".5", "--1", "1..2", "9223372036854775807",
		"9223372036854775807u", "9223372036854775807m", "1e30", "1e-30",
		"12345678901234567890m", "-1e-30", "100000000000000000000000000000",
		"1Ei", "8Ei", "1P", "0.000000001", "3.14159265358979323846",
	}
)

// errText renders an error for comparison ("" for none).
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// listText renders a parsed list with each quantity's value and format, in
// key order; nil and empty lists differ.
func listText(rl v1.ResourceList) string {
	if rl == nil {
		return "nil"
	}
	var b strings.Builder
	b.WriteString("{")
	for _, k := range slices.Sorted(maps.Keys(rl)) {
		q := rl[k]
		fmt.Fprintf(&b, " %s=%s(%s,milli %d)", k, q.String(), q.Format, q.MilliValue())
	}
	b.WriteString(" }")
	return b.String()
}

func compareOne(t *testing.T, m map[string]string) {
	t.Helper()
	want, wantErr := kubeletParseReserved(m)
	got, gotErr := kubeletcfg.ParseReserved(m)
	if errText(gotErr) != errText(wantErr) {
		t.Fatalf("%q: gpunode error %q, kubelet %q", m, errText(gotErr), errText(wantErr))
	}
	if wantErr == nil && listText(got) != listText(want) {
		t.Fatalf("%q: gpunode %s, kubelet %s", m, listText(got), listText(want))
	}
}

// TestLintReservedCorpus: every corpus key with every corpus value, alone, plus
// the empty and nil maps; errors must read the same, parsed quantities must
// be the same value in the same format.
func TestLintReservedCorpus(t *testing.T) {
	compareOne(t, nil)
	compareOne(t, map[string]string{})
	n := 0
	for _, k := range corpusKeys {
		for _, v := range corpusValues {
			compareOne(t, map[string]string{k: v})
			n++
		}
	}
	// The corpus must exercise every outcome, or it proves little.
	outcomes := map[string]int{}
	for _, k := range corpusKeys {
		for _, v := range corpusValues {
			_, err := kubeletParseReserved(map[string]string{k: v})
			outcomes[outcomeOf(err)]++
		}
	}
	for _, o := range []string{"ok", "cannot reserve", "failed to parse", "negative"} {
		if outcomes[o] == 0 {
			t.Errorf("corpus never gives %q from kubelet: %v", o, outcomes)
		}
	}
	t.Logf("%d single-entry maps, kubelet outcomes %v", n, outcomes)
}

func outcomeOf(err error) string {
	switch s := errText(err); {
	case s == "":
		return "ok"
	case strings.HasPrefix(s, "cannot reserve"):
		return "cannot reserve"
	case strings.HasPrefix(s, "failed to parse"):
		return "failed to parse"
	case strings.Contains(s, "cannot be negative"):
		return "negative"
	default:
		return s
	}
}

// randomQuantityText builds quantity-like strings: mostly well formed, some
// negative, some out of range, some garbage.
func randomQuantityText(r *rand.Rand) string {
	if r.IntN(6) == 0 {
		return corpusValues[r.IntN(len(corpusValues))]
	}
	var b strings.Builder
	switch r.IntN(8) {
	case 0:
		b.WriteByte('-')
	case 1:
		b.WriteByte('+')
	}
	digits := func(n int) {
		for range n {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
	}
	digits(r.IntN(22))
	if r.IntN(3) == 0 {
		b.WriteByte('.')
		digits(r.IntN(12))
	}
	if r.IntN(6) == 0 {
		b.WriteString([]string{"e", "E"}[r.IntN(2)])
		if r.IntN(2) == 0 {
			b.WriteByte('-')
		}
		digits(r.IntN(3))
	}
	suffixes := []string{"", "", "", "n", "u", "m", "k", "M", "G", "T", "P", "E",
		"Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "K", "KB", "i", "x", " ", "mm"}
	b.WriteString(suffixes[r.IntN(len(suffixes))])
	if r.IntN(40) == 0 {
		s := []byte(b.String())
		if len(s) > 0 {
			s[r.IntN(len(s))] = byte(r.IntN(128))
		}
		return string(s)
	}
	return b.String()
}

// TestLintReservedRandom compares random maps of one to five entries. kubelet
// walks the map in Go's random order and reports the first bad entry it
// meets; gpunode reports the first by key. So where kubelet fails, gpunode
// must fail with kubelet's message for the smallest bad key, and kubelet's
// own message must be its message for one of the bad keys.
func TestLintReservedRandom(t *testing.T) {
	keys := append(slices.Clone(corpusKeys), "hugepages-64Ki", "memory ", "cpu\x00")
	r := rand.New(rand.NewPCG(uint64(*cases), 0x5e7))
	var ok, failed int
	for i := range *cases {
		m := map[string]string{}
		for range 1 + r.IntN(5) {
			k := keys[r.IntN(len(keys))]
			if r.IntN(3) != 0 { // mostly keys kubelet takes
				k = corpusKeys[r.IntN(4)]
			}
			m[k] = randomQuantityText(r)
		}
		want, wantErr := kubeletParseReserved(m)
		got, gotErr := kubeletcfg.ParseReserved(m)
		if wantErr == nil {
			ok++
			if gotErr != nil || listText(got) != listText(want) {
				t.Fatalf("case %d %q: gpunode %s %v, kubelet %s", i, m, listText(got), gotErr, listText(want))
			}
			continue
		}
		failed++
		perKey := map[string]string{}
		firstBad, seen := "", false
		for _, k := range slices.Sorted(maps.Keys(m)) {
			_, err := kubeletParseReserved(map[string]string{k: m[k]})
			if err != nil {
				perKey[k] = err.Error()
				if !seen {
					firstBad, seen = k, true
				}
			}
		}
		if !slices.Contains(slices.Collect(maps.Values(perKey)), wantErr.Error()) {
			t.Fatalf("case %d %q: kubelet's error %q is none of its per-entry errors %q", i, m, wantErr, perKey)
		}
		if errText(gotErr) != perKey[firstBad] {
			t.Fatalf("case %d %q: gpunode error %q, want kubelet's for %q: %q", i, m, errText(gotErr), firstBad, perKey[firstBad])
		}
	}
	if ok == 0 || failed == 0 {
		t.Fatalf("random maps: %d accepted, %d rejected; both must occur", ok, failed)
	}
	t.Logf("%d random maps: kubelet accepted %d, rejected %d; gpunode agreed on all", *cases, ok, failed)
}

// FuzzLintReserved compares one- and two-entry maps built from arbitrary
// strings (go test runs the seeds; -fuzz explores).
func FuzzLintReserved(f *testing.F) {
	for i, v := range corpusValues {
		f.Add(corpusKeys[i%len(corpusKeys)], v, "memory", corpusValues[(i*7)%len(corpusValues)])
	}
	f.Fuzz(func(t *testing.T, k1, val1, k2, val2 string) {
		compareOne(t, map[string]string{k1: val1})
		if k1 == k2 {
			return
		}
		m := map[string]string{k1: val1, k2: val2}
		want, wantErr := kubeletParseReserved(m)
		got, gotErr := kubeletcfg.ParseReserved(m)
		if (wantErr == nil) != (gotErr == nil) || wantErr == nil && listText(got) != listText(want) {
			t.Fatalf("%q: gpunode %s %v, kubelet %s %v", m, listText(got), gotErr, listText(want), wantErr)
		}
	})
}
