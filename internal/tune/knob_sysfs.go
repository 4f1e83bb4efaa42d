package tune

import (
	"context"
	"path"
	"regexp"
	"sync"
)

// sysfsKnob is a sysfs file; bracket files ("always [madvise] never") read
// as the selected word. Persisted with a tmpfiles.d "w" line.
type sysfsKnob struct {
	exact
	path    string
	spec    spec
	bracket bool
}

var bracketRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\[([^\]]+)\]`) }) // compiled on first use

func (k sysfsKnob) current(h *Host) (string, error) {
	v, err := h.readKernel(k.path)
	if err != nil {
		return "", err
	}
	if k.bracket {
		if m := bracketRE().FindStringSubmatch(v); m != nil {
			return m[1], nil
		}
	}
	return normSpace(v), nil
}

func (k sysfsKnob) read(_ context.Context, h *Host) (observation, error) {
	v, err := k.current(h)
	if err != nil {
		return observation{}, err
	}
	o := observation{Current: v, HasBoot: true}
	if b, ok := h.tmpfilesWrites()[k.path]; ok {
		o.Boot = b
	}
	return o, nil
}
func (k sysfsKnob) validate(v string) error { return k.spec.validate(v) }
func (k sysfsKnob) fix(_ *Host, w string) []string {
	return []string{fixEcho(k.path, w), fixWrite(fileTmpfiles)}
}
func (k sysfsKnob) changes(h *Host, o observation, w string) ([]change, persist, error) {
	p := persist{tmpfiles: [][2]string{{k.path, w}}}
	if o.Current == w {
		return nil, p, nil
	}
	return []change{valueChange(h, path.Base(k.path), k.path, o.Current, w)}, p, nil
}
