package yaml

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	sigs "sigs.k8s.io/yaml"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/mig"
	"github.com/gpunode/gpunode/internal/yamljson"
)

var randomCases = flag.Int("cases", 20000, "random documents to compare")

// fixtureGlobs are the repository's YAML files of the four node call sites
// (fake GPU files, mig-parted configs, the files yamlpos and mig export
// meet) and a few more of its YAML files.
var fixtureGlobs = []string{
	"../../internal/mig/testdata/*.yaml",
	"../../internal/mig/testdata/mig-parted-examples/*.yaml",
	"../../internal/miglive/testdata/*.yaml",
	"../../scripts/gpu-smoke-mig.yaml",
	"../../testdata/hosts/*/etc/gpunode/*.yaml",
	"../../internal/gpu/testdata/hosts/*/etc/gpunode/*.yaml",
	"../../internal/cli/testdata/*.yaml",
	"../../internal/testhost/testdata/*.yaml",
	"../../internal/tune/profiles/*.yaml",
	"../../deploy/*.yaml",
	"../../deploy/*/*.yaml",
	"../../internal/k8s/*/testdata/*.yaml",
}

func fixtures(t testing.TB) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, g := range fixtureGlobs {
		files, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			out[f] = b
		}
	}
	if len(out) < 20 {
		t.Fatalf("only %d fixture files found", len(out))
	}
	return out
}

// edgeCases aim at each rule of the YAML 1.1 reading (doc.go of yamljson).
var edgeCases = []string{
	"", "# only a comment\n", "---\n", "---\n...\n", "~", "null", "a: 1\n---\nb: 2\n",
	// booleans, every casing yaml v2 knows, and near misses
	"[y, Y, yes, Yes, YES, n, N, no, No, NO, on, On, ON, off, Off, OFF, true, True, TRUE, false, False, FALSE]",
	"[yEs, nO, oN, oFF, tRUE, 'yes', \"no\", yes!, y., ~~]",
	// integers
	"[0x1F, 0X1f, 0o17, 0O17, 017, 08, 0b101, 0B11, +12, -12, 1_000, 1__0, 0x_1F, _1, -_1, 0b+1, 0b-1, -0b11, -0b-1, +0x10]",
	"[9223372036854775807, 9223372036854775808, -9223372036854775808, -9223372036854775809, 18446744073709551615, 18446744073709551616, 99999999999999999999]",
	// floats
	"[1.5, .5, 1., 1e3, 1E+3, 1.e5, -0, -0.0, +.5, 1_0.5, .5_0, 0.1, 3.14159265358979, 1e400, .1e400, ., +, -, 1e, e1]",
	"a: .inf\n", "a: -.Inf\n", "a: .NaN\n", "a: +.INF\n", "[.inf]", "x: 1e309\n",
	// null and empty
	"a:\nb: ~\nc: null\nd: Null\ne: NULL\nf: ''\ng: \"\"\n",
	// timestamps stay as written
	"[2001-12-14, 2001-12-14t21:59:43.10-05:00, 2001-12-14T21:59:43.10Z, 2002-12-14 21:59:43.10, 2001-12-14 21:59:43.10 -5, 2001-1-2, 20011-12-14, 2001-13-45]",
	// base 60 and other YAML 1.1 leftovers stay strings
	"[1:20, 190:20:30.15, 12:30:00, -1:30, a:b]",
	// non-string keys
	"1: a\n2.5: b\ntrue: c\nno: d\n0x10: e\n1e3: f\n.inf: g\n-.inf: h\n0.1234567891: j\n1e70: k\n-1e70: l\n", ".nan: a\nb: 1\n",
	"~: a\n", "null: a\n", "18446744073709551615: a\n", "[a]: b\n", "{a: 1}: b\n", "? [a, b]\n: c\n",
	"2001-12-14: a\n", "!!binary aGk=: a\n",
	// yaml v2's key order: digit runs by value, leading zeros, letters
	`{"1005": 1, "1050": 2, "a01": 3, "a1": 4, "a001": 5, "b100": 6, "b0100": 7, "a109": 8, "a1005": 9, "a19": 14, "a105": 15, "a2": 16, "a10": 17, "-x": 10, "é": 11, "1g.10gb": 12, "1g.5gb": 13}`,
	// duplicates
	"a: 1\na: 2\n", "1: a\n0x1: b\n", "yes: a\ntrue: b\n", "a: 1\nb: {c: 1, c: 2}\n", "'a': 1\n\"a\": 2\n",
	// anchors, aliases, merges
	"a: &x {b: 1}\nc: *x\n", "a: &x [1, 2]\nb: *x\n", "a: &x 1\n*x : 2\n",
	"base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  y: 3\n", "base: &b {x: 1, y: 2}\nd:\n  y: 3\n  <<: *b\n",
	"a: &a {x: 1}\nb: &b {x: 2, y: 2}\nc:\n  <<: [*a, *b]\n", "c:\n  <<: {x: 1}\n  <<: {x: 2}\n",
	"c:\n  <<: [{x: 1}, {x: 2}]\n", "a: &a [1]\nc:\n  <<: *a\n", "c:\n  <<: 1\n", "c:\n  <<: [1]\n",
	"c:\n  \"<<\": {x: 1}\n", "c:\n  !!merge <<: {x: 1}\n", "c:\n  !!str <<: {x: 1}\n", "<<: {a: 1}\n",
	"a: &x [*x]\n", "a: *nope\n", "a: &x {b: &y {c: 1}}\nd: *y\n",
	// tags
	"[!!str 12, !!int 0x10, !!float 1, !!float 1.5, !!bool yes, !!null ~, !!timestamp 2001-01-01, !custom 12, !!binary aGVsbG8=, !!int \"12\", !!str yes]",
	"a: !!int abc\n", "a: !!float 18446744073709551615\n", "a: !!null x\n", "a: !!binary '!!'\n", "a: !!timestamp 12\n",
	"a: !!bool 1\n", "a: !!int 1.5\n", "a: !!seq x\n", "a: !!map {b: 1}\n", "a: !!str {b: 1}\n", "a: !!null {b: 1}\n",
	"a: !<tag:yaml.org,2002:int> 12\n", "%TAG !e! tag:example.com,2000:\n---\na: !e!x 12\n",
	// strings and escapes
	"a: \"\\u00e9 \\t \\x41 \\n\"\nb: 'it''s'\nc: <tag>&amp;\nd: \"\\u2028\"\n",
	"a: |\n  line1\n  line2\nb: >\n  folded\n  text\n\nc: |-\n  x\n", "a: \"\\xff\"\n", "a: !!binary /w==\n",
	// syntax errors
	"a: [1, 2\n", "a: b: c\n", "- a\nb: 1\n", "a:\n\t- 1\n", "{a: 1", "'a", "a: \"b\n", "@a: 1\n", "a: `b`\n",
	"a: 1\n b: 2\n", "key: value\n  bad: indent\n", "[a, ]", "{a, b}", "? a\n", ": a\n", "- - - a\n",
	"a: 1\n---\n: : bad\n", "%YAML 1.1\n---\na: 1\n", "%YAML 1.2\n---\na: yes\n", "%YAML 2.0\n---\na: 1\n",
	// the shapes of the call sites
	"version: v1\nmig-configs:\n  all-disabled:\n    - devices: all\n      mig-enabled: no\n",
	"apiVersion: v1\nkind: Pod\nmetadata:\n  name: 12\n", "kind: yes\n", "kind: 1.0\n", "metadata: {name: 0x10}\n",
	"gpus:\n- index: 0\n  uuid: GPU-1\n  bdf: 0000:18:00.0\n  name: 12\n", "driverVersion: 550.54\n", "driverVersion: '550.54'\n",
	"schemaVersion: 1\n", "gpus: [{index: '0'}]\n",
	// types that decode themselves
	"rawf: 12\nrawl: [12, yes]\nrawm: {a: 12, b: 1.5}\n", "text: 12\n", "text: x\n", "rawf: {a: 1}\n",
}

// nonSpecificTag finds the tag "!" alone (known difference 2).
var nonSpecificTag = regexp.MustCompile(`(^|[\s\[\{,:?-])!($|[\s,\]\}])`)

// nanKey finds a NaN used as a key (known difference 5).
var nanKey = regexp.MustCompile(`(?i)\.nan\s*:`)

// probe is one Go value the Unmarshal forms decode into.
type probe struct {
	name string
	make func() any
}

type embeddedProbe struct {
	Inner  string `json:"inner"`
	Shadow int    `json:"shadow"`
}

type kindString string

// rawJSON keeps the JSON it is given (UnmarshalJSON, pointer receiver);
// textOnly reads only strings (UnmarshalText).
type rawJSON string

func (r *rawJSON) UnmarshalJSON(b []byte) error { *r = rawJSON(b); return nil }

type textOnly string

func (x *textOnly) UnmarshalText(b []byte) error { *x = textOnly(b); return nil }

type testDoc struct {
	embeddedProbe
	Name     string             `json:"name"`
	Count    int                `json:"count"`
	Ratio    float64            `json:"ratio"`
	On       bool               `json:"on"`
	Labels   map[string]string  `json:"labels"`
	Items    []string           `json:"items"`
	Ptr      *string            `json:"ptr"`
	Kind     kindString         `json:"kind"`
	Any      any                `json:"any"`
	Raw      json.RawMessage    `json:"raw"`
	Shadow   string             `json:"shadow"`
	Nested   struct{ S string } `json:"nested"`
	Untagged string
	Array    [2]string          `json:"array"`
	RawF     rawJSON            `json:"rawf"`
	RawL     []rawJSON          `json:"rawl"`
	RawM     map[string]rawJSON `json:"rawm"`
	Text     textOnly           `json:"text"`
}

type kindProbe struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
}

var probes = []probe{
	{"any", func() any { return new(any) }},
	{"map", func() any { return new(map[string]any) }},
	{"testDoc", func() any { return new(testDoc) }},
	{"kind", func() any { return new(kindProbe) }},
	{"gpu.Status", func() any { return new(gpu.Status) }},
	{"mig.MigPartedSpec", func() any { return new(mig.MigPartedSpec) }},
	{"[]string", func() any { return new([]string) }},
	{"map[string]string", func() any { return new(map[string]string) }},
}

// difference compares the two libraries on src and describes the first
// difference ("" when they agree).
func difference(src []byte) string {
	for _, f := range []struct {
		name string
		ours func([]byte) ([]byte, error)
		them func([]byte) ([]byte, error)
	}{
		{"YAMLToJSON", yamljson.YAMLToJSON, sigs.YAMLToJSON},
		{"YAMLToJSONStrict", yamljson.YAMLToJSONStrict, sigs.YAMLToJSONStrict},
		{"JSONToYAML", yamljson.JSONToYAML, sigs.JSONToYAML},
	} {
		a, aerr := f.ours(src)
		b, berr := f.them(src)
		if (aerr == nil) != (berr == nil) {
			return fmt.Sprintf("%s: yamljson error %v, sigs error %v", f.name, aerr, berr)
		}
		if aerr == nil && !bytes.Equal(a, b) {
			if f.name == "JSONToYAML" && longLine(a) {
				continue // known difference 1
			}
			return fmt.Sprintf("%s:\nyamljson %q\nsigs     %q", f.name, a, b)
		}
	}
	for _, p := range probes {
		for _, strict := range []bool{false, true} {
			a, b := p.make(), p.make()
			var aerr, berr error
			if strict {
				aerr, berr = yamljson.UnmarshalStrict(src, a), sigs.UnmarshalStrict(src, b)
			} else {
				aerr, berr = yamljson.Unmarshal(src, a), sigs.Unmarshal(src, b)
			}
			if (aerr == nil) != (berr == nil) {
				return fmt.Sprintf("Unmarshal(strict=%v) into %s: yamljson error %v, sigs error %v", strict, p.name, aerr, berr)
			}
			if aerr == nil && !equalValues(a, b) {
				return fmt.Sprintf("Unmarshal(strict=%v) into %s:\nyamljson %#v\nsigs     %#v", strict, p.name, a, b)
			}
		}
	}
	// Marshal of what the JSON decodes to.
	j, err := sigs.YAMLToJSON(src)
	if err != nil {
		return ""
	}
	var v any
	if err := json.Unmarshal(j, &v); err != nil {
		return "sigs wrote invalid JSON: " + err.Error()
	}
	a, aerr := yamljson.Marshal(v)
	b, berr := sigs.Marshal(v)
	if (aerr == nil) != (berr == nil) || aerr == nil && !bytes.Equal(a, b) && !longLine(a) {
		return fmt.Sprintf("Marshal:\nyamljson %q %v\nsigs     %q %v", a, aerr, b, berr)
	}
	return ""
}

// equalValues compares decoded values, NaN equal to NaN.
func equalValues(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 == nil && err2 == nil {
		return bytes.Equal(ja, jb) && reflect.DeepEqual(a, b)
	}
	return reflect.DeepEqual(a, b)
}

// longLine reports a line yaml v2 would have folded (known difference 1).
func longLine(y []byte) bool {
	for _, l := range bytes.Split(y, []byte("\n")) {
		if len(l) > 80 {
			return true
		}
	}
	return false
}

// sigsUnstable reports an input on which sigs.k8s.io/yaml itself answers
// differently from run to run (known difference 3: two YAML keys that give
// one JSON key, kept in Go map order; keys yaml v2's order cannot rank,
// written in Go map order).
func sigsUnstable(src []byte) bool {
	first, err := sigs.YAMLToJSON(src)
	for range 40 {
		again, err2 := sigs.YAMLToJSON(src)
		if (err == nil) != (err2 == nil) || !bytes.Equal(first, again) {
			return true
		}
	}
	firstYAML, err := sigs.JSONToYAML(src)
	for range 40 {
		again, err2 := sigs.JSONToYAML(src)
		if (err == nil) != (err2 == nil) || !bytes.Equal(firstYAML, again) {
			return true
		}
	}
	var v any
	if err == nil && json.Unmarshal(first, &v) == nil {
		m, _ := sigs.Marshal(v)
		for range 40 {
			again, _ := sigs.Marshal(v)
			if !bytes.Equal(m, again) {
				return true
			}
		}
	}
	var a any
	for range 40 {
		var b any
		if sigs.Unmarshal(src, &a) != nil || sigs.Unmarshal(src, &b) != nil {
			return false
		}
		if !reflect.DeepEqual(a, b) {
			return true
		}
	}
	return false
}

// known names the documented difference that explains a disagreement on
// src, or "".
func known(src []byte) string {
	switch {
	case nonSpecificTag.Match(src):
		return "2: the non-specific tag !"
	case sigsUnstable(src):
		return "3: sigs.k8s.io/yaml answers in Go map order"
	case nanKey.Match(src):
		return "5: JSONToYAML of a mapping with a .nan key"
	}
	if k := parserDifference(src); k != "" {
		return "4: " + k
	}
	return ""
}

func TestCorpus(t *testing.T) {
	n := 0
	for name, b := range fixtures(t) {
		if d := difference(b); d != "" {
			t.Errorf("%s: %s", name, d)
		}
		n++
	}
	for _, c := range edgeCases {
		if d := difference([]byte(c)); d != "" {
			if k := known([]byte(c)); k != "" {
				t.Logf("%q: known difference %s", c, k)
				continue
			}
			t.Errorf("%q: %s", c, d)
		}
		n++
	}
	t.Logf("%d corpus documents compared", n)
}

func TestRandomDocuments(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	seen := map[string]int{}
	failed := 0
	for i := range *randomCases {
		src := generate(rng)
		if i%2 == 1 {
			src = mutate(rng, src)
		}
		d := difference(src)
		if d == "" {
			continue
		}
		if k := known(src); k != "" {
			seen[k]++
			continue
		}
		t.Errorf("case %d %q: %s", i, src, d)
		if failed++; failed > 10 {
			t.Fatal("too many differences")
		}
	}
	t.Logf("%d random documents; known differences met: %v", *randomCases, seen)
}

// TestKnownDifferences pins each listed difference, so that the list stays
// true (a fixed difference fails here and must leave the list).
func TestKnownDifferences(t *testing.T) {
	long := strings.Repeat("word ", 30)
	a, _ := yamljson.Marshal(map[string]string{"k": long})
	b, _ := sigs.Marshal(map[string]string{"k": long})
	if bytes.Equal(a, b) {
		t.Error("1: long strings are folded the same now")
	}
	var av, bv map[string]any
	if yamljson.Unmarshal(a, &av) != nil || sigs.Unmarshal(b, &bv) != nil || !reflect.DeepEqual(av, bv) {
		t.Errorf("1: the folded and unfolded forms read differently: %q %q", a, b)
	}
	ja, _ := yamljson.YAMLToJSON([]byte("a: ! 12\n"))
	jb, _ := sigs.YAMLToJSON([]byte("a: ! 12\n"))
	if string(ja) != `{"a":12}` || string(jb) != `{"a":"12"}` {
		t.Errorf("2: ! 12 reads %s here, %s in sigs", ja, jb)
	}
	src := []byte("1: a\n\"1\": b\n")
	if !sigsUnstable(src) {
		t.Error("3: sigs.k8s.io/yaml is stable on two keys giving one JSON key")
	}
	if j, _ := yamljson.YAMLToJSON(src); string(j) != `{"1":"b"}` {
		t.Errorf("3: want the later key, got %s", j)
	}
	unranked := []byte("2ind: a\n\"16\": b\n\"2001-12-14\": c\n3a: d\n25: e\n\"2002-x\": f\n")
	if !sigsUnstable(unranked) {
		t.Error("3: sigs.k8s.io/yaml writes keys yaml v2 cannot rank in a stable order")
	}
	na, _ := yamljson.JSONToYAML([]byte(".nan: a\n"))
	nb, _ := sigs.JSONToYAML([]byte(".nan: a\n"))
	if string(na) != ".nan: a\n" || string(nb) != ".nan: null\n" {
		t.Errorf("5: .nan key written %q here, %q by sigs", na, nb)
	}
	_, le := yamljson.YAMLToJSON([]byte("a: 1\nb\nc: 2\n"))
	_, lb := sigs.YAMLToJSON([]byte("a: 1\nb\nc: 2\n"))
	if le == nil || lb == nil || !strings.Contains(le.Error(), "line 2:") || !strings.Contains(lb.Error(), "line 3:") {
		t.Errorf("6: a key without its colon: %v here, %v in sigs", le, lb)
	}
	type holder struct {
		V any `json:"v"`
	}
	ha, hb := &holder{V: new(string)}, &holder{V: new(string)}
	aerr, berr := yamljson.Unmarshal([]byte("v: 12\n"), ha), sigs.Unmarshal([]byte("v: 12\n"), hb)
	if aerr == nil || berr != nil || *hb.V.(*string) != "12" {
		t.Errorf("7: an interface field holding *string: %v here, %v and %q in sigs", aerr, berr, *hb.V.(*string))
	}
	for _, c := range parserDifferences {
		_, aerr := yamljson.YAMLToJSON([]byte(c.src))
		_, berr := sigs.YAMLToJSON([]byte(c.src))
		if (aerr == nil) == (berr == nil) {
			t.Errorf("4: %q (%s): the parsers agree now", c.src, c.why)
		}
	}
}
