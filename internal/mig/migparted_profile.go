package mig

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MigProfile is a MIG profile name as mig-parted files spell it:
// "<g>g.<gb>gb" or "<c>c.<g>g.<gb>gb" (C equals G when the compute part is
// left out), then optionally "+a,b,..." (Attributes, e.g. "me", "me.all",
// "gfx") or "-a,b,..." (NegAttributes, e.g. "-me"), never both.
//
// Only the spelling is checked, with go-nvlib's rules (see the package
// notes in migparted.go): slice and memory sizes are any non-negative
// numbers and attributes any names; whether a GPU has such a profile is the
// catalogue's question.
type MigProfile struct {
	C, G, GB int
	// Attributes and NegAttributes keep the order they were written in.
	Attributes    []string
	NegAttributes []string
}

// HasAttribute reports whether the profile carries "+attr".
func (m MigProfile) HasAttribute(attr string) bool { return slices.Contains(m.Attributes, attr) }

// suffix renders the attribute list, "" when there is none.
func (m MigProfile) suffix() string {
	switch {
	case len(m.NegAttributes) > 0:
		return "-" + strings.Join(m.NegAttributes, ",")
	case len(m.Attributes) > 0:
		return "+" + strings.Join(m.Attributes, ",")
	}
	return ""
}

// GI returns the GPU-instance part of the profile: the name without a
// compute count ("3g.40gb", "1g.10gb+me").
func (m MigProfile) GI() string {
	return strconv.Itoa(m.G) + "g." + strconv.Itoa(m.GB) + "gb" + m.suffix()
}

// String is the canonical name: the compute count is written only when it
// differs from the GPU-instance slices ("1c.3g.40gb", but "3g.40gb" for
// "3c.3g.40gb"); numbers lose leading zeros.
func (m MigProfile) String() string {
	compute := ""
	if m.C != m.G {
		compute = strconv.Itoa(m.C) + "c."
	}
	return compute + m.GI()
}

// ParseMigProfile checks the spelling of a MIG profile name and returns its
// parts. Errors carry go-nvlib's texts.
func ParseMigProfile(name string) (*MigProfile, error) {
	if name == "" {
		return nil, errors.New(quoteProfileEmpty)
	}
	plus, minus := strings.IndexByte(name, '+'), strings.IndexByte(name, '-')
	if plus >= 0 && minus >= 0 {
		return nil, fmt.Errorf(quoteProfileBothSigns, name)
	}
	sizes, list, sign := name, "", byte(0)
	if cut := max(plus, minus); cut >= 0 {
		sizes, list, sign = name[:cut], name[cut+1:], name[cut]
	}
	p := &MigProfile{}
	var err error
	if p.C, p.G, p.GB, err = profileSizes(sizes); err != nil {
		return nil, fmt.Errorf(quoteProfileFields, name, err)
	}
	if sign == 0 {
		return p, nil
	}
	names, err := attributeList(list)
	if err != nil {
		return nil, fmt.Errorf(quoteProfileAttrs, name, err)
	}
	if sign == '-' {
		p.NegAttributes = names
	} else {
		p.Attributes = names
	}
	return p, nil
}

// profileSizes reads "<g>g.<gb>gb" or "<c>c.<g>g.<gb>gb". Anything past a
// second dot belongs to the memory field (and so fails its unit check).
func profileSizes(s string) (c, g, gb int, err error) {
	fields := strings.SplitN(s, ".", 3)
	if len(fields) < 2 {
		return 0, 0, 0, errors.New(quoteFieldCount)
	}
	// Checked left to right (the first bad field is the one reported);
	// with two fields the compute part is left out.
	units := [3]string{"c", "g", "gb"}
	skip := 3 - len(fields)
	var n [3]int
	for i, f := range fields {
		if n[skip+i], err = sizeField(f, units[skip+i]); err != nil {
			return 0, 0, 0, err
		}
	}
	if skip == 1 {
		n[0] = n[1]
	}
	return n[0], n[1], n[2], nil
}

// sizeField reads one "<number><unit>" field. strconv.Atoi decides what a
// number is (it takes leading zeros and refuses values past int).
func sizeField(f, unit string) (int, error) {
	digits, hasUnit := strings.CutSuffix(f, unit)
	n, notNumber := strconv.Atoi(digits)
	var why string
	switch {
	case strings.TrimSpace(f) != f:
		why = quoteFieldSpaces
	case !hasUnit:
		why = quoteFieldUnit
	case notNumber != nil:
		why = quoteFieldNumber
	default:
		return n, nil
	}
	return 0, fmt.Errorf(why, unit)
}

// attributeList splits "a,b,c" and checks each name. The checks run in a
// fixed order per name (repeat, empty, spaces, leading digit, dot at an
// edge, character set), so a name failing several reports the first.
func attributeList(s string) ([]string, error) {
	names := strings.Split(s, ",")
	earlier := make(map[string]struct{}, len(names))
	for _, a := range names {
		_, repeated := earlier[a]
		earlier[a] = struct{}{}
		if why := attributeProblem(a, repeated); why != "" {
			return nil, errors.New(why)
		}
	}
	return names, nil
}

// attributeProblem returns what is wrong with one attribute name, "" if
// nothing: a name is new to the list, starts with a letter and holds ASCII
// letters, digits and inner dots.
func attributeProblem(a string, repeated bool) string {
	switch {
	case repeated:
		return quoteAttrRepeated
	case a == "":
		return quoteAttrEmpty
	}
	if strings.TrimSpace(a) != a {
		return quoteAttrSpaces
	}
	first, last := a[0], a[len(a)-1]
	if '0' <= first && first <= '9' {
		return quoteAttrDigitFirst
	}
	if first == '.' || last == '.' {
		return quoteAttrDotEdge
	}
	if strings.ContainsFunc(a, func(r rune) bool { return !attributeRune(r) }) {
		return quoteAttrCharset
	}
	return ""
}

func attributeRune(r rune) bool {
	if r >= utf8.RuneSelf {
		return false
	}
	b := byte(r)
	return b == '.' || ('0' <= b && b <= '9') || ('a' <= b && b <= 'z') || ('A' <= b && b <= 'Z')
}
