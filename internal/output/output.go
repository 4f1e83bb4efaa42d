// Package output renders gpunode's data models as a table, JSON or YAML.
//
// Every command builds one data model (a struct with a SchemaVersion field) and
// hands it to Write; the table form comes from the model's WriteTable method, so
// the three formats can never disagree about the data.
package output

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// Format is an output format selected with -o.
type Format string

// The supported formats. JSONPath and CustomColumns carry their template
// after '=' as kubectl's do: "jsonpath={.checks[*].id}",
// "custom-columns=ID:.id,STATUS:.status".
const (
	Table         Format = "table"
	Wide          Format = "wide"
	JSON          Format = "json"
	YAML          Format = "yaml"
	JSONPath      Format = "jsonpath"
	CustomColumns Format = "custom-columns"
)

// FormatNames lists the -o values for help texts and completion.
var formatNames = []string{"table", "wide", "json", "yaml", "jsonpath=TEMPLATE", "custom-columns=SPEC"}

// FormatHelp is the -o flag's help text.
func FormatHelp() string {
	return "output format: " + strings.Join(formatNames, ", ") + " (jsonpath and custom-columns as kubectl's, over the JSON form)"
}

// Kind is the format without its template: JSONPath for
// "jsonpath={...}".
func (f Format) Kind() Format {
	if k, _, ok := strings.Cut(string(f), "="); ok {
		return Format(k)
	}
	return f
}

// Template is the text after '=' of a jsonpath or custom-columns format.
func (f Format) Template() string {
	_, t, _ := strings.Cut(string(f), "=")
	return t
}

// ParseFormat validates a -o value. A jsonpath or custom-columns template
// is parsed here, so a bad one is a usage error before anything runs.
func ParseFormat(s string) (Format, error) {
	s = strings.TrimSpace(s)
	kind, tmpl, hasTmpl := strings.Cut(s, "=")
	switch f := Format(strings.ToLower(kind)); f {
	case Table, Wide, JSON, YAML:
		if hasTmpl {
			return "", fmt.Errorf("output format %q takes no template", kind)
		}
		return f, nil
	case "":
		return Table, nil
	case JSONPath:
		if strings.TrimSpace(tmpl) == "" {
			return "", fmt.Errorf("-o jsonpath: want a template, as in -o jsonpath='{.schemaVersion}'")
		}
		if _, err := parseJSONPath(tmpl); err != nil {
			return "", err
		}
		return Format(string(JSONPath) + "=" + tmpl), nil
	case CustomColumns:
		if _, err := parseCustomColumns(tmpl); err != nil {
			return "", err
		}
		return Format(string(CustomColumns) + "=" + tmpl), nil
	default:
		return "", fmt.Errorf("unknown output format %q (want table, wide, json, yaml, jsonpath=TEMPLATE or custom-columns=SPEC)", s)
	}
}

// Options tune the table rendering.
type Options struct {
	// Color enables ANSI colours in tables.
	Color bool
	// Wide adds the wide columns and lifts the width limit (-o wide).
	Wide bool
	// NoHeaders leaves out the header line, and the sections under the
	// table, so that scripts read only rows (--no-headers).
	NoHeaders bool
	// Width is the terminal width the default table fits; zero means
	// DefaultWidth.
	Width int
}

// Lister is implemented by models whose rows are a list in their JSON
// form (the checks of an audit): -o custom-columns makes one row per item,
// as kubectl does for a List. A model without it is one row.
type Lister interface {
	ListItems() any
}

// Tabler is implemented by models that have a human-readable table form.
type Tabler interface {
	WriteTable(w io.Writer, o Options) error
}

// Write renders v in format f.
func Write(w io.Writer, f Format, v any, o Options) error {
	switch f.Kind() {
	case JSONPath:
		return writeJSONPath(w, f.Template(), v)
	case CustomColumns:
		return writeCustomColumns(w, f.Template(), v, o)
	case JSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false) // keep "->" and "<none>" readable
		if err := enc.Encode(v); err != nil {
			return fmt.Errorf("encode json: %w", err)
		}
		return nil
	case YAML:
		b, err := marshalYAML(v)
		if err != nil {
			return fmt.Errorf("encode yaml: %w", err)
		}
		_, err = w.Write(b)
		return err
	case Table, Wide, "":
		if f == Wide {
			o.Wide = true
		}
		t, ok := v.(Tabler)
		if !ok {
			return fmt.Errorf("%T has no table form; use -o json or -o yaml", v)
		}
		return t.WriteTable(w, o)
	default:
		return fmt.Errorf("unknown output format %q", f)
	}
}

// Paint wraps s in an ANSI colour when o.Color is set. Colours: "red",
// "yellow", "green", "bold", "dim".
func (o Options) Paint(color, s string) string {
	if !o.Color {
		return s
	}
	codes := map[string]string{"red": "31", "yellow": "33", "green": "32", "bold": "1", "dim": "2"}
	c, ok := codes[color]
	if !ok {
		return s
	}
	return "\x1b[" + c + "m" + s + "\x1b[0m"
}

// ErrWriter wraps a writer and remembers its first error, so a table can be
// written with many Printf calls and one error check at the end.
type ErrWriter struct {
	W   io.Writer
	Err error
}

// Write implements io.Writer; after the first error it writes nothing.
func (e *ErrWriter) Write(p []byte) (int, error) {
	if e.Err != nil {
		return 0, e.Err
	}
	n, err := e.W.Write(p)
	e.Err = err
	return n, err
}

// Printf formats to the writer.
func (e *ErrWriter) Printf(format string, args ...any) { fmt.Fprintf(e, format, args...) }

// HumanBytes renders a byte count in binary units ("503.5 GiB").
func HumanBytes(b uint64) string {
	const unit = 1024
	if b < unit {
		return fmt.Sprintf("%d B", b)
	}
	div, exp := uint64(unit), 0
	for n := b / unit; n >= unit; n /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(b)/float64(div), "KMGTPE"[exp])
}

// marshalYAML renders v as YAML with the keys in JSON field order (so
// schemaVersion comes first, as in JSON): v is encoded as JSON (its json
// tags decide names and omissions) and the JSON document, itself YAML, is
// re-encoded in block style.
func marshalYAML(v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(j, &doc); err != nil {
		return nil, err
	}
	plainStyle(&doc, 0)
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// plainStyle drops the JSON quoting and flow styles; the encoder quotes a
// string again where plain YAML would read it as another type. Depth is
// bounded by the JSON decoder's own nesting limit.
func plainStyle(n *yaml.Node, depth int) {
	if depth > 10000 {
		return
	}
	n.Style = 0
	for _, c := range n.Content {
		plainStyle(c, depth+1)
	}
}
