package yamljson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"

	yaml "go.yaml.in/yaml/v3"
)

// Marshal writes obj as encoding/json does and converts that to YAML with
// JSONToYAML.
func Marshal(obj any) ([]byte, error) {
	j, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("error marshaling into JSON: %w", err)
	}
	return JSONToYAML(j)
}

// JSONToYAML reads j (JSON, or any YAML) with the rules of YAMLToJSON (a
// duplicate key keeps the last value; integers keep all their 64 bits) and
// writes it as YAML the way yaml v2 writes a decoded value.
func JSONToYAML(j []byte) ([]byte, error) {
	v, err := parse(j, false)
	if err != nil {
		return nil, err
	}
	n := node(v)
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	enc.CompactSeqIndent()
	if err := enc.Encode(n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// node builds the yaml v3 node of a resolved value, with the styles yaml
// v2 would choose.
func node(v any) *yaml.Node {
	switch v := v.(type) {
	case *mapping:
		order := make([]int, len(v.keys))
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool { return keyLess(v.keys[order[a]], v.keys[order[b]]) })
		n := &yaml.Node{Kind: yaml.MappingNode}
		for _, i := range order {
			n.Content = append(n.Content, node(v.keys[i]), node(v.vals[i]))
		}
		return n
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode}
		for _, e := range v {
			n.Content = append(n.Content, node(e))
		}
		return n
	case bool:
		return scalarNode(strconv.FormatBool(v), 0)
	case int:
		return scalarNode(strconv.Itoa(v), 0)
	case uint64:
		return scalarNode(strconv.FormatUint(v, 10), 0)
	case float64:
		s := strconv.FormatFloat(v, 'g', -1, 64)
		switch {
		case math.IsInf(v, 1):
			s = ".inf"
		case math.IsInf(v, -1):
			s = "-.inf"
		case math.IsNaN(v):
			s = ".nan"
		}
		return scalarNode(s, 0)
	case string:
		return stringNode(v)
	}
	// nil: parse makes no other type.
	return scalarNode("null", 0)
}

func scalarNode(s string, style yaml.Style) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Value: s, Style: style}
}

// stringNode is a string in yaml v2's style: a literal block when it has a
// newline (and no tab), double-quoted when plain it would read as something else (or
// is a base-60 float, which YAML 1.1 readers may take for a number), else
// plain (the emitter quotes it singly where plain is not allowed).
func stringNode(s string) *yaml.Node {
	if strings.Contains(s, "\n") {
		if strings.Contains(s, "\t") {
			// yaml v2's emitter takes a tab for a character a block
			// scalar cannot hold; yaml v3's allows it.
			return scalarNode(s, yaml.DoubleQuotedStyle)
		}
		return scalarNode(s, 0) // the emitter makes it a literal block
	}
	if _, tag := resolvePlain(s, true); tag != tagStr || isBase60Float(s) {
		return scalarNode(s, yaml.DoubleQuotedStyle)
	}
	return scalarNode(s, 0)
}

// isBase60Float reports a YAML 1.1 sexagesimal float
// ([-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?), as yaml v2 checks
// it before writing a string plain.
func isBase60Float(s string) bool {
	if s == "" {
		return false
	}
	c := s[0]
	if !(c == '+' || c == '-' || ('0' <= c && c <= '9')) || strings.IndexByte(s, ':') < 0 {
		return false
	}
	i := 0
	if s[i] == '+' || s[i] == '-' {
		i++
	}
	if i >= len(s) || s[i] < '0' || s[i] > '9' {
		return false
	}
	i++
	for i < len(s) && (s[i] == '_' || ('0' <= s[i] && s[i] <= '9')) {
		i++
	}
	groups := 0
	for i < len(s) && s[i] == ':' {
		i++
		// [0-5]?[0-9]
		n := 0
		for n < 2 && i+n < len(s) && '0' <= s[i+n] && s[i+n] <= '9' {
			n++
		}
		switch {
		case n == 2 && s[i] <= '5':
			i += 2
		case n >= 1:
			i++
		default:
			return false
		}
		groups++
	}
	if groups == 0 {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && (s[i] == '_' || ('0' <= s[i] && s[i] <= '9')) {
			i++
		}
	}
	return i == len(s)
}

// keyLess orders mapping keys as yaml v2 writes them: numbers and booleans
// (true as 1, false as 0) by value and before other keys, ties broken by
// kind; strings by character, except that a run of digits compares as a
// number and any other character sorts before a letter; other kinds by
// kind.
func keyLess(a, b any) bool {
	af, aNum := keyNumber(a)
	bf, bNum := keyNumber(b)
	ak, bk := keyKind(a), keyKind(b)
	if aNum && bNum {
		if af != bf {
			return af < bf
		}
		if ak != bk {
			return ak < bk
		}
		return numLess(a, b)
	}
	as, aok := a.(string)
	bs, bok := b.(string)
	if !aok || !bok {
		return ak < bk
	}
	ar, br := []rune(as), []rune(bs)
	for i := 0; i < len(ar) && i < len(br); i++ {
		if ar[i] == br[i] {
			continue
		}
		al, bl := unicode.IsLetter(ar[i]), unicode.IsLetter(br[i])
		if al && bl {
			return ar[i] < br[i]
		}
		if al || bl {
			return bl
		}
		// Digits (or other characters): compare the digit runs from here
		// as numbers; after a non-zero digit a leading zero counts as a
		// digit of a number, not a leading zero.
		var an, bn int64
		if ar[i] == '0' || br[i] == '0' {
			for j := i - 1; j >= 0 && unicode.IsDigit(ar[j]); j-- {
				if ar[j] != '0' {
					an, bn = 1, 1
					break
				}
			}
		}
		ai, bi := i, i
		for ; ai < len(ar) && unicode.IsDigit(ar[ai]); ai++ {
			an = an*10 + int64(ar[ai]-'0')
		}
		for ; bi < len(br) && unicode.IsDigit(br[bi]); bi++ {
			bn = bn*10 + int64(br[bi]-'0')
		}
		if an != bn {
			return an < bn
		}
		if ai != bi {
			return ai < bi
		}
		return ar[i] < br[i]
	}
	return len(ar) < len(br)
}

// keyKind ranks a key's Go kind as reflect numbers kinds (bool < int <
// uint64 < float64 < nil interface < string), which is what yaml v2
// compares.
func keyKind(k any) int {
	switch k.(type) {
	case bool:
		return 1
	case int:
		return 2
	case uint64:
		return 11
	case float64:
		return 14
	case nil:
		return 20
	case string:
		return 24
	}
	return 25
}

func keyNumber(k any) (float64, bool) {
	switch k := k.(type) {
	case bool:
		if k {
			return 1, true
		}
		return 0, true
	case int:
		return float64(k), true
	case uint64:
		return float64(k), true
	case float64:
		return k, true
	}
	return 0, false
}

// numLess compares two numbers (or booleans) of one kind.
func numLess(a, b any) bool {
	switch a := a.(type) {
	case bool:
		return !a && b.(bool)
	case int:
		return a < b.(int)
	case uint64:
		return a < b.(uint64)
	case float64:
		return a < b.(float64)
	}
	return false
}
