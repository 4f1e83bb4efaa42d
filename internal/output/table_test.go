package output

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

type listModel struct {
	SchemaVersion string `json:"schemaVersion"`
	Items         []item `json:"items"`
}

type item struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Fix    string `json:"fix,omitempty"`
}

func (m listModel) ListItems() any { return m.Items }

func (m listModel) WriteTable(w io.Writer, o Options) error {
	g := Grid{Columns: []Column{{Name: "ID"}, {Name: "STATUS"}, {Name: "FIX", Wrap: true}, {Name: "EXTRA", Wide: true}}}
	for _, it := range m.Items {
		g.AddRow(it.ID, it.Status, it.Fix, "x")
	}
	return Print(w, g, o)
}

func render(t *testing.T, f string, v any, o Options) string {
	t.Helper()
	ff, err := ParseFormat(f)
	if err != nil {
		t.Fatalf("ParseFormat(%q): %v", f, err)
	}
	var b bytes.Buffer
	if err := Write(&b, ff, v, o); err != nil {
		t.Fatalf("Write %q: %v", f, err)
	}
	return b.String()
}

func widest(s string) int {
	n := 0
	for _, l := range strings.Split(s, "\n") {
		n = max(n, len([]rune(l)))
	}
	return n
}

var lm = listModel{"v1", []item{
	{"a", "ok", ""},
	{"b", "drift", strings.Repeat("word ", 60) + "end"},
}}

func TestPrintFitsWidthAndWraps(t *testing.T) {
	out := render(t, "table", lm, Options{})
	if w := widest(out); w > DefaultWidth {
		t.Errorf("widest line %d > %d:\n%s", w, DefaultWidth, out)
	}
	if !strings.HasPrefix(out, "ID  STATUS  FIX\n") {
		t.Errorf("header: %q", out)
	}
	if strings.Contains(out, "EXTRA") {
		t.Errorf("wide column in the default table:\n%s", out)
	}
	if n := strings.Count(out, "\n"); n < 4 {
		t.Errorf("the long fix was not wrapped (%d lines):\n%s", n, out)
	}
	// At, below and above the edge: a table exactly the width is kept.
	for _, width := range []int{30, 31, 29} {
		out := render(t, "table", lm, Options{Width: width})
		if w := widest(out); w > width {
			t.Errorf("width %d: widest line %d:\n%s", width, w, out)
		}
	}
}

func TestWideAndNoHeaders(t *testing.T) {
	out := render(t, "wide", lm, Options{})
	if !strings.Contains(out, "EXTRA") || widest(out) <= DefaultWidth {
		t.Errorf("-o wide: want the EXTRA column and the fix unwrapped:\n%s", out)
	}
	out = render(t, "table", lm, Options{NoHeaders: true})
	if strings.Contains(out, "STATUS") || !strings.HasPrefix(out, "a  ok") {
		t.Errorf("--no-headers:\n%s", out)
	}
}

func TestJSONPathAndCustomColumns(t *testing.T) {
	if got := render(t, "jsonpath={.items[*].id}", lm, Options{}); got != "a b" {
		t.Errorf("jsonpath: %q, want %q", got, "a b")
	}
	if got := render(t, "jsonpath={.missing}", lm, Options{}); got != "" {
		t.Errorf("jsonpath of a missing key: %q, want empty (kubectl allows missing keys)", got)
	}
	got := render(t, "custom-columns=ID:.id,ST:status,FIX:{.fix}", lm, Options{})
	want := "ID  ST     FIX\na   ok     <none>\nb   drift  " + strings.Repeat("word ", 60) + "end\n"
	if got != want {
		t.Errorf("custom-columns:\n%q\nwant\n%q", got, want)
	}
	// the spec splits at a column's first colon, as kubectl's: a slice
	// is a field path
	if got := render(t, "custom-columns=TWO:.l[0:2],LAST:l[-1:]", map[string]any{"l": []int{1, 2, 3}}, Options{}); got != "TWO  LAST\n1,2  3\n" {
		t.Errorf("custom-columns with a slice: %q", got)
	}
	for _, bad := range []string{"jsonpath=", "jsonpath={.a", "custom-columns=", "custom-columns=ID", "custom-columns=ID:{.a", "json=x", "tablex"} {
		if _, err := ParseFormat(bad); err == nil {
			t.Errorf("ParseFormat(%q) accepted", bad)
		}
	}
}

func TestWrapLongWord(t *testing.T) {
	got := Wrap("ab "+strings.Repeat("x", 25), 10)
	want := []string{"ab", "xxxxxxxxxx", "xxxxxxxxxx", "xxxxx"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Wrap: %q, want %q", got, want)
	}
}
