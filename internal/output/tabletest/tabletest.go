// Package tabletest checks a command's table output options as kubectl
// users expect them (issue 28 item 1): the default table fits 160 columns,
// --no-headers drops the header line and what is under the table, -o wide
// keeps every default column, and -o jsonpath / -o custom-columns read the
// JSON form, one row per item of the model's list. The cli and companion
// tests run it over every command with table output.
package tabletest

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gpunode/gpunode/internal/output"
)

// Runner runs the binary with args and returns its exit code, stdout and
// stderr.
type Runner func(t *testing.T, args ...string) (int, string, string)

// Case is one command line with table output.
type Case struct {
	Args []string
	// List is the JSON field holding the list -o custom-columns makes one
	// row per item of (the model's output.Lister); empty for a model that
	// is one row.
	List string
}

// header finds the main table's header line: the first line that starts
// with an upper-case word and has two columns or more.
var header = regexp.MustCompile(`^[A-Z][A-Z0-9]+( [A-Za-z0-9/#]+)*  +[A-Z(]`)

// cellGap is what separates a table line's cells: two spaces or more.
var cellGap = regexp.MustCompile(`\s{2,}`)

// columns splits a table line into its cells.
func columns(l string) []string {
	return cellGap.Split(strings.TrimSpace(l), -1)
}

// Check runs c with the default table and every option, and reports what
// breaks kubectl's conventions.
func Check(t *testing.T, run Runner, c Case) {
	t.Helper()
	// options go before a "--" that starts a command line (bind -- CMD)
	with := func(opts ...string) []string {
		args := slices.Clone(c.Args)
		at := slices.Index(args, "--")
		if at < 0 {
			at = len(args)
		}
		return slices.Insert(args, at, opts...)
	}
	code, table, stderr := run(t, c.Args...)
	if code > 1 {
		t.Errorf("%v: exit %d: %s", c.Args, code, stderr)
		return
	}
	if table == "" {
		t.Errorf("%v: no output", c.Args)
	}
	hdr := ""
	for _, l := range strings.Split(table, "\n") {
		if header.MatchString(l) {
			hdr = l
			break
		}
	}
	for n, l := range strings.Split(table, "\n") {
		if w := utf8.RuneCountInString(l); w > output.DefaultWidth && !strings.HasPrefix(l, "    ") {
			t.Errorf("%v: line %d is %d columns, over %d: %.80s...", c.Args, n+1, w, output.DefaultWidth, l)
		}
	}

	var doc map[string]any
	jcode, js, _ := run(t, with("-o", "json")...)
	if err := json.Unmarshal([]byte(js), &doc); err != nil || jcode != code {
		t.Errorf("%v -o json: exit %d (table: %d), %v", c.Args, jcode, code, err)
		return
	}
	var items []any
	if c.List != "" {
		raw, ok := doc[c.List]
		if l, isList := raw.([]any); isList {
			items = l
		} else if ok && raw != nil {
			t.Errorf("%v: JSON field %q is not a list", c.Args, c.List)
		}
	}

	// --no-headers: same exit code, the rows without the header line and
	// without the sections and summary under the table.
	ncode, noh, _ := run(t, with("--no-headers")...)
	if ncode != code {
		t.Errorf("%v --no-headers: exit %d, the table's was %d", c.Args, ncode, code)
	}
	if hdr != "" && strings.Contains(noh, strings.TrimRight(hdr, " ")+"\n") {
		t.Errorf("%v --no-headers: the header line is still there:\n%s", c.Args, noh)
	}
	for _, s := range []string{"Findings:", "Fixes (", "\nnote: "} {
		if strings.Contains(noh, s) {
			t.Errorf("%v --no-headers: %q under the table is still there", c.Args, s)
		}
	}
	if len(items) > 0 && strings.TrimSpace(noh) == "" {
		t.Errorf("%v --no-headers: no rows, the JSON has %d items", c.Args, len(items))
	}
	if len(strings.Split(noh, "\n")) > len(strings.Split(table, "\n")) {
		t.Errorf("%v --no-headers: more lines than the table", c.Args)
	}

	// -o wide: same exit code, and every default column in its header.
	wcode, wide, _ := run(t, with("-o", "wide")...)
	if wcode != code {
		t.Errorf("%v -o wide: exit %d, the table's was %d", c.Args, wcode, code)
	}
	if hdr != "" {
		want := columns(hdr)
		found := false
		for _, l := range strings.Split(wide, "\n") {
			if got := columns(l); len(got) >= len(want) && got[0] == want[0] && isSubsequence(want, got) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("%v -o wide: no header line with the default columns %q:\n%s", c.Args, want, wide)
		}
	}

	// -o jsonpath: the value the JSON form has.
	key, val := firstString(doc)
	if key == "" {
		t.Errorf("%v: the JSON form has no string field to test jsonpath on", c.Args)
		return
	}
	pcode, jp, perr := run(t, with("-o", "jsonpath={."+key+"}")...)
	if pcode != code || jp != val {
		t.Errorf("%v -o jsonpath={.%s}: exit %d %q (%s), want exit %d %q", c.Args, key, pcode, jp, perr, code, val)
	}

	// -o custom-columns: one row per list item (or one row), with the
	// values of the JSON form, <none> where an item lacks the field.
	var want []string
	col := key
	if c.List == "" {
		want = []string{val}
	} else {
		col = ""
		for _, it := range items {
			if m, ok := it.(map[string]any); ok {
				if col, _ = firstString(m); col != "" {
					break
				}
			}
		}
		if col == "" {
			col = "noSuchField"
		}
		for _, it := range items {
			v := "<none>"
			if m, ok := it.(map[string]any); ok {
				if s, ok := m[col].(string); ok {
					v = s
				}
			}
			want = append(want, v)
		}
	}
	ccode, cc, cerr := run(t, with("-o", "custom-columns=COL:."+col)...)
	lines := strings.Split(strings.TrimSuffix(cc, "\n"), "\n")
	if ccode != code || len(lines) == 0 || lines[0] != "COL" || !slices.Equal(lines[1:], want) {
		t.Errorf("%v -o custom-columns=COL:.%s: exit %d (%s)\n%s\nwant exit %d, COL then %q", c.Args, col, ccode, cerr, cc, code, want)
	}
}

// firstString is the JSON object's schemaVersion, or else its first
// non-empty string field in name order.
func firstString(m map[string]any) (string, string) {
	if s, ok := m["schemaVersion"].(string); ok && s != "" {
		return "schemaVersion", s
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if s, ok := m[k].(string); ok && s != "" && !strings.ContainsAny(k, ".[]") {
			return k, s
		}
	}
	return "", ""
}

func isSubsequence(want, got []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

// String names a case for test output.
func (c Case) String() string { return fmt.Sprint(c.Args) }
