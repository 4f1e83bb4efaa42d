package irq

import (
	"context"
	"fmt"
	"io"
	"strings"

	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/journal"
	"github.com/gpunode/gpunode/internal/output"
)

// JournalOwner is the journal owner of IRQ affinity changes.
const JournalOwner = "irq"

// ApplySchemaVersion identifies the JSON/YAML layout of ApplyResult.
const ApplySchemaVersion = "gpunode.irq.apply/v1"

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
// from its current affinity, journaling each original before the write and
// verifying each write by reading it back. When a write or verification
// fails the transaction is aborted (earlier writes are reverted) and the
// error returned. IRQs the kernel refuses to change at all (a rewrite of
// their current value fails, as for managed interrupts) are skipped.
func Apply(ctx context.Context, fsys *hostfs.FS, rep *Report, o ApplyOptions) (*ApplyResult, error) {
	if o.JournalDir == "" {
		o.JournalDir = journal.DefaultDir
	}
	res := &ApplyResult{SchemaVersion: ApplySchemaVersion, Changes: []Change{}, Skipped: []Change{}, IRQBal: rep.IRQBal}
	type todo struct {
		c    Change
		want cpuset.CPUSet
	}
	var work []todo
	for _, d := range rep.Devices {
		for _, q := range d.IRQs {
			if !q.Change || q.Planned.Size() == 0 {
				continue
			}
			p := fmt.Sprintf("/proc/irq/%d/smp_affinity_list", q.IRQ)
			raw, err := fsys.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("IRQ %d: %w", q.IRQ, err)
			}
			c := Change{IRQ: q.IRQ, Device: d.Name, From: strings.TrimSpace(string(raw)), To: q.Planned.String()}
			// Probe: rewriting the current value changes nothing, and fails
			// for IRQs whose affinity the kernel manages itself.
			if err := fsys.WriteString(p, string(raw)); err != nil {
				c.Error = fmt.Sprintf("kernel refuses affinity changes (managed IRQ?): %v", unwrapPath(err))
				res.Skipped = append(res.Skipped, c)
				continue
			}
			work = append(work, todo{c: c, want: q.Planned.CPUSet})
		}
	}
	if len(work) == 0 {
		return res, nil
	}
	j, err := journal.Begin(fsys, o.JournalDir, journal.Meta{Owner: JournalOwner, Command: o.Command, Profile: "irq-plan"}, o.JournalOpts...)
	if err != nil {
		return nil, err
	}
	res.Transaction = j.ID()
	for _, w := range work {
		p := fmt.Sprintf("/proc/irq/%d/smp_affinity_list", w.c.IRQ)
		err := j.SetValue(ctx, fmt.Sprintf("irq.%d.smp_affinity_list", w.c.IRQ), p, w.c.From, w.c.To)
		if err == nil {
			err = verify(fsys, p, w.want)
		}
		if err != nil {
			w.c.Error = err.Error()
			res.Changes = append(res.Changes, w.c)
			if _, aerr := j.Abort(ctx, err); aerr != nil {
				return res, fmt.Errorf("IRQ %d: %w; reverting the earlier changes failed too: %v (run 'gpunode irq rollback')", w.c.IRQ, err, aerr)
			}
			return res, fmt.Errorf("IRQ %d: %w (earlier changes reverted)", w.c.IRQ, err)
		}
		res.Changes = append(res.Changes, w.c)
	}
	if err := j.Commit(); err != nil {
		return res, err
	}
	return res, nil
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

// WriteTable renders an ApplyResult.
func (r *ApplyResult) WriteTable(w io.Writer, o output.Options) error {
	tw := output.NewTabWriter(w)
	if r.Transaction == "" && len(r.Changes) == 0 {
		fmt.Fprintln(tw, "nothing to change: every planned IRQ already has its affinity")
	} else {
		fmt.Fprintf(tw, "journal transaction %s (undo with 'gpunode irq rollback')\n", r.Transaction)
		fmt.Fprintln(tw, "IRQ\tDEVICE\tFROM\tTO\tRESULT")
		for _, c := range r.Changes {
			res := o.Paint("green", "ok")
			if c.Error != "" {
				res = o.Paint("red", c.Error)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", c.IRQ, c.Device, c.From, c.To, res)
		}
	}
	for _, c := range r.Skipped {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", c.IRQ, c.Device, c.From, c.To, o.Paint("yellow", "skipped: "+c.Error))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeIRQBalance(w, r.IRQBal, o)
}
