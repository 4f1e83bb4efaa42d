package sysfmt

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MaxBytes bounds ParseBytes: sizes of 2^63 bytes and more are refused.
const MaxBytes = 1<<63 - 1

// ParseBytes is the one byte-size parser: a non-negative decimal number
// with an optional binary unit K, M, G or T (powers of 1024, any case,
// optionally followed by B or iB, a space allowed before it), or a bare
// number with an optional B. Surrounding whitespace is ignored. A fraction
// ("1.5G") is rounded down to a whole byte. It reads sysfs cache sizes
// ("32768K"), /proc/mounts sizes ("65536k"), systemd and sysctl values in
// profiles ("32G") and Docker-style flags ("16g").
func ParseBytes(s string) (uint64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "" {
		return 0, errors.New("empty size")
	}
	if len(t) > 64 {
		return 0, fmt.Errorf("size %q: too long", shorten(s))
	}
	bad := fmt.Errorf("size %q: want a number with an optional K, M, G or T unit", shorten(s))
	needUnit := false
	if u, ok := strings.CutSuffix(t, "ib"); ok {
		t, needUnit = u, true // "iB" only after a unit: "5iB" is no size
	} else {
		t = strings.TrimSuffix(t, "b")
	}
	mult := uint64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'k':
			mult = 1 << 10
		case 'm':
			mult = 1 << 20
		case 'g':
			mult = 1 << 30
		case 't':
			mult = 1 << 40
		}
		if mult != 1 {
			t = strings.TrimRight(t[:n-1], " ")
		}
	}
	if needUnit && mult == 1 {
		return 0, bad
	}
	whole, frac, hasFrac := strings.Cut(t, ".")
	if whole == "" || strings.TrimLeft(whole, "0123456789") != "" || hasFrac && (frac == "" || strings.TrimLeft(frac, "0123456789") != "") {
		return 0, bad
	}
	n, err := strconv.ParseUint(whole, 10, 64)
	if err != nil || n > MaxBytes/mult {
		return 0, fmt.Errorf("size %q: beyond %d bytes", shorten(s), uint64(MaxBytes))
	}
	v := n * mult
	if hasFrac && mult > 1 {
		f, _ := strconv.ParseFloat("0."+frac, 64)
		add := uint64(f * float64(mult))
		if v > MaxBytes-add {
			return 0, fmt.Errorf("size %q: beyond %d bytes", shorten(s), uint64(MaxBytes))
		}
		v += add
	}
	return v, nil
}
