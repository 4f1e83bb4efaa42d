package tune

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/gpunode/gpunode/internal/output"
)

// Status of one check.
type Status string

// Check statuses.
const (
	StatusOK            Status = "ok"
	StatusDrift         Status = "drift"
	StatusPendingReboot Status = "pending-reboot" // set in the boot configuration, not live yet
	StatusAbsent        Status = "absent"         // the knob does not exist on this kernel or hardware
	StatusError         Status = "error"          // the knob could not be read
)

// Check is the audit result of one setting or one external check.
type Check struct {
	ID     string `json:"id"`
	Layer  string `json:"layer"`
	Status Status `json:"status"`
	// Current is the live value; Expected the profile's (resolved) value.
	Current  string `json:"current,omitempty"`
	Expected string `json:"expected,omitempty"`
	// Boot is the value configured for the next boot, when the setting has
	// boot configuration.
	Boot string `json:"boot,omitempty"`
	// Fix lists the exact commands that fix drift.
	Fix []string `json:"fix,omitempty"`
	// Reason says why the setting matters (with a seed section pointer).
	Reason string `json:"reason,omitempty"`
	// Detail explains the status: the error, which devices fail, where a
	// value comes from.
	Detail      string `json:"detail,omitempty"`
	NeedsReboot bool   `json:"needsReboot,omitempty"`
}

// Source supplies checks from outside the catalogue: the GPU layer
// (persistence, ECC, clocks, MIG) or the IRQ layer. Implementations must
// not change the host.
type Source interface {
	// Name identifies the source in errors ("gpu", "irq").
	Name() string
	Checks(ctx context.Context, h *Host, p *Profile) ([]Check, error)
}

// GPUChecker is the GPU layer's Source. Without one, audit reports a
// single "gpu" check as absent: "no GPU backend".
type GPUChecker = Source

// Options configure an audit (and plan/apply, which audit first).
type Options struct {
	// GPU supplies GPU-layer checks; nil reports "no GPU backend".
	GPU GPUChecker
	// IRQ replaces the built-in irq.numa-local check when set (the IRQ
	// layer's richer finding).
	IRQ Source
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
type Summary struct {
	OK            int `json:"ok"`
	Drift         int `json:"drift"`
	PendingReboot int `json:"pendingReboot"`
	Absent        int `json:"absent"`
	Error         int `json:"error"`
}

func (s *Summary) add(st Status) {
	switch st {
	case StatusOK:
		s.OK++
	case StatusDrift:
		s.Drift++
	case StatusPendingReboot:
		s.PendingReboot++
	case StatusAbsent:
		s.Absent++
	case StatusError:
		s.Error++
	}
}

// Drifted reports whether any check drifts (audit exits 1).
func (r *Report) Drifted() bool { return r.Summary.Drift > 0 }

// evaluated is a setting's check plus what apply needs.
type evaluated struct {
	setting *Setting
	obs     observation
	want    string
	check   Check
	err     error // read/resolve failure (status error or absent)
}

// evaluate audits one setting against a desired profile value.
func evaluate(h *Host, s *Setting, desired string) evaluated {
	e := evaluated{setting: s, check: Check{ID: s.ID, Layer: s.Layer, Reason: s.Why, NeedsReboot: s.NeedsReboot, Expected: desired}}
	c := &e.check
	obs, err := s.knob.read(h)
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
	c.Detail = obs.Detail
	if obs.HasBoot {
		c.Boot = obs.Boot
		if c.Boot == "" {
			c.Boot = "(not configured)"
		}
	}
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

func joinDetail(a, b string) string {
	if b == "" {
		return a
	}
	return a + "; " + b
}

// auditAll evaluates every setting of p in catalogue order.
func auditAll(h *Host, cat *Catalogue, p *Profile, opt Options) []evaluated {
	var out []evaluated
	for _, id := range p.IDs(cat) {
		s := cat.Get(id)
		if id == "irq.numa-local" && opt.IRQ != nil {
			continue
		}
		out = append(out, evaluate(h, s, p.Settings[id]))
	}
	return out
}

// Audit checks the host against profile p.
func Audit(ctx context.Context, h *Host, cat *Catalogue, p *Profile, opt Options) (*Report, error) {
	r := &Report{SchemaVersion: SchemaAudit, Profile: p.Name, Checks: []Check{}}
	if h.Topo != nil {
		r.Hostname = h.Topo.Hostname
	} else if h.TopoErr != nil {
		r.Warnings = append(r.Warnings, "topology: "+h.TopoErr.Error())
	}
	for _, e := range auditAll(h, cat, p, opt) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r.Checks = append(r.Checks, e.check)
	}
	type src struct {
		s Source
		// layer of the error check when the source fails.
		layer string
		// stands in for this catalogue setting: its profile value "report"
		// keeps the checks from drifting, its Why is their reason.
		standIn *Setting
	}
	var sources []src
	// The IRQ source stands in for irq.numa-local and runs when the
	// profile manages that setting.
	if _, ok := p.Settings["irq.numa-local"]; ok && opt.IRQ != nil {
		sources = append(sources, src{opt.IRQ, opt.IRQ.Name(), cat.Get("irq.numa-local")})
	}
	if opt.GPU != nil {
		sources = append(sources, src{opt.GPU, LayerGPU, nil})
	}
	for _, sc := range sources {
		cs, err := sc.s.Checks(ctx, h, p)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			r.Checks = append(r.Checks, Check{ID: sc.s.Name(), Layer: sc.layer, Status: StatusError, Detail: err.Error()})
		}
		for _, c := range cs {
			if sc.standIn != nil {
				if c.Reason == "" {
					c.Reason = sc.standIn.Why
				}
				if p.Settings[sc.standIn.ID] == ValueReport && c.Status == StatusDrift {
					c.Status, c.Detail = StatusOK, joinDetail("report only", c.Detail)
				}
			}
			r.Checks = append(r.Checks, c)
		}
	}
	if opt.GPU == nil {
		r.Checks = append(r.Checks, Check{ID: "gpu", Layer: LayerGPU, Status: StatusAbsent, Detail: "no GPU backend",
			Reason: "persistence mode, ECC, application clocks and MIG are checked by the GPU layer (seed 2.1, 2.3, 2.4, system_tuning.sh step 8)."})
	}
	if opt.PID > 0 {
		proc, err := CheckProcess(ctx, h, opt.PID)
		if err != nil {
			return nil, err
		}
		r.Process = proc
		r.Checks = append(r.Checks, proc.Checks...)
	}
	sort.SliceStable(r.Checks, func(i, j int) bool {
		return layerOrder[r.Checks[i].Layer] < layerOrder[r.Checks[j].Layer]
	})
	for _, c := range r.Checks {
		r.Summary.add(c.Status)
	}
	return r, nil
}

// WriteTable implements output.Tabler.
func (r *Report) WriteTable(w io.Writer, o output.Options) error {
	ew := &output.ErrWriter{W: w}
	tw := output.NewTabWriter(ew)
	fmt.Fprintln(tw, "STATUS\tLAYER\tSETTING\tCURRENT\tEXPECTED")
	for _, c := range r.Checks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", paintStatus(o, c.Status), c.Layer, c.ID, clip(orDash(c.Current), 40), clip(orDash(c.Expected), 40))
	}
	tw.Flush()
	first := true
	for _, c := range r.Checks {
		if c.Status == StatusOK {
			continue
		}
		if first {
			ew.Printf("\n")
			first = false
		}
		ew.Printf("%s: %s\n", o.Paint("bold", c.ID), c.Status)
		if c.Detail != "" {
			ew.Printf("  detail: %s\n", c.Detail)
		}
		if c.Boot != "" && c.Boot != c.Current && c.Status != StatusAbsent && c.Status != StatusError {
			ew.Printf("  boot: %s\n", c.Boot)
		}
		for _, f := range c.Fix {
			ew.Printf("  fix: %s\n", f)
		}
		if c.Reason != "" && c.Status != StatusAbsent {
			ew.Printf("  why: %s\n", c.Reason)
		}
	}
	for _, wmsg := range r.Warnings {
		ew.Printf("warning: %s\n", wmsg)
	}
	s := r.Summary
	ew.Printf("\n%d ok, %d drift, %d pending-reboot, %d absent, %d error (profile %s)\n", s.OK, s.Drift, s.PendingReboot, s.Absent, s.Error, r.Profile)
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

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
