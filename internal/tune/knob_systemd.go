package tune

import (
	"context"

	"github.com/gpunode/gpunode/internal/sysfmt"
)

// systemdKnob is a [Manager] default of systemd (DefaultLimitMEMLOCK):
// services inherit it; it takes effect after 'systemctl daemon-reexec'.
type systemdKnob struct {
	exact
	key  string
	spec spec
}

func (k systemdKnob) read(_ context.Context, h *Host) (observation, error) {
	o := observation{Current: unset}
	if v, ok := h.systemdManager()[k.key]; ok {
		o.Current = k.spec.canon(v.value)
		o.Detail = "from " + v.source
	}
	return o, nil
}

// toBytes: systemd reads DefaultLimitMEMLOCK in bytes, with optional
// K, M, G, T suffixes (base 1024); NOFILE is not a size.
func (k systemdKnob) toBytes(_ *Host, v string) (uint64, bool) {
	if k.key != "DefaultLimitMEMLOCK" || v == "unlimited" || v == "infinity" {
		return 0, false
	}
	n, err := sysfmt.ParseBytes(v)
	return n, err == nil
}
func (k systemdKnob) validate(v string) error                   { return k.spec.validate(v) }
func (k systemdKnob) resolve(_ *Host, v string) (string, error) { return k.spec.canon(v), nil }
func (k systemdKnob) fix(_ *Host, w string) []string {
	return []string{fixWrite(fileSystemd), "systemctl daemon-reexec"}
}
func (k systemdKnob) changes(_ *Host, _ observation, w string) ([]change, persist, error) {
	return nil, persist{systemd: [][2]string{{k.key, systemdValue(w)}}}, nil
}

func systemdValue(v string) string {
	if v == "unlimited" {
		return "infinity"
	}
	return v
}
