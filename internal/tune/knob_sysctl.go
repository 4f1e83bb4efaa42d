package tune

import (
	"context"
	"strconv"
	"strings"
)

// sysctlKnob is a /proc/sys value, persisted in /etc/sysctl.d.
type sysctlKnob struct {
	exact
	key  string
	spec spec
	// size: the value is a byte count (net.core.rmem_max).
	size bool
}

func (k sysctlKnob) toBytes(_ *Host, v string) (uint64, bool) {
	if !k.size {
		return 0, false
	}
	n, err := strconv.ParseUint(v, 10, 64)
	return n, err == nil
}

func sysctlPath(key string) string { return "/proc/sys/" + strings.ReplaceAll(key, ".", "/") }

func (k sysctlKnob) read(_ context.Context, h *Host) (observation, error) {
	v, err := h.readKernel(sysctlPath(k.key))
	if err != nil {
		return observation{}, err
	}
	o := observation{Current: normSpace(v), HasBoot: true}
	if s, ok := h.sysctlBoot()[k.key]; ok {
		o.Boot = s.value
		o.Detail = "boot value from " + s.source
		if readAfter(s.source, fileSysctl) {
			o.Detail += ", which is read after " + fileSysctl + " (what gpunode writes there does not win)"
		}
	}
	return o, nil
}
func (k sysctlKnob) validate(v string) error                   { return k.spec.validate(v) }
func (k sysctlKnob) resolve(_ *Host, v string) (string, error) { return k.spec.canon(v), nil }
func (k sysctlKnob) fix(h *Host, w string) []string {
	if f, _, ok := h.sysctlOverride(k.key, w); ok {
		return []string{overrideFix(h, f, k.key, false), fixEcho(sysctlPath(k.key), w), fixWrite(fileSysctl)}
	}
	return []string{fixEcho(sysctlPath(k.key), w), fixWrite(fileSysctl)}
}
func (k sysctlKnob) changes(h *Host, o observation, w string) ([]change, persist, error) {
	p := persist{sysctl: [][2]string{{k.key, w}}}
	if o.Current == w {
		return nil, p, nil
	}
	return []change{valueChange(h, k.key, sysctlPath(k.key), o.Current, w)}, p, nil
}
