package tune

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpunode/gpunode/internal/sysfmt"
)

// valueKind is the shape of a knob's profile values. The zero kind is no
// kind: a spec without one validates nothing (a catalogue bug that
// TestSpecKinds keeps from shipping).
type valueKind uint8

const (
	_          valueKind = iota
	valInt               // an integer in min..max (max 0: no upper bound)
	valInts              // n integers separated by spaces
	valChoice            // one of choices
	valWord              // one word: no blanks, no quotes
	valLimit             // a number, "unlimited" or "infinity"
	valCPUList           // a cpulist ("0-3,8")
)

// spec validates profile values of a knob.
type spec struct {
	kind    valueKind
	min     int64
	max     int64
	choices []string
	n       int // number of ints for valInts
}

func (s spec) validate(v string) error {
	switch s.kind {
	case valInt:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not an integer", v)
		}
		if n < s.min || (s.max != 0 && n > s.max) {
			return fmt.Errorf("%d is outside %d..%d", n, s.min, s.max)
		}
	case valInts:
		f := strings.Fields(v)
		if len(f) != s.n {
			return fmt.Errorf("%q: want %d integers separated by spaces", v, s.n)
		}
		for _, x := range f {
			if _, err := strconv.ParseInt(x, 10, 64); err != nil {
				return fmt.Errorf("%q: %q is not an integer", v, x)
			}
		}
	case valChoice:
		for _, c := range s.choices {
			if v == c {
				return nil
			}
		}
		return fmt.Errorf("%q is not one of %s", v, strings.Join(s.choices, ", "))
	case valWord:
		if v == "" || strings.ContainsAny(v, " \t\n'\"") {
			return fmt.Errorf("%q is not a single word", v)
		}
	case valLimit:
		if v == "unlimited" || v == "infinity" {
			return nil
		}
		if _, err := strconv.ParseUint(v, 10, 64); err != nil {
			return fmt.Errorf("%q is not a number or unlimited", v)
		}
	case valCPUList:
		if _, err := sysfmt.ParseCPUList(v); err != nil {
			return fmt.Errorf("%q is not a cpulist: %w", v, err)
		}
	default:
		// A catalogue bug; TestSpecKinds keeps it from shipping.
		return fmt.Errorf("setting has an unknown value kind %d: no value is valid", s.kind)
	}
	return nil
}

func (s spec) canon(v string) string {
	switch s.kind {
	case valInts:
		return normSpace(v)
	case valLimit:
		if v == "infinity" {
			return "unlimited"
		}
	}
	return v
}
