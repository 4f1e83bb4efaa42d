package tune

import (
	"context"
	"strconv"
)

// limitsKnob is a pam_limits item for every user ("*"), persisted in
// /etc/security/limits.d. It takes effect at the next login or service start.
type limitsKnob struct {
	exact
	item string
	spec spec
}

func (k limitsKnob) read(_ context.Context, h *Host) (observation, error) {
	l, ok := h.limitsBoot()[k.item]
	o := observation{Current: unset}
	if ok {
		switch {
		case l.soft == l.hard:
			o.Current = l.soft
		case l.soft == "":
			o.Current = "hard=" + l.hard
		case l.hard == "":
			o.Current = "soft=" + l.soft
		default:
			o.Current = "soft=" + l.soft + " hard=" + l.hard
		}
		o.Detail = "from " + l.source + " (applies at the next login)"
		if readAfter(l.source, fileLimits) {
			o.Detail += ", which is read after " + fileLimits + " (what gpunode writes there does not win)"
		}
	}
	return o, nil
}

// toBytes: pam_limits counts memlock in KiB; nofile is not a size.
func (k limitsKnob) toBytes(_ *Host, v string) (uint64, bool) {
	if k.item != "memlock" {
		return 0, false
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n > 1<<53 {
		return 0, false
	}
	return n << 10, true
}
func (k limitsKnob) validate(v string) error                   { return k.spec.validate(v) }
func (k limitsKnob) resolve(_ *Host, v string) (string, error) { return k.spec.canon(v), nil }
func (k limitsKnob) fix(h *Host, w string) []string {
	if f, _, ok := h.limitsOverride(k.item, w); ok {
		return []string{overrideFix(h, f, k.item, true), fixWrite(fileLimits)}
	}
	return []string{fixWrite(fileLimits)}
}
func (k limitsKnob) changes(_ *Host, _ observation, w string) ([]change, persist, error) {
	return nil, persist{limits: []string{"* soft " + k.item + " " + w, "* hard " + k.item + " " + w}}, nil
}
