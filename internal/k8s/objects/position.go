package objects

import (
	"bytes"
	"errors"
	"regexp"
	"strconv"
	"strings"

	yamlnode "go.yaml.in/yaml/v3"
)

// Positions: the strict decode works on JSON (sigs.k8s.io/yaml converts
// each document first), which has no line numbers. On the error path only,
// Locate parses the file again with go.yaml.in/yaml/v3, whose nodes keep
// their lines, and finds the line of the error's document, List item and
// field path.

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

// reasonPath finds the path a strict decode names in its reason
// (unknown field "spec.containers[0].colour").
var reasonPath = regexp.MustCompile(`(?:unknown|duplicate) field "([^"]+)"`)

// syntaxLine is the line yaml.v3 names in a syntax error.
var syntaxLine = regexp.MustCompile(`\bline (\d+):`)

// Locate sets the line of a bad-input error from the file's bytes: the
// line of the field (or of the nearest enclosing field found), else of
// the List item, else of the document. err is returned as it is when it is
// not an *Error, already has a line, or names no document.
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
	var doc yamlnode.Node
	if perr := yamlnode.Unmarshal(s.src, &doc); perr != nil {
		// A syntax error: its line counts from the document's start.
		e.Line = s.line
		msg := perr.Error()
		if syntaxLine.MatchString(e.Reason) {
			msg = e.Reason // the line the reason names
		}
		if m := syntaxLine.FindStringSubmatch(msg); m != nil {
			if n, _ := strconv.Atoi(m[1]); n > 0 && n < 1<<30 {
				e.Line = s.line + n - 1
			}
		}
		return err
	}
	field := e.Field
	if field == "" {
		if m := reasonPath.FindStringSubmatch(e.Reason); m != nil {
			field = m[1]
		}
	}
	path := parsePath(field)
	if e.Item >= 0 {
		path = append([]pathStep{{key: "items", index: -1}, {index: e.Item}}, path...)
	}
	switch l := lineOf(&doc, path); {
	case l > 0:
		e.Line = s.line + l - 1
	case syntaxLine.MatchString(e.Reason):
		// No field, but the YAML decoder named a line (a duplicate key).
		n, _ := strconv.Atoi(syntaxLine.FindStringSubmatch(e.Reason)[1])
		e.Line = s.line + min(max(n, 1), 1<<30) - 1
	default:
		e.Line = s.line
	}
	return err
}

// pathStep is a map key (index -1) or a list index of a field path.
type pathStep struct {
	key   string
	index int
}

// parsePath splits "spec.containers[0].resources.requests[nvidia.com/gpu]"
// into steps; a bracket holds an index or, under a map, a key.
func parsePath(p string) []pathStep {
	var out []pathStep
	for len(p) > 0 && len(out) < 256 {
		switch p[0] {
		case '.':
			p = p[1:]
			continue
		case '[':
			end := strings.IndexByte(p, ']')
			if end < 0 {
				return out
			}
			in := p[1:end]
			p = p[end+1:]
			if n, err := strconv.Atoi(in); err == nil && n >= 0 {
				out = append(out, pathStep{index: n})
			} else {
				out = append(out, pathStep{key: strings.Trim(in, `"`), index: -1})
			}
			continue
		}
		end := strings.IndexAny(p, ".[")
		if end < 0 {
			end = len(p)
		}
		out = append(out, pathStep{key: p[:end], index: -1})
		p = p[end:]
	}
	return out
}

// lineOf walks path through a yaml.v3 tree and returns the line of the
// deepest step found (0 when not even the first is). A key step at a list
// (encoding/json names fields without indices) looks into the first
// element that has the key.
func lineOf(n *yamlnode.Node, path []pathStep) int {
	for n != nil && n.Kind == yamlnode.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 0
	for _, s := range path {
		for n != nil && n.Kind == yamlnode.AliasNode {
			n = n.Alias
		}
		if n == nil {
			break
		}
		var next *yamlnode.Node
		switch {
		case s.index >= 0 && n.Kind == yamlnode.SequenceNode && s.index < len(n.Content):
			next = n.Content[s.index]
			line = next.Line
		case s.index < 0 && n.Kind == yamlnode.MappingNode:
			next, line = child(n, s.key, line)
		case s.index < 0 && n.Kind == yamlnode.SequenceNode:
			for _, el := range n.Content {
				if el.Kind == yamlnode.MappingNode {
					if c, l := child(el, s.key, line); c != nil {
						next, line = c, l
						break
					}
				}
			}
		}
		if next == nil {
			break
		}
		n = next
	}
	return line
}

// child returns the value of key in mapping n and the key's line.
func child(n *yamlnode.Node, key string, line int) (*yamlnode.Node, int) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1], n.Content[i].Line
		}
	}
	return nil, line
}
