package objects

import (
	"bytes"
	"errors"

	"github.com/gpunode/gpunode/internal/yamlpos"
)

// Positions: the strict decode works on JSON (sigs.k8s.io/yaml converts
// each document first), which has no line numbers. On the error path only,
// Locate splits the file again and finds the line of the error's
// document, List item and field path (package yamlpos).

// span is one document of a file, as Documents splits it.
type span struct {
	line int // 1-based line of the document's first byte in the file
	src  []byte
}

// spans splits data like Documents (and utilyaml.YAMLReader): a line
// starting with "---" ends a document and belongs to none; empty
// documents (blank, comments) are dropped, so spans[i] is document i+1.
func spans(data []byte) []span {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '{' {
		lead := data[:len(data)-len(trimmed)]
		return []span{{line: 1 + bytes.Count(lead, []byte("\n")), src: trimmed}}
	}
	var out []span
	var cur span
	start := 0
	flush := func(end int) {
		if cur.line > 0 {
			cur.src = data[start:end]
			if !isEmptyYAML(cur.src) {
				out = append(out, cur)
			}
		}
		cur = span{}
	}
	for off, n := 0, 1; off < len(data) && len(out) < MaxDocuments; n++ {
		end := bytes.IndexByte(data[off:], '\n')
		next := len(data)
		if end >= 0 {
			next = off + end + 1
		}
		line := data[off:next]
		if bytes.HasPrefix(line, []byte("---")) {
			flush(off)
		} else if cur.line == 0 {
			cur.line, start = n, off
		}
		off = next
	}
	flush(len(data))
	return out
}

// Locate sets the line of a bad-input error from the file's bytes: the
// line of the field (or of the nearest enclosing field found; a field an
// "unknown field" reason names), else of the List item, else the line a
// YAML decoder named, else the document's first line. err is returned as
// it is when it is not an *Error, already has a line, or names no
// document.
func Locate(err error, data []byte) error {
	var e *Error
	if !errors.As(err, &e) || e.Line > 0 || e.Doc <= 0 {
		return err
	}
	ss := spans(data)
	if e.Doc > len(ss) {
		return err
	}
	s := ss[e.Doc-1]
	field := e.Field
	if field == "" {
		field = yamlpos.PathIn(e.Reason)
	}
	path := yamlpos.ParsePath(field)
	if e.Item >= 0 {
		path = append([]yamlpos.Step{{Key: "items", Index: -1}, {Index: e.Item}}, path...)
	}
	e.Line = s.line
	if l := yamlpos.LineIn(s.src, path); l > 0 {
		e.Line = s.line + fileLine(s.src, l) - 1
	} else if l := yamlpos.SyntaxLine(e.Reason); l > 0 {
		// No field, but the YAML decoder named a line (a syntax error or
		// a duplicate key), counted from the document's start.
		e.Line = s.line + fileLine(s.src, l) - 1
	}
	return err
}

// fileLine is line l of src as YAML counts lines (a lone '\r' breaks one
// too) as a line of the file ('\n' ends one, as everywhere else an Error
// counts); the line after the last, which the YAML decoder may name at
// the end of input, is the last.
func fileLine(src []byte, l int) int {
	line := 1
	for i, yl := 0, 1; i < len(src) && yl < l; i++ {
		switch {
		case src[i] == '\n':
			line++
			yl++
		case src[i] == '\r' && (i+1 == len(src) || src[i+1] != '\n'):
			yl++
		}
	}
	return line
}
