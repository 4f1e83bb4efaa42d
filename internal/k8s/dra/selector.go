package dra

import (
	"strings"

	"github.com/blang/semver/v4"
	resourceapi "k8s.io/api/resource/v1"
)

// The selectors DRA drivers publish in their DeviceClasses are almost all
// of one shape: string equalities joined by &&, as in
//
//	device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'
//
// Compiling such an expression with CEL costs more than the rest of an
// easy `k8s dra allocate` together (the CEL environment, then the parser's
// first run). eqSelector recognises exactly that shape and decides it
// natively where the answer cannot differ from CEL's: the compared value
// is a plain string. Anything else (another shape, a missing attribute, a
// value of another type, an attribute CEL could not convert) is left to
// CEL, which then decides with its own results and errors.

// eqTerm is one `LHS == 'value'`: the driver when attr is false, else the
// attribute domain/id.
type eqTerm struct {
	attr       bool
	domain, id string
	value      string
}

// eqSelector is a conjunction of eqTerms.
type eqSelector []eqTerm

// Bounds of the recognised shape, far below anything CEL's cost or size
// limits could object to.
const (
	eqMaxTerms = 8
	eqMaxLen   = 1024
)

// celReserved: CEL's keywords and reserved identifiers. A field selection
// by one of them is a parse error in CEL, so it is not ours to decide.
func celReserved(id string) bool {
	switch id {
	case "true", "false", "null", "in",
		"as", "break", "const", "continue", "else", "for", "function", "if", "import",
		"let", "loop", "package", "namespace", "return", "var", "void", "while":
		return true
	}
	return false
}

// parseEqSelector recognises expr; ok is false for anything else.
func parseEqSelector(expr string) (sel eqSelector, ok bool) {
	if len(expr) > eqMaxLen {
		return nil, false
	}
	p := eqParser{s: expr}
	for {
		if len(sel) == eqMaxTerms {
			return nil, false
		}
		t, ok := p.term()
		if !ok {
			return nil, false
		}
		sel = append(sel, t)
		p.space()
		if p.i == len(p.s) {
			return sel, true
		}
		if !p.lit("&&") {
			return nil, false
		}
	}
}

type eqParser struct {
	s string
	i int
}

func (p *eqParser) space() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *eqParser) lit(w string) bool {
	if strings.HasPrefix(p.s[p.i:], w) {
		p.i += len(w)
		return true
	}
	return false
}

// str reads a quoted string without escapes: printable ASCII only, no
// backslash, and the opening quote does not occur inside.
func (p *eqParser) str() (string, bool) {
	if p.i >= len(p.s) || (p.s[p.i] != '\'' && p.s[p.i] != '"') {
		return "", false
	}
	q := p.s[p.i]
	for j := p.i + 1; j < len(p.s); j++ {
		c := p.s[j]
		switch {
		case c == q:
			v := p.s[p.i+1 : j]
			p.i = j + 1
			return v, true
		case c < 0x20 || c > 0x7e || c == '\\':
			return "", false
		}
	}
	return "", false
}

func (p *eqParser) ident() (string, bool) {
	j := p.i
	for j < len(p.s) {
		c := p.s[j]
		letter := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if !letter && (j == p.i || c < '0' || c > '9') {
			break
		}
		j++
	}
	if j == p.i || celReserved(p.s[p.i:j]) {
		return "", false
	}
	id := p.s[p.i:j]
	p.i = j
	return id, true
}

func (p *eqParser) term() (eqTerm, bool) {
	var t eqTerm
	p.space()
	if !p.lit("device.") {
		return t, false
	}
	switch {
	case p.lit("attributes["):
		dom, ok := p.str()
		if !ok || !p.lit("].") {
			return t, false
		}
		id, ok := p.ident()
		if !ok {
			return t, false
		}
		t.attr, t.domain, t.id = true, dom, id
	case p.lit("driver"):
		// "device.driverX" is another field: "==" must follow.
	default:
		return t, false
	}
	p.space()
	if !p.lit("==") {
		return t, false
	}
	p.space()
	v, ok := p.str()
	if !ok {
		return t, false
	}
	t.value = v
	return t, true
}

// eval decides sel on a device of driver; decided is false where CEL must
// (an attribute missing, not a plain string, or one CEL cannot convert,
// which fails CEL's evaluation whatever the expression says).
func (sel eqSelector) eval(driver string, dev *resourceapi.Device) (match, decided bool) {
	if !attributesConvert(dev) {
		return false, false
	}
	// Every term true so far: a match, unless a term was left to CEL.
	decided = true
	for _, t := range sel {
		if !t.attr {
			if driver != t.value {
				// false && anything is false in CEL, errors included.
				return false, true
			}
			continue
		}
		v, ok := stringAttr(driver, dev, t.domain, t.id)
		switch {
		case !ok:
			decided = false
		case v != t.value:
			return false, true
		}
	}
	return decided, decided
}

// stringAttr is the attribute domain/id of a device of driver, as CEL sees
// it, when it is exactly one plain string; ok is false otherwise.
func stringAttr(driver string, dev *resourceapi.Device, domain, id string) (string, bool) {
	var found *resourceapi.DeviceAttribute
	for name, a := range dev.Attributes {
		d, i := driver, string(name)
		if k := strings.IndexByte(i, '/'); k >= 0 {
			d, i = i[:k], i[k+1:]
		}
		if d != domain || i != id {
			continue
		}
		if found != nil {
			// Two names for one attribute: which CEL sees depends on map order.
			return "", false
		}
		a := a
		found = &a
	}
	if found == nil || found.StringValue == nil || found.IntValue != nil || found.BoolValue != nil ||
		found.IntValues != nil || found.BoolValues != nil || found.StringValues != nil || found.VersionValues != nil {
		return "", false
	}
	return *found.StringValue, true
}

// attributesConvert: every attribute of dev has a value CEL accepts (its
// evaluation fails on the first that has none or holds a bad version).
func attributesConvert(dev *resourceapi.Device) bool {
	for _, a := range dev.Attributes {
		switch {
		case a.IntValues != nil, a.BoolValues != nil, a.StringValues != nil:
		case a.VersionValues != nil:
			for _, v := range a.VersionValues {
				if _, err := semver.Parse(v); err != nil {
					return false
				}
			}
		case a.IntValue != nil, a.BoolValue != nil, a.StringValue != nil:
		case a.VersionValue != nil:
			if _, err := semver.Parse(*a.VersionValue); err != nil {
				return false
			}
		default:
			return false
		}
	}
	return true
}
