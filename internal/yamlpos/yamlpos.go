// Package yamlpos finds where a field is in a YAML (or JSON) document, so
// that errors about user files name the line: the strict decoders gpunode
// uses (sigs.k8s.io/yaml, internal/yamljson, encoding/json) work on JSON
// and lose positions.
// On the error path only, the document is parsed again with
// go.yaml.in/yaml/v3, whose nodes keep their lines, and a field path
// ("spec.containers[0].resources.requests[nvidia.com/gpu]") is walked
// through it.
package yamlpos

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	yamlnode "go.yaml.in/yaml/v3"
)

// Line returns the 1-based line of field in the first document of src, or
// of the nearest enclosing field found; 0 when src does not parse or not
// even the first step of the path is there.
func Line(src []byte, field string) int {
	var doc yamlnode.Node
	if yamlnode.Unmarshal(src, &doc) != nil {
		return 0
	}
	return lineOf(&doc, ParsePath(field))
}

// LineIn is Line for a path already split into steps.
func LineIn(src []byte, path []Step) int {
	var doc yamlnode.Node
	if yamlnode.Unmarshal(src, &doc) != nil {
		return 0
	}
	return lineOf(&doc, path)
}

// reasonPath is the path a strict decoder names in its message (unknown
// field "spec.containers[0].colour").
var reasonPath = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?:unknown|duplicate) field "([^"]+)"`) })

// syntaxLine is the line a YAML decoder names in its message.
var syntaxLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\bline (\d+):`) })

// leadingPath matches a message that starts with a field path.
var leadingPath = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z_][A-Za-z0-9_-]*|\[[^\]\s]+\])*): `)
})

// PathIn returns the field path msg names: an "unknown field" or
// "duplicate field" the strict decoder reports, else the path msg starts
// with ("numaNodes[1].cpus: ..."); "" when none.
func PathIn(msg string) string {
	if m := reasonPath().FindStringSubmatch(msg); m != nil {
		return m[1]
	}
	if m := leadingPath().FindStringSubmatch(msg); m != nil {
		return m[1]
	}
	return ""
}

// SyntaxLine returns the line a YAML decoder's message names ("yaml: line
// 3: did not find expected key"), 0 when none.
func SyntaxLine(msg string) int {
	m := syntaxLine().FindStringSubmatch(msg)
	if m == nil {
		return 0
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n < 1 || n > 1<<30 {
		return 0
	}
	return n
}

// MessageLine returns the line in src that msg is about: the line of the
// field an "unknown field" names, else of the path msg starts with
// ("providers[0].cpu[0]: json: unknown field ..."), else the line a YAML
// decoder named (at most the last line of src); 0 when unknown.
func MessageLine(src []byte, msg string) int {
	var paths []string
	if m := reasonPath().FindStringSubmatch(msg); m != nil {
		paths = append(paths, m[1])
	}
	if m := leadingPath().FindStringSubmatch(msg); m != nil {
		paths = append(paths, m[1])
	}
	for _, p := range paths {
		if l := Line(src, p); l > 0 {
			return l
		}
	}
	// A parser at the end of the input may name the line after the last
	// one ("a:\nb" fails at line 3): that is the last line.
	return min(SyntaxLine(msg), 1+bytes.Count(src, []byte("\n")))
}

// Wrap prefixes err with "name:LINE: " (the line from MessageLine) or
// "name: " when the line is unknown; a nil err stays nil.
func Wrap(name string, src []byte, err error) error {
	if err == nil {
		return nil
	}
	err = Clean(err)
	if l := MessageLine(src, err.Error()); l > 0 {
		return fmt.Errorf("%s:%d: %w", name, l, err)
	}
	return fmt.Errorf("%s: %w", name, err)
}

// Step is one step of a field path: a map key (Index -1) or a list
// index.
type Step struct {
	Key   string
	Index int
}

// ParsePath splits "spec.containers[0].resources.requests[nvidia.com/gpu]"
// into steps; a bracket holds an index or, under a map, a key.
func ParsePath(p string) []Step {
	var out []Step
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
				out = append(out, Step{Index: n})
			} else {
				out = append(out, Step{Key: strings.Trim(in, `"`), Index: -1})
			}
			continue
		}
		end := strings.IndexAny(p, ".[")
		if end < 0 {
			end = len(p)
		}
		out = append(out, Step{Key: p[:end], Index: -1})
		p = p[end:]
	}
	return out
}

// lineOf walks path through a yaml.v3 tree and returns the line of the
// deepest step found (0 when not even the first is). A key step at a list
// (encoding/json names fields without indices) looks into the first
// element that has the key.
func lineOf(n *yamlnode.Node, path []Step) int {
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
		case s.Index >= 0 && n.Kind == yamlnode.SequenceNode && s.Index < len(n.Content):
			next = n.Content[s.Index]
			line = next.Line
		case s.Index < 0 && n.Kind == yamlnode.MappingNode:
			next, line = child(n, s.Key, line)
		case s.Index < 0 && n.Kind == yamlnode.SequenceNode:
			for _, el := range n.Content {
				if el.Kind == yamlnode.MappingNode {
					if c, l := child(el, s.Key, line); c != nil {
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

// child returns the value of key in mapping n and the key's line. A key
// given twice is the last one: the value a non-strict decoder keeps.
func child(n *yamlnode.Node, key string, line int) (*yamlnode.Node, int) {
	var v *yamlnode.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			v, line = n.Content[i+1], n.Content[i].Line
		}
	}
	return v, line
}
