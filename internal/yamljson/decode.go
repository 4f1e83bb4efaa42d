package yamljson

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"
)

// The tags yaml v3 reports in short form, as the YAML 1.1 resolver needs
// them.
const (
	tagStr       = "!!str"
	tagInt       = "!!int"
	tagFloat     = "!!float"
	tagBool      = "!!bool"
	tagNull      = "!!null"
	tagTimestamp = "!!timestamp"
	tagBinary    = "!!binary"
	tagMerge     = "!!merge"
)

// mapping is a YAML mapping after resolution: keys are nil, bool, int,
// uint64, float64 or string, as yaml v2 decodes them into interface{}; keys
// keep their first position, a later equal key replaces the value.
type mapping struct {
	keys []any
	vals []any
	// at indexes keys once there are more than smallMapping of them.
	at map[any]int
}

// smallMapping is the size up to which keys are looked up by a scan.
const smallMapping = 16

// find returns the position of key k, -1 if absent (NaN is never found,
// as in a Go map).
func (m *mapping) find(k any) int {
	if m.at != nil {
		if i, ok := m.at[k]; ok {
			return i
		}
		return -1
	}
	for i, e := range m.keys {
		if e == k {
			return i
		}
	}
	return -1
}

func (m *mapping) set(k, v any) {
	if i := m.find(k); i >= 0 {
		m.vals[i] = v
		return
	}
	m.keys = append(m.keys, k)
	m.vals = append(m.vals, v)
	switch {
	case m.at != nil:
		m.at[k] = len(m.keys) - 1
	case len(m.keys) > smallMapping:
		m.at = make(map[any]int, len(m.keys))
		for i, e := range m.keys {
			m.at[e] = i
		}
	}
}

func (m *mapping) has(k any) bool { return m.find(k) >= 0 }

// decoder turns a yaml v3 node tree into resolved values.
type decoder struct {
	strict bool
	// expanding holds the alias nodes being expanded (a cycle is an error).
	expanding  map[*yaml.Node]bool
	aliasDepth int
	// nodes and aliased count decoded nodes, all and under an alias, for
	// yaml v2's bound on alias expansion.
	nodes, aliased int
	// dups are the strict form's duplicate-key messages, in order.
	dups []string
}

// failure is a decoding error raised through panic inside the walk and
// turned back into an error by parse.
type failure struct{ err error }

func (d *decoder) fail(format string, args ...any) {
	panic(failure{fmt.Errorf("yaml: "+format, args...)})
}

// parse reads the first document of src into resolved values (nil for an
// empty stream).
func parse(src []byte, strict bool) (v any, err error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, err
	}
	if doc.Kind == 0 {
		return nil, nil
	}
	d := &decoder{strict: strict, expanding: map[*yaml.Node]bool{}}
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(failure)
			if !ok {
				panic(r)
			}
			v, err = nil, f.err
		}
	}()
	v = d.value(&doc)
	if len(d.dups) > 0 {
		return nil, errors.New("yaml: unmarshal errors:\n  " + strings.Join(d.dups, "\n  "))
	}
	return v, nil
}

// The bound on alias expansion, yaml v2's: past 1,000 decoded nodes and 100
// of them under aliases, the aliased share may be at most 99% up to 400,000
// nodes, falling linearly to 10% at 4,000,000.
func aliasRatioAllowed(n int) float64 {
	const low, high = 400000, 4000000
	switch {
	case n <= low:
		return 0.99
	case n >= high:
		return 0.10
	}
	return 0.99 - 0.89*float64(n-low)/float64(high-low)
}

func (d *decoder) count() {
	d.nodes++
	if d.aliasDepth > 0 {
		d.aliased++
	}
	if d.aliased > 100 && d.nodes > 1000 && float64(d.aliased)/float64(d.nodes) > aliasRatioAllowed(d.nodes) {
		d.fail("document contains excessive aliasing")
	}
}

// value resolves node n.
func (d *decoder) value(n *yaml.Node) any {
	d.count()
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return nil
		}
		return d.value(n.Content[0])
	case yaml.AliasNode:
		var v any
		d.alias(n, func(t *yaml.Node) { v = d.value(t) })
		return v
	case yaml.ScalarNode:
		return d.scalar(n)
	case yaml.SequenceNode:
		out := make([]any, len(n.Content))
		for i, c := range n.Content {
			out[i] = d.value(c)
		}
		return out
	case yaml.MappingNode:
		m := &mapping{}
		d.fill(m, n)
		return m
	}
	d.fail("line %d: unknown node kind %d", n.Line, n.Kind)
	return nil
}

// alias runs f on the node alias n points to, refusing a cycle.
func (d *decoder) alias(n *yaml.Node, f func(*yaml.Node)) {
	if d.expanding[n] {
		d.fail("anchor '%s' value contains itself", n.Value)
	}
	d.expanding[n] = true
	d.aliasDepth++
	f(n.Alias)
	d.aliasDepth--
	delete(d.expanding, n)
}

// isMerge reports a merge key: "<<" plain and untagged, or tagged !!merge.
func isMerge(n *yaml.Node) bool {
	if n.Kind != yaml.ScalarNode || n.Value != "<<" {
		return false
	}
	if n.Style&yaml.TaggedStyle != 0 {
		return n.Tag == tagMerge
	}
	return n.Style == 0
}

// fill adds the pairs of mapping node n to m, in order.
func (d *decoder) fill(m *mapping, n *yaml.Node) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		if isMerge(kn) {
			d.merge(m, vn)
			continue
		}
		k := d.value(kn)
		switch k.(type) {
		case *mapping, []any:
			d.fail("invalid map key: %#v", plainValue(k))
		}
		v := d.value(vn)
		if d.strict && m.has(k) {
			d.dups = append(d.dups, fmt.Sprintf("line %d: key %#v already set in map", vn.Line, k))
			continue
		}
		m.set(k, v)
	}
}

func (d *decoder) failWantMap() {
	d.fail("map merge requires map or sequence of maps as the value")
}

// merge adds the mapping (or mappings) of a "<<" value to m.
func (d *decoder) merge(m *mapping, n *yaml.Node) {
	into := func(c *yaml.Node) {
		d.count()
		switch c.Kind {
		case yaml.MappingNode:
			d.fill(m, c)
		case yaml.AliasNode:
			if c.Alias.Kind != yaml.MappingNode {
				d.failWantMap()
			}
			d.alias(c, func(t *yaml.Node) { d.count(); d.fill(m, t) })
		default:
			d.failWantMap()
		}
	}
	switch n.Kind {
	case yaml.MappingNode, yaml.AliasNode:
		into(n)
	case yaml.SequenceNode:
		d.count()
		// Backwards: the earlier mappings win.
		for i := len(n.Content) - 1; i >= 0; i-- {
			into(n.Content[i])
		}
	default:
		d.failWantMap()
	}
}

// scalar resolves a scalar node with yaml v2's rules.
func (d *decoder) scalar(n *yaml.Node) any {
	tagged := n.Style&yaml.TaggedStyle != 0
	if !tagged {
		if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
			return n.Value
		}
		v, _ := resolvePlain(n.Value, true)
		return v
	}
	tag := n.Tag
	switch tag {
	case tagStr:
		return n.Value
	case tagBinary:
		b, err := base64.StdEncoding.DecodeString(n.Value)
		if err != nil {
			d.fail("!!binary value contains invalid base64 data")
		}
		return string(b)
	case tagInt, tagFloat, tagBool, tagNull, tagTimestamp:
	default:
		// Tags yaml v2 does not resolve leave the text a string.
		return n.Value
	}
	v, got := resolvePlain(n.Value, tag == tagTimestamp)
	if got == tag {
		return v
	}
	if tag == tagFloat && got == tagInt {
		switch i := v.(type) {
		case int:
			return float64(i)
		}
	}
	d.fail("cannot decode %s `%s` as a %s", got, n.Value, tag)
	return nil
}

// resolvePlain resolves the text of a plain scalar with yaml v2's YAML 1.1
// rules: the value and its tag. Timestamps (tried only when stamps is set,
// as for an untagged or !!timestamp scalar) stay the text, as yaml v2
// leaves them when decoding into interface{}.
func resolvePlain(s string, stamps bool) (any, string) {
	if s == "" {
		return nil, tagNull
	}
	switch s {
	case "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON":
		return true, tagBool
	case "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF":
		return false, tagBool
	case "~", "null", "Null", "NULL":
		return nil, tagNull
	case ".nan", ".NaN", ".NAN":
		return math.NaN(), tagFloat
	case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF":
		return math.Inf(1), tagFloat
	case "-.inf", "-.Inf", "-.INF":
		return math.Inf(-1), tagFloat
	}
	c := s[0]
	switch {
	case c == '.':
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return f, tagFloat
		}
	case c == '+' || c == '-' || ('0' <= c && c <= '9'):
		if stamps && isTimestamp(s) {
			return s, tagTimestamp
		}
		return resolveNumber(s)
	}
	return s, tagStr
}

// resolveNumber reads a scalar that starts with a sign or a digit.
func resolveNumber(s string) (any, string) {
	plain := strings.ReplaceAll(s, "_", "")
	if i, err := strconv.ParseInt(plain, 0, 64); err == nil {
		return int(i), tagInt
	}
	if u, err := strconv.ParseUint(plain, 0, 64); err == nil {
		return u, tagInt
	}
	if isDecimalFloat(plain) {
		if f, err := strconv.ParseFloat(plain, 64); err == nil {
			return f, tagFloat
		}
	}
	// yaml v2 tries a "0b" prefix once more, in base 2 on what follows it,
	// so that a sign there is read ("0b+1" is 1). (It does the same for
	// "-0b", which cannot succeed there: what base 2 reads after "-0b",
	// ParseInt with base 0 has read already.)
	if strings.HasPrefix(plain, "0b") {
		if i, err := strconv.ParseInt(plain[2:], 2, 64); err == nil {
			return int(i), tagInt
		}
		if u, err := strconv.ParseUint(plain[2:], 2, 64); err == nil {
			return u, tagInt
		}
	}
	return s, tagStr
}

// isTimestamp reports a scalar yaml v2 reads as a timestamp: four digits,
// a dash, and one of the layouts below (a subset of YAML 1.1's timestamp
// type).
func isTimestamp(s string) bool {
	if len(s) < 5 || s[4] != '-' {
		return false
	}
	for _, c := range s[:4] {
		if c < '0' || c > '9' {
			return false
		}
	}
	for _, l := range [...]string{
		"2006-1-2T15:4:5.999999999Z07:00",
		"2006-1-2t15:4:5.999999999Z07:00",
		"2006-1-2 15:4:5.999999999",
		"2006-1-2",
	} {
		if _, err := time.Parse(l, s); err == nil {
			return true
		}
	}
	return false
}

// isDecimalFloat matches [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
// without a regexp (whose compilation is what this package avoids at start).
func isDecimalFloat(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := func() int {
		j := i
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
		return i - j
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	} else {
		if digits() == 0 {
			return false
		}
		if i < len(s) && s[i] == '.' {
			i++
			digits()
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}
