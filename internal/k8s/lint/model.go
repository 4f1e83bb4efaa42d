package lint

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/gpunode/gpunode/internal/k8s/objects"
	"github.com/gpunode/gpunode/internal/output"
)

// SchemaVersion of the lint report.
const SchemaVersion = "gpunode.k8s.lint/v1"

// SchemaRules is the schema version of the rule list (RuleList).
const SchemaRules = "gpunode.k8s.lint.rules/v1"

// Severity of a rule.
type Severity string

// Severities, most severe first.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityInfo    Severity = "info"
)

// Rank orders severities: error 3, warning 2, info 1, anything else 0.
func (s Severity) Rank() int {
	switch s {
	case SeverityError:
		return 3
	case SeverityWarning:
		return 2
	case SeverityInfo:
		return 1
	}
	return 0
}

// ParseSeverity validates a --fail-on value.
func ParseSeverity(s string) (Severity, error) {
	switch v := Severity(strings.ToLower(strings.TrimSpace(s))); v {
	case SeverityError, SeverityWarning, SeverityInfo:
		return v, nil
	}
	return "", fmt.Errorf("--fail-on: %q: want error, warning or info", s)
}

// Finding is one thing a rule found.
type Finding struct {
	Rule     string   `json:"rule"`
	Severity Severity `json:"severity"`
	// Object is kind/namespace/name (kind/name for cluster-scoped objects
	// and configs that are not Kubernetes objects).
	Object  string `json:"object"`
	Field   string `json:"field"`
	Message string `json:"message"`
	Fix     string `json:"fix"`
	Section string `json:"section"`

	// Where the object came from (SARIF locations; not in the JSON form).
	File string `json:"-"`
	Doc  int    `json:"-"`
	Item int    `json:"-"`

	seq int // the object's place in the input (the table's order)
}

func newFinding(r Rule, o *Object, field, message, fix string) Finding {
	return Finding{Rule: r.ID, Severity: r.Severity, Object: o.ID(), Field: field,
		Message: message, Fix: fix, Section: r.Section, File: o.Src.File, Doc: o.Src.Doc, Item: o.Src.Item, seq: o.Seq}
}

// Report is the output of `gpunode k8s lint`.
type Report struct {
	SchemaVersion string    `json:"schemaVersion"`
	Findings      []Finding `json:"findings"`
	// Objects counts the objects (and configs) lint decoded and checked;
	// Skipped counts the documents of kinds it does not know.
	Objects int `json:"objects"`
	Skipped int `json:"skipped"`
	// Charts are the Helm charts rendered and linted, one line each in
	// the table (findings name their template files).
	Charts []RenderedChart `json:"charts,omitempty"`
	// SkippedFiles are the files skipped whole (not Kubernetes objects),
	// one line each with why; their documents are counted in Skipped.
	SkippedFiles []SkippedFile `json:"skippedFiles,omitempty"`
}

// RenderedChart is a Helm chart rendered for the lint: its directory, the
// values files merged over its values.yaml, and the templates that
// rendered to objects.
type RenderedChart struct {
	Chart     string   `json:"chart"`
	Values    []string `json:"values,omitempty"`
	Templates int      `json:"templates"`
}

// writeCharts is the table's one line per rendered chart.
func (r *Report) writeCharts(b *strings.Builder) {
	for _, c := range r.Charts {
		vals := "its values.yaml"
		if len(c.Values) > 0 {
			vals = "values.yaml < " + strings.Join(c.Values, " < ")
		}
		fmt.Fprintf(b, "rendered Helm chart %s (%s): %d templates\n", c.Chart, vals, c.Templates)
	}
	for _, f := range r.SkippedFiles {
		fmt.Fprintf(b, "skipped %s: %s\n", f.File, f.Reason)
	}
}

// AtLeast counts the findings at or above s.
func (r *Report) AtLeast(s Severity) int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity.Rank() >= s.Rank() {
			n++
		}
	}
	return n
}

// ListItems implements output.Lister: one row per finding.
func (r *Report) ListItems() any { return r.Findings }

// WriteTable writes the findings as a table sorted by severity (error,
// warning, info), then rule and object; each finding's message, location
// and fix follow in a section under it (SECTION and LOCATION are -o wide
// columns). --no-headers prints the table's rows only.
func (r *Report) WriteTable(w io.Writer, o output.Options) error {
	var b strings.Builder
	if !o.NoHeaders {
		r.writeCharts(&b)
	}
	if len(r.Findings) == 0 {
		if !o.NoHeaders {
			fmt.Fprintf(&b, "no findings (%d objects checked, %d skipped)\n", r.Objects, r.Skipped)
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
	fs := slices.Clone(r.Findings)
	slices.SortStableFunc(fs, func(a, b Finding) int {
		if d := b.Severity.Rank() - a.Severity.Rank(); d != 0 {
			return d
		}
		if d := strings.Compare(a.Rule, b.Rule); d != 0 {
			return d
		}
		return strings.Compare(a.Object, b.Object)
	})
	g := output.Grid{Columns: []output.Column{
		{Name: "SEVERITY", Color: severityColor}, {Name: "RULE"}, {Name: "OBJECT", Wrap: true}, {Name: "FIELD", Wrap: true},
		{Name: "SECTION", Wide: true}, {Name: "LOCATION", Wide: true}, {Name: "MESSAGE", Wide: true},
	}}
	var entries [][]string
	for _, f := range fs {
		field := f.Field
		if field == "" {
			field = "-"
		}
		g.AddRow(string(f.Severity), f.Rule, f.Object, field, f.Section, f.location(), f.Message)
		entries = append(entries, []string{o.Paint("bold", f.Object) + " " + field + " [" + f.Rule + ", section " + f.Section + "]: " + string(f.Severity),
			"at " + f.location(), f.Message, "fix: " + f.Fix})
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	if err := output.Print(w, g, o); err != nil || o.NoHeaders {
		return err
	}
	if err := output.Section(w, "Findings:", entries, o); err != nil {
		return err
	}
	counts := map[Severity]int{}
	for _, f := range r.Findings {
		counts[f.Severity]++
	}
	_, err := fmt.Fprintf(w, "\n%d findings (%d error, %d warning, %d info); %d objects checked, %d skipped\n",
		len(r.Findings), counts[SeverityError], counts[SeverityWarning], counts[SeverityInfo], r.Objects, r.Skipped)
	return err
}

// location is where f's object is: its file, document and list item.
func (f Finding) location() string {
	loc := f.File
	if f.Doc > 0 {
		loc += fmt.Sprintf(" document %d", f.Doc)
	}
	if f.Item >= 0 {
		loc += fmt.Sprintf(" items[%d]", f.Item)
	}
	return loc
}

func severityColor(s string) string {
	switch Severity(s) {
	case SeverityError:
		return "red"
	case SeverityWarning:
		return "yellow"
	}
	return "dim"
}

// Rule is one check. Check reports through emit; it must be bounded by the
// input's size.
type Rule struct {
	ID       string
	Severity Severity
	Section  string
	// Summary is one line for --rules.
	Summary string
	// Needs names the optional inputs the rule uses (--nodes,
	// --node-file, --kubelet-config); without them it stays silent.
	Needs string
	// Local rules read one object (and the context flags): the Loader
	// runs them as each object is decoded, on a Context that holds that
	// object alone. The others run in Run, on the index of the input.
	Local bool
	Check func(c *Context, emit Emit)
}

// Emit reports one finding on object o at field with a message and a fix.
type Emit func(o *Object, field, message, fix string)

// Rules returns the registry: every area's rules, in area order. A new rule
// goes into its area's list (apivalidation.go, workloads.go,
// deviceplugin.go, operator.go, dra.go, computedomain.go, gang.go).
func Rules() []Rule {
	var all []Rule
	for _, area := range [][]Rule{apiRules(), workloadRules(), devicePluginRules(), operatorRules(), draRules(), computeDomainRules(), gangRules()} {
		all = append(all, area...)
	}
	return all
}

// RuleList is the --rules output.
type RuleList struct {
	SchemaVersion string     `json:"schemaVersion"`
	Rules         []RuleInfo `json:"rules"`
}

// RuleInfo describes one rule.
type RuleInfo struct {
	ID       string   `json:"id"`
	Severity Severity `json:"severity"`
	Section  string   `json:"section"`
	Summary  string   `json:"summary"`
	Needs    string   `json:"needs,omitempty"`
}

// ListRules describes the registry.
func ListRules() *RuleList {
	l := &RuleList{SchemaVersion: SchemaRules}
	for _, r := range Rules() {
		l.Rules = append(l.Rules, RuleInfo{r.ID, r.Severity, r.Section, r.Summary, r.Needs})
	}
	return l
}

// ListItems implements output.Lister: one row per rule.
func (l *RuleList) ListItems() any { return l.Rules }

// WriteTable lists the rules.
func (l *RuleList) WriteTable(w io.Writer, o output.Options) error {
	g := output.NewGrid("RULE", "SEVERITY", "SECTION", "CHECKS")
	g.Columns[3].Wrap = true
	for _, r := range l.Rules {
		s := r.Summary
		if r.Needs != "" {
			s += " (needs " + r.Needs + ")"
		}
		g.AddRow(r.ID, string(r.Severity), r.Section, s)
	}
	return output.Print(w, g, o)
}

// Run applies the cross-object rules to the Loader's input and returns the
// report with the per-object rules' findings, sorted by object (input
// order), then field, then rule.
func Run(in *Input) *Report {
	c := newContext(in)
	rep := &Report{SchemaVersion: SchemaVersion, Findings: append([]Finding{}, in.local...), Objects: in.Checked, Skipped: in.Skipped,
		Charts: in.Charts, SkippedFiles: in.SkippedFiles}
	seen := map[string]bool{}
	for _, r := range Rules() {
		if r.Local && !in.whole {
			continue
		}
		rep.Findings = check(r, c, seen, rep.Findings)
	}
	sort.SliceStable(rep.Findings, func(i, j int) bool {
		a, b := rep.Findings[i], rep.Findings[j]
		if a.seq != b.seq {
			return a.seq < b.seq
		}
		if a.Field != b.Field {
			return a.Field < b.Field
		}
		return a.Rule < b.Rule
	})
	return rep
}

// check runs r on c and appends its findings to out, each once: a
// finding already in seen (rule, object, field and message) is dropped.
func check(r Rule, c *Context, seen map[string]bool, out []Finding) []Finding {
	r.Check(c, func(o *Object, field, message, fix string) {
		key := r.ID + "\x00" + o.ID() + "\x00" + field + "\x00" + message
		if seen[key] {
			return
		}
		seen[key] = true
		out = append(out, newFinding(r, o, field, message, fix))
	})
	return out
}

// Label renders a bad-input location the way objects.Error does.
func label(s objects.Source) string {
	e := objects.Error{File: s.File, Doc: s.Doc, Item: s.Item}
	return strings.TrimSuffix(e.Error(), ": ")
}
