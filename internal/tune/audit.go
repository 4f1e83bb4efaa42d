package tune

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/output"
)

// Status of one check (check.Status: the one status set of every layer).
type Status = check.Status

// Check statuses.
const (
	StatusOK            = check.OK
	StatusDrift         = check.Drift
	StatusPendingReboot = check.PendingReboot // set in the boot configuration, not live yet
	StatusAbsent        = check.Absent        // the knob does not exist on this kernel or hardware
	StatusError         = check.Error         // the knob could not be read
	StatusInfo          = check.Info          // a fact, never a verdict
)

// Check is the audit result of one setting or one source check.
type Check = check.Check

// Options configure an audit (and plan/apply, which audit first).
type Options struct {
	// Sources add the checks of other layers (gpu.Source, irq.Source):
	// the audit composes them with the catalogue's settings, applies the
	// profile's rules (disable, report) to every check, and reports a
	// source that fails as one error check.
	Sources []check.Source
	// PID adds process checks for that process when > 0.
	PID int
}

// SchemaAudit is the schema version of Report.
const SchemaAudit = "gpunode.audit/v1"

// Report is the result of 'gpunode audit'.
type Report struct {
	SchemaVersion string   `json:"schemaVersion"`
	Hostname      string   `json:"hostname,omitempty"`
	Profile       string   `json:"profile"`
	Checks        []Check  `json:"checks"`
	Process       *Process `json:"process,omitempty"`
	Summary       Summary  `json:"summary"`
	Warnings      []string `json:"warnings,omitempty"`
}

// Summary counts checks by status.
type Summary = check.Summary

// Drifted reports whether audit fails: a check drifts or is an error
// (audit exits 1).
func (r *Report) Drifted() bool { return r.Summary.Failing() }

// evaluated is a setting's check plus what apply needs.
type evaluated struct {
	setting *Setting
	obs     observation
	want    string
	check   Check
	err     error // read/resolve failure (status error or absent)
}

// evaluate audits one setting against a desired profile value.
func evaluate(ctx context.Context, h *Host, s *Setting, desired string) evaluated {
	e := evaluated{setting: s, check: Check{ID: s.ID, Layer: s.Layer, Reason: s.Why, Section: s.Section(), NeedsReboot: s.NeedsReboot, Expected: desired}}
	c := &e.check
	obs, err := s.knob.read(ctx, h)
	if err != nil {
		e.err = err
		if errors.Is(err, errAbsent) {
			c.Status = StatusAbsent
			c.Detail = strings.TrimPrefix(err.Error(), errAbsent.Error()+": ")
		} else {
			c.Status = StatusError
			c.Detail = err.Error()
		}
		return e
	}
	e.obs = obs
	c.Current = obs.Current
	sk, sized := s.knob.(sizeKnob)
	switch {
	case obs.CurrentBytes != nil:
		c.CurrentBytes = obs.CurrentBytes
	case sized:
		if n, ok := sk.toBytes(h, obs.Current); ok {
			c.CurrentBytes = &n
		}
	}
	c.Detail = obs.Detail
	defer func() {
		// The boot configuration, when it differs from the live value.
		if obs.HasBoot && obs.Boot != obs.Current && c.Status != StatusAbsent && c.Status != StatusError {
			c.Detail = joinDetail(c.Detail, "boot configuration: "+orUnset(obs.Boot))
		}
	}()
	if desired == ValueReport {
		c.Status = StatusOK
		c.Expected = "(report only)"
		return e
	}
	if obs.Check {
		c.Expected = "pass"
		if obs.Good {
			c.Status = StatusOK
		} else {
			c.Status = StatusDrift
			c.Fix = s.knob.fix(h, desired)
		}
		return e
	}
	want, err := s.knob.resolve(h, desired)
	if err != nil {
		e.err = err
		c.Status = StatusError
		c.Detail = fmt.Sprintf("profile value %q: %v", desired, err)
		return e
	}
	e.want = want
	c.Expected = want
	if sized {
		if n, ok := sk.toBytes(h, want); ok {
			c.ExpectedBytes = &n
		}
	}
	if _, ok := s.knob.(minimumKnob); ok {
		c.Bound = check.Minimum
	}
	live := s.knob.equal(obs.Current, want)
	bootOK := obs.HasBoot && s.knob.equal(obs.Boot, want)
	switch {
	case !obs.HasBoot && live, live && bootOK:
		c.Status = StatusOK
	case live && obs.Boot == "":
		// Nothing configures it for boot: it relies on the kernel's
		// default, which gpunode cannot see from here.
		c.Status = StatusOK
		c.Detail = joinDetail("not set in any boot configuration (relies on the kernel default)", obs.Detail)
	case live:
		c.Status = StatusDrift
		c.Detail = joinDetail("live value is right but not persistent: the boot configuration says "+orUnset(obs.Boot), obs.Detail)
	case bootOK && s.NeedsReboot:
		c.Status = StatusPendingReboot
		c.Detail = joinDetail("configured for the next boot", obs.Detail)
	default:
		c.Status = StatusDrift
		if bootOK {
			c.Detail = joinDetail("configured for boot but not live", obs.Detail)
		}
	}
	if c.Status != StatusOK {
		c.Fix = s.knob.fix(h, want)
	}
	return e
}

func orUnset(s string) string {
	if s == "" {
		return "nothing (kernel default)"
	}
	return s
}

func joinDetail(a, b string) string { return check.JoinDetail(a, b) }

// auditAll evaluates every setting of p in catalogue order (plan's entry;
// it has no context yet).
func auditAll(h *Host, cat *Catalogue, p *Profile, _ Options) []evaluated {
	out, _ := auditSettings(context.Background(), h, cat, p)
	return out
}

// auditSettings evaluates every setting of p in catalogue order; it stops
// at cancellation of ctx.
func auditSettings(ctx context.Context, h *Host, cat *Catalogue, p *Profile) ([]evaluated, error) {
	var out []evaluated
	for _, id := range p.IDs(cat) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s := cat.Get(id)
		if j, ok := s.knob.(interface{ judged(*Host, string) bool }); ok && !j.judged(h, p.Settings[id]) {
			continue
		}
		out = append(out, evaluate(ctx, h, s, p.Settings[id]))
	}
	renderFixes(h, p, out) // fixes.go: file writes need every setting
	return out, nil
}

// Audit checks the host against profile p: the catalogue's settings the
// profile manages, then every source's checks, then the process checks;
// the profile's rules (p.Rules: disable, report) apply to all of them.
func Audit(ctx context.Context, h *Host, cat *Catalogue, p *Profile, opt Options) (*Report, error) {
	r := &Report{SchemaVersion: SchemaAudit, Profile: p.Name, Checks: []Check{}}
	if h.Topo != nil {
		r.Hostname = h.Topo.Hostname
	} else if h.TopoErr != nil {
		r.Warnings = append(r.Warnings, "topology: "+h.TopoErr.Error())
	}
	evs, err := auditSettings(ctx, h, cat, p)
	if err != nil {
		return nil, err
	}
	for _, e := range evs {
		r.Checks = append(r.Checks, e.check)
	}
	// The competing tuners (tuners.go) are tune's own source: they undo
	// the profile's settings.
	srcs := append([]check.Source{TunerSource{Host: h, Cat: cat, Profile: p}}, opt.Sources...)
	cs, err := check.Collect(ctx, srcs...)
	if err != nil {
		return nil, err
	}
	r.Checks = append(r.Checks, cs...)
	if opt.PID > 0 {
		proc, err := CheckProcess(ctx, h, opt.PID)
		if err != nil {
			return nil, err
		}
		r.Process = proc
		r.Checks = append(r.Checks, proc.Checks...)
	}
	r.Checks = p.Rules.Apply(r.Checks)
	sort.SliceStable(r.Checks, func(i, j int) bool {
		return layerRank(r.Checks[i].Layer) < layerRank(r.Checks[j].Layer)
	})
	r.Summary = check.Summarize(r.Checks)
	return r, nil
}

// layerRank orders layers for display; unknown layers sort last.
func layerRank(l string) int {
	if n, ok := layerOrder[l]; ok {
		return n
	}
	return len(layerOrder)
}

// ListItems implements output.Lister: -o custom-columns makes one row
// per check.
func (r *Report) ListItems() any { return r.Checks }

// WriteTable implements output.Tabler: the checks sorted by severity, then
// by id and subject, in a table that fits the terminal (check.Table); under
// it, each finding with its detail and why, then each fix once with the
// checks it fixes, and the summary line.
func (r *Report) WriteTable(w io.Writer, o output.Options) error {
	if err := (check.Table{Checks: r.Checks, KeyHeader: "SETTING", Layer: true}).Write(w, o); err != nil {
		return err
	}
	if o.NoHeaders {
		return nil
	}
	ew := &output.ErrWriter{W: w}
	for _, wmsg := range r.Warnings {
		ew.Printf("warning: %s\n", wmsg)
	}
	ew.Printf("\n%s (profile %s)\n", r.Summary, r.Profile)
	return ew.Err
}

func paintStatus(o output.Options, s Status) string {
	switch s {
	case StatusOK:
		return o.Paint("green", string(s))
	case StatusDrift, StatusError:
		return o.Paint("red", string(s))
	case StatusPendingReboot:
		return o.Paint("yellow", string(s))
	}
	return o.Paint("dim", string(s))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
