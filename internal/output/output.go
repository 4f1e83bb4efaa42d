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
	"text/tabwriter"

	yaml "go.yaml.in/yaml/v3"
)

// Format is an output format selected with -o.
type Format string

// The supported formats.
const (
	Table Format = "table"
	JSON  Format = "json"
	YAML  Format = "yaml"
)

// ParseFormat validates a -o value.
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(strings.TrimSpace(s))); f {
	case Table, JSON, YAML:
		return f, nil
	case "":
		return Table, nil
	default:
		return "", fmt.Errorf("unknown output format %q (want table, json or yaml)", s)
	}
}

// Options tune the table rendering.
type Options struct {
	// Color enables ANSI colours in tables.
	Color bool
}

// Tabler is implemented by models that have a human-readable table form.
type Tabler interface {
	WriteTable(w io.Writer, o Options) error
}

// Write renders v in format f.
func Write(w io.Writer, f Format, v any, o Options) error {
	switch f {
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
	case Table, "":
		t, ok := v.(Tabler)
		if !ok {
			return fmt.Errorf("%T has no table form; use -o json or -o yaml", v)
		}
		return t.WriteTable(w, o)
	default:
		return fmt.Errorf("unknown output format %q", f)
	}
}

// NewTabWriter returns the tabwriter configuration all tables share.
func NewTabWriter(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
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
