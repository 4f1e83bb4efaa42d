package gpu

import (
	"io"

	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/journal"
	"github.com/gpunode/gpunode/internal/output"
)

// Schema versions of the GPU layer's reports.
const (
	// SchemaAudit is the schema version of AuditReport.
	SchemaAudit = "gpunode.gpu.audit/v2"
	// SchemaRollback is the schema version of 'gpunode gpu rollback'
	// (a journal.RollbackReport).
	SchemaRollback = "gpunode.gpu.rollback/v1"
)

// AuditReport is the model of 'gpunode gpu audit': the GPU layer's checks,
// as 'gpunode audit' prints them.
type AuditReport struct {
	SchemaVersion string        `json:"schemaVersion"`
	Backend       string        `json:"backend"`
	Checks        []check.Check `json:"checks"`
	Summary       check.Summary `json:"summary"`
}

// NewAuditReport builds the report of checks cs read through backend.
func NewAuditReport(backend string, cs []check.Check) AuditReport {
	return AuditReport{SchemaVersion: SchemaAudit, Backend: backend, Checks: cs, Summary: check.Summarize(cs)}
}

// NewRollbackReport is the report of 'gpunode gpu rollback'.
func NewRollbackReport(dryRun bool) journal.RollbackReport {
	return journal.RollbackReport{SchemaVersion: SchemaRollback, Report: journal.Report{DryRun: dryRun, Transactions: []journal.TxReport{}}}
}

// ListItems implements output.Lister: one row per check.
func (r AuditReport) ListItems() any { return r.Checks }

// WriteTable implements output.Tabler: the shared check table, then the
// summary line.
func (r AuditReport) WriteTable(w io.Writer, o output.Options) error {
	if err := (check.Table{Checks: r.Checks}).Write(w, o); err != nil {
		return err
	}
	if o.NoHeaders {
		return nil
	}
	ew := &output.ErrWriter{W: w}
	ew.Printf("\n%s\n", r.Summary)
	return ew.Err
}
