package output

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// gpunode's own JSONPath engine for -o jsonpath and -o custom-columns, in
// kubectl's template dialect (k8s.io/client-go/util/jsonpath is what
// kubectl runs, but gpunode must not link client-go). It reads the plain
// form of a model (maps, slices, strings, json.Numbers, bools, nil):
//
//	text {.a.b} {.list[*].name} {.list[0]} {.list[-1:]} {.list[0:4:2]}
//	{['key.with.dots']} {..name} {.list[?(@.status=="drift")].id}
//	{range .list[*]}{.id}{"\n"}{end}  {"literal"}
//
// Missing keys print nothing (kubectl's AllowMissingKeys, which its
// printers set); the results of one action are joined by spaces; maps and
// lists print as compact JSON. conformance/dra's TestJSONPathMatchesClientGo
// runs it and client-go's on the same templates and documents.

type jpNode interface{}

type jpText string

type jpPath []jpStep

type jpRange struct {
	path jpPath
	body []jpNode
}

type jpStepKind int

const (
	stepField jpStepKind = iota
	stepWildcard
	stepRecursive // ..name or ..*
	stepIndex
	stepSlice
	stepFilter
)

type jpStep struct {
	kind   jpStepKind
	names  []string // stepField (a union), stepRecursive ("" for *)
	index  []int    // stepIndex (a union)
	slice  [3]*int  // start, end, step
	filter *jpFilter
}

type jpFilter struct {
	left, right jpOperand
	op          string // "" tests existence
}

type jpOperand struct {
	path    jpPath // relative to @ (or $ when root)
	root    bool
	literal any // string, json.Number, bool, nil
	isPath  bool
}

type jpTemplate struct{ nodes []jpNode }

// maxJPDepth bounds nested range blocks (parseJP refuses deeper ones, so
// running them recurses no deeper). Recursive descent (descend) stops at
// 10000 levels, the most encoding/json decodes, so plain data never meets it.
const maxJPDepth = 64

func parseJP(tmpl string) (*jpTemplate, error) {
	var stack [][]jpNode
	var ranges []jpPath
	cur := []jpNode{}
	for len(tmpl) > 0 {
		open := strings.IndexByte(tmpl, '{')
		if open < 0 {
			cur = append(cur, jpText(tmpl))
			break
		}
		if open > 0 {
			cur = append(cur, jpText(tmpl[:open]))
		}
		end, err := actionEnd(tmpl, open)
		if err != nil {
			return nil, err
		}
		action := strings.TrimSpace(tmpl[open+1 : end])
		tmpl = tmpl[end+1:]
		switch {
		case action == "end":
			if len(stack) == 0 {
				return nil, fmt.Errorf("not in range, nothing to end")
			}
			r := jpRange{path: ranges[len(ranges)-1], body: cur}
			cur = append(stack[len(stack)-1], r)
			stack, ranges = stack[:len(stack)-1], ranges[:len(ranges)-1]
		case strings.HasPrefix(action, "range ") || action == "range":
			if len(stack) >= maxJPDepth {
				return nil, fmt.Errorf("range blocks nested deeper than %d", maxJPDepth)
			}
			p, err := parseJPPath(strings.TrimSpace(strings.TrimPrefix(action, "range")))
			if err != nil {
				return nil, err
			}
			stack, ranges = append(stack, cur), append(ranges, p)
			cur = []jpNode{}
		case strings.HasPrefix(action, `"`):
			s, err := strconv.Unquote(action)
			if err != nil {
				return nil, fmt.Errorf("bad string literal %s: %w", action, err)
			}
			cur = append(cur, jpText(s))
		case strings.HasPrefix(action, "'") && strings.HasSuffix(action, "'") && len(action) >= 2:
			cur = append(cur, jpText(action[1:len(action)-1]))
		default:
			p, err := parseJPPath(action)
			if err != nil {
				return nil, err
			}
			cur = append(cur, p)
		}
	}
	if len(stack) > 0 {
		return nil, fmt.Errorf("unclosed range (want {end})")
	}
	return &jpTemplate{nodes: cur}, nil
}

// actionEnd finds the '}' closing the action opened at open, skipping
// quoted strings and brackets.
func actionEnd(s string, open int) (int, error) {
	depth := 0
	var quote byte
	for i := open + 1; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' && quote == '"' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '[' || c == '(':
			depth++
		case c == ']' || c == ')':
			depth--
		case c == '}' && depth <= 0:
			return i, nil
		}
	}
	return 0, fmt.Errorf("unclosed action in %q", s[open:])
}

func parseJPPath(s string) (jpPath, error) {
	var p jpPath
	s = strings.TrimPrefix(strings.TrimPrefix(s, "$"), "@")
	for len(s) > 0 {
		switch {
		case strings.HasPrefix(s, ".."):
			name, rest := jpName(s[2:])
			if name == "" {
				return nil, fmt.Errorf("want a field name after '..' in %q", s)
			}
			if name == "*" {
				name = ""
			}
			p = append(p, jpStep{kind: stepRecursive, names: []string{name}})
			s = rest
		case s[0] == '.':
			name, rest := jpName(s[1:])
			switch name {
			case "":
				if rest == "" {
					return p, nil // "." alone: the whole value
				}
				if rest[0] == '[' {
					s = rest // ".[0]" is "[0]"
					continue
				}
				return nil, fmt.Errorf("want a field name after '.' in %q", s)
			case "*":
				p = append(p, jpStep{kind: stepWildcard})
			default:
				p = append(p, jpStep{kind: stepField, names: []string{name}})
			}
			s = rest
		case s[0] == '[':
			end, err := bracketEnd(s)
			if err != nil {
				return nil, err
			}
			in := strings.TrimSpace(s[1:end])
			if q := unquoteName(in); q != "" {
				// ['a.b'] is .a.b, as client-go reads it (dots in a key
				// are escaped: ['a\.b'] or .a\.b)
				sub, err := parseJPPath("." + q)
				if err != nil {
					return nil, err
				}
				p = append(p, sub...)
				s = s[end+1:]
				continue
			}
			st, err := parseBracket(in)
			if err != nil {
				return nil, err
			}
			p = append(p, st)
			s = s[end+1:]
		default:
			name, rest := jpName(s) // a leading field without a dot
			if name == "" {
				return nil, fmt.Errorf("unexpected %q in path", s)
			}
			p = append(p, jpStep{kind: stepField, names: []string{name}})
			s = rest
		}
	}
	return p, nil
}

// jpName reads a field name (letters, digits, '_', '-', '/'; or '*') and
// returns it and the rest; "" when s starts with no name.
func jpName(s string) (string, string) {
	if strings.HasPrefix(s, "*") {
		return "*", s[1:]
	}
	i := 0
	var b strings.Builder
	for i < len(s) {
		c := s[i]
		if c == '\\' && i+1 < len(s) { // kubectl's escape: kubernetes\.io/hostname
			b.WriteByte(s[i+1])
			i += 2
			continue
		}
		if c == '_' || c == '-' || c == '/' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80 {
			b.WriteByte(c)
			i++
			continue
		}
		break
	}
	return b.String(), s[i:]
}

func bracketEnd(s string) (int, error) {
	depth := 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '[':
			depth++
		case c == ']':
			depth--
			if depth == 0 {
				return i, nil
			}
		}
	}
	return 0, fmt.Errorf("unclosed '[' in %q", s)
}

// unquoteName is the name in a bracket holding one quoted name ('a' or
// "a"), or "".
func unquoteName(in string) string {
	if len(in) >= 2 && (in[0] == '\'' || in[0] == '"') && in[len(in)-1] == in[0] && !strings.Contains(in[1:len(in)-1], string(in[0])) {
		return in[1 : len(in)-1]
	}
	return ""
}

func parseBracket(in string) (jpStep, error) {
	switch {
	case in == "*":
		return jpStep{kind: stepWildcard}, nil
	case strings.HasPrefix(in, "?(") && strings.HasSuffix(in, ")"):
		f, err := parseFilter(strings.TrimSpace(in[2 : len(in)-1]))
		if err != nil {
			return jpStep{}, err
		}
		return jpStep{kind: stepFilter, filter: f}, nil
	case strings.HasPrefix(in, "'") || strings.HasPrefix(in, `"`):
		var names []string
		for _, part := range strings.Split(in, ",") {
			part = strings.TrimSpace(part)
			if len(part) < 2 || (part[0] != '\'' && part[0] != '"') || part[len(part)-1] != part[0] {
				return jpStep{}, fmt.Errorf("bad field name %s", part)
			}
			names = append(names, part[1:len(part)-1])
		}
		return jpStep{kind: stepField, names: names}, nil
	case strings.Contains(in, ":"):
		parts := strings.Split(in, ":")
		if len(parts) > 3 {
			return jpStep{}, fmt.Errorf("bad slice [%s]", in)
		}
		st := jpStep{kind: stepSlice}
		for i, part := range parts {
			if part = strings.TrimSpace(part); part == "" {
				continue
			}
			n, err := strconv.Atoi(part)
			if err != nil {
				return jpStep{}, fmt.Errorf("bad slice [%s]: %w", in, err)
			}
			st.slice[i] = &n
		}
		return st, nil
	default:
		st := jpStep{kind: stepIndex}
		for _, part := range strings.Split(in, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(part))
			if err != nil {
				return jpStep{}, fmt.Errorf("bad index [%s]", in)
			}
			st.index = append(st.index, n)
		}
		return st, nil
	}
}

func parseFilter(s string) (*jpFilter, error) {
	for _, op := range []string{"==", "!=", "<=", ">=", "<", ">"} {
		if l, r, ok := cutOutsideQuotes(s, op); ok {
			left, err := parseOperand(strings.TrimSpace(l))
			if err != nil {
				return nil, err
			}
			right, err := parseOperand(strings.TrimSpace(r))
			if err != nil {
				return nil, err
			}
			return &jpFilter{left: left, right: right, op: op}, nil
		}
	}
	left, err := parseOperand(s)
	if err != nil {
		return nil, err
	}
	return &jpFilter{left: left}, nil
}

func cutOutsideQuotes(s, sep string) (string, string, bool) {
	var quote byte
	for i := 0; i+len(sep) <= len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case strings.HasPrefix(s[i:], sep):
			return s[:i], s[i+len(sep):], true
		}
	}
	return "", "", false
}

func parseOperand(s string) (jpOperand, error) {
	switch {
	case s == "":
		return jpOperand{}, fmt.Errorf("empty filter operand")
	case strings.HasPrefix(s, "@") || strings.HasPrefix(s, "$"):
		p, err := parseJPPath(s)
		return jpOperand{path: p, root: s[0] == '$', isPath: true}, err
	case s[0] == '\'' || s[0] == '"':
		if len(s) < 2 || s[len(s)-1] != s[0] {
			return jpOperand{}, fmt.Errorf("unterminated string %s", s)
		}
		return jpOperand{literal: s[1 : len(s)-1]}, nil
	case s == "true" || s == "false":
		return jpOperand{literal: s == "true"}, nil
	case s == "nil" || s == "null":
		return jpOperand{literal: nil}, nil
	default:
		if _, err := strconv.ParseFloat(s, 64); err != nil {
			return jpOperand{}, fmt.Errorf("bad filter operand %q", s)
		}
		return jpOperand{literal: json.Number(s)}, nil
	}
}

// execute writes the template run over data.
func (t *jpTemplate) execute(w io.Writer, data any) error {
	var b bytes.Buffer
	if err := runNodes(&b, t.nodes, data, data); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

func runNodes(b *bytes.Buffer, nodes []jpNode, cur, root any) error {
	for _, n := range nodes {
		switch n := n.(type) {
		case jpText:
			b.WriteString(string(n))
		case jpPath:
			vals, err := n.eval([]any{cur}, root)
			if err != nil {
				return err
			}
			for i, v := range vals {
				if i > 0 {
					b.WriteByte(' ')
				}
				s, err := jpFormat(v)
				if err != nil {
					return err
				}
				b.WriteString(s)
			}
		case jpRange:
			vals, err := n.path.eval([]any{cur}, root)
			if err != nil {
				return err
			}
			for _, v := range vals {
				if err := runNodes(b, n.body, v, root); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// jpFormat prints one result as kubectl does: strings as they are, maps
// and lists as compact JSON.
func jpFormat(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case json.Number:
		return v.String(), nil
	case bool:
		return strconv.FormatBool(v), nil
	case nil:
		return "null", nil
	default:
		b, err := json.Marshal(v)
		return string(b), err
	}
}

func (p jpPath) eval(in []any, root any) ([]any, error) {
	vals := in
	for _, st := range p {
		var out []any
		// a union ([a,b], [0,2]) takes each member over every value, as
		// client-go does: all a's, then all b's
		for _, m := range st.members() {
			for _, v := range vals {
				r, err := m.apply(v, root)
				if err != nil {
					return nil, err
				}
				out = append(out, r...)
			}
		}
		vals = out
	}
	return vals, nil
}

func (st jpStep) members() []jpStep {
	switch {
	case st.kind == stepField && len(st.names) > 1:
		ms := make([]jpStep, len(st.names))
		for i, n := range st.names {
			ms[i] = jpStep{kind: stepField, names: []string{n}}
		}
		return ms
	case st.kind == stepIndex && len(st.index) > 1:
		ms := make([]jpStep, len(st.index))
		for i, n := range st.index {
			ms[i] = jpStep{kind: stepIndex, index: []int{n}}
		}
		return ms
	}
	return []jpStep{st}
}

func (st jpStep) apply(v, root any) ([]any, error) {
	switch st.kind {
	case stepField:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, nil
		}
		var out []any
		for _, n := range st.names {
			if x, ok := m[n]; ok {
				out = append(out, x)
			}
		}
		return out, nil
	case stepWildcard:
		return children(v), nil
	case stepRecursive:
		var out []any
		descend(v, func(x any) {
			if st.names[0] == "" {
				out = append(out, children(x)...)
			} else if m, ok := x.(map[string]any); ok {
				if y, ok := m[st.names[0]]; ok {
					out = append(out, y)
				}
			}
		}, 0)
		return out, nil
	case stepIndex:
		if v == nil {
			return nil, nil
		}
		l, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%s is not array or slice", jpKind(v))
		}
		var out []any
		for _, i := range st.index {
			j := i
			if j < 0 {
				j += len(l)
			}
			if j < 0 || j >= len(l) {
				return nil, fmt.Errorf("array index out of bounds: index %d, length %d", i, len(l))
			}
			out = append(out, l[j])
		}
		return out, nil
	case stepSlice:
		if v == nil {
			return nil, nil // a null list slices to nothing, as an index into it does
		}
		l, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%s is not array or slice", jpKind(v))
		}
		return st.sliceOf(l)
	case stepFilter:
		l, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%s is not array or slice and cannot be filtered", jpKind(v))
		}
		var out []any
		for _, x := range l {
			ok, err := st.filter.match(x, root)
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, x)
			}
		}
		return out, nil
	}
	return nil, nil
}

// sliceOf is l[start:end:step]. Negative bounds count from the end; a
// bound outside the list, or a start past the end, is an error (as
// client-go's), except that an empty range is always empty. The walk
// counts from 0 so that no step, however large, overflows.
func (st jpStep) sliceOf(l []any) ([]any, error) {
	n := len(l)
	start, end, step := 0, n, 1
	if st.slice[0] != nil {
		if start = *st.slice[0]; start < 0 {
			start += n
		}
	}
	if st.slice[1] != nil {
		if end = *st.slice[1]; end < 0 {
			end += n
		}
	}
	switch {
	case start == end:
		return nil, nil
	case start < 0 || start >= n:
		return nil, fmt.Errorf("array index out of bounds: index %d, length %d", start, n)
	case end < 0 || end > n:
		return nil, fmt.Errorf("array index out of bounds: index %d, length %d", end-1, n)
	case start > end:
		return nil, fmt.Errorf("starting index %d is greater than ending index %d", start, end)
	}
	if st.slice[2] != nil {
		if step = *st.slice[2]; step <= 0 {
			return nil, fmt.Errorf("step must be > 0")
		}
	}
	in := l[start:end]
	var out []any
	for i := 0; i < len(in); i += step {
		out = append(out, in[i])
		if step >= len(in)-i {
			break
		}
	}
	return out, nil
}

// children are a list's items, or a map's values in key order.
func children(v any) []any {
	switch v := v.(type) {
	case []any:
		return v
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		out := make([]any, len(keys))
		for i, k := range keys {
			out[i] = v[k]
		}
		return out
	}
	return nil
}

func descend(v any, visit func(any), depth int) {
	if depth > 10000 {
		return
	}
	visit(v)
	for _, c := range children(v) {
		switch c.(type) {
		case map[string]any, []any:
			descend(c, visit, depth+1)
		}
	}
}

func jpKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "map[string]interface {}"
	case string:
		return "string"
	case nil:
		return "nil"
	}
	return fmt.Sprintf("%T", v)
}

// match tests one item: a filter without an operator keeps it when the
// path is there (whatever it holds, null and false included); a
// comparison takes one value on each side, keeps nothing when a side is
// missing, and is an error when a side gives several.
func (f *jpFilter) match(x, root any) (bool, error) {
	left, err := f.left.values(x, root)
	if err != nil {
		return false, err
	}
	if f.op == "" {
		return len(left) > 0, nil
	}
	right, err := f.right.values(x, root)
	if err != nil {
		return false, err
	}
	if len(left) == 0 || len(right) == 0 {
		return false, nil
	}
	if len(left) > 1 || len(right) > 1 {
		return false, fmt.Errorf("can only compare one element at a time")
	}
	return compare(left[0], right[0], f.op)
}

func (o jpOperand) values(x, root any) ([]any, error) {
	if !o.isPath {
		return []any{o.literal}, nil
	}
	start := x
	if o.root {
		start = root
	}
	return o.path.eval([]any{start}, root)
}

// compare applies op to two scalars of one kind: numbers (integers with
// integers, fractions with fractions: kubectl's objects hold int64 and
// float64 and client-go refuses to compare the two), strings, or bools
// (== and != only). Anything else is an error, never a panic on maps or
// lists.
func compare(l, r any, op string) (bool, error) {
	lk, rk := scalarKind(l), scalarKind(r)
	switch {
	case lk == "" || rk == "":
		return false, fmt.Errorf("invalid type for comparison")
	case lk != rk:
		return false, fmt.Errorf("incompatible types for comparison")
	}
	var c int
	switch lk {
	case "bool":
		switch op {
		case "==":
			return l == r, nil
		case "!=":
			return l != r, nil
		}
		return false, fmt.Errorf("invalid type for comparison")
	case "string":
		c = strings.Compare(l.(string), r.(string))
	default:
		ln, lok := asFloat(l)
		rn, rok := asFloat(r)
		if !lok || !rok {
			return false, fmt.Errorf("invalid number for comparison")
		}
		c = cmp.Compare(ln, rn)
	}
	switch op {
	case "==":
		return c == 0, nil
	case "!=":
		return c != 0, nil
	case "<":
		return c < 0, nil
	case ">":
		return c > 0, nil
	case "<=":
		return c <= 0, nil
	case ">=":
		return c >= 0, nil
	}
	return false, fmt.Errorf("unknown operator %s", op)
}

// scalarKind is "int", "float", "string" or "bool"; "" for anything else.
func scalarKind(v any) string {
	switch v := v.(type) {
	case string:
		return "string"
	case bool:
		return "bool"
	case json.Number:
		if strings.ContainsAny(string(v), ".eE") {
			return "float"
		}
		return "int"
	}
	return ""
}

func asFloat(v any) (float64, bool) {
	if n, ok := v.(json.Number); ok {
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}
