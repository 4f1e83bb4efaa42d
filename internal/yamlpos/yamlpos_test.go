package yamlpos

import (
	"errors"
	"reflect"
	"testing"
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

func FuzzLine(f *testing.F) {
	f.Add([]byte(doc), "numaNodes[1].cpus")
	f.Add([]byte("{\"a\": [1, {\"b\": 2}]}"), "a[1].b")
	f.Add([]byte("a: &x {b: 1}\nc: *x\n"), "c.b")
	f.Fuzz(func(t *testing.T, src []byte, field string) {
		lines := 1
		for _, c := range src {
			if c == '\n' {
				lines++
			}
		}
		if l := Line(src, field); l < 0 || l > lines {
			t.Fatalf("Line = %d outside 0..%d", l, lines)
		}
		_ = MessageLine(src, field)
	})
}
