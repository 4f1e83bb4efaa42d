package journal

import (
	"io"
	"time"

	"github.com/gpunode/gpunode/internal/output"
)

// RollbackReport is the model of every rollback command (tune, irq, gpu):
// the owner's schema version and the journal's report.
type RollbackReport struct {
	SchemaVersion string `json:"schemaVersion"`
	Report
}

// ListItems implements output.Lister: -o custom-columns makes one row per
// transaction.
func (r RollbackReport) ListItems() any { return r.Transactions }

// WriteTable implements output.Tabler: the one rollback table. One row per
// step (transactions newest first, steps in the order they were reverted);
// under it, the steps that were skipped or failed with what to do, then
// what was kept, then the count.
func (r RollbackReport) WriteTable(w io.Writer, o output.Options) error {
	ew := &output.ErrWriter{W: w}
	if len(r.Transactions) == 0 {
		ew.Printf("nothing to roll back\n")
		return ew.Err
	}
	restored := "RESTORED"
	if r.DryRun {
		restored = "WOULD RESTORE"
	}
	g := output.Grid{Columns: []output.Column{
		{Name: "TRANSACTION"},
		{Name: "OWNER"},
		{Name: "STEP"},
		{Name: "TARGET", Wrap: true},
		{Name: restored, Wrap: true},
		{Name: "REF", Wide: true},
		{Name: "PROFILE", Wide: true},
		{Name: "STARTED", Wide: true},
		{Name: "WAS", Wide: true},
	}}
	var problems, kept [][]string
	steps := 0
	for _, tx := range r.Transactions {
		for _, s := range tx.Steps {
			steps++
			target := s.Path
			if target == "" {
				target = s.Target
			}
			what := s.Restored
			switch {
			case s.Skipped:
				what = "SKIPPED (not written back)"
				problems = append(problems, []string{s.Ref + " " + target + ": skipped; its original stays in the journal, put it back by hand:", s.Restored})
			case s.Error != "":
				what = "ERROR (see below)"
				problems = append(problems, []string{s.Ref + " " + target + ": " + s.Error})
			}
			g.AddRow(tx.ID, tx.Owner, s.Kind, output.Dash(target), output.Dash(what), s.Ref, output.Dash(tx.Profile), tx.Started.Format(time.RFC3339), string(tx.Was))
			if s.Kept != "" {
				kept = append(kept, []string{s.Ref + " " + target + ": " + s.Kept})
			}
		}
	}
	if err := output.Print(w, g, o); err != nil {
		return err
	}
	if o.NoHeaders {
		return nil
	}
	if err := output.Section(w, "Not restored (fix the cause and run the rollback again, or --skip REF):", problems, o); err != nil {
		return err
	}
	if err := output.Section(w, "Kept:", kept, o); err != nil {
		return err
	}
	verb := "rolled back"
	if r.DryRun {
		verb = "would roll back"
	}
	ew.Printf("\n%s %d transaction(s), %d step(s)\n", verb, len(r.Transactions), steps)
	return ew.Err
}
