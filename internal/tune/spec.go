package tune

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpunode/gpunode/internal/sysfmt"
)

// spec validates profile values of a knob.
type spec struct {
	kind    string // "int", "choice", "ints", "word", "limit", "cpulist"
	min     int64
	max     int64
	choices []string
	n       int // number of ints for "ints"
}

func (s spec) validate(v string) error {
	switch s.kind {
	case "int":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not an integer", v)
		}
		if n < s.min || (s.max != 0 && n > s.max) {
			return fmt.Errorf("%d is outside %d..%d", n, s.min, s.max)
		}
	case "ints":
		f := strings.Fields(v)
		if len(f) != s.n {
			return fmt.Errorf("%q: want %d integers separated by spaces", v, s.n)
		}
		for _, x := range f {
			if _, err := strconv.ParseInt(x, 10, 64); err != nil {
				return fmt.Errorf("%q: %q is not an integer", v, x)
			}
		}
	case "choice":
		for _, c := range s.choices {
			if v == c {
				return nil
			}
		}
		return fmt.Errorf("%q is not one of %s", v, strings.Join(s.choices, ", "))
	case "word":
		if v == "" || strings.ContainsAny(v, " \t\n'\"") {
			return fmt.Errorf("%q is not a single word", v)
		}
	case "limit":
		if v == "unlimited" || v == "infinity" {
			return nil
		}
		if _, err := strconv.ParseUint(v, 10, 64); err != nil {
			return fmt.Errorf("%q is not a number or unlimited", v)
		}
	case "cpulist":
		if _, err := sysfmt.ParseCPUList(v); err != nil {
			return fmt.Errorf("%q is not a cpulist: %w", v, err)
		}
	default:
		// A catalogue bug; TestCatalogueSpecKinds keeps it from shipping.
		return fmt.Errorf("setting has an unknown value kind %q: no value is valid", s.kind)
	}
	return nil
}

func (s spec) canon(v string) string {
	switch s.kind {
	case "ints":
		return normSpace(v)
	case "limit":
		if v == "infinity" {
			return "unlimited"
		}
	}
	return v
}
