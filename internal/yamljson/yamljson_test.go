package yamljson

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// The conformance module conformance/yaml compares every function here
// with sigs.k8s.io/yaml; these tests pin the rules of doc.go without it.

func TestYAMLToJSON(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "null"},
		{"# comment\n", "null"},
		{"a: 1\n---\nb: 2\n", `{"a":1}`},
		{"[y, Y, yes, Yes, YES, on, On, ON, true, True, TRUE]", `[true,true,true,true,true,true,true,true,true,true,true]`},
		{"[n, N, no, No, NO, off, Off, OFF, false, False, FALSE]", `[false,false,false,false,false,false,false,false,false,false,false]`},
		{"[yEs, 'yes', \"no\", ~~]", `["yEs","yes","no","~~"]`},
		{"[0x1F, 0o17, 017, 0b101, +12, 1_000, 08, 0b+1, -0b11]", `[31,15,15,5,12,1000,8,1,-3]`},
		{"[9223372036854775808, 18446744073709551616, 1e3, .5, 1., -0]", `[9223372036854775808,18446744073709552000,1000,0.5,1,0]`},
		{"a:\nb: ~\nc: Null\nd: ''\n", `{"a":null,"b":null,"c":null,"d":""}`},
		{"[2001-12-14, 2001-12-14t21:59:43.10-05:00, 1:20, 1e400]", `["2001-12-14","2001-12-14t21:59:43.10-05:00","1:20","1e400"]`},
		{"1: a\n2.5: b\ntrue: c\nno: d\n0x10: e\n.inf: f\n0.1234567891: g\n-1e70: h\n", `{"-.inf":"h",".inf":"f","0.12345679":"g","1":"a","16":"e","2.5":"b","false":"d","true":"c"}`},
		{"a: 1\na: 2\n", `{"a":2}`},
		{"base: &b {p: 1, q: 2}\nd:\n  <<: *b\n  q: 3\n", `{"base":{"p":1,"q":2},"d":{"p":1,"q":3}}`},
		{"base: &b {p: 1, q: 2}\nd:\n  q: 3\n  <<: *b\n", `{"base":{"p":1,"q":2},"d":{"p":1,"q":2}}`},
		{"c:\n  <<: [{p: 1}, {p: 2, q: 2}]\n", `{"c":{"p":1,"q":2}}`},
		{"{y: 1, n: 2}", `{"false":2,"true":1}`},
		{"c:\n  \"<<\": {x: 1}\n", `{"c":{"\u003c\u003c":{"x":1}}}`},
		{"[!!str 12, !!float 1, !!bool yes, !custom 12, !!binary aGk=, !!int \"12\"]", `["12",1,true,"12","hi",12]`},
		{"a: \"<&>\"\n", `{"a":"\u003c\u0026\u003e"}`},
	} {
		got, err := YAMLToJSON([]byte(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("YAMLToJSON(%q) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

func TestYAMLToJSONErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"a: [1\n", "yaml: line 1:"},
		{"a: .inf\n", "unsupported value"},
		{"~: a\n", "unsupported map key"},
		{"18446744073709551615: a\n", "unsupported map key of type: uint64"},
		{"[a]: b\n", "invalid map key"},
		{"a: &x [*x]\n", "contains itself"},
		{"a: *nope\n", "unknown anchor"},
		{"c:\n  <<: 1\n", "map merge requires"},
		{"a: !!int abc\n", "cannot decode !!str `abc` as a !!int"},
		{"a: !!float 18446744073709551615\n", "as a !!float"},
		{"a: !!binary '!!'\n", "yaml: !!binary value contains invalid base64 data"},
		{"a: !!int 1.5\n", "yaml: cannot decode !!float `1.5` as a !!int"},
		{"a: !!bool 1\n", "yaml: cannot decode !!int `1` as a !!bool"},
		{"a: !!timestamp 12\n", "yaml: cannot decode !!int `12` as a !!timestamp"},
		{"a: [1, .nan]\n", "json: unsupported value: NaN"},
		{"a: {b: [x, -.inf]}\n", "json: unsupported value: -Inf"},
		{"a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n", "yaml: document contains excessive aliasing"},
	} {
		_, err := YAMLToJSON([]byte(tc.in))
		// A whole yaml v2 message must be that message.
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.HasPrefix(tc.want, "yaml: ") && !strings.HasSuffix(tc.want, ":") && err.Error() != tc.want {
			t.Errorf("YAMLToJSON(%q): error %v, want %q", tc.in, err, tc.want)
		}
	}
	for _, in := range []string{"a: 1\na: 2\n", "yes: 1\ntrue: 2\n", "c:\n  <<: {x: 1}\n  x: 2\n"} {
		if _, err := YAMLToJSON([]byte(in)); err != nil {
			t.Errorf("YAMLToJSON(%q): %v", in, err)
		}
		_, err := YAMLToJSONStrict([]byte(in))
		if err == nil || !strings.Contains(err.Error(), "already set in map") || !strings.Contains(err.Error(), "line ") {
			t.Errorf("YAMLToJSONStrict(%q): error %v, want a duplicate key with its line", in, err)
		}
	}
}

type inner struct {
	Promoted string `json:"promoted"`
}

type doc struct {
	inner
	Embedded
	Name   string            `json:"name"`
	Count  int               `json:"count"`
	Labels map[string]string `json:"labels"`
	Items  []string          `json:"items"`
	Ptr    *string           `json:"ptr"`
	Raw    json.RawMessage   `json:"raw"`
}

type Embedded struct {
	Deep string `json:"deep"`
}

func TestUnmarshal(t *testing.T) {
	in := "name: 12\nNAME: 1.5\ncount: 3\nlabels: {a: yes, b: 0x10}\nitems: [1, true, x]\nptr: 7\nraw: 5\nunknown: 1\n"
	var got doc
	if err := Unmarshal([]byte(in), &got); err != nil {
		t.Fatal(err)
	}
	seven := "7"
	want := doc{Name: "12", Count: 3, Labels: map[string]string{"a": "true", "b": "16"}, Items: []string{"1", "true", "x"}, Ptr: &seven, Raw: json.RawMessage("5")}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if err := UnmarshalStrict([]byte(in), &doc{}); err == nil || !strings.Contains(err.Error(), `unknown field "unknown"`) ||
		!strings.HasPrefix(err.Error(), "error unmarshaling JSON: while decoding JSON: json: ") {
		t.Errorf("UnmarshalStrict: %v, want the unknown field", err)
	}
	// A promoted field is looked up as its embedded struct: no conversion.
	err := Unmarshal([]byte("deep: 1\n"), &doc{})
	if err == nil || !strings.Contains(err.Error(), "cannot unmarshal number") {
		t.Errorf("promoted field converted: %v", err)
	}
	err = Unmarshal([]byte("a: [1\n"), &doc{})
	if err == nil || !strings.HasPrefix(err.Error(), "error converting YAML to JSON: yaml: line 1") {
		t.Errorf("syntax error: %v", err)
	}
}

// raw keeps the JSON it is given (an UnmarshalJSON with a pointer
// receiver); text reads only strings (an UnmarshalText).
type raw string

func (r *raw) UnmarshalJSON(b []byte) error { *r = raw(b); return nil }

type text string

func (x *text) UnmarshalText(b []byte) error { *x = text(b); return nil }

// TestUnmarshalStopsAtUnmarshalers: no number-to-string conversion for a
// type that decodes itself, found through its pointer where the value is
// addressable (a struct field, a list element) and not in a map value.
func TestUnmarshalStopsAtUnmarshalers(t *testing.T) {
	var v struct {
		R  raw            `json:"r"`
		RL []raw          `json:"rl"`
		RM map[string]raw `json:"rm"`
	}
	if err := Unmarshal([]byte("r: 12\nrl: [12]\nrm: {a: 12}\n"), &v); err != nil {
		t.Fatal(err)
	}
	if v.R != "12" || len(v.RL) != 1 || v.RL[0] != "12" || v.RM["a"] != `"12"` {
		t.Errorf("got %+v, want r and rl raw 12, rm the converted \"12\"", v)
	}
	var w struct {
		T text `json:"t"`
	}
	if err := Unmarshal([]byte("t: 12\n"), &w); err == nil {
		t.Errorf("a number into an UnmarshalText type was converted: %+v", w)
	}
	if err := Unmarshal([]byte("t: x\n"), &w); err != nil || w.T != "x" {
		t.Errorf("t: x: %+v %v", w, err)
	}
}

func TestMarshal(t *testing.T) {
	type spec struct {
		Version string         `json:"version"`
		Configs map[string]any `json:"mig-configs"`
		Empty   map[string]int `json:"empty"`
		Nil     map[string]int `json:"nil"`
		List    []any          `json:"list,omitempty"`
	}
	got, err := Marshal(spec{
		Version: "v1",
		Empty:   map[string]int{},
		Configs: map[string]any{
			"1g.10gb": 1, "1g.5gb": 2, "b": "yes", "a": "x\ny", "2:30": "1:20", "n": nil, "f": 1.5, "big": uint64(1 << 63),
			"tab": "a\tb\nc",
		},
		List: []any{[]any{1, "on"}, map[string]any{"k": "0x1F"}, []any{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `empty: {}
list:
- - 1
  - "on"
- k: "0x1F"
- []
mig-configs:
  1g.5gb: 2
  1g.10gb: 1
  "2:30": "1:20"
  a: |-
    x
    y
  b: "yes"
  big: 9223372036854775808
  f: 1.5
  "n": null
  tab: "a\tb\nc"
nil: null
version: v1
`
	if string(got) != want {
		t.Errorf("Marshal:\n%s\nwant:\n%s", got, want)
	}
	if _, err := Marshal(map[string]any{"f": math.NaN()}); err == nil || !strings.HasPrefix(err.Error(), "error marshaling into JSON: json: unsupported value: NaN") {
		t.Errorf("Marshal of NaN: %v", err)
	}
}

func TestKeyLess(t *testing.T) {
	sorted := []any{false, 0, true, 1, 2.5, uint64(1 << 63), nil, "-x", "1005", "1050", "1g.5gb", "1g.10gb", "a", "a1", "a01", "a001", "a2", "a10", "a19", "a105", "a109", "a1005", "ab", "b", "b100", "b0100", "é"}
	for i := range sorted {
		for j := range sorted {
			if got := keyLess(sorted[i], sorted[j]); got != (i < j) {
				t.Errorf("keyLess(%#v, %#v) = %v", sorted[i], sorted[j], got)
			}
		}
	}
}

func TestIsBase60Float(t *testing.T) {
	for s, want := range map[string]bool{
		"1:20": true, "190:20:30.15": true, "-1:30": true, "+1_0:59": true, "1:5": true, "1:20.": true,
		"1:20._5": true, "1:20.5_": true, "1:20.x": false,
		"1:60": false, "1:": false, ":20": false, "a:20": false, "1:20:": false, "1": false, "": false, "1:2a": false,
	} {
		if got := isBase60Float(s); got != want {
			t.Errorf("isBase60Float(%q) = %v", s, got)
		}
	}
}

// FuzzYAMLToJSON: no panic on bounded input; the output is JSON, and read
// back as YAML it converts to the same value (JSON is YAML).
func FuzzYAMLToJSON(f *testing.F) {
	for _, s := range []string{"a: 1\n", "[yes, 0x1F, 1_000, ~, 2001-12-14]", "a: &x {b: 1}\nc:\n  <<: *x\n", "1: a\n1.5: b\n", "a: |\n  x\n", "- !!binary aGk=\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) > 1<<14 {
			return
		}
		j, err := YAMLToJSON(src)
		if err != nil {
			if _, serr := YAMLToJSONStrict(src); serr == nil {
				t.Fatalf("strict accepts what non-strict refuses: %v", err)
			}
			return
		}
		var v any
		if err := json.Unmarshal(j, &v); err != nil {
			t.Fatalf("not JSON: %q: %v", j, err)
		}
		again, err := YAMLToJSON(j)
		if err != nil {
			t.Fatalf("own JSON does not read back: %q: %v", j, err)
		}
		var w any
		if err := json.Unmarshal(again, &w); err != nil || !reflect.DeepEqual(v, w) {
			t.Fatalf("JSON %s reads back as %s", j, again)
		}
		y, err := JSONToYAML(j)
		if err != nil {
			t.Fatalf("JSONToYAML(%s): %v", j, err)
		}
		back, err := YAMLToJSON(y)
		var u any
		if err != nil || json.Unmarshal(back, &u) != nil || !reflect.DeepEqual(v, u) {
			t.Fatalf("JSON %s written as YAML %q reads back as %s (%v)", j, y, back, err)
		}
	})
}

// TestResolveSpellings: every spelling yaml v2 maps to a boolean, null or
// infinity, and near misses that stay strings.
func TestResolveSpellings(t *testing.T) {
	classes := map[string][]string{
		"true":  {"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"},
		"false": {"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"},
		"null":  {"", "~", "null", "Null", "NULL"},
		".inf":  {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"},
		"-.inf": {"-.inf", "-.Inf", "-.INF"},
		".nan":  {".nan", ".NaN", ".NAN"},
	}
	for want, spellings := range classes {
		for _, s := range spellings {
			v, _ := resolvePlain(s, true)
			got := "string"
			switch v := v.(type) {
			case nil:
				got = "null"
			case bool, float64:
				if f, ok := v.(float64); ok {
					got, _ = keyString(f, nil)
				} else {
					got = strconv.FormatBool(v.(bool))
				}
			}
			if got != want {
				t.Errorf("%q resolves to %v (%s), want %s", s, v, got, want)
			}
		}
	}
	for _, s := range []string{"yEs", "nULL", ".iNf", "-.nan", "+.nan", "<<", "0x", "0b", "-0b", "1e", ".", "._5", "0x1p3", "2001-12-14x", "0x_", "_1", "x_y", "a1"} {
		if v, tag := resolvePlain(s, true); tag != tagStr || v != s {
			t.Errorf("%q resolves to %v (%s), want the string", s, v, tag)
		}
	}
	if v, tag := resolvePlain("2001-12-14", false); tag == tagTimestamp || v != "2001-12-14" {
		t.Errorf("a timestamp tried where it should not be: %v %s", v, tag)
	}
	for _, ts := range []string{"2001-12-14", "2001-1-2", "2001-12-14T21:59:43.10Z", "2001-12-14t21:59:43.10-05:00", "2002-12-14 21:59:43.10", "2002-12-14 21:59:43"} {
		if v, tag := resolvePlain(ts, true); tag != tagTimestamp || v != ts {
			t.Errorf("%s is %v (%s), want a timestamp kept as written", ts, v, tag)
		}
	}
	for _, ts := range []string{"2001-12-14 21:59:43.10 -5", "20011-12-14", "2001-13-45", "2001-12-14T"} {
		if _, tag := resolvePlain(ts, true); tag == tagTimestamp {
			t.Errorf("%s is a timestamp, want not", ts)
		}
	}
	for s, want := range map[string]float64{"+.5": 0.5, "-.25": -0.25, "+1.": 1, "1.5e3": 1500, "-1E-2": -0.01, "+.5e1": 5} {
		if v, tag := resolvePlain(s, true); tag != tagFloat || v != want {
			t.Errorf("%s is %v (%s), want the float %v", s, v, tag, want)
		}
	}
	for _, s := range []string{"+.", "-.e1", "1e+", "1.5e", "++1", "1.2.3"} {
		if v, tag := resolvePlain(s, true); tag != tagStr || v != s {
			t.Errorf("%s is %v (%s), want the string", s, v, tag)
		}
	}
}

func TestMergeKeyForms(t *testing.T) {
	for in, want := range map[string]string{
		"c:\n  !!merge <<: {p: 1}\n":             `{"c":{"p":1}}`,
		"c:\n  !!str <<: {p: 1}\n":               `{"c":{"\u003c\u003c":{"p":1}}}`,
		"c:\n  '<<': {p: 1}\n":                   `{"c":{"\u003c\u003c":{"p":1}}}`,
		"a: &a {p: 1}\nc:\n  <<: *a\n  q: 2\n":   `{"a":{"p":1},"c":{"p":1,"q":2}}`,
		"a: &a {p: 1}\nc:\n  <<: [*a, {p: 2}]\n": `{"a":{"p":1},"c":{"p":1}}`,
	} {
		got, err := YAMLToJSON([]byte(in))
		if err != nil || string(got) != want {
			t.Errorf("YAMLToJSON(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"a: &a [1]\nc:\n  <<: [*a]\n", "c:\n  <<: [1]\n", "a: &a 1\nc:\n  <<: *a\n"} {
		if _, err := YAMLToJSON([]byte(in)); err == nil || !strings.Contains(err.Error(), "map merge requires") {
			t.Errorf("YAMLToJSON(%q): %v, want a merge error", in, err)
		}
	}
}

func TestJSONForms(t *testing.T) {
	for in, want := range map[string]string{
		"[1e-7, 1.5e-10, 1e21, 1e-100, 123456789e13, 0.000001, -2.5e-7]": `[1e-7,1.5e-10,1e+21,1e-100,1.23456789e+21,0.000001,-2.5e-7]`,
		`"\b\f\u0001\u007f\u2028\u2029é<>&\\\""`:                         `"\b\f\u0001` + "\x7f" + `\u2028\u2029é\u003c\u003e\u0026\\\""`,
		"!!binary /w==": `"\ufffd"`,
		"{}":            `{}`,
		"[' a b ', '']": `[" a b ",""]`,
		"\"\ufffd\"":    "\"\ufffd\"",
		"[]":            `[]`,
	} {
		got, err := YAMLToJSON([]byte(in))
		if err != nil || string(got) != want {
			t.Errorf("YAMLToJSON(%q) = %s, %v; want %s", in, got, err, want)
		}
		var a, b any
		if json.Unmarshal(got, &a) != nil || json.Unmarshal([]byte(want), &b) != nil || !reflect.DeepEqual(a, b) {
			t.Errorf("%s is not the JSON it should be", got)
		}
	}
	if _, err := JSONToYAML([]byte("{a: 1")); err == nil || !strings.HasPrefix(err.Error(), "yaml: line 1:") {
		t.Errorf("JSONToYAML of broken input: %v", err)
	}
	for in, want := range map[string]string{"a: .nan\n": "a: .nan\n", "a: -.inf\n": "a: -.inf\n", "a: .inf\n": "a: .inf\n", "a: 1e-7\n": "a: 1e-07\n"} {
		got, err := JSONToYAML([]byte(in))
		if err != nil || string(got) != want {
			t.Errorf("JSONToYAML(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

type left struct{ X string }
type LeftT struct{ X string }
type RightT struct{ X string }
type TaggedT struct {
	X string `json:"X"`
}
type fieldsProbe struct {
	left
	LeftT
	Left   left
	RightT `json:"-"`
	*TaggedT
	Skip    string `json:"-"`
	Renamed string `json:"other,omitempty"`
	Dash    string `json:"-,"`
	Bad     string `json:"a\"b"`
	hidden  string
}

type ambiguous struct {
	A1
	A2
}
type A1 struct{ X, Y string }
type A2 struct{ X string }
type T1 struct {
	X string `json:"X"`
}
type T2 struct {
	X string `json:"X"`
}

func TestStructFields(t *testing.T) {
	names := func(fs []jsonField) []string {
		var out []string
		for _, f := range fs {
			out = append(out, f.name)
		}
		return out
	}
	// The tagged X (one level down, through a pointer) beats the untagged
	// one of the same level; an unexported embedded struct and RightT
	// (json:"-") are skipped; "-," names a field "-"; an invalid tag name
	// falls back to the field's name.
	if got, want := names(structFields(reflect.TypeFor[fieldsProbe]())), []string{"Left", "X", "other", "-", "Bad"}; !reflect.DeepEqual(got, want) {
		t.Errorf("fields %v, want %v", got, want)
	}
	if got, want := names(structFields(reflect.TypeFor[ambiguous]())), []string{"Y"}; !reflect.DeepEqual(got, want) {
		t.Errorf("fields %v, want %v (X is ambiguous)", got, want)
	}
	// Built at run time: go vet refuses a repeated json tag in source.
	twoTagged := reflect.StructOf([]reflect.StructField{
		{Name: "T1", Type: reflect.TypeFor[T1](), Anonymous: true},
		{Name: "T2", Type: reflect.TypeFor[T2](), Anonymous: true},
	})
	if got := names(structFields(twoTagged)); len(got) != 0 {
		t.Errorf("fields %v, want none (two tagged X at one level)", got)
	}
	_ = fieldsProbe{}.hidden
}
