package tune

import (
	"context"
	"fmt"
	"strings"

	"github.com/gpunode/gpunode/internal/sysfmt"
)

// cmdlineKnob is a kernel boot parameter: read from /proc/cmdline, configured
// in /etc/default/grub, written only with --bootloader.
type cmdlineKnob struct {
	param string
	spec  spec
	// auto computes the value of "auto" from the host.
	auto func(h *Host) (string, error)
	// cpulist compares values as CPU sets (flags like "domain," ignored).
	cpulist bool
	// vendor limits the parameter to CPUs whose model names it ("Intel",
	// "Intel|AMD"); elsewhere the setting is absent.
	vendor string
	// sameAs names another CPU-list parameter ("isolcpus") this one should
	// equal: the profile value sameAs resolves to that parameter's live
	// value, the setting is judged only where the host sets both, and
	// the detail names both lists when they differ.
	sameAs string
}

// judged reports whether the setting has anything to judge on h with the
// profile value v: a sameAs value needs both parameters on the live
// command line (a host that isolates no CPUs, or isolates them with the
// tick left on, is not this setting's business).
func (k cmdlineKnob) judged(h *Host, v string) bool {
	if k.sameAs == "" || v != k.sameAs {
		return true
	}
	cl, err := h.Cmdline()
	if err != nil {
		return true // read reports the error
	}
	_, a := cl[k.param]
	_, b := cl[k.sameAs]
	return a && b
}

// sameAsDetail says how the live values of k.param and k.sameAs differ
// ("" when they are equal or either is unset or unparsable).
func (k cmdlineKnob) sameAsDetail(cl map[string]string) string {
	v, ok1 := cl[k.param]
	o, ok2 := cl[k.sameAs]
	if !ok1 || !ok2 {
		return ""
	}
	a, err1 := sysfmt.ParseCPUList(stripCPUFlags(v))
	b, err2 := sysfmt.ParseCPUList(stripCPUFlags(o))
	if err1 != nil || err2 != nil || a.Equals(b) {
		return ""
	}
	msg := fmt.Sprintf("%s=%s differs from %s=%s", k.param, stripCPUFlags(v), k.sameAs, stripCPUFlags(o))
	if d := b.Difference(a); d.Size() > 0 {
		msg += fmt.Sprintf("; CPUs %s are in %s but not in %s", d, k.sameAs, k.param)
	}
	if d := a.Difference(b); d.Size() > 0 {
		msg += fmt.Sprintf("; CPUs %s are in %s but not in %s", d, k.param, k.sameAs)
	}
	return msg
}

// cpuVendorMatches reports whether the host's CPU model names one of the
// vendors ("Intel|AMD"). An unknown model matches nothing.
func cpuVendorMatches(h *Host, vendors string) bool {
	if h.Topo == nil {
		return true // cannot tell; let the read decide
	}
	for _, v := range strings.Split(vendors, "|") {
		if strings.Contains(h.Topo.CPUModel, v) {
			return true
		}
	}
	return false
}

const unset = "(unset)"

func (k cmdlineKnob) read(_ context.Context, h *Host) (observation, error) {
	if k.vendor != "" && !cpuVendorMatches(h, k.vendor) {
		model := "unknown"
		if h.Topo != nil && h.Topo.CPUModel != "" {
			model = h.Topo.CPUModel
		}
		return observation{}, absentf("%s only applies to %s CPUs (this host: %s)", k.param, strings.ReplaceAll(k.vendor, "|", "/"), model)
	}
	cl, err := h.Cmdline()
	if err != nil {
		return observation{}, err
	}
	o := observation{Current: unset}
	if v, ok := cl[k.param]; ok {
		o.Current = v
		if v == "" {
			o.Current = "(set)"
		}
	}
	if k.sameAs != "" {
		o.Detail = k.sameAsDetail(cl)
	}
	g := h.bootConf()
	if g.exists {
		o.HasBoot = true
		if v, ok := g.params[k.param]; ok {
			o.Boot = v
			if v == "" {
				o.Boot = "(set)"
			}
			o.Detail = joinDetail(o.Detail, "configured in "+g.source[k.param])
		} else {
			o.Boot = unset
		}
	}
	return o, nil
}
func (k cmdlineKnob) validate(v string) error {
	if v == "auto" && k.auto != nil || v == k.sameAs && v != "" {
		return nil
	}
	return k.spec.validate(v)
}
func (k cmdlineKnob) resolve(h *Host, v string) (string, error) {
	if v == "auto" && k.auto != nil {
		return k.auto(h)
	}
	if v == k.sameAs && v != "" {
		cl, err := h.Cmdline()
		if err != nil {
			return "", err
		}
		o, ok := cl[k.sameAs]
		if !ok {
			return unset, nil
		}
		return stripCPUFlags(o), nil
	}
	return v, nil
}
func (k cmdlineKnob) equal(c, w string) bool {
	if c == w {
		return true
	}
	if k.cpulist {
		a, err1 := sysfmt.ParseCPUList(stripCPUFlags(c))
		b, err2 := sysfmt.ParseCPUList(stripCPUFlags(w))
		return err1 == nil && err2 == nil && c != unset && w != unset && a.Equals(b)
	}
	return false
}

// stripCPUFlags drops isolcpus flags ("managed_irq,domain,2-7" -> "2-7").
func stripCPUFlags(s string) string {
	parts := strings.Split(s, ",")
	keep := parts[:0]
	for _, p := range parts {
		if p != "" && (p[0] >= '0' && p[0] <= '9') {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, ",")
}
func (k cmdlineKnob) fix(_ *Host, w string) []string {
	return []string{fixBootTemplate}
}
func (k cmdlineKnob) changes(_ *Host, _ observation, w string) ([]change, persist, error) {
	return nil, persist{boot: [][2]string{{k.param, w}}}, nil
}
