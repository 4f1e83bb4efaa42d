package check

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gpunode/gpunode/internal/output"
)

// String is the summary line every check report prints under its table:
// "3 ok, 1 drift, 0 pending-reboot, 0 absent, 0 error, 2 info".
func (s Summary) String() string {
	return fmt.Sprintf("%d ok, %d drift, %d pending-reboot, %d absent, %d error, %d info",
		s.OK, s.Drift, s.PendingReboot, s.Absent, s.Error, s.Info)
}

// SortBySeverity sorts cs (stably) as tables list checks: by severity
// (error, drift, pending-reboot, absent, info, ok), then by id, then by
// subject.
func SortBySeverity(cs []Check) {
	slices.SortStableFunc(cs, func(a, b Check) int {
		if d := a.Status.Severity() - b.Status.Severity(); d != 0 {
			return d
		}
		if d := strings.Compare(a.ID, b.ID); d != 0 {
			return d
		}
		return strings.Compare(a.Subject, b.Subject)
	})
}

// Table is the one table form of a list of checks, shared by audit, gpu
// audit, container check and every other check report.
type Table struct {
	Checks []Check
	// KeyHeader names the column of check keys ("CHECK" when empty).
	KeyHeader string
	// Layer adds the LAYER column (reports that mix layers).
	Layer bool
}

// Write prints the checks sorted by severity in a table that fits the
// terminal (FIX and SECTION only with -o wide); under it (unless
// --no-headers), each finding with its detail and why, then each fix once,
// with the checks it fixes.
func (t Table) Write(w io.Writer, o output.Options) error {
	checks := slices.Clone(t.Checks)
	SortBySeverity(checks)
	key := t.KeyHeader
	if key == "" {
		key = "CHECK"
	}
	g := output.Grid{Columns: []output.Column{
		{Name: "STATUS", Color: StatusColor},
		{Name: "LAYER"},
		{Name: key, Wrap: true},
		{Name: "CURRENT", Wrap: true},
		{Name: "EXPECTED", Wrap: true},
		{Name: "SECTION", Wide: true},
		{Name: "FIX", Wide: true},
	}}
	if !t.Layer {
		g.Columns[1].Wide = true
	}
	for _, c := range checks {
		g.AddRow(string(c.Status), c.Layer, c.Key(), output.Dash(c.CurrentText()), output.Dash(c.ExpectedText()),
			output.Dash(c.Section), output.Dash(strings.Join(c.Fix, "; ")))
	}
	if err := output.Print(w, g, o); err != nil {
		return err
	}
	if o.NoHeaders {
		return nil
	}
	var findings [][]string
	type fixUse struct {
		text string
		keys []string
	}
	var fixes []*fixUse
	byText := map[string]*fixUse{}
	for _, c := range checks {
		if c.Status == OK || c.Status == Info {
			continue
		}
		e := []string{o.Paint("bold", c.Key()) + ": " + string(c.Status)}
		if c.Detail != "" {
			e = append(e, "detail: "+c.Detail)
		}
		if c.Reason != "" && c.Status != Absent {
			e = append(e, "why: "+c.Reason)
		}
		findings = append(findings, e)
		for _, f := range c.Fix {
			u := byText[f]
			if u == nil {
				u = &fixUse{text: f}
				byText[f] = u
				fixes = append(fixes, u)
			}
			if !slices.Contains(u.keys, c.Key()) {
				u.keys = append(u.keys, c.Key())
			}
		}
	}
	if err := output.Section(w, "Findings:", findings, o); err != nil {
		return err
	}
	var fixEntries [][]string
	for i, u := range fixes {
		if i > 0 && slices.Equal(u.keys, fixes[i-1].keys) {
			// the next fix of the same checks: under the same label
			fixEntries[len(fixEntries)-1] = append(fixEntries[len(fixEntries)-1], u.text)
			continue
		}
		fixEntries = append(fixEntries, []string{"for " + strings.Join(u.keys, ", ") + ":", u.text})
	}
	return output.CodeSection(w, "Fixes (each once, in order; every command is one line, paste it whole):", fixEntries, o)
}

// StatusColor is the colour of a status cell (output.Column.Color).
func StatusColor(s string) string {
	switch Status(s) {
	case OK:
		return "green"
	case Drift, Error:
		return "red"
	case PendingReboot:
		return "yellow"
	}
	return "dim"
}
