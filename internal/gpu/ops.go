package gpu

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/journal"
	"github.com/gpunode/gpunode/internal/output"
)

// Journal step kinds of the GPU settings gpunode changes. Register them
// (RegisterJournalKinds) wherever journals are rolled back.
const (
	// StepPersistence: Target is the GPU UUID; Original/New are "on"/"off".
	StepPersistence = "gpu.persistence"
	// StepClocks: Target is the GPU UUID; Original/New are "unlocked" or
	// "<min>-<max>" in MHz ("unknown" when the original lock could not be
	// read: it reverts to unlocked).
	StepClocks = "gpu.clocks"
	// JournalOwner owns GPU transactions.
	JournalOwner = "gpu"
)

// Clock lock states used in journal steps.
const (
	ClocksUnlocked = "unlocked"
	ClocksUnknown  = "unknown"
)

// RegisterJournalKinds registers the GPU step kinds in k; reverting uses b.
func RegisterJournalKinds(k *journal.Kinds, b Backend) error {
	if err := k.Register(StepPersistence, func(ctx context.Context, _ *hostfs.FS, s journal.Step) error {
		switch s.Original {
		case "on", "off":
			return b.SetPersistence(ctx, s.Target, s.Original == "on")
		}
		return fmt.Errorf("%s %s: original %q is not on/off", StepPersistence, s.Target, s.Original)
	}); err != nil {
		return err
	}
	return k.Register(StepClocks, func(ctx context.Context, _ *hostfs.FS, s journal.Step) error {
		r, locked, err := ParseClockState(s.Original)
		if err != nil {
			return fmt.Errorf("%s %s: %w", StepClocks, s.Target, err)
		}
		if !locked {
			return b.ResetClocks(ctx, s.Target)
		}
		return b.LockClocks(ctx, s.Target, r)
	})
}

// FormatClockState renders a lock for a journal step.
func FormatClockState(r *ClockRange) string {
	if r == nil {
		return ClocksUnlocked
	}
	return fmt.Sprintf("%d-%d", r.MinMHz, r.MaxMHz)
}

// ParseClockState parses FormatClockState's output ("unknown" is unlocked).
func ParseClockState(s string) (ClockRange, bool, error) {
	switch s {
	case ClocksUnlocked, ClocksUnknown, "":
		return ClockRange{}, false, nil
	}
	lo, hi, ok := strings.Cut(s, "-")
	a, err1 := strconv.ParseUint(lo, 10, 32)
	b, err2 := strconv.ParseUint(hi, 10, 32)
	if !ok || err1 != nil || err2 != nil || a > b || b == 0 {
		return ClockRange{}, false, fmt.Errorf("clock state %q: want unlocked or <min>-<max> MHz", s)
	}
	return ClockRange{MinMHz: uint32(a), MaxMHz: uint32(b)}, true, nil
}

// PlanSchemaVersion is the schema of Plan.
const PlanSchemaVersion = "gpunode.gpu.plan/v1"

// Plan is a list of GPU setting changes, before or after applying them.
type Plan struct {
	SchemaVersion string   `json:"schemaVersion"`
	Backend       string   `json:"backend"`
	Action        string   `json:"action"`
	DryRun        bool     `json:"dryRun"`
	Applied       bool     `json:"applied"`
	Journal       string   `json:"journal,omitempty"`
	Changes       []Change `json:"changes"`
}

// Change is one setting of one GPU.
type Change struct {
	GPU     int    `json:"gpu"`
	UUID    string `json:"uuid"`
	Setting string `json:"setting"` // persistence or clocks
	From    string `json:"from"`
	To      string `json:"to"`
	// Needed is false when the GPU is already in the wanted state.
	Needed bool `json:"needed"`
	// Note explains anything unusual (e.g. an unreadable original).
	Note string `json:"note,omitempty"`
}

// WriteTable implements output.Tabler.
func (p Plan) WriteTable(w io.Writer, o output.Options) error {
	state := "plan (dry run)"
	switch {
	case p.Applied:
		state = "applied"
		if p.Journal != "" {
			state += ", journal " + p.Journal
		}
	case !p.DryRun:
		state = "nothing to do"
	}
	if !o.NoHeaders {
		if _, err := fmt.Fprintf(w, "%s: %s [%s]\n", p.Action, state, p.Backend); err != nil {
			return err
		}
	}
	g := output.NewGrid("GPU", "UUID", "SETTING", "FROM", "TO", "CHANGE", "NOTE")
	g.Columns[6].Wrap = true
	for _, c := range p.Changes {
		ch := "no"
		if c.Needed {
			ch = "yes"
		}
		g.AddRow(fmt.Sprint(c.GPU), c.UUID, c.Setting, c.From, c.To, ch, c.Note)
	}
	return output.Print(w, g, o)
}

// ListItems implements output.Lister: one row per change.
func (p Plan) ListItems() any { return p.Changes }

// PlanPersistence plans persistence mode on or off for gpus.
func PlanPersistence(backend string, gpus []GPU, on bool) Plan {
	p := Plan{SchemaVersion: PlanSchemaVersion, Backend: backend, Action: "persistence " + boolWord(on), Changes: []Change{}}
	for _, g := range gpus {
		c := Change{GPU: g.Index, UUID: g.UUID, Setting: "persistence", From: onOff(g.Persistence), To: boolWord(on)}
		c.Needed = g.Persistence == nil || *g.Persistence != on
		if g.Persistence == nil {
			c.From = "off"
			c.Note = "current mode unreadable; rollback restores off"
		}
		p.Changes = append(p.Changes, c)
	}
	return p
}

// ErrClockRange is returned for a lock outside the GPU's clock range.
var ErrClockRange = errors.New("clock out of range")

// PlanClockLock plans a graphics clock lock at mhz (min = max = mhz); mhz 0
// means each GPU's maximum graphics clock.
func PlanClockLock(backend string, gpus []GPU, mhz uint32) (Plan, error) {
	action := fmt.Sprintf("clocks lock %d MHz", mhz)
	if mhz == 0 {
		action = "clocks lock max"
	}
	p := Plan{SchemaVersion: PlanSchemaVersion, Backend: backend, Action: action, Changes: []Change{}}
	for _, g := range gpus {
		want := mhz
		if want == 0 {
			want = g.Clocks.MaxGraphicsMHz
			if want == 0 {
				return Plan{}, fmt.Errorf("GPU %d: maximum graphics clock unknown; use --mhz", g.Index)
			}
		}
		if g.Clocks.MaxGraphicsMHz != 0 && want > g.Clocks.MaxGraphicsMHz {
			return Plan{}, fmt.Errorf("GPU %d: %w: %d MHz > maximum graphics clock %d MHz", g.Index, ErrClockRange, want, g.Clocks.MaxGraphicsMHz)
		}
		r := ClockRange{MinMHz: want, MaxMHz: want}
		p.Changes = append(p.Changes, clockChange(g, &r))
	}
	return p, nil
}

// PlanClockReset plans removing graphics clock locks.
func PlanClockReset(backend string, gpus []GPU) Plan {
	p := Plan{SchemaVersion: PlanSchemaVersion, Backend: backend, Action: "clocks reset", Changes: []Change{}}
	for _, g := range gpus {
		p.Changes = append(p.Changes, clockChange(g, nil))
	}
	return p
}

func clockChange(g GPU, to *ClockRange) Change {
	c := Change{GPU: g.Index, UUID: g.UUID, Setting: "clocks", From: FormatClockState(g.Clocks.Locked), To: FormatClockState(to)}
	switch {
	case g.Clocks.Locked != nil:
		c.Needed = to == nil || *to != *g.Clocks.Locked
	case g.ClockEvents.Mask&ReasonApplicationsClocks != 0:
		// A lock we cannot read is probably in place: always apply, and
		// record that the original is unknown.
		c.From = ClocksUnknown
		c.Needed = true
		c.Note = "clocks-setting event active but the lock is unreadable; rollback resets to unlocked"
	default:
		// NVML and nvidia-smi cannot read locks; assume unlocked.
		c.Needed = to != nil
	}
	return c
}

// Apply performs the needed changes of p, each journaled (owner "gpu")
// before it is made; on failure the changes made so far are reverted. With
// dryRun nothing is touched. The returned plan says what happened.
func Apply(ctx context.Context, b Backend, fsys *hostfs.FS, journalDir string, p Plan, command string, dryRun bool) (Plan, error) {
	p.DryRun = dryRun
	needed := 0
	for _, c := range p.Changes {
		if c.Needed {
			needed++
		}
	}
	if dryRun || needed == 0 {
		return p, nil
	}
	kinds := journal.NewKinds()
	if err := RegisterJournalKinds(kinds, b); err != nil {
		return p, err
	}
	res, err := journal.Run(ctx, fsys, journalDir, journal.Meta{Owner: JournalOwner, Command: command}, func(ctx context.Context, _ *journal.Tx) ([]journal.Action, error) {
		// Read every GPU again under the journal lock: the originals
		// journaled are the ones the change replaces.
		st, err := b.Status(ctx)
		if err != nil {
			return nil, err
		}
		now := map[string]GPU{}
		for _, g := range st.GPUs {
			now[g.UUID] = g
		}
		var acts []journal.Action
		for _, c := range p.Changes {
			if !c.Needed {
				continue
			}
			g, ok := now[c.UUID]
			if !ok {
				return nil, fmt.Errorf("GPU %d (%s) is gone since it was read", c.GPU, c.UUID)
			}
			step := journal.Step{Target: c.UUID, ID: fmt.Sprintf("gpu%d.%s", c.GPU, c.Setting), Original: c.From, New: c.To}
			var fresh string
			var apply func(context.Context) error
			switch c.Setting {
			case "persistence":
				step.Kind = StepPersistence
				on := c.To == "on"
				fresh = PlanPersistence(b.Name(), []GPU{g}, on).Changes[0].From
				apply = func(ctx context.Context) error { return b.SetPersistence(ctx, c.UUID, on) }
			case "clocks":
				step.Kind = StepClocks
				r, locked, perr := ParseClockState(c.To)
				if perr != nil {
					return nil, perr
				}
				var to *ClockRange
				if locked {
					to = &r
				}
				fresh = clockChange(g, to).From
				apply = func(ctx context.Context) error {
					if !locked {
						return b.ResetClocks(ctx, c.UUID)
					}
					return b.LockClocks(ctx, c.UUID, r)
				}
			default:
				return nil, fmt.Errorf("unknown setting %q", c.Setting)
			}
			if fresh != c.From {
				return nil, fmt.Errorf("GPU %d %s changed since it was read (%s, now %s); nothing was changed: run the command again", c.GPU, c.Setting, c.From, fresh)
			}
			acts = append(acts, journal.Action{Step: step, Do: apply})
		}
		return acts, nil
	}, journal.WithKinds(kinds))
	if err != nil {
		var je *journal.Error
		if errors.As(err, &je) {
			if je.Revert != nil {
				return p, fmt.Errorf("%w (and reverting failed: %v; run 'gpunode gpu rollback')", je.Err, je.Revert)
			}
			return p, fmt.Errorf("%w (changes reverted, journal %s)", je.Err, je.ID)
		}
		return p, fmt.Errorf("journal: %w", err)
	}
	p.Applied = true
	p.Journal = res.ID
	return p, nil
}
