package tune

import (
	"context"
	"strings"
)

// swapKnob: no swap in use, and none configured in /etc/fstab. gpunode
// comments out the fstab entries but does not run swapoff itself: moving
// gigabytes back into RAM on a loaded node can take minutes or trigger the
// OOM killer, so that command is left to the operator.
type swapKnob struct{ exact }

func (swapKnob) read(_ context.Context, h *Host) (observation, error) {
	sw, err := h.activeSwaps()
	if err != nil {
		return observation{}, err
	}
	o := observation{Current: "off"}
	if len(sw) > 0 {
		o.Current = "on: " + strings.Join(sw, ",")
	}
	if b, err := h.FS.ReadFile("/etc/fstab"); err == nil {
		o.HasBoot = true
		o.Boot = "off"
		if fs := fstabSwaps(b); len(fs) > 0 {
			o.Boot = "on: " + strings.Join(fs, ",")
		}
	}
	return o, nil
}
func (swapKnob) validate(v string) error {
	return spec{kind: valChoice, choices: []string{"off"}}.validate(v)
}
func (swapKnob) fix(*Host, string) []string {
	// The sed comments out the same lines as commentFstabSwaps.
	return []string{"swapoff -a", `sed -i -E 's/^([[:space:]]*[^#[:space:]][^[:space:]]*[[:space:]]+[^[:space:]]+[[:space:]]+swap([[:space:]]|$))/` + overrideMark + `\1/' ` + fixPath(fileFstab)}
}
func (swapKnob) changes(_ *Host, o observation, _ string) ([]change, persist, error) {
	p := persist{swapOff: true}
	if o.Current != "off" {
		p.manual = append(p.manual, "swapoff -a   # gpunode does not run it: it can take minutes and OOM a loaded node")
	}
	return nil, p, nil
}
