package check

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/gpunode/gpunode/internal/output"
)

// Status is the verdict of one check.
type Status string

// The statuses; see the package documentation.
const (
	OK            Status = "ok"
	Drift         Status = "drift"
	PendingReboot Status = "pending-reboot"
	Absent        Status = "absent"
	Error         Status = "error"
	Info          Status = "info"
)

// Statuses lists every status in display order.
var statuses = [...]Status{OK, Drift, PendingReboot, Absent, Error, Info}

// Statuses returns every status in display order.
func Statuses() []Status { return statuses[:] }

// Valid reports whether s is one of the statuses.
func (s Status) Valid() bool {
	for _, x := range statuses {
		if s == x {
			return true
		}
	}
	return false
}

// Failing reports whether an alert fires on s (drift and error).
func (s Status) Failing() bool { return s == Drift || s == Error }

// Check is one verdict about one thing; see the package documentation.
type Check struct {
	ID       string `json:"id"`
	Layer    string `json:"layer"`
	Subject  string `json:"subject,omitempty"`
	Status   Status `json:"status"`
	Current  string `json:"current,omitempty"`
	Expected string `json:"expected,omitempty"`
	// CurrentBytes and ExpectedBytes are Current and Expected in bytes when
	// the check compares sizes (nil otherwise), so that a reader of the
	// JSON compares numbers, whatever syntax the setting takes ("20%",
	// KiB in limits.conf); tables print them in binary units.
	CurrentBytes  *uint64 `json:"currentBytes,omitempty"`
	ExpectedBytes *uint64 `json:"expectedBytes,omitempty"`
	// Bound is how Current is judged against Expected: "" when it must
	// equal it, Minimum when Expected is the least value that passes.
	Bound       Bound    `json:"bound,omitempty"`
	Fix         []string `json:"fix,omitempty"`
	Reason      string   `json:"reason,omitempty"`
	Detail      string   `json:"detail,omitempty"`
	Section     string   `json:"section,omitempty"`
	NeedsReboot bool     `json:"needsReboot,omitempty"`
}

// Bound is how a check judges Current against Expected.
type Bound string

// Minimum: Expected is a lower bound (current >= expected passes); tables
// print the expected value as ">= ...".
const Minimum Bound = "minimum"

// Bytes returns a pointer to n, for CurrentBytes and ExpectedBytes.
func Bytes(n uint64) *uint64 { return &n }

// CurrentText is Current as a table prints it: see [display].
func (c Check) CurrentText() string { return display(c.Current, c.CurrentBytes, "") }

// ExpectedText is Expected as a table prints it: see [display]; a minimum
// reads ">= 50% of memory (503.5 GiB)".
func (c Check) ExpectedText() string {
	prefix := ""
	if c.Bound == Minimum {
		prefix = ">= "
	}
	return display(c.Expected, c.ExpectedBytes, prefix)
}

// display renders a value for a table: a size given in bytes in binary
// units ("32.0 GiB"), a share of memory as "20% of memory (6.3 GiB)",
// any other value with its size after it ("unlimited", "8192 (8.0 MiB)").
func display(v string, b *uint64, prefix string) string {
	if v == "" && b == nil {
		return ""
	}
	if b == nil {
		return prefix + v
	}
	h := output.HumanBytes(*b)
	switch {
	case v == "" || isDigits(v):
		return prefix + h
	case strings.HasSuffix(v, "%"):
		return prefix + v + " of memory (" + h + ")"
	}
	return prefix + v + " (" + h + ")"
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// Key is the name audit prints and profiles select: "ID/Subject", or ID
// for a node-wide check.
func (c Check) Key() string {
	if c.Subject == "" {
		return c.ID
	}
	return c.ID + "/" + c.Subject
}

// Source produces checks. It is constructed with what it reads and never
// changes the host. An error means the source could not run at all; a
// source that can run but cannot decide one check reports that check with
// status Error.
type Source interface {
	Checks(ctx context.Context) ([]Check, error)
}

// Description describes a check id a source can produce.
type Description struct {
	ID    string `json:"id"`
	Layer string `json:"layer"`
	// Subject names what the check runs once per ("gpu", "device", "irq",
	// "process"); empty for a node-wide check.
	Subject string `json:"subject,omitempty"`
	// Title is a one-line description.
	Title   string `json:"title"`
	Section string `json:"section,omitempty"`
	// Values are the profile values the check accepts besides null
	// (disable); empty means "check" and "report".
	Values []string `json:"values,omitempty"`
}

// Describer is implemented by sources that list the ids they produce.
type Describer interface {
	Describe() []Description
}

// Profile values every source check accepts.
const (
	// ValueCheck: the check runs and drift is drift (the default).
	ValueCheck = "check"
	// ValueReport: the check runs but never drifts ("report only").
	ValueReport = "report"
)

// Summary counts checks by status.
type Summary struct {
	OK            int `json:"ok"`
	Drift         int `json:"drift"`
	PendingReboot int `json:"pendingReboot"`
	Absent        int `json:"absent"`
	Error         int `json:"error"`
	Info          int `json:"info"`
}

// Add counts one status.
func (s *Summary) Add(st Status) {
	switch st {
	case OK:
		s.OK++
	case Drift:
		s.Drift++
	case PendingReboot:
		s.PendingReboot++
	case Absent:
		s.Absent++
	case Error:
		s.Error++
	case Info:
		s.Info++
	}
}

// Failing reports whether any counted check is failing (drift or error).
func (s Summary) Failing() bool { return s.Drift > 0 || s.Error > 0 }

// Summarize counts cs by status.
func Summarize(cs []Check) Summary {
	var s Summary
	for _, c := range cs {
		s.Add(c.Status)
	}
	return s
}

// Selector selects checks by id and subject; see the package documentation.
type Selector struct {
	// ID and Subject are path.Match patterns; Subject "" matches every
	// subject.
	ID, Subject string
}

// ParseSelector parses "ID", "ID/SUBJECT" or patterns of either part. The
// id part must be a well-formed pattern of lower-case letters, digits,
// '.', '-', '_' and pattern characters; the subject may contain any
// character but whitespace.
func ParseSelector(s string) (Selector, error) {
	if s == "" {
		return Selector{}, fmt.Errorf("empty check selector")
	}
	if len(s) > 256 {
		return Selector{}, fmt.Errorf("check selector %.20q...: longer than 256 bytes", s)
	}
	id, subj, _ := strings.Cut(s, "/")
	if id == "" {
		return Selector{}, fmt.Errorf("check selector %q: empty id", s)
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune(".-_*?[]^", r)) {
			return Selector{}, fmt.Errorf("check selector %q: id may hold a-z, 0-9, '.', '-', '_' and patterns (*, ?, [...])", s)
		}
	}
	if strings.ContainsAny(subj, " \t\n") {
		return Selector{}, fmt.Errorf("check selector %q: subject contains whitespace", s)
	}
	for _, p := range []string{id, subj} {
		if _, err := path.Match(p, ""); err != nil {
			return Selector{}, fmt.Errorf("check selector %q: %w", s, err)
		}
	}
	return Selector{ID: id, Subject: subj}, nil
}

// MustSelector is ParseSelector for constants; it panics on a bad selector.
func MustSelector(s string) Selector {
	sel, err := ParseSelector(s)
	if err != nil {
		panic(err)
	}
	return sel
}

// String returns the selector as parsed.
func (s Selector) String() string {
	if s.Subject == "" {
		return s.ID
	}
	return s.ID + "/" + s.Subject
}

// MatchID reports whether the id part matches id.
func (s Selector) MatchID(id string) bool {
	ok, _ := path.Match(s.ID, id)
	return ok
}

// Match reports whether the selector selects c.
func (s Selector) Match(c Check) bool {
	if !s.MatchID(c.ID) {
		return false
	}
	if s.Subject == "" {
		return true
	}
	ok, _ := path.Match(s.Subject, c.Subject)
	return ok
}

// Known reports whether the id part matches at least one of infos' ids,
// so that a profile naming a check that no source produces is an error.
func (s Selector) Known(infos []Description) bool {
	for _, in := range infos {
		if s.MatchID(in.ID) {
			return true
		}
	}
	return false
}

// Rule is one profile entry about source checks.
type Rule struct {
	Selector Selector
	// Value is ValueCheck, ValueReport, or "" to disable.
	Value string
}

// Policy is the ordered list of a profile's rules for source checks; the
// last rule that matches a check decides.
type Policy []Rule

// Apply returns cs with the policy applied: checks whose deciding rule
// disables them are dropped; report-only checks that drift become ok with
// "report only" in their detail. cs is not modified.
func (p Policy) Apply(cs []Check) []Check {
	out := make([]Check, 0, len(cs))
	for _, c := range cs {
		v, matched := ValueCheck, false
		for _, r := range p {
			if r.Selector.Match(c) {
				v, matched = r.Value, true
			}
		}
		switch {
		case matched && v == "":
			continue
		case v == ValueReport && c.Status == Drift:
			c.Status = OK
			c.Detail = JoinDetail("report only", c.Detail)
		}
		out = append(out, c)
	}
	return out
}

// JoinDetail joins two detail texts with "; ", skipping empty ones.
func JoinDetail(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// SortInfos sorts infos by layer order (as given) and then id; layers not
// in order sort last, by name.
func SortInfos(infos []Description, order []string) {
	rank := func(l string) int {
		for i, o := range order {
			if o == l {
				return i
			}
		}
		return len(order)
	}
	sort.SliceStable(infos, func(i, j int) bool {
		a, b := infos[i], infos[j]
		if ra, rb := rank(a.Layer), rank(b.Layer); ra != rb {
			return ra < rb
		}
		if a.Layer != b.Layer {
			return a.Layer < b.Layer
		}
		return a.ID < b.ID
	})
}
