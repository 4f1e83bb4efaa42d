package tune

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/gpunode/gpunode/internal/journal"
)

// observation is what a knob reads from the host.
type observation struct {
	// Current is the live value in canonical form.
	Current string
	// Boot is the value configured for the next boot ("" when nothing
	// configures it); only meaningful when HasBoot.
	Boot    string
	HasBoot bool
	// Check knobs decide themselves: Good reports whether the host passes.
	Check bool
	Good  bool
	// Detail is a note for the report (where a value comes from, which
	// devices fail a check).
	Detail string
	// CurrentBytes is the live value in bytes when the knob measured it
	// directly (shm.size); otherwise a sizeKnob converts Current.
	CurrentBytes *uint64
	// perCPU is what a per-CPU knob read, CPU by CPU: its changes use it
	// rather than read every CPU's file again.
	perCPU []cpuValue
}

// sizeKnob is implemented by knobs whose values are sizes: toBytes
// converts a canonical value (live or wanted) into bytes; false when the
// value is not a size ("unlimited", "(unset)"). Audit puts the results in
// Check.CurrentBytes and ExpectedBytes.
type sizeKnob interface {
	toBytes(h *Host, v string) (uint64, bool)
}

// minimumKnob is implemented by knobs whose wanted value is a minimum
// (equal reports current >= want); audit marks their checks
// check.Minimum.
type minimumKnob interface {
	minimum()
}

// shareOfMemory converts "50%" into bytes of MemTotal.
func shareOfMemory(h *Host, v string) (uint64, bool) {
	p, ok := strings.CutSuffix(v, "%")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(p, 10, 64)
	if err != nil || n > 100 {
		return 0, false
	}
	mem, err := h.MemTotal()
	if err != nil {
		return 0, false
	}
	if mem >= 1<<56 {
		return mem / 100 * n, true
	}
	return mem * n / 100, true
}

// knob is how one catalogue entry reads, compares and changes its setting.
type knob interface {
	// read returns the live (and boot-configured) value; errAbsent when the
	// knob does not exist on this kernel or hardware.
	read(ctx context.Context, h *Host) (observation, error)
	// validate checks a profile value without looking at a host.
	validate(v string) error
	// resolve turns a valid profile value into the canonical desired value
	// for h ("auto" values are computed from the topology here).
	resolve(h *Host, v string) (string, error)
	// equal reports whether the current value satisfies want.
	equal(current, want string) bool
	// fix returns the commands a person would run to fix drift.
	fix(h *Host, want string) []string
	// changes returns what 'tune apply' does for want: runtime changes
	// (only those needed now) and persistent contributions.
	changes(h *Host, obs observation, want string) ([]change, persist, error)
}

// exact is the embeddable default for resolve and equal: the profile
// value is already canonical (resolve returns it as given) and only the
// same value satisfies it (equal is c == w). A knob that canonicalises
// values, computes "auto" or compares otherwise defines its own method,
// which wins over the embedded one.
type exact struct{}

func (exact) resolve(_ *Host, v string) (string, error) { return v, nil }
func (exact) equal(c, w string) bool                    { return c == w }

// change is one runtime change: a journal step recorded before apply runs.
type change struct {
	Desc  string
	Step  journal.Step
	Apply func(ctx context.Context) error
}

// persist collects a setting's contributions to the persistent files.
type persist struct {
	sysctl   [][2]string // key, value
	tmpfiles [][2]string // path (glob), value
	limits   []string    // limits.conf lines
	systemd  [][2]string // [Manager] key, value
	boot     [][2]string // kernel parameter, value ("" for a flag)
	swapOff  bool        // comment swap entries out of /etc/fstab
	manual   []string    // commands gpunode does not run itself
}

func (p *persist) add(o persist) {
	p.sysctl = append(p.sysctl, o.sysctl...)
	p.tmpfiles = append(p.tmpfiles, o.tmpfiles...)
	p.limits = append(p.limits, o.limits...)
	p.systemd = append(p.systemd, o.systemd...)
	p.boot = append(p.boot, o.boot...)
	p.swapOff = p.swapOff || o.swapOff
	p.manual = append(p.manual, o.manual...)
}

// valueChange builds the runtime change writing value to kernel file p.
// original is the value to write back (in the form the file accepts).
func valueChange(h *Host, id, p, original, value string) change {
	raw, _ := h.FS.ReadFile(p)
	return valueChangeRaw(h, id, p, original, raw, value)
}

// valueChangeRaw is valueChange with the file's bytes already read.
func valueChangeRaw(h *Host, id, p, original string, raw []byte, value string) change {
	return change{
		Desc: fmt.Sprintf("echo %s > %s", shellQuote(value), p),
		Step: journal.Step{Kind: journal.KindValue, ID: id, Path: p, Original: original, OriginalRaw: raw, New: value},
		Apply: func(context.Context) error {
			return h.FS.WriteString(p, value)
		},
	}
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.,:/+=%@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
