package report

import (
	"fmt"
	"slices"

	"github.com/gpunode/gpunode/internal/check"
)

// auditRow is one row of the page's audit table.
type auditRow struct {
	check.Check
	Fixes []fixCell
}

// fixCell is one fix of a row: its text where the fix first appears in
// the table (First, with the anchor ID), a link to that row's fix after.
type fixCell struct {
	Text  string
	ID    string
	First bool
	// FirstKey is the check whose row shows the fix.
	FirstKey string
}

// auditRows sorts the checks as every check table does (error, drift,
// pending-reboot, absent, info, ok; then id and subject) and prints a fix
// shared by several checks once, at its first row; later rows link to it.
// cs is not changed.
func auditRows(cs []check.Check) []auditRow {
	sorted := slices.Clone(cs)
	check.SortBySeverity(sorted)
	type first struct{ id, key string }
	seen := map[string]first{}
	rows := make([]auditRow, 0, len(sorted))
	for _, c := range sorted {
		r := auditRow{Check: c}
		for _, f := range c.Fix {
			if at, ok := seen[f]; ok {
				r.Fixes = append(r.Fixes, fixCell{Text: f, ID: at.id, FirstKey: at.key})
				continue
			}
			id := fmt.Sprintf("fix-%d", len(seen)+1)
			seen[f] = first{id, c.Key()}
			r.Fixes = append(r.Fixes, fixCell{Text: f, ID: id, First: true, FirstKey: c.Key()})
		}
		rows = append(rows, r)
	}
	return rows
}
