package irq

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"

	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/journal"
	"github.com/gpunode/gpunode/internal/output"
)

// JournalOwner is the journal owner of IRQ affinity changes.
const JournalOwner = "irq"

// ApplySchemaVersion identifies the JSON/YAML layout of ApplyResult.
const ApplySchemaVersion = "gpunode.irq.apply/v1"

// SchemaRollback is the schema version of 'gpunode irq rollback' (a
// journal.RollbackReport).
const SchemaRollback = "gpunode.irq.rollback/v1"

// ApplyResult is what Apply did.
type ApplyResult struct {
	SchemaVersion string `json:"schemaVersion"`
	// Transaction is the journal transaction id ("" when nothing changed).
	Transaction string   `json:"transaction,omitempty"`
	Changes     []Change `json:"changes"`
	// Skipped are IRQs the plan would change but the kernel refused.
	Skipped []Change `json:"skipped"`
	// IRQBal repeats the irqbalance advice of the plan.
	IRQBal IRQBalance `json:"irqbalance"`
}

// Change is one IRQ affinity write.
type Change struct {
	IRQ    int    `json:"irq"`
	Device string `json:"device"`
	From   string `json:"from"`
	To     string `json:"to"`
	Error  string `json:"error,omitempty"`
}

// ApplyOptions configure Apply.
type ApplyOptions struct {
	// JournalDir is the journal directory (default journal.DefaultDir).
	JournalDir string
	// Command is recorded in the journal for humans.
	Command string
	// Journal options (clock, kinds) for tests.
	JournalOpts []journal.Option
}

// Apply writes the planned affinity of every IRQ of rep whose plan differs
// from its current affinity, as one journal transaction (journal.Run): each
// original is read under the journal lock and journaled before its write,
// and each write is verified by reading it back. When a write or
// verification fails the transaction is aborted (earlier writes are
// reverted) and the error returned. An IRQ whose write the kernel refuses
// (EIO for managed interrupts, EPERM/EACCES) is skipped: its journaled step
// changed nothing, so reverting it writes nothing.
func Apply(ctx context.Context, fsys *hostfs.FS, rep *Report, o ApplyOptions) (*ApplyResult, error) {
	if o.JournalDir == "" {
		o.JournalDir = journal.DefaultDir
	}
	res := &ApplyResult{SchemaVersion: ApplySchemaVersion, Changes: []Change{}, Skipped: []Change{}, IRQBal: rep.IRQBal}
	type todo struct {
		irq    int
		device string
		want   cpuset.CPUSet
	}
	var work []todo
	for _, d := range rep.Devices {
		for _, q := range d.IRQs {
			if q.Change && q.Planned.Size() > 0 {
				work = append(work, todo{irq: q.IRQ, device: d.Name, want: q.Planned.CPUSet})
			}
		}
	}
	if len(work) == 0 {
		return res, nil
	}
	var changes []*Change
	out, err := journal.Run(ctx, fsys, o.JournalDir, journal.Meta{Owner: JournalOwner, Command: o.Command, Profile: "irq-plan"}, func(_ context.Context, tx *journal.Tx) ([]journal.Action, error) {
		var acts []journal.Action
		for _, w := range work {
			p := fmt.Sprintf("/proc/irq/%d/smp_affinity_list", w.irq)
			raw, err := fsys.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("IRQ %d: %w", w.irq, err)
			}
			c := &Change{IRQ: w.irq, Device: w.device, From: strings.TrimSpace(string(raw)), To: w.want.String()}
			if c.From == c.To {
				continue
			}
			a, err := tx.SetValue(fmt.Sprintf("irq.%d.smp_affinity_list", w.irq), p, c.From, c.To)
			if err != nil {
				return nil, fmt.Errorf("IRQ %d: %w", w.irq, err)
			}
			want := w.want
			a.Do = func(context.Context) error {
				if err := fsys.WriteString(p, c.To); err != nil {
					if refused(err) {
						c.Error = fmt.Sprintf("kernel refuses affinity changes (managed IRQ?): %v", unwrapPath(err))
						res.Skipped = append(res.Skipped, *c)
						return nil
					}
					c.Error = err.Error()
					changes = append(changes, c)
					return fmt.Errorf("IRQ %d: %w", c.IRQ, err)
				}
				changes = append(changes, c)
				if err := verify(fsys, p, want); err != nil {
					c.Error = err.Error()
					return fmt.Errorf("IRQ %d: %w", c.IRQ, err)
				}
				return nil
			}
			acts = append(acts, a)
		}
		return acts, nil
	}, o.JournalOpts...)
	for _, c := range changes {
		res.Changes = append(res.Changes, *c)
	}
	if out != nil {
		res.Transaction = out.ID
	}
	if err != nil {
		var je *journal.Error
		if errors.As(err, &je) {
			if je.Revert != nil {
				return res, fmt.Errorf("%w; reverting the earlier changes failed too: %v (run 'gpunode irq rollback')", je.Err, je.Revert)
			}
			return res, fmt.Errorf("%w (earlier changes reverted)", je.Err)
		}
		return res, err
	}
	return res, nil
}

// refused reports whether a write error means the kernel does not let this
// IRQ's affinity change at all (rather than a failure of this write).
func refused(err error) bool {
	return errors.Is(err, syscall.EIO) || errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES)
}

func verify(fsys *hostfs.FS, p string, want cpuset.CPUSet) error {
	got, err := readList(fsys, p)
	if err != nil {
		return err
	}
	if !got.Equals(want) {
		return fmt.Errorf("%s reads %q after writing %q", p, got.String(), want.String())
	}
	return nil
}

// Rollback restores every IRQ affinity recorded by Apply (all transactions of
// owner "irq", newest first).
func Rollback(ctx context.Context, fsys *hostfs.FS, dir string, dryRun bool, opts ...journal.Option) (journal.Report, error) {
	if dir == "" {
		dir = journal.DefaultDir
	}
	opts = append([]journal.Option{journal.WithOwner(JournalOwner), journal.WithDryRun(dryRun)}, opts...)
	return journal.Rollback(ctx, fsys, dir, opts...)
}

// WriteTable renders an ApplyResult: one row per changed or skipped IRQ,
// failures first.
func (r *ApplyResult) WriteTable(w io.Writer, o output.Options) error {
	if r.Transaction == "" && len(r.Changes) == 0 && len(r.Skipped) == 0 {
		if _, err := fmt.Fprintln(w, "nothing to change: every planned IRQ already has its affinity"); err != nil {
			return err
		}
		return writeIRQBalance(w, r.IRQBal, o)
	}
	if r.Transaction != "" && !o.NoHeaders {
		fmt.Fprintf(w, "journal transaction %s (undo with 'gpunode irq rollback')\n", r.Transaction)
	}
	g := output.Grid{Columns: []output.Column{
		{Name: "IRQ"}, {Name: "DEVICE"}, {Name: "FROM", Wrap: true}, {Name: "TO", Wrap: true},
		{Name: "RESULT", Wrap: true, Color: func(c string) string {
			switch {
			case c == "ok":
				return "green"
			case strings.HasPrefix(c, "skipped:"):
				return "yellow"
			}
			return "red"
		}},
	}}
	var failed, ok [][]string
	for _, c := range r.Changes {
		row := []string{fmt.Sprint(c.IRQ), c.Device, c.From, c.To, "ok"}
		if c.Error != "" {
			row[4] = c.Error
			failed = append(failed, row)
			continue
		}
		ok = append(ok, row)
	}
	g.Rows = append(failed, ok...)
	for _, c := range r.Skipped {
		g.AddRow(fmt.Sprint(c.IRQ), c.Device, c.From, c.To, "skipped: "+c.Error)
	}
	if err := output.Print(w, g, o); err != nil {
		return err
	}
	if o.NoHeaders {
		return nil
	}
	return writeIRQBalance(w, r.IRQBal, o)
}
