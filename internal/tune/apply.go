package tune

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"
	"time"

	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/journal"
	"github.com/gpunode/gpunode/internal/output"
)

// Owner is the journal owner of tune's transactions.
const Owner = "tune"

// Kinds returns the journal kinds tune's transactions use (the built-ins and
// KindDirty).
func Kinds() *journal.Kinds {
	k := journal.NewKinds()
	if err := k.Register(KindDirty, revertDirty); err != nil {
		panic(err) // a programming error: the kind is registered once here
	}
	return k
}

// ApplyRequest says what to plan or apply.
type ApplyRequest struct {
	Profile *Profile
	// StateDir is the journal directory (host path; journal.DefaultDir).
	StateDir string
	// DryRun plans without changing anything.
	DryRun bool
	// Bootloader also writes kernel parameters to /etc/default/grub.
	Bootloader bool
	// Command is recorded in the journal.
	Command string
	// Clock is used for journal timestamps (time.Now when nil).
	Clock func() time.Time
	// beforeChange, when set, runs before each change (after its journal
	// step is recorded, for runtime changes); an error makes that change
	// fail. Tests use it to inject failures.
	beforeChange func(n int) error
}

// SchemaPlan is the schema version of PlanReport.
const SchemaPlan = "gpunode.tune.plan/v1"

// PlanReport is the output of 'tune plan' and 'tune apply'.
type PlanReport struct {
	SchemaVersion string `json:"schemaVersion"`
	Profile       string `json:"profile"`
	// Mode is "plan", "dry-run" or "apply".
	Mode   string       `json:"mode"`
	Items  []PlanItem   `json:"items"`
	Files  []FileChange `json:"files"`
	Boot   []string     `json:"boot,omitempty"`
	Manual []string     `json:"manual,omitempty"`
	Notes  []string     `json:"notes,omitempty"`
	// Skipped are the settings the profile marks optional that could
	// not be read or changed on this host: each is a finding (exit 1).
	Skipped []SkippedSetting `json:"skipped,omitempty"`
	Journal string           `json:"journal,omitempty"`
	Steps   int              `json:"steps"`
	// State is the journal transaction's state after an apply: committed,
	// rolled-back (the apply failed and every change was reverted) or open
	// (reverting failed too: run the rollback).
	State journal.State `json:"state,omitempty"`
	// Changed is false when the host already matched the profile.
	Changed bool `json:"changed"`
}

// SkippedSetting is an optional setting that plan and apply left alone.
type SkippedSetting struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// ErrUnplannable marks a plan that could not read, or work out the change
// of, a setting the profile does not mark optional: nothing is changed.
var ErrUnplannable = errors.New("cannot plan every setting")

// PlanItem is one setting's planned runtime change.
type PlanItem struct {
	ID       string `json:"id"`
	Status   Status `json:"status"`
	Current  string `json:"current,omitempty"`
	Expected string `json:"expected,omitempty"`
	// CurrentBytes, ExpectedBytes and Bound are the check's (check.Check).
	CurrentBytes  *uint64     `json:"currentBytes,omitempty"`
	ExpectedBytes *uint64     `json:"expectedBytes,omitempty"`
	Bound         check.Bound `json:"bound,omitempty"`
	Actions       []string    `json:"actions"`
}

// asCheck returns the item's values as a check, for display.
func (it PlanItem) asCheck() check.Check {
	return check.Check{Current: it.Current, Expected: it.Expected, CurrentBytes: it.CurrentBytes, ExpectedBytes: it.ExpectedBytes, Bound: it.Bound}
}

// FileChange is one persistent file gpunode writes.
type FileChange struct {
	Path    string `json:"path"`
	Action  string `json:"action"` // create, replace, remove, unchanged
	Content string `json:"content,omitempty"`
	// Reason says why gpunode changes a file it does not generate (a file
	// read after its own that overrides its values at boot).
	Reason string `json:"reason,omitempty"`
}

// fileOp is a planned file change.
type fileOp struct {
	path   string
	data   []byte
	perm   fs.FileMode // set by plan (filePerm)
	remove bool
	id     string
	// keepPerm keeps the mode of the file it replaces (an edited file
	// gpunode does not own).
	keepPerm bool
	// reason says why gpunode edits a file it does not own.
	reason string
}

// plan computes the runtime changes and files for req.
func plan(h *Host, cat *Catalogue, req ApplyRequest) (*PlanReport, []change, []fileOp, error) {
	p := req.Profile
	rep := &PlanReport{SchemaVersion: SchemaPlan, Profile: p.Name, Mode: "plan", Items: []PlanItem{}, Files: []FileChange{}}
	var changes []change
	var all persist
	// A setting that cannot be read or changed is never left out quietly:
	// an optional one is skipped as a finding, any other fails the plan.
	var failed []string
	skip := func(id, reason string) {
		if p.IsOptional(id) {
			rep.Skipped = append(rep.Skipped, SkippedSetting{ID: id, Reason: reason})
			return
		}
		failed = append(failed, id+": "+reason)
	}
	for _, e := range auditAll(h, cat, p, Options{}) {
		if e.err != nil || p.Settings[e.setting.ID] == ValueReport {
			if e.check.Status == StatusError && p.Settings[e.setting.ID] != ValueReport {
				skip(e.setting.ID, e.check.Detail)
			}
			continue
		}
		if e.obs.Check {
			// Checks change nothing; their fixes are listed by audit.
			continue
		}
		cs, ps, err := e.setting.knob.changes(h, e.obs, e.want)
		if err != nil {
			skip(e.setting.ID, err.Error())
			continue
		}
		all.add(ps)
		if len(cs) > 0 {
			it := PlanItem{ID: e.setting.ID, Status: e.check.Status, Current: e.check.Current, Expected: e.check.Expected,
				CurrentBytes: e.check.CurrentBytes, ExpectedBytes: e.check.ExpectedBytes, Bound: e.check.Bound}
			for i, c := range cs {
				if i == 2 && len(cs) > 3 {
					it.Actions = append(it.Actions, fmt.Sprintf("... and %d more like it", len(cs)-2))
					break
				}
				it.Actions = append(it.Actions, c.Desc)
			}
			rep.Items = append(rep.Items, it)
			changes = append(changes, cs...)
		}
	}
	if len(failed) > 0 {
		return nil, nil, nil, fmt.Errorf("%w: %s; nothing was changed (a setting that may be left out on some hosts goes in the profile's optional: list)", ErrUnplannable, strings.Join(failed, "; "))
	}
	header := fmt.Sprintf("# Generated by gpunode tune (profile %s). Do not edit: 'gpunode tune apply' rewrites\n# this file and 'gpunode tune rollback' restores what was here before.\n", p.Name)
	var ops []fileOp
	gen := func(path, id string, lines []string) {
		if len(lines) == 0 {
			ops = append(ops, fileOp{path: path, remove: true, id: id})
			return
		}
		ops = append(ops, fileOp{path: path, id: id, data: []byte(header + strings.Join(lines, "\n") + "\n")})
	}
	var lines []string
	for _, kv := range all.sysctl {
		lines = append(lines, kv[0]+" = "+kv[1])
	}
	gen(fileSysctl, "sysctl.d", lines)
	lines = nil
	for _, kv := range all.tmpfiles {
		lines = append(lines, fmt.Sprintf("w %s - - - - %s", kv[0], kv[1]))
	}
	gen(fileTmpfiles, "tmpfiles.d", lines)
	gen(fileLimits, "limits.d", all.limits)
	lines = nil
	if len(all.systemd) > 0 {
		lines = append(lines, "[Manager]")
		for _, kv := range all.systemd {
			lines = append(lines, kv[0]+"="+kv[1])
		}
	}
	gen(fileSystemd, "system.conf.d", lines)
	// Lines of later files that would override those values at boot are
	// commented out (override.go).
	edits, notes := overrideEdits(h, all)
	ops = append(ops, edits...)
	rep.Notes = append(rep.Notes, notes...)
	if all.swapOff {
		if b, err := h.FS.ReadFile(fileFstab); err == nil {
			if nb := commentFstabSwaps(b); string(nb) != string(b) {
				ops = append(ops, fileOp{path: fileFstab, data: nb, id: "swap"})
			}
		}
	}
	for _, kv := range all.boot {
		rep.Boot = append(rep.Boot, kv[0]+"="+kv[1])
	}
	if len(all.boot) > 0 {
		ops = append(ops, bootPlan(h, req, all.boot, rep)...) // bootloader.go
	}
	rep.Manual = append(rep.Manual, all.manual...)
	// File actions.
	kept := ops[:0]
	for _, op := range ops {
		st, err := journal.Snapshot(h.FS, op.path)
		if err != nil {
			return nil, nil, nil, err
		}
		op.perm = filePerm(op.path, st)
		if op.keepPerm && st.Type == journal.FileRegular {
			op.perm = st.Mode.Perm()
		}
		fc := FileChange{Path: op.path, Reason: op.reason}
		switch {
		case op.remove && st.Type == journal.FileAbsent:
			continue
		case op.remove:
			fc.Action = "remove"
		case st.Type == journal.FileRegular && string(st.Data) == string(op.data) && st.Mode.Perm() == op.perm:
			fc.Action = "unchanged"
		case st.Type == journal.FileAbsent:
			fc.Action, fc.Content = "create", string(op.data)
		default:
			fc.Action, fc.Content = "replace", string(op.data)
		}
		rep.Files = append(rep.Files, fc)
		if fc.Action != "unchanged" {
			kept = append(kept, op)
		}
	}
	return rep, changes, kept, nil
}

// filePerm is the mode a generated file gets: the existing file's mode when
// replacing (fstab, grub), 0644 otherwise.
func filePerm(p string, st *journal.FileState) (perm fs.FileMode) {
	if st != nil && st.Type == journal.FileRegular && (p == fileFstab || p == grubFile || isBootFile(p)) {
		return st.Mode.Perm()
	}
	return 0o644
}

// editGrub adds or replaces params in GRUB_CMDLINE_LINUX of an
// /etc/default/grub (and drops them from its GRUB_CMDLINE_LINUX_DEFAULT,
// which would win), keeping every other byte. When every parameter is
// already there with its value the input is returned unchanged. It refuses
// a GRUB_CMDLINE_LINUX that uses shell expansion ($ or `): rewriting it
// would drop a ${VAR} or expand a single-quoted '$'.
func editGrub(b []byte, params [][2]string) ([]byte, error) {
	lines := strings.SplitAfter(string(b), "\n")
	idx := -1
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "GRUB_CMDLINE_LINUX=") {
			idx = i
		}
	}
	cur := ""
	if idx >= 0 {
		_, v, _ := strings.Cut(strings.TrimSpace(lines[idx]), "=")
		if strings.ContainsAny(v, "$`") {
			return nil, fmt.Errorf("GRUB_CMDLINE_LINUX uses shell expansion (%s); not rewriting it", strings.TrimSpace(lines[idx]))
		}
		cur = shellValue(v, func(string) string { return "" })
	}
	words := splitCmdline(cur)
	have := parseCmdline(cur)
	drop := map[string]bool{}
	for _, kv := range params {
		drop[kv[0]] = true
	}
	// GRUB_CMDLINE_LINUX_DEFAULT follows GRUB_CMDLINE_LINUX on the kernel
	// command line, so a parameter left there would win over the one set
	// here: drop it from there too (unless that line uses expansion).
	defIdx, defWords, defDrop := -1, []string(nil), false
	for i, l := range lines {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "GRUB_CMDLINE_LINUX_DEFAULT="); ok {
			defIdx, defWords, defDrop = i, nil, false
			if strings.ContainsAny(v, "$`") {
				defIdx = -1
				continue
			}
			for _, w := range splitCmdline(shellValue(v, func(string) string { return "" })) {
				if k, _, _ := strings.Cut(w, "="); drop[k] {
					defDrop = true
				} else {
					defWords = append(defWords, w)
				}
			}
		}
	}
	needed := defIdx >= 0 && defDrop
	for _, kv := range params {
		if v, ok := have[kv[0]]; !ok || v != kv[1] {
			needed = true
		}
	}
	if !needed {
		return b, nil
	}
	if defIdx >= 0 && defDrop {
		lines[defIdx] = `GRUB_CMDLINE_LINUX_DEFAULT="` + strings.ReplaceAll(strings.Join(defWords, " "), `"`, `\"`) + "\"\n"
	}
	var out []string
	for _, w := range words {
		k, _, _ := strings.Cut(w, "=")
		if !drop[k] {
			out = append(out, w)
		}
	}
	for _, kv := range params {
		if kv[1] == "" || kv[1] == "(set)" {
			out = append(out, kv[0])
		} else {
			out = append(out, kv[0]+"="+kv[1])
		}
	}
	line := `GRUB_CMDLINE_LINUX="` + strings.ReplaceAll(strings.Join(out, " "), `"`, `\"`) + "\"\n"
	if idx >= 0 {
		lines[idx] = line
	} else {
		if len(lines) > 0 && !strings.HasSuffix(lines[len(lines)-1], "\n") && lines[len(lines)-1] != "" {
			lines[len(lines)-1] += "\n"
		}
		lines = append(lines, line)
	}
	return []byte(strings.Join(lines, "")), nil
}

// Plan shows what Apply would change, without changing anything.
func Plan(ctx context.Context, h *Host, cat *Catalogue, req ApplyRequest) (*PlanReport, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rep, changes, ops, err := plan(h, cat, req)
	if err != nil {
		return nil, err
	}
	if req.DryRun {
		rep.Mode = "dry-run"
	}
	rep.Changed = len(changes)+len(ops) > 0
	return rep, nil
}

// ApplyError is returned when an apply failed part way; everything it had
// changed was rolled back (or, if that failed too, Rollback says so).
type ApplyError struct {
	Err      error
	Rollback error
	Journal  string
}

func (e *ApplyError) Error() string {
	if e.Rollback != nil {
		return fmt.Sprintf("apply failed: %v; rolling back the steps already done ALSO failed: %v; run 'gpunode tune rollback' (journal %s; when a step can never be written back, 'gpunode tune rollback --skip ID:N' keeps its original in the journal and prints it)", e.Err, e.Rollback, e.Journal)
	}
	return fmt.Sprintf("apply failed: %v; every step already done was rolled back (journal %s)", e.Err, e.Journal)
}

func (e *ApplyError) Unwrap() error { return e.Err }

// Apply changes the host to match req.Profile: runtime values first, then
// the persistent files, as one journal transaction (journal.Run). The plan
// is computed under the journal lock, so every original journaled is read
// under it (the host's topology, read by NewHost, is hardware and is kept;
// every knob and file is read again). A failure rolls back the steps
// already done and returns *ApplyError. When nothing differs no journal is
// written.
func Apply(ctx context.Context, h *Host, cat *Catalogue, req ApplyRequest) (*PlanReport, error) {
	if req.DryRun {
		return Plan(ctx, h, cat, req)
	}
	settings, _ := json.Marshal(req.Profile.Settings)
	opts := []journal.Option{journal.WithKinds(Kinds())}
	if req.Clock != nil {
		opts = append(opts, journal.WithClock(req.Clock))
	}
	stateDir := req.StateDir
	if stateDir == "" {
		stateDir = journal.DefaultDir
	}
	n := 0
	hook := func() error {
		n++
		if req.beforeChange != nil {
			return req.beforeChange(n)
		}
		return nil
	}
	var rep *PlanReport
	meta := journal.Meta{Owner: Owner, Command: req.Command, Profile: req.Profile.Name,
		Labels: map[string]string{"settings": string(settings), "source": req.Profile.Source}}
	res, err := journal.Run(ctx, h.FS, stateDir, meta, func(ctx context.Context, tx *journal.Tx) ([]journal.Action, error) {
		fresh := &Host{FS: h.FS, Topo: h.Topo, TopoErr: h.TopoErr}
		r, changes, ops, err := plan(fresh, cat, req)
		if err != nil {
			return nil, err
		}
		rep = r
		rep.Mode = "apply"
		var acts []journal.Action
		for _, c := range changes {
			acts = append(acts, journal.Action{Step: c.Step, Batch: true, Do: func(ctx context.Context) error {
				if err := hook(); err != nil {
					return fmt.Errorf("%s: %w", c.Desc, err)
				}
				if err := c.Apply(ctx); err != nil {
					return fmt.Errorf("%s: %w", c.Desc, err)
				}
				return nil
			}})
		}
		for _, op := range ops {
			var fa []journal.Action
			if op.remove {
				fa, err = tx.RemoveFile(op.id, op.path)
			} else {
				fa, err = tx.WriteFile(op.id, op.path, op.data, op.perm)
			}
			if err != nil {
				return nil, err
			}
			if len(fa) == 0 {
				continue
			}
			// The hook runs before the file's first change (a missing
			// parent directory, or the file itself).
			first := fa[0].Do
			fa[0].Do = func(ctx context.Context) error {
				if err := hook(); err != nil {
					return fmt.Errorf("%s: %w", op.path, err)
				}
				return first(ctx)
			}
			acts = append(acts, fa...)
		}
		return acts, nil
	}, opts...)
	if err != nil {
		var je *journal.Error
		if !errors.As(err, &je) {
			return nil, err
		}
		rep.Journal, rep.Steps, rep.State = res.ID, res.Steps, res.State
		return rep, &ApplyError{Err: je.Err, Rollback: je.Revert, Journal: je.ID}
	}
	if res.ID == "" {
		return rep, nil
	}
	rep.Journal, rep.Steps, rep.State = res.ID, res.Steps, res.State
	rep.Changed = true
	return rep, nil
}

// WriteTable implements output.Tabler.
func (r *PlanReport) WriteTable(w io.Writer, o output.Options) error {
	ew := &output.ErrWriter{W: w}
	verb := map[string]string{"plan": "would change", "dry-run": "would change (dry run)", "apply": "changed"}[r.Mode]
	if !r.Changed && len(r.Items) == 0 && r.Mode == "apply" {
		verb = "nothing to change"
	}
	g := output.Grid{Columns: []output.Column{
		{Name: "SETTING"}, {Name: "CURRENT", Wrap: true}, {Name: "EXPECTED", Wrap: true}, {Name: "ACTION", Wrap: true},
	}}
	for _, it := range r.Items {
		for i, a := range it.Actions {
			if i == 0 {
				g.AddRow(it.ID, orDash(it.asCheck().CurrentText()), orDash(it.asCheck().ExpectedText()), a)
			} else {
				g.AddRow("", "", "", a)
			}
		}
	}
	if o.NoHeaders {
		// the runtime rows only, for scripts
		return output.Print(w, g, o)
	}
	ew.Printf("profile %s: %s\n", r.Profile, verb)
	if len(r.Items) > 0 {
		ew.Printf("\nruntime (in the order apply makes the changes):\n")
		if err := output.Print(ew, g, o); err != nil {
			return err
		}
	}
	if len(r.Files) > 0 {
		ew.Printf("\nfiles:\n")
		for _, f := range r.Files {
			ew.Printf("  %-9s %s\n", f.Action, f.Path)
			if f.Reason != "" {
				ew.Printf("    (%s)\n", f.Reason)
			}
			if f.Content != "" && r.Mode != "apply" {
				for _, l := range strings.Split(strings.TrimRight(f.Content, "\n"), "\n") {
					if f.Reason != "" && !strings.HasPrefix(l, overrideMark) {
						continue // an edited file: only the lines gpunode changes
					}
					if strings.HasPrefix(l, "#") && f.Path != fileFstab && f.Path != grubFile && f.Reason == "" {
						continue
					}
					ew.Printf("    | %s\n", l)
				}
			}
		}
	}
	// long lines wrap at spaces to fit the terminal (whole with -o wide)
	wrapped := func(head, text string) {
		lines := []string{text}
		if !o.Wide {
			lines = output.Wrap(text, output.DefaultWidth-len(head))
		}
		for i, l := range lines {
			if i > 0 {
				head = strings.Repeat(" ", len(head))
			}
			ew.Printf("%s%s\n", head, l)
		}
	}
	if len(r.Boot) > 0 {
		ew.Printf("\n")
		wrapped("kernel parameters: ", strings.Join(r.Boot, " "))
	}
	for _, n := range r.Notes {
		wrapped("note: ", n)
	}
	for _, sk := range r.Skipped {
		ew.Printf("SKIPPED %s (optional in the profile): %s\n", sk.ID, sk.Reason)
	}
	for _, m := range r.Manual {
		ew.Printf("run by hand: %s\n", m)
	}
	switch {
	case r.Journal == "":
	case r.State == journal.StateRolledBack:
		ew.Printf("\njournal %s: apply FAILED; every change was reverted, nothing to undo\n", r.Journal)
	case r.State == journal.StateOpen:
		ew.Printf("\njournal %s: apply FAILED and reverting failed too; run 'gpunode tune rollback' (see the error for the step and the way forward)\n", r.Journal)
	default:
		ew.Printf("\njournal %s: %d steps recorded; undo with 'gpunode tune rollback'\n", r.Journal, r.Steps)
	}
	return ew.Err
}

// ---- rollback ----

// SchemaRollback is the schema version of RollbackReport.
const SchemaRollback = "gpunode.tune.rollback/v1"

// RollbackReport is the output of 'tune rollback': the one rollback
// report (journal.RollbackReport) with SchemaRollback.
type RollbackReport = journal.RollbackReport

// Rollback reverts every tune transaction in stateDir (interrupted ones
// included), newest first.
//
// A step whose original cannot be written back leaves its transaction open
// and the error names it ("000003-tune:4"); fix the cause and run Rollback
// again, or pass journal.WithSkip("000003-tune:4") to finish without it (the
// original stays in the journal and the report prints it). Generated files
// edited since apply are not overwritten (*journal.EditedError) unless
// journal.WithForce(true), which first keeps the edited version in the
// journal.
func Rollback(ctx context.Context, fsys *hostfs.FS, stateDir string, dryRun bool, opts ...journal.Option) (*RollbackReport, error) {
	opts = append([]journal.Option{journal.WithOwner(Owner), journal.WithKinds(Kinds()), journal.WithDryRun(dryRun)}, opts...)
	rep, err := journal.Rollback(ctx, fsys, stateDir, opts...)
	return &RollbackReport{SchemaVersion: SchemaRollback, Report: rep}, err
}

// ---- status ----

// SchemaStatus is the schema version of StatusReport.
const SchemaStatus = "gpunode.tune.status/v1"

// StatusReport is the output of 'tune status'.
type StatusReport struct {
	SchemaVersion string      `json:"schemaVersion"`
	Applied       bool        `json:"applied"`
	Profile       string      `json:"profile,omitempty"`
	Transactions  []TxSummary `json:"transactions"`
	// Interrupted lists transactions that never committed.
	Interrupted []string `json:"interrupted,omitempty"`
	// ModifiedFiles lists generated files changed since apply.
	ModifiedFiles []string `json:"modifiedFiles,omitempty"`
	// Unreadable lists journals that failed to load.
	Unreadable []string `json:"unreadable,omitempty"`
	Audit      *Report  `json:"audit,omitempty"`
}

// TxSummary is one journal transaction.
type TxSummary struct {
	ID      string        `json:"id"`
	Profile string        `json:"profile"`
	State   journal.State `json:"state"`
	Started time.Time     `json:"started"`
	Steps   int           `json:"steps"`
	Reason  string        `json:"reason,omitempty"`
}

// Drifted reports whether status found drift (exit 1).
func (s *StatusReport) Drifted() bool {
	return len(s.Interrupted) > 0 || len(s.ModifiedFiles) > 0 || len(s.Unreadable) > 0 || (s.Audit != nil && s.Audit.Drifted())
}

// GetStatus reports the applied profile and any drift since it was applied.
func GetStatus(ctx context.Context, h *Host, cat *Catalogue, stateDir string, opt Options) (*StatusReport, error) {
	infos, err := journal.List(h.FS, stateDir)
	if err != nil {
		return nil, err
	}
	r := &StatusReport{SchemaVersion: SchemaStatus, Transactions: []TxSummary{}}
	var last *journal.Transaction
	// written maps each file a committed transaction wrote to the sha256 of
	// its newest write (infos are oldest first); a later removal drops it.
	written := map[string]string{}
	for _, in := range infos {
		if in.Err != nil {
			r.Unreadable = append(r.Unreadable, fmt.Sprintf("%s: %v", in.File, in.Err))
			continue
		}
		tx := in.Tx
		if tx.Meta.Owner != Owner {
			continue
		}
		r.Transactions = append(r.Transactions, TxSummary{ID: tx.ID, Profile: tx.Meta.Profile, State: tx.State, Started: tx.Meta.Started, Steps: len(tx.Steps), Reason: tx.Reason})
		switch tx.State {
		case journal.StateOpen:
			r.Interrupted = append(r.Interrupted, tx.ID)
		case journal.StateCommitted:
			last = tx
			for _, s := range tx.Steps {
				switch {
				case s.Kind != journal.KindFile:
				case s.NewSHA256 == "":
					delete(written, s.Path)
				default:
					written[s.Path] = s.NewSHA256
				}
			}
		}
	}
	for p, want := range written {
		b, err := h.FS.ReadFile(p)
		sum := sha256.Sum256(b)
		if err != nil || hex.EncodeToString(sum[:]) != want {
			r.ModifiedFiles = append(r.ModifiedFiles, p)
		}
	}
	sort.Strings(r.ModifiedFiles)
	if last == nil {
		return r, nil
	}
	r.Applied, r.Profile = true, last.Meta.Profile
	p := &Profile{Name: last.Meta.Profile, Source: "journal " + last.ID, Settings: map[string]string{}}
	if err := json.Unmarshal([]byte(last.Meta.Labels["settings"]), &p.Settings); err != nil {
		return nil, fmt.Errorf("journal %s: settings label: %w", last.ID, err)
	}
	for id := range p.Settings {
		if cat.Get(id) == nil {
			delete(p.Settings, id)
		}
	}
	a, err := Audit(ctx, h, cat, p, opt)
	if err != nil {
		return nil, err
	}
	r.Audit = a
	return r, nil
}

// WriteTable implements output.Tabler.
func (s *StatusReport) WriteTable(w io.Writer, o output.Options) error {
	ew := &output.ErrWriter{W: w}
	// What makes the state uncertain comes first: an unreadable journal
	// may be the one that records an applied profile, so "no profile
	// applied" is never said while one exists.
	for _, u := range s.Unreadable {
		ew.Printf("UNREADABLE journal: %s\n", u)
	}
	for _, id := range s.Interrupted {
		ew.Printf("INTERRUPTED: %s never committed; run 'gpunode tune rollback'\n", id)
	}
	switch {
	case s.Applied:
		ew.Printf("applied profile: %s\n", s.Profile)
	case len(s.Unreadable) > 0:
		ew.Printf("applied profile: UNKNOWN (%d journal(s) cannot be read; none of the readable ones committed a profile)\n", len(s.Unreadable))
	default:
		ew.Printf("no profile applied\n")
	}
	if len(s.Transactions) > 0 {
		g := output.Grid{Columns: []output.Column{
			{Name: "TRANSACTION"}, {Name: "STATE"}, {Name: "PROFILE"}, {Name: "STARTED"}, {Name: "STEPS"}, {Name: "REASON", Wrap: true},
		}}
		for _, t := range s.Transactions {
			g.AddRow(t.ID, string(t.State), t.Profile, t.Started.Format(time.RFC3339), fmt.Sprint(t.Steps), t.Reason)
		}
		if err := output.Print(ew, g, o); err != nil {
			return err
		}
	}
	for _, f := range s.ModifiedFiles {
		ew.Printf("modified since apply: %s\n", f)
	}
	if s.Audit != nil {
		ew.Printf("\n")
		if err := s.Audit.WriteTable(ew, o); err != nil {
			return err
		}
	}
	return ew.Err
}
