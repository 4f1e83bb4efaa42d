package yamlpos

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

const doc = `# a node file
apiVersion: gpunode.io/v1
numaNodes:
- id: 0
  cpus: "0-3"
- id: 1
  cpus: "4-7"
  hugePages: {2Mi: 4}
spec:
  requests:
    nvidia.com/gpu: 1
`

func TestLine(t *testing.T) {
	for _, tc := range []struct {
		field string
		want  int
	}{
		{"apiVersion", 2},
		{"numaNodes[1].cpus", 7},
		{"numaNodes[1]", 6},
		{"numaNodes[1].hugePages[2Mi]", 8},
		{"spec.requests[nvidia.com/gpu]", 11},
		{"numaNodes.cpus", 5},      // no index: the first element with the key
		{"numaNodes[1].nosuch", 6}, // the nearest enclosing field
		{"numaNodes[9].cpus", 3},   // index out of range: the list
		{"nosuch", 0},
		{"", 0},
	} {
		if got := Line([]byte(doc), tc.field); got != tc.want {
			t.Errorf("Line(%q) = %d, want %d", tc.field, got, tc.want)
		}
	}
	// JSON is YAML: lines count the same.
	js := "{\n  \"numaNodes\": [\n    {\"id\": 0},\n    {\"id\": 70}\n  ]\n}\n"
	if got := Line([]byte(js), "numaNodes[1].id"); got != 4 {
		t.Errorf("JSON: Line = %d, want 4", got)
	}
	if got := Line([]byte("a: [\n"), "a"); got != 0 {
		t.Errorf("bad YAML: Line = %d, want 0", got)
	}
}

// A key given twice is found at its last line, the value a non-strict
// decoder keeps.
func TestLineOfRepeatedKey(t *testing.T) {
	src := "devices: 1\nother: x\ndevices: 2\n"
	if got := Line([]byte(src), "devices"); got != 3 {
		t.Errorf("Line(devices) = %d, want 3 (the second devices:)", got)
	}
}

func TestParsePath(t *testing.T) {
	got := ParsePath(`spec.containers[0].resources.requests["nvidia.com/gpu"]`)
	want := []Step{{Key: "spec", Index: -1}, {Key: "containers", Index: -1}, {Index: 0}, {Key: "resources", Index: -1}, {Key: "requests", Index: -1}, {Key: "nvidia.com/gpu", Index: -1}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParsePath = %+v", got)
	}
}

func TestWrap(t *testing.T) {
	for _, tc := range []struct{ msg, want string }{
		{"numaNodes[1].cpus: CPU 4 already belongs to NUMA node 0", "node.yaml:7: numaNodes[1].cpus: CPU 4 already belongs to NUMA node 0"},
		{`decode: error unmarshaling JSON: while decoding JSON: json: unknown field "spec.requests"`, `node.yaml:10: decode: unknown field "spec.requests"`},
		{`error unmarshaling JSON: while decoding JSON: json: cannot unmarshal string into Go struct field File.numaNodes of type int`, `node.yaml:3: numaNodes: cannot unmarshal string (want int)`},
		{"yaml: line 4: did not find expected key", "node.yaml:4: yaml: line 4: did not find expected key"},
		{"empty input", "node.yaml: empty input"},
	} {
		err := Wrap("node.yaml", []byte(doc), errors.New(tc.msg))
		if err == nil || err.Error() != tc.want {
			t.Errorf("Wrap(%q) = %v, want %s", tc.msg, err, tc.want)
		}
	}
	base := errors.New("x: y")
	if err := Wrap("f", []byte(doc), base); !errors.Is(err, base) {
		t.Errorf("Wrap does not wrap: %v", err)
	}
	if Wrap("f", nil, nil) != nil {
		t.Error("Wrap(nil) is not nil")
	}
}

// quoteYAML writes s as a YAML double-quoted scalar, escaping all but
// printable ASCII (YAML refuses raw DEL and other controls).
func quoteYAML(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteString(`\` + string(r))
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// placeAt writes a JSON document (one token per line) that holds path,
// and returns it with the line of the path's last step: the key's line
// for a key, the element's first line for an index. ok is false for a
// path this writer cannot place (invalid UTF-8 keys, "<<" merge keys,
// keys over YAML's 1024-character limit, too deep or too long).
func placeAt(path []Step) (src []byte, line int, ok bool) {
	if len(path) == 0 || len(path) > 32 {
		return nil, 0, false
	}
	var b strings.Builder
	n := 1 // the line being written
	put := func(s string) {
		b.WriteString(s + "\n")
		n++
	}
	for _, s := range path {
		if s.Index >= 0 {
			if s.Index > 64 {
				return nil, 0, false
			}
			put("[")
			for range s.Index {
				put("0,")
			}
			line = n
			continue
		}
		if !utf8.ValidString(s.Key) || s.Key == "<<" {
			return nil, 0, false
		}
		q := quoteYAML(s.Key)
		if len(q) > 1000 {
			return nil, 0, false // YAML's implicit keys are at most 1024 characters
		}
		put("{")
		line = n
		put(q + ":")
	}
	put("1")
	for i := len(path) - 1; i >= 0; i-- {
		if path[i].Index >= 0 {
			put("]")
		} else {
			put("}")
		}
	}
	return []byte(b.String()), line, true
}

// FuzzLine: on any input, Line is 0 or a line of src and agrees with
// LineIn on the parsed path; and a document written to hold the fuzzed
// path (placeAt) has Line at exactly the line where the path ends.
func FuzzLine(f *testing.F) {
	f.Add([]byte(doc), "numaNodes[1].cpus")
	f.Add([]byte("{\"a\": [1, {\"b\": 2}]}"), "a[1].b")
	f.Add([]byte("a: &x {b: 1}\nc: *x\n"), "c.b")
	f.Add([]byte(""), `spec.containers[0].resources.requests[nvidia.com/gpu]`)
	f.Add([]byte(""), `a[3][x"y]..b`)
	f.Add([]byte("a:\nb"), "yaml: line 3: could not find expected ':'")
	f.Fuzz(func(t *testing.T, src []byte, field string) {
		lines := 1 + bytes.Count(src, []byte("\n"))
		l := Line(src, field)
		if l < 0 || l > lines {
			t.Fatalf("Line = %d outside 0..%d", l, lines)
		}
		if m := MessageLine(src, field); m < 0 || m > lines {
			t.Fatalf("MessageLine = %d outside 0..%d", m, lines)
		}
		path := ParsePath(field)
		if li := LineIn(src, path); li != l {
			t.Fatalf("LineIn = %d, Line = %d", li, l)
		}
		built, want, ok := placeAt(path)
		if !ok {
			return
		}
		if got := Line(built, field); got != want {
			t.Fatalf("path %q (%+v) in\n%s\nLine = %d, want %d", field, path, built, got, want)
		}
	})
}
