package output

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// -o jsonpath and -o custom-columns work on the model's JSON form, as
// kubectl's work on an object's: the model is encoded as JSON (its json
// tags name the fields) and decoded into plain maps and slices, and the
// templates run on those with gpunode's JSONPath engine (jp.go), which
// follows client-go's, the one kubectl uses. Missing keys print nothing
// (jsonpath) or <none> (custom-columns), as in kubectl.

func parseJSONPath(tmpl string) (*jpTemplate, error) {
	jp, err := parseJP(tmpl)
	if err != nil {
		return nil, fmt.Errorf("-o jsonpath: bad template %q: %w", tmpl, err)
	}
	return jp, nil
}

// plain is v's JSON form as maps, slices, strings, float64s and bools.
func plain(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode json: %w", err)
	}
	var out any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&out); err != nil {
		return nil, fmt.Errorf("decode json: %w", err)
	}
	return out, nil
}

func writeJSONPath(w io.Writer, tmpl string, v any) error {
	jp, err := parseJSONPath(tmpl)
	if err != nil {
		return err
	}
	data, err := plain(v)
	if err != nil {
		return err
	}
	if err := jp.execute(w, data); err != nil {
		return fmt.Errorf("-o jsonpath %q: %w", tmpl, err)
	}
	return nil
}

type customColumn struct {
	header string
	path   *jpTemplate
}

// parseCustomColumns reads kubectl's spec: HEADER:EXPR pairs separated by
// commas, EXPR a field path (".status", "status" or "{.status}"), split at
// its first colon only, as kubectl's, so that a slice (ID:.l[0:2]) is an
// EXPR.
func parseCustomColumns(spec string) ([]customColumn, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, fmt.Errorf("-o custom-columns: want HEADER:FIELD pairs, as in -o custom-columns=ID:.id,STATUS:.status")
	}
	var cols []customColumn
	for _, part := range strings.Split(spec, ",") {
		header, expr, ok := strings.Cut(part, ":")
		if !ok || header == "" {
			return nil, fmt.Errorf("-o custom-columns: unexpected spec %q, expected <header>:<json-path-expr>", part)
		}
		jp, err := parseJP(relaxed(expr))
		if err != nil {
			return nil, fmt.Errorf("-o custom-columns: column %s: bad field path %q: %w", header, expr, err)
		}
		cols = append(cols, customColumn{header, jp})
	}
	return cols, nil
}

// relaxed turns a field path as kubectl's custom-columns accept it into a
// jsonpath template: ".a.b", "a.b" and "{.a.b}" are the same column.
func relaxed(expr string) string {
	e := strings.TrimSpace(expr)
	if strings.HasPrefix(e, "{") && strings.HasSuffix(e, "}") {
		return e
	}
	if !strings.HasPrefix(e, ".") && !strings.HasPrefix(e, "[") {
		e = "." + e
	}
	return "{" + e + "}"
}

func writeCustomColumns(w io.Writer, spec string, v any, o Options) error {
	cols, err := parseCustomColumns(spec)
	if err != nil {
		return err
	}
	items := []any{v}
	if l, ok := v.(Lister); ok {
		items = nil
		rv := reflect.ValueOf(l.ListItems())
		if rv.Kind() == reflect.Slice {
			for i := range rv.Len() {
				items = append(items, rv.Index(i).Interface())
			}
		}
	}
	g := Grid{Columns: make([]Column, len(cols))}
	for i, c := range cols {
		g.Columns[i] = Column{Name: c.header}
	}
	for _, it := range items {
		data, err := plain(it)
		if err != nil {
			return err
		}
		row := make([]string, len(cols))
		for i, c := range cols {
			row[i] = customCell(c.path, data)
		}
		g.Rows = append(g.Rows, row)
	}
	// custom-columns lines are as wide as their values, as kubectl's.
	o.Wide = true
	return Print(w, g, o)
}

func customCell(jp *jpTemplate, data any) string {
	var vals []string
	for _, n := range jp.nodes {
		p, ok := n.(jpPath)
		if !ok {
			continue
		}
		found, err := p.eval([]any{data}, data)
		if err != nil {
			return "<none>"
		}
		for _, v := range found {
			if v == nil {
				continue
			}
			s, err := jpFormat(v)
			if err != nil {
				continue
			}
			vals = append(vals, s)
		}
	}
	if len(vals) == 0 {
		return "<none>"
	}
	return strings.Join(vals, ",")
}
