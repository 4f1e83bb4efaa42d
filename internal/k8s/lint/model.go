package lint

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/gpunode/gpunode/internal/k8s/objects"
	"github.com/gpunode/gpunode/internal/output"
)

// SchemaVersion of the lint report.
const SchemaVersion = "gpunode.k8s.lint/v1"

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

// WriteTable writes the findings grouped by object.
func (r *Report) WriteTable(w io.Writer, _ output.Options) error {
	var b strings.Builder
	r.writeCharts(&b)
	if len(r.Findings) == 0 {
		fmt.Fprintf(&b, "no findings (%d objects checked, %d skipped)\n", r.Objects, r.Skipped)
		_, err := io.WriteString(w, b.String())
		return err
	}
	cur := ""
	for _, f := range r.Findings {
		if f.Object != cur {
			if cur != "" {
				b.WriteString("\n")
			}
			cur = f.Object
			loc := f.File
			if f.Doc > 0 {
				loc += fmt.Sprintf(" document %d", f.Doc)
			}
			if f.Item >= 0 {
				loc += fmt.Sprintf(" items[%d]", f.Item)
			}
			fmt.Fprintf(&b, "%s  (%s)\n", f.Object, loc)
		}
		field := f.Field
		if field == "" {
			field = "-"
		}
		fmt.Fprintf(&b, "  %-7s %s  [%s, section %s]\n", f.Severity, field, f.Rule, f.Section)
		fmt.Fprintf(&b, "          %s\n", f.Message)
		fmt.Fprintf(&b, "          fix: %s\n", f.Fix)
	}
	counts := map[Severity]int{}
	for _, f := range r.Findings {
		counts[f.Severity]++
	}
	fmt.Fprintf(&b, "\n%d findings (%d error, %d warning, %d info); %d objects checked, %d skipped\n",
		len(r.Findings), counts[SeverityError], counts[SeverityWarning], counts[SeverityInfo], r.Objects, r.Skipped)
	_, err := io.WriteString(w, b.String())
	return err
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
	l := &RuleList{SchemaVersion: "gpunode.k8s.lint.rules/v1"}
	for _, r := range Rules() {
		l.Rules = append(l.Rules, RuleInfo{r.ID, r.Severity, r.Section, r.Summary, r.Needs})
	}
	return l
}

// WriteTable lists the rules.
func (l *RuleList) WriteTable(w io.Writer, _ output.Options) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%-32s %-8s %-8s %s\n", "RULE", "SEVERITY", "SECTION", "CHECKS")
	for _, r := range l.Rules {
		s := r.Summary
		if r.Needs != "" {
			s += " (needs " + r.Needs + ")"
		}
		fmt.Fprintf(&b, "%-32s %-8s %-8s %s\n", r.ID, r.Severity, r.Section, s)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Run applies the cross-object rules to the Loader's input and returns the
// report with the per-object rules' findings, sorted by object (input
// order), then field, then rule.
func Run(in *Input) *Report {
	c := newContext(in)
	rep := &Report{SchemaVersion: SchemaVersion, Findings: append([]Finding{}, in.local...), Objects: in.Checked, Skipped: in.Skipped,
		Charts: in.Charts}
	seen := map[string]bool{}
	for _, r := range Rules() {
		if r.Local && !in.whole {
			continue
		}
		r := r
		r.Check(c, func(o *Object, field, message, fix string) {
			key := r.ID + "\x00" + o.ID() + "\x00" + field + "\x00" + message
			if seen[key] {
				return
			}
			seen[key] = true
			rep.Findings = append(rep.Findings, newFinding(r, o, field, message, fix))
		})
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

// Label renders a bad-input location the way objects.Error does.
func label(s objects.Source) string {
	e := objects.Error{File: s.File, Doc: s.Doc, Item: s.Item}
	return strings.TrimSuffix(e.Error(), ": ")
}
