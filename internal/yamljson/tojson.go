package yamljson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// YAMLToJSON converts the first document of y to JSON (object keys
// sorted, as encoding/json writes maps). An empty document is null. A
// duplicate key keeps the last value.
func YAMLToJSON(y []byte) ([]byte, error) {
	return toJSON(y, false, nil)
}

// YAMLToJSONStrict is YAMLToJSON with a duplicate key an error.
func YAMLToJSONStrict(y []byte) ([]byte, error) {
	return toJSON(y, true, nil)
}

// Unmarshal converts y to JSON and decodes it into obj (a non-nil pointer)
// with encoding/json; numbers and booleans become strings where obj's field
// is a string. Unknown fields are ignored.
func Unmarshal(y []byte, obj any) error {
	return unmarshal(y, obj, false)
}

// UnmarshalStrict is Unmarshal with a duplicate key and an unknown field
// errors.
func UnmarshalStrict(y []byte, obj any) error {
	return unmarshal(y, obj, true)
}

func unmarshal(y []byte, obj any, strict bool) error {
	var t *target
	if obj != nil {
		t = &target{t: reflect.TypeOf(obj)}
	}
	j, err := toJSON(y, strict, t)
	if err != nil {
		return fmt.Errorf("error converting YAML to JSON: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(&obj); err != nil {
		return fmt.Errorf("error unmarshaling JSON: while decoding JSON: %w", err)
	}
	return nil
}

func toJSON(y []byte, strict bool, t *target) ([]byte, error) {
	v, err := parse(y, strict)
	if err != nil {
		return nil, err
	}
	w := writer{fields: map[reflect.Type][]jsonField{}, out: make([]byte, 0, len(y)+len(y)/4)}
	if err := w.value(v, t); err != nil {
		return nil, err
	}
	return w.out, nil
}

// target is the Go type a value will be decoded into, and whether the
// value there is addressable (which decides whether pointer methods count,
// as for encoding/json).
type target struct {
	t    reflect.Type
	addr bool
}

// settle follows pointers to the type encoding/json fills, or returns nil
// where a type decodes itself (UnmarshalJSON, UnmarshalText): no conversion
// is done below such a type.
func (t *target) settle() *target {
	if t == nil {
		return nil
	}
	rt := t.t
	if rt.Kind() != reflect.Pointer && rt.Name() != "" && t.addr {
		rt = reflect.PointerTo(rt)
	}
	for rt.Kind() == reflect.Pointer {
		if rt.NumMethod() > 0 && (rt.Implements(reflect.TypeFor[json.Unmarshaler]()) || rt.Implements(reflect.TypeFor[encoding.TextUnmarshaler]())) {
			return nil
		}
		rt = rt.Elem()
	}
	return &target{t: rt, addr: true}
}

// writer writes resolved values as JSON, byte for byte as encoding/json
// writes the map[string]any, []any and scalars sigs.k8s.io/yaml builds:
// object keys sorted, HTML characters escaped, floats in ES6 form.
type writer struct {
	out []byte
	// fields caches the JSON fields of the struct types met in one call.
	fields map[reflect.Type][]jsonField
}

func (w *writer) value(v any, t *target) error {
	t = t.settle()
	asString := t != nil && t.t.Kind() == reflect.String
	switch v := v.(type) {
	case *mapping:
		return w.object(v, t)
	case []any:
		var et *target
		if t != nil && t.t.Kind() == reflect.Slice {
			et = &target{t: t.t.Elem(), addr: true}
		}
		w.out = append(w.out, '[')
		for i, e := range v {
			if i > 0 {
				w.out = append(w.out, ',')
			}
			if err := w.value(e, et); err != nil {
				return err
			}
		}
		w.out = append(w.out, ']')
	case string:
		w.out = appendJSONString(w.out, v)
	case bool:
		if asString {
			w.out = appendJSONString(w.out, strconv.FormatBool(v))
		} else {
			w.out = strconv.AppendBool(w.out, v)
		}
	case int:
		if asString {
			w.out = appendJSONString(w.out, strconv.Itoa(v))
		} else {
			w.out = strconv.AppendInt(w.out, int64(v), 10)
		}
	case uint64:
		if asString {
			w.out = appendJSONString(w.out, strconv.FormatUint(v, 10))
		} else {
			w.out = strconv.AppendUint(w.out, v, 10)
		}
	case float64:
		if asString {
			w.out = appendJSONString(w.out, strconv.FormatFloat(v, 'g', -1, 32))
			return nil
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("json: unsupported value: %s", strconv.FormatFloat(v, 'g', -1, 64))
		}
		w.out = appendJSONFloat(w.out, v)
	default:
		// nil: parse makes no other type.
		w.out = append(w.out, "null"...)
	}
	return nil
}

// object writes a mapping as a JSON object: keys converted to strings and
// sorted; of two keys with one string the later one is kept.
func (w *writer) object(m *mapping, t *target) error {
	type entry struct {
		key string
		at  int
	}
	entries := make([]entry, len(m.keys))
	for i, k := range m.keys {
		ks, err := keyString(k, m.vals[i])
		if err != nil {
			return err
		}
		entries[i] = entry{ks, i}
	}
	slices.SortStableFunc(entries, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	w.out = append(w.out, '{')
	first := true
	for i, e := range entries {
		if i+1 < len(entries) && entries[i+1].key == e.key {
			continue
		}
		if !first {
			w.out = append(w.out, ',')
		}
		first = false
		w.out = appendJSONString(w.out, e.key)
		w.out = append(w.out, ':')
		var et *target
		if t != nil {
			switch t.t.Kind() {
			case reflect.Struct:
				if f := w.field(t.t, e.key); f != nil {
					et = &target{t: t.t.Field(f.index[0]).Type, addr: t.addr}
				}
			case reflect.Map:
				et = &target{t: t.t.Elem()}
			}
		}
		if err := w.value(m.vals[e.at], et); err != nil {
			return err
		}
	}
	w.out = append(w.out, '}')
	return nil
}

// appendJSONString writes s as encoding/json does (HTML-safe: <, > and &
// escaped; invalid UTF-8 as U+FFFD; U+2028 and U+2029 escaped).
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendJSONFloat writes a finite f as encoding/json does (ES6 number
// form: exponent only below 1e-6 and from 1e21, unpadded).
func appendJSONFloat(dst []byte, f float64) []byte {
	form := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		form = 'e'
	}
	dst = strconv.AppendFloat(dst, f, form, -1, 64)
	if form == 'e' {
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// keyString is the JSON form of a mapping key, as sigs.k8s.io/yaml makes
// it.
func keyString(k, v any) (string, error) {
	switch k := k.(type) {
	case string:
		return k, nil
	case int:
		return strconv.Itoa(k), nil
	case bool:
		return strconv.FormatBool(k), nil
	case float64:
		// Formatted as a float32 (so 1e70 is +Inf too), then YAML's names.
		switch s := strconv.FormatFloat(k, 'g', -1, 32); s {
		case "+Inf":
			return ".inf", nil
		case "-Inf":
			return "-.inf", nil
		case "NaN":
			return ".nan", nil
		default:
			return s, nil
		}
	}
	return "", fmt.Errorf("unsupported map key of type: %s, key: %+#v, value: %+#v", reflect.TypeOf(k), k, plainValue(v))
}

// plainValue is v as yaml v2 decodes it into interface{} (a mapping as a
// Go map), for error messages that print it as yaml v2's do.
func plainValue(v any) any {
	switch v := v.(type) {
	case *mapping:
		out := make(map[any]any, len(v.keys))
		for i, k := range v.keys {
			out[k] = plainValue(v.vals[i])
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = plainValue(e)
		}
		return out
	}
	return v
}

// jsonField is one field encoding/json decodes a struct key into.
type jsonField struct {
	name   string
	index  []int
	tagged bool
}

// field finds the field key k goes to in struct type st: the first field
// of that exact name, else the first one equal under case folding.
func (w *writer) field(st reflect.Type, k string) *jsonField {
	fs, ok := w.fields[st]
	if !ok {
		fs = structFields(st)
		w.fields[st] = fs
	}
	var fold *jsonField
	for i := range fs {
		if fs[i].name == k {
			return &fs[i]
		}
		if fold == nil && strings.EqualFold(fs[i].name, k) {
			fold = &fs[i]
		}
	}
	return fold
}

// structFields lists the JSON fields of struct type st in field order, by
// the rules of the encoding/json copy in sigs.k8s.io/yaml: exported fields
// (an embedded struct without a tag name is walked into, level by level),
// json:"-" skipped, and of several fields with one name the shallowest
// wins, a tagged one among equals, none if still tied.
func structFields(st reflect.Type) []jsonField {
	type embedded struct {
		t     reflect.Type
		index []int
	}
	var all []jsonField
	level := []embedded{{t: st}}
	// times counts how often each struct type of a level was embedded at
	// the level above: a type embedded twice gives each of its fields
	// twice (a tie, so neither wins).
	times := map[reflect.Type]int{}
	seen := map[reflect.Type]bool{}
	// Each struct type is walked once (seen), so the levels end.
	for len(level) > 0 {
		var next []embedded
		nextTimes := map[reflect.Type]int{}
		for _, e := range level {
			if seen[e.t] {
				continue
			}
			seen[e.t] = true
			for i := 0; i < e.t.NumField(); i++ {
				sf := e.t.Field(i)
				if sf.PkgPath != "" {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, _, _ := strings.Cut(tag, ",")
				if !validTagName(name) {
					name = ""
				}
				index := append(append([]int(nil), e.index...), i)
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if name == "" && sf.Anonymous && ft.Kind() == reflect.Struct {
					nextTimes[ft]++
					if nextTimes[ft] == 1 {
						next = append(next, embedded{t: ft, index: index})
					}
					continue
				}
				f := jsonField{name: name, index: index, tagged: name != ""}
				if f.name == "" {
					f.name = sf.Name
				}
				all = append(all, f)
				if times[e.t] > 1 {
					all = append(all, f)
				}
			}
		}
		level, times = next, nextTimes
	}
	byName := map[string][]jsonField{}
	var names []string
	for _, f := range all {
		if _, ok := byName[f.name]; !ok {
			names = append(names, f.name)
		}
		byName[f.name] = append(byName[f.name], f)
	}
	var out []jsonField
	for _, n := range names {
		if f, ok := dominant(byName[n]); ok {
			out = append(out, f)
		}
	}
	sortByIndex(out)
	return out
}

// dominant picks the field of one name that encoding/json uses.
func dominant(fs []jsonField) (jsonField, bool) {
	short := len(fs[0].index)
	for _, f := range fs {
		short = min(short, len(f.index))
	}
	var top []jsonField
	for _, f := range fs {
		if len(f.index) == short {
			top = append(top, f)
		}
	}
	tagged := -1
	for i, f := range top {
		if f.tagged {
			if tagged >= 0 {
				return jsonField{}, false
			}
			tagged = i
		}
	}
	if tagged >= 0 {
		return top[tagged], true
	}
	if len(top) > 1 {
		return jsonField{}, false
	}
	return top[0], true
}

func sortByIndex(fs []jsonField) {
	less := func(a, b []int) bool {
		for k := range a {
			if k >= len(b) {
				return false
			}
			if a[k] != b[k] {
				return a[k] < b[k]
			}
		}
		return len(a) < len(b)
	}
	for i := 1; i < len(fs); i++ {
		for j := i; j > 0 && less(fs[j].index, fs[j-1].index); j-- {
			fs[j], fs[j-1] = fs[j-1], fs[j]
		}
	}
}

// validTagName is encoding/json's test of a tag name.
func validTagName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}
