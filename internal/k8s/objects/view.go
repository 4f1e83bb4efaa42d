package objects

// A view decoder: one strict pass over a document's JSON that keeps only the
// fields a planner reads and checks every other field as strictly as a full
// decode would, without building it.
//
// The plans come from the Go types themselves (k8s.io/api's, by
// reflection, once per type): a struct's JSON field names (embedded structs
// flattened as encoding/json does), map, slice and pointer element types,
// and the types that decode themselves (json.Unmarshaler: Quantity, Time,
// IntOrString, ...). A view marks the kept paths; a field off the view is
// still walked against its type's plan: unknown and duplicate field names,
// JSON kinds that do not fit the Go type (a string for a bool, 1.5 for an
// int32) and values the type's own UnmarshalJSON refuses are errors, as
// sigs.k8s.io/json's strict decode reports them, but nothing is allocated
// or kept. Field names are case-sensitive. Anything the walker does not
// model itself (interfaces, non-string map keys, ",string" options,
// TextUnmarshalers) is decoded by sigs.k8s.io/json strictly, value by value.

import (
	"bytes"
	"encoding"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	sigsjson "sigs.k8s.io/json"
)

// maxViewDepth bounds the nesting of one document (encoding/json allows
// 10,000; Kubernetes objects nest a few dozen levels).
const maxViewDepth = 1000

type planKind uint8

const (
	pString planKind = iota
	pBool
	pInt
	pUint
	pFloat
	pStruct
	pMap
	pSlice
	pPtr
	pUnmarshaler
	pFallback // decoded by sigs.k8s.io/json
)

// plan is how one Go type decodes. Struct plans of a view are copies whose
// fields carry keep flags; the full plan of a type keeps everything.
type plan struct {
	kind   planKind
	typ    reflect.Type
	fields map[string]*fieldPlan
	order  []*fieldPlan // fields by pos (lookup hints: documents list fields in struct order)
	elem   *plan
	bytes  bool // []byte: a base64 string
	nullOK bool // pUnmarshaler: the type's UnmarshalJSON takes null
}

type fieldPlan struct {
	name  string
	index []int
	pos   int // position in the struct's field list (duplicate detection)
	plan  *plan
	keep  bool
}

// planCache holds the full plans built so far; built plans never change.
type planCache struct {
	mu    sync.Mutex
	plans map[reflect.Type]*plan
}

var plans = sync.OnceValue(func() *planCache { return &planCache{plans: map[reflect.Type]*plan{}} })

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func (c *planCache) full(t reflect.Type) *plan {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.build(t)
}

func (c *planCache) build(t reflect.Type) *plan {
	if p, ok := c.plans[t]; ok {
		return p
	}
	p := &plan{typ: t}
	c.plans[t] = p // before the fields: recursive types
	switch {
	case reflect.PointerTo(t).Implements(jsonUnmarshalerType):
		p.kind = pUnmarshaler
		p.nullOK = reflect.New(t).Interface().(json.Unmarshaler).UnmarshalJSON([]byte("null")) == nil
		return p
	case reflect.PointerTo(t).Implements(textUnmarshalerType):
		p.kind = pFallback
		return p
	}
	switch t.Kind() {
	case reflect.String:
		p.kind = pString
	case reflect.Bool:
		p.kind = pBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		p.kind = pInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		p.kind = pUint
	case reflect.Float32, reflect.Float64:
		p.kind = pFloat
	case reflect.Pointer:
		p.kind = pPtr
		p.elem = c.build(t.Elem())
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && !reflect.PointerTo(t.Elem()).Implements(jsonUnmarshalerType) {
			p.kind, p.bytes = pSlice, true
			return p
		}
		p.kind = pSlice
		p.elem = c.build(t.Elem())
	case reflect.Map:
		if t.Key().Kind() != reflect.String || reflect.PointerTo(t.Key()).Implements(textUnmarshalerType) {
			p.kind = pFallback
			return p
		}
		p.kind = pMap
		p.elem = c.build(t.Elem())
	case reflect.Struct:
		p.kind = pStruct
		p.fields = map[string]*fieldPlan{}
		if !c.structFields(p, t, nil) {
			p.kind, p.fields = pFallback, nil
			break
		}
		p.order = make([]*fieldPlan, 0, len(p.fields))
		for _, f := range p.fields {
			p.order = append(p.order, f)
		}
		sort.Slice(p.order, func(a, b int) bool { return p.order[a].pos < p.order[b].pos })
	default:
		p.kind = pFallback
	}
	return p
}

// structFields adds t's JSON fields to p (embedded structs flattened, the
// outer name winning as in encoding/json); false when the struct needs the
// fallback (a ",string" option, an embedded pointer, a name clash).
func (c *planCache) structFields(p *plan, t reflect.Type, index []int) bool {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if strings.Contains(","+opts+",", ",string,") {
			return false
		}
		idx := append(append([]int(nil), index...), i)
		if f.Anonymous && name == "" {
			if f.Type.Kind() != reflect.Struct {
				return false
			}
			if !c.structFields(p, f.Type, idx) {
				return false
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if prev, ok := p.fields[name]; ok {
			if len(prev.index) == len(idx) {
				return false
			}
			if len(prev.index) < len(idx) {
				continue
			}
		}
		p.fields[name] = &fieldPlan{name: name, index: idx, pos: len(p.fields), plan: c.build(f.Type), keep: true}
	}
	return true
}

// view returns the plan of t keeping only paths (dotted JSON field names;
// slices, maps and pointers are passed through: "spec.containers.name"
// keeps every container's name). A path ending at a field keeps all of it.
func view(t reflect.Type, paths ...string) *plan {
	c := plans()
	c.mu.Lock()
	defer c.mu.Unlock()
	root := c.build(t)
	var v *plan
	for _, path := range paths {
		v = c.keepPath(v, root, strings.Split(path, "."))
	}
	return v
}

// keepPath returns v (a view of full, or nil for none yet) with steps kept.
func (c *planCache) keepPath(v, full *plan, steps []string) *plan {
	if len(steps) == 0 {
		return full
	}
	switch full.kind {
	case pPtr, pSlice, pMap:
		if v == full {
			return v
		}
		var ve *plan
		if v != nil {
			ve = v.elem
		}
		cp := *full
		cp.elem = c.keepPath(ve, full.elem, steps)
		return &cp
	case pStruct:
		if v == full {
			return v
		}
		if v == nil {
			v = &plan{kind: pStruct, typ: full.typ, fields: make(map[string]*fieldPlan, len(full.fields))}
			for k, f := range full.fields {
				cp := *f
				cp.keep = false
				v.fields[k] = &cp
			}
		}
		f, ok := v.fields[steps[0]]
		if !ok {
			panic(fmt.Sprintf("objects: view of %s: no field %q", full.typ, steps[0]))
		}
		var fv *plan
		if f.keep {
			fv = f.plan
		}
		f.plan = c.keepPath(fv, full.fields[steps[0]].plan, steps[1:])
		f.keep = true
		return v
	}
	panic(fmt.Sprintf("objects: view of %s: %q goes below a %s", full.typ, strings.Join(steps, "."), full.typ.Kind()))
}

// errUnknownField is lookup's miss.
var errUnknownField = errors.New("unknown field")

// lookup finds the field named key: first among the few after the last
// one found (*hint; documents list fields in struct order, skipping empty
// ones), then by name.
func (p *plan) lookup(key []byte, hint *int) (*fieldPlan, error) {
	for k := *hint; k < len(p.order) && k < *hint+4; k++ {
		if p.order[k].name == string(key) {
			*hint = k + 1
			return p.order[k], nil
		}
	}
	f, ok := p.fields[string(key)]
	if !ok {
		return nil, errUnknownField
	}
	*hint = 0
	if f.pos < len(p.order) && p.order[f.pos] == f {
		*hint = f.pos + 1
	}
	return f, nil
}

// viewError is a decode failure at a JSON path ("spec.containers[0].name").
// A named error ("unknown field", "duplicate field") quotes the path in its
// reason, as sigs.k8s.io/json's strict errors do.
type viewError struct {
	path   string
	reason string
	named  bool
}

func (e *viewError) Error() string {
	if e.named {
		return fmt.Sprintf("%s %q", e.reason, e.path)
	}
	if e.path == "" {
		return e.reason
	}
	return e.path + ": " + e.reason
}

// decoder walks one JSON value.
type decoder struct {
	data  []byte
	i     int
	depth int
	path  []step   // the path to the current value
	seen  [][]byte // map keys seen, per open map (duplicate detection)
}

// step is one step of a path: a field name, a map key (aliasing the
// input) or a list index; built only into a string on the error path.
type step struct {
	field string
	key   []byte
	index int // -1: not an index
}

func (d *decoder) pathString() string {
	var b strings.Builder
	for _, s := range d.path {
		switch {
		case s.index >= 0:
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
		case s.key != nil:
			b.WriteString("[" + string(s.key) + "]")
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.field)
		}
	}
	return b.String()
}

func (d *decoder) fail(format string, args ...any) error {
	return &viewError{path: d.pathString(), reason: fmt.Sprintf(format, args...)}
}

// failField is a named error ("unknown field") for field of the current
// object.
func (d *decoder) failField(field, reason string) error {
	p := d.pathString()
	if p != "" {
		p += "."
	}
	return &viewError{path: p + field, reason: reason, named: true}
}

func (d *decoder) ws() {
	for d.i < len(d.data) {
		// indented JSON: runs of spaces, eight at a time
		for d.i+8 <= len(d.data) && binary.LittleEndian.Uint64(d.data[d.i:]) == 0x2020202020202020 {
			d.i += 8
		}
		if d.i >= len(d.data) {
			return
		}
		switch d.data[d.i] {
		case ' ', '\t', '\r', '\n':
			d.i++
		default:
			return
		}
	}
}

// next steps over what follows an element of an array or object: a comma
// (another element follows: done is false) or the closing byte (done).
// Anything else is a syntax error naming where it stands.
func (d *decoder) next(closing byte, where string) (done bool, err error) {
	d.ws()
	if d.i >= len(d.data) {
		return false, d.syntax("")
	}
	switch d.data[d.i] {
	case ',':
		d.i++
		return false, nil
	case closing:
		d.i++
		return true, nil
	default:
		return false, d.syntax(where)
	}
}

func (d *decoder) syntax(what string) error {
	if d.i >= len(d.data) {
		return &viewError{reason: "unexpected end of JSON input"}
	}
	return &viewError{reason: fmt.Sprintf("invalid character %s %s (offset %d)", quoteChar(d.data[d.i]), what, d.i)}
}

func quoteChar(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	s := strconv.Quote(string(rune(c)))
	return "'" + s[1:len(s)-1] + "'"
}

// jsonKind names the JSON value at d.i as encoding/json's errors do.
func (d *decoder) jsonKind() string {
	switch d.data[d.i] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "bool"
	}
	return "number"
}

// mismatch skips the value at d.i and reports that it does not fit p.
func (d *decoder) mismatch(p *plan) error {
	kind := d.jsonKind()
	start := d.i
	if err := d.skip(); err != nil {
		return err
	}
	if kind == "number" {
		kind = "number " + string(d.data[start:d.i])
	}
	return d.fail("Invalid value: %s (want %s)", kind, p.typ.String())
}

// value decodes the value at d.i into dst (not valid: check only) per p.
func (d *decoder) value(p *plan, dst reflect.Value) error {
	d.ws()
	if d.i >= len(d.data) {
		return d.syntax("")
	}
	c := d.data[d.i]
	if c == 'n' {
		if err := d.literal("null"); err != nil {
			return err
		}
		if p.kind == pUnmarshaler {
			if !dst.IsValid() && p.nullOK {
				return nil // checked only, and the type takes null
			}
			return d.unmarshal(p, dst, []byte("null"))
		}
		if dst.IsValid() {
			switch p.kind {
			case pPtr, pSlice, pMap, pFallback:
				dst.SetZero()
			}
		}
		return nil
	}
	switch p.kind {
	case pString:
		if c != '"' {
			return d.mismatch(p)
		}
		s, err := d.str(dst.IsValid())
		if err != nil {
			return err
		}
		if dst.IsValid() {
			dst.SetString(s)
		}
		return nil
	case pBool:
		if c != 't' && c != 'f' {
			return d.mismatch(p)
		}
		want := "true"
		if c == 'f' {
			want = "false"
		}
		if err := d.literal(want); err != nil {
			return err
		}
		if dst.IsValid() {
			dst.SetBool(c == 't')
		}
		return nil
	case pInt, pUint, pFloat:
		if c != '-' && (c < '0' || c > '9') {
			return d.mismatch(p)
		}
		start := d.i
		if err := d.number(); err != nil {
			return err
		}
		return d.setNumber(p, dst, d.data[start:d.i])
	case pPtr:
		if !dst.IsValid() {
			return d.value(p.elem, dst)
		}
		if dst.IsNil() {
			dst.Set(reflect.New(p.typ.Elem()))
		}
		return d.value(p.elem, dst.Elem())
	case pSlice:
		if p.bytes {
			if c != '"' {
				return d.mismatch(p)
			}
			s, err := d.str(true)
			if err != nil {
				return err
			}
			var b []byte
			if err := json.Unmarshal(strconv.AppendQuote(nil, s), &b); err != nil {
				return d.fail("Invalid value: %v", err)
			}
			if dst.IsValid() {
				dst.SetBytes(b)
			}
			return nil
		}
		if c != '[' {
			return d.mismatch(p)
		}
		return d.array(p, dst)
	case pMap:
		if c != '{' {
			return d.mismatch(p)
		}
		return d.mapValue(p, dst)
	case pStruct:
		if c != '{' {
			return d.mismatch(p)
		}
		return d.object(p, dst)
	case pUnmarshaler:
		start := d.i
		if err := d.skip(); err != nil {
			return err
		}
		return d.unmarshal(p, dst, d.data[start:d.i])
	default: // pFallback
		start := d.i
		if err := d.skip(); err != nil {
			return err
		}
		target := dst
		if !target.IsValid() {
			target = reflect.New(p.typ).Elem()
		}
		serrs, err := sigsjson.UnmarshalStrict(d.data[start:d.i], target.Addr().Interface(), sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
		if err == nil && len(serrs) > 0 {
			err = serrs[0]
		}
		if err != nil {
			return d.fail("%s", cleanJSONError(err))
		}
		return nil
	}
}

func (d *decoder) unmarshal(p *plan, dst reflect.Value, raw []byte) error {
	target := dst
	if !target.IsValid() {
		target = reflect.New(p.typ).Elem()
	}
	if err := target.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(raw); err != nil {
		return d.fail("Invalid value: %s: %v", raw, err)
	}
	return nil
}

func (d *decoder) setNumber(p *plan, dst reflect.Value, lit []byte) error {
	switch p.kind {
	case pInt:
		n, err := strconv.ParseInt(string(lit), 10, 64)
		if err != nil || reflect.Zero(p.typ).OverflowInt(n) {
			return d.fail("Invalid value: number %s (want %s)", lit, p.typ.String())
		}
		if dst.IsValid() {
			dst.SetInt(n)
		}
	case pUint:
		n, err := strconv.ParseUint(string(lit), 10, 64)
		if err != nil || reflect.Zero(p.typ).OverflowUint(n) {
			return d.fail("Invalid value: number %s (want %s)", lit, p.typ.String())
		}
		if dst.IsValid() {
			dst.SetUint(n)
		}
	case pFloat:
		f, err := strconv.ParseFloat(string(lit), p.typ.Bits())
		if err != nil {
			return d.fail("Invalid value: number %s (want %s)", lit, p.typ.String())
		}
		if dst.IsValid() {
			dst.SetFloat(f)
		}
	}
	return nil
}

func (d *decoder) enter() error {
	d.depth++
	if d.depth > maxViewDepth {
		return d.fail("exceeded max depth of %d", maxViewDepth)
	}
	return nil
}

func (d *decoder) array(p *plan, dst reflect.Value) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer func() { d.depth-- }()
	d.i++ // [
	n := 0
	if dst.IsValid() {
		dst.SetLen(0)
	}
	d.ws()
	if d.i < len(d.data) && d.data[d.i] == ']' {
		d.i++
		if dst.IsValid() && dst.IsNil() {
			dst.Set(reflect.MakeSlice(p.typ, 0, 0))
		}
		return nil
	}
	for {
		var ev reflect.Value
		if dst.IsValid() {
			if n >= dst.Cap() {
				grown := reflect.MakeSlice(p.typ, n, max(4, 2*n))
				reflect.Copy(grown, dst)
				dst.Set(grown)
			}
			dst.SetLen(n + 1)
			ev = dst.Index(n)
		}
		d.path = append(d.path, step{index: n})
		if err := d.value(p.elem, ev); err != nil {
			return err
		}
		d.path = d.path[:len(d.path)-1]
		n++
		if done, err := d.next(']', "after array element"); done || err != nil {
			return err
		}
	}
}

// members walks an object's members, calling fn with each key (raw,
// unescaped when needed) with d.i at the value.
func (d *decoder) members(fn func(key []byte) error) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer func() { d.depth-- }()
	d.i++ // {
	d.ws()
	if d.i < len(d.data) && d.data[d.i] == '}' {
		d.i++
		return nil
	}
	for {
		d.ws()
		if d.i >= len(d.data) || d.data[d.i] != '"' {
			return d.syntax("looking for beginning of object key string")
		}
		key, err := d.strBytes()
		if err != nil {
			return err
		}
		d.ws()
		if d.i >= len(d.data) || d.data[d.i] != ':' {
			return d.syntax("after object key")
		}
		d.i++
		if err := fn(key); err != nil {
			return err
		}
		if done, err := d.next('}', "after object key:value pair"); done || err != nil {
			return err
		}
	}
}

func (d *decoder) object(p *plan, dst reflect.Value) error {
	return d.structFields(p, func(f *fieldPlan) error {
		var fv reflect.Value
		if f.keep && dst.IsValid() {
			fv = dst.FieldByIndex(f.index)
		}
		return d.value(f.plan, fv)
	})
}

// structFields walks the members of the object at d.i as struct plan p:
// unknown and duplicate field names are errors; fn is called with each
// field, its path pushed and d at its value.
func (d *decoder) structFields(p *plan, fn func(f *fieldPlan) error) error {
	var seenSmall [4]uint64
	seen := seenSmall[:]
	if n := (len(p.fields) + 63) / 64; n > len(seen) {
		seen = make([]uint64, n)
	}
	hint := 0
	return d.members(func(key []byte) error {
		f, err := p.lookup(key, &hint)
		if err != nil {
			return d.failField(string(key), "unknown field")
		}
		if seen[f.pos/64]&(1<<(f.pos%64)) != 0 {
			return d.failField(f.name, "duplicate field")
		}
		seen[f.pos/64] |= 1 << (f.pos % 64)
		d.path = append(d.path, step{field: f.name, index: -1})
		if err := fn(f); err != nil {
			return err
		}
		d.path = d.path[:len(d.path)-1]
		return nil
	})
}

// mapEntries walks the members of the object at d.i as a map: duplicate
// keys are errors; fn is called with each key, its step pushed and d at
// the value.
func (d *decoder) mapEntries(fn func(key []byte) error) error {
	mark := len(d.seen)
	defer func() { d.seen = d.seen[:mark] }()
	return d.members(func(key []byte) error {
		for _, k := range d.seen[mark:] {
			if bytes.Equal(k, key) {
				return &viewError{path: d.pathString() + "[" + string(key) + "]", reason: "duplicate field", named: true}
			}
		}
		d.seen = append(d.seen, key)
		d.path = append(d.path, step{key: key, index: -1})
		if err := fn(key); err != nil {
			return err
		}
		d.path = d.path[:len(d.path)-1]
		return nil
	})
}

func (d *decoder) mapValue(p *plan, dst reflect.Value) error {
	if dst.IsValid() && dst.IsNil() {
		dst.Set(reflect.MakeMap(p.typ))
	}
	var ev, kv reflect.Value
	var strs map[string]string // a map[string]string, set directly
	if dst.IsValid() {
		if m, ok := dst.Interface().(map[string]string); ok {
			strs = m
		} else {
			ev = reflect.New(p.typ.Elem()).Elem()
			kv = reflect.New(p.typ.Key()).Elem()
		}
	}
	return d.mapEntries(func(key []byte) error {
		if strs != nil {
			d.ws()
			if d.i < len(d.data) && d.data[d.i] == '"' {
				v, err := d.str(true)
				if err != nil {
					return err
				}
				strs[string(key)] = v
				return nil
			}
			ev = reflect.New(p.typ.Elem()).Elem()
		} else if ev.IsValid() {
			ev.SetZero()
		}
		if err := d.value(p.elem, ev); err != nil {
			return err
		}
		if strs != nil {
			strs[string(key)] = ev.String()
		} else if dst.IsValid() {
			kv.SetString(string(key))
			dst.SetMapIndex(kv, ev)
		}
		return nil
	})
}

func (d *decoder) literal(want string) error {
	if !bytes.HasPrefix(d.data[d.i:], []byte(want)) {
		for k := 0; k < len(want); k++ {
			if d.i+k >= len(d.data) {
				d.i += k
				return d.syntax("")
			}
			if d.data[d.i+k] != want[k] {
				d.i += k
				return d.syntax("in literal " + want + " (expecting " + quoteChar(want[k]) + ")")
			}
		}
	}
	d.i += len(want)
	return nil
}

func (d *decoder) number() error {
	i := d.i
	if i < len(d.data) && d.data[i] == '-' {
		i++
	}
	digits := func() int {
		s := i
		for i < len(d.data) && d.data[i] >= '0' && d.data[i] <= '9' {
			i++
		}
		return i - s
	}
	if i < len(d.data) && d.data[i] == '0' {
		i++
	} else if digits() == 0 {
		d.i = i
		return d.syntax("in numeric literal")
	}
	if i < len(d.data) && d.data[i] == '.' {
		i++
		if digits() == 0 {
			d.i = i
			return d.syntax("after decimal point in numeric literal")
		}
	}
	if i < len(d.data) && (d.data[i] == 'e' || d.data[i] == 'E') {
		i++
		if i < len(d.data) && (d.data[i] == '+' || d.data[i] == '-') {
			i++
		}
		if digits() == 0 {
			d.i = i
			return d.syntax("in exponent of numeric literal")
		}
	}
	d.i = i
	return nil
}

// strBytes reads a string at d.i; the result aliases the input when it has
// no escapes.
func (d *decoder) strBytes() ([]byte, error) {
	d.i++ // "
	start := d.i
	for d.i < len(d.data) {
		// eight plain ASCII bytes at a time (none a quote, a backslash, a
		// control character or past ASCII; a false alarm only drops to
		// the byte loop)
		const lo, hi = 0x0101010101010101, 0x8080808080808080
		for d.i+8 <= len(d.data) {
			x := binary.LittleEndian.Uint64(d.data[d.i:])
			q, b := x^(lo*'"'), x^(lo*'\\')
			if ((q-lo)&^q|(b-lo)&^b|(x-lo*0x20)&^x|x)&hi != 0 {
				break
			}
			d.i += 8
		}
		if d.i >= len(d.data) {
			break
		}
		c := d.data[d.i]
		if c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\' {
			d.i++
			continue
		}
		switch {
		case c == '"':
			s := d.data[start:d.i]
			d.i++
			return s, nil
		case c == '\\':
			d.i = start
			return d.unescape()
		case c < 0x20:
			return nil, d.syntax("in string literal")
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(d.data[d.i:])
			if r == utf8.RuneError && size == 1 {
				d.i = start
				return d.unescape()
			}
			d.i += size
		default:
			d.i++
		}
	}
	return nil, d.syntax("")
}

// unescape reads the rest of a string from d.i (after the quote) into a
// fresh slice, as encoding/json does (invalid UTF-8 and lone surrogates
// become U+FFFD).
func (d *decoder) unescape() ([]byte, error) {
	var out []byte
	for d.i < len(d.data) {
		c := d.data[d.i]
		switch {
		case c == '"':
			d.i++
			return out, nil
		case c < 0x20:
			return nil, d.syntax("in string literal")
		case c == '\\':
			if d.i+1 >= len(d.data) {
				d.i++
				return nil, d.syntax("")
			}
			e := d.data[d.i+1]
			d.i += 2
			switch e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, ok := d.hex4()
				if !ok {
					return nil, d.syntax("in \\u hexadecimal character escape")
				}
				if utf16.IsSurrogate(r) {
					save := d.i
					if d.i+1 < len(d.data) && d.data[d.i] == '\\' && d.data[d.i+1] == 'u' {
						d.i += 2
						if r2, ok := d.hex4(); ok {
							if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
								out = utf8.AppendRune(out, dec)
								continue
							}
						}
					}
					d.i = save
					r = utf8.RuneError
				}
				out = utf8.AppendRune(out, r)
			default:
				d.i--
				return nil, d.syntax("in string escape code")
			}
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(d.data[d.i:])
			if r == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, d.data[d.i:d.i+size]...)
			}
			d.i += size
		default:
			out = append(out, c)
			d.i++
		}
	}
	return nil, d.syntax("")
}

func (d *decoder) hex4() (rune, bool) {
	if d.i+4 > len(d.data) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(d.data[d.i:d.i+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	d.i += 4
	return rune(n), true
}

func (d *decoder) str(keep bool) (string, error) {
	b, err := d.strBytes()
	if err != nil || !keep {
		return "", err
	}
	return string(b), nil
}

// skip checks and steps over one value of any shape.
func (d *decoder) skip() error {
	d.ws()
	if d.i >= len(d.data) {
		return d.syntax("")
	}
	switch c := d.data[d.i]; {
	case c == '"':
		_, err := d.strBytes()
		return err
	case c == '{':
		return d.members(func([]byte) error { return d.skip() })
	case c == '[':
		if err := d.enter(); err != nil {
			return err
		}
		defer func() { d.depth-- }()
		d.i++
		d.ws()
		if d.i < len(d.data) && d.data[d.i] == ']' {
			d.i++
			return nil
		}
		for {
			if err := d.skip(); err != nil {
				return err
			}
			if done, err := d.next(']', "after array element"); done || err != nil {
				return err
			}
		}
	case c == 't':
		return d.literal("true")
	case c == 'f':
		return d.literal("false")
	case c == 'n':
		return d.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	default:
		return d.syntax("looking for beginning of value")
	}
}

// decodeView decodes data (one JSON value, nothing after it but
// whitespace) into dst (a pointer) per p.
func decodeView(data []byte, p *plan, dst any) error {
	d := &decoder{data: data}
	v := reflect.ValueOf(dst).Elem()
	if err := d.value(p, v); err != nil {
		return err
	}
	d.ws()
	if d.i < len(d.data) {
		return d.syntax("after top-level value")
	}
	return nil
}
