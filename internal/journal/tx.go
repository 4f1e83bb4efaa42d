package journal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/gpunode/gpunode/internal/hostfs"
)

// Action is one change of a transaction run by Run.
type Action struct {
	// Step is what is journaled before Do runs: the original state (read
	// under the lock) and the new one.
	Step Step
	// Prepare, when set, computes the step just before it is recorded
	// (after the actions before it were done), for originals that only
	// exist then; skip true drops the action.
	Prepare func(ctx context.Context) (s Step, skip bool, err error)
	// Do makes the change. It runs only after the step is persisted as an
	// intent; the step is marked done after it returns nil.
	Do func(ctx context.Context) error
	// Batch records this action together with the adjacent Batch actions
	// (one journal write for the intents, one for the dones), for many small
	// changes (a value on every CPU).
	Batch bool
}

// Tx is a transaction while its plan is computed (see Run): it holds the
// journal directory's lock, so everything read through it, or by the plan
// function, is read under the lock.
type Tx struct {
	fsys  *hostfs.FS
	id    string
	temps int
	// mkdirs are the directories an earlier action of this plan creates:
	// the host does not have them yet, but a later action must not create
	// them again (its mkdir would fail, and its revert would remove the
	// directory the earlier action made, contents and all).
	mkdirs map[string]bool
}

// ID returns the transaction id the run will have ("000042-tune").
func (t *Tx) ID() string { return t.id }

// FS returns the host filesystem the transaction changes.
func (t *Tx) FS() *hostfs.FS { return t.fsys }

// tempFor names the temporary file used to replace p, unique in this
// transaction; it is journaled with the step before the file is created.
func (t *Tx) tempFor(p string) string {
	t.temps++
	return hostfs.TempName(p, t.id+"-"+strconv.Itoa(t.temps))
}

// WriteFile returns the actions that make p hold data with mode perm:
// creating each missing parent directory (journaled as absent), then
// replacing p atomically through a temporary file named in the journal.
// None when p already holds exactly that.
func (t *Tx) WriteFile(id, p string, data []byte, perm fs.FileMode) ([]Action, error) {
	p = path.Clean("/" + p)
	orig, err := Snapshot(t.fsys, p)
	if err != nil {
		return nil, err
	}
	if orig.Type == FileRegular && orig.Mode == perm && string(orig.Data) == string(data) {
		return nil, nil
	}
	acts, err := t.MkdirAll(id, path.Dir(p), 0o755)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	tmp := t.tempFor(p)
	fsys := t.fsys
	return append(acts, Action{
		Step: Step{Kind: KindFile, ID: id, Path: p, File: orig, NewSHA256: hex.EncodeToString(sum[:]), Temp: tmp},
		Do:   func(context.Context) error { return fsys.WriteFileVia(p, tmp, data, perm) },
	}), nil
}

// RemoveFile returns the action that removes p (none when p is absent).
func (t *Tx) RemoveFile(id, p string) ([]Action, error) {
	p = path.Clean("/" + p)
	orig, err := Snapshot(t.fsys, p)
	if err != nil || orig.Type == FileAbsent {
		return nil, err
	}
	fsys := t.fsys
	return []Action{{
		Step: Step{Kind: KindFile, ID: id, Path: p, File: orig},
		Do:   func(context.Context) error { return fsys.Remove(p) },
	}}, nil
}

// Symlink returns the actions that make p a link to target.
func (t *Tx) Symlink(id, target, p string) ([]Action, error) {
	p = path.Clean("/" + p)
	orig, err := Snapshot(t.fsys, p)
	if err != nil {
		return nil, err
	}
	if orig.Type == FileSymlink && orig.Link == target {
		return nil, nil
	}
	acts, err := t.MkdirAll(id, path.Dir(p), 0o755)
	if err != nil {
		return nil, err
	}
	tmp := t.tempFor(p)
	fsys := t.fsys
	return append(acts, Action{
		Step: Step{Kind: KindFile, ID: id, Path: p, File: orig, New: target, Temp: tmp},
		Do:   func(context.Context) error { return fsys.SymlinkVia(target, p, tmp) },
	}), nil
}

// MkdirAll returns one action per missing directory of p (outermost
// first), each journaled as absent before it is created; a directory that
// an earlier action of the same plan creates is not created twice.
func (t *Tx) MkdirAll(id, p string, perm fs.FileMode) ([]Action, error) {
	missing, err := t.fsys.MissingDirs(p)
	if err != nil {
		return nil, err
	}
	fsys := t.fsys
	acts := make([]Action, 0, len(missing))
	for _, d := range missing {
		if t.mkdirs[d] {
			continue
		}
		if t.mkdirs == nil {
			t.mkdirs = map[string]bool{}
		}
		t.mkdirs[d] = true
		acts = append(acts, Action{
			Step: Step{Kind: KindFile, ID: id, Path: d, File: &FileState{Type: FileAbsent}, Note: "directory created"},
			Do:   func(context.Context) error { return fsys.Mkdir(d, perm) },
		})
	}
	return acts, nil
}

// SetValue returns the action that writes value to kernel file p; original
// is what a revert writes back (the form the file accepts). The file's
// current bytes are read now, under the lock (Step.OriginalRaw).
func (t *Tx) SetValue(id, p, original, value string) (Action, error) {
	raw, err := t.fsys.ReadFile(p)
	if err != nil {
		return Action{}, err
	}
	fsys := t.fsys
	return Action{
		Step: Step{Kind: KindValue, ID: id, Path: path.Clean("/" + p), Original: original, OriginalRaw: raw, New: value},
		Do:   func(context.Context) error { return fsys.WriteString(p, value) },
	}, nil
}

// PlanFunc computes a transaction's actions. Run calls it holding the
// journal directory's lock, so the originals it reads cannot change under
// another gpunode command.
type PlanFunc func(ctx context.Context, tx *Tx) ([]Action, error)

// Result is what Run did.
type Result struct {
	// ID is the transaction ("" when the plan had nothing to do).
	ID string
	// Steps is the number of steps recorded.
	Steps int
	// State is the transaction's final state: committed, rolled-back (the
	// run failed and every change was reverted) or open (reverting failed
	// too; see Error).
	State State
	// Aborted is the report of the revert after a failure.
	Aborted *TxReport
}

// Error is returned by Run when an action (or the journal) failed. Every
// change already made was reverted unless Revert is set; then the
// transaction stays open and Rollback (with WithSkip for a revert that can
// never succeed) finishes it.
type Error struct {
	ID     string
	Err    error
	Revert error
}

func (e *Error) Error() string {
	if e.Revert != nil {
		return fmt.Sprintf("%v; reverting the changes already made ALSO failed: %v; transaction %s stays open: fix the cause and run the rollback again, or skip what cannot be written back with --skip (the original stays in the journal)", e.Err, e.Revert, e.ID)
	}
	return fmt.Sprintf("%v; every change already made was reverted (transaction %s rolled back)", e.Err, e.ID)
}

func (e *Error) Unwrap() error { return e.Err }

// Run is the one way gpunode changes a host. Under the journal directory's
// exclusive lock (taken before anything else is read) it calls plan, and
// then, when plan returned actions, runs them as one transaction:
//
//  1. the transaction is persisted (open, no steps);
//  2. for each action (or batch of adjacent Batch actions) its step is
//     persisted as an intent, Do runs, and the step is persisted as done;
//  3. the transaction is persisted committed.
//
// When an action or a journal write fails, Abort reverts, newest first,
// every step that is done, and restores the failed step (and the intents
// of its batch) only where the host no longer holds its original - a write
// that failed without changing anything is left alone. The transaction
// then ends rolled back, or stays open, with each revert error recorded,
// when a revert could not be written (*Error says which path and value).
//
// Run refuses to start while the directory is unsafe (see CheckDir), holds
// a journal it cannot read, or holds an open transaction of meta.Owner
// with steps (ErrInterrupted: roll it back first); an open one without
// steps changed nothing and is closed. Temporary files of the journal
// itself left by a killed process are removed under the lock.
func Run(ctx context.Context, fsys *hostfs.FS, dir string, meta Meta, plan PlanFunc, opts ...Option) (*Result, error) {
	o := buildOptions(opts)
	if meta.Owner == "" || !kindRE().MatchString(meta.Owner) {
		return nil, fmt.Errorf("journal: owner %q: want a lowercase word", meta.Owner)
	}
	dir = path.Clean("/" + dir)
	if err := ensureDir(fsys, dir); err != nil {
		return nil, err
	}
	lk, err := lockDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	defer lk.Close()
	txs, err := list(fsys, dir)
	if err != nil {
		return nil, err
	}
	seq := 0
	for _, t := range txs {
		if t.err != nil {
			return nil, fmt.Errorf("journal %s: %w; move it out of %s or fix it before changing this host again", t.file, t.err, dir)
		}
		if t.tx.Meta.Owner == meta.Owner && t.tx.State == StateOpen {
			if len(t.tx.Steps) > 0 {
				return nil, interrupted(t)
			}
			// Interrupted before its first step: it changed nothing.
			t.tx.State, t.tx.Ended, t.tx.Reason = StateRolledBack, o.now().UTC(), "interrupted before any change; closed by the next run"
			if err := persistTx(fsys, t.file, t.tx); err != nil {
				return nil, fmt.Errorf("close empty journal %s: %w", t.tx.ID, err)
			}
		}
		seq = max(seq, t.seq)
	}
	if meta.Started.IsZero() {
		meta.Started = o.now().UTC()
	}
	id := fmt.Sprintf("%06d-%s", seq+1, meta.Owner)
	tx := &Tx{fsys: fsys, id: id}
	actions, err := plan(ctx, tx)
	if err != nil {
		return nil, err
	}
	if len(actions) == 0 {
		return &Result{}, nil
	}
	r := &runner{fsys: fsys, file: path.Join(dir, id+ext), o: o,
		tx: Transaction{ID: id, Meta: meta, State: StateOpen, Steps: []Step{}}}
	if err := r.persist(); err != nil {
		// The file may be in place (a failed directory fsync after the
		// rename): it holds no step, remove it.
		_ = fsys.Remove(r.file)
		return nil, fmt.Errorf("journal %s: %w (nothing was changed)", id, err)
	}
	for i := 0; i < len(actions); {
		k := i + 1
		if actions[i].Batch {
			for k < len(actions) && actions[k].Batch {
				k++
			}
		}
		if err := r.runBatch(ctx, actions[i:k]); err != nil {
			return r.abort(ctx, err)
		}
		i = k
	}
	r.tx.State = StateCommitted
	r.tx.Ended = o.now().UTC()
	if err := r.persist(); err != nil {
		r.tx.State = StateOpen
		return r.abort(ctx, fmt.Errorf("commit: %w", err))
	}
	return &Result{ID: id, Steps: len(r.tx.Steps), State: StateCommitted}, nil
}

type runner struct {
	fsys *hostfs.FS
	file string
	o    options
	tx   Transaction
}

func (r *runner) persist() error {
	return persistTx(r.fsys, r.file, &r.tx)
}

// persistTx writes tx to file atomically, through a temporary file whose
// name the next run recognises (and removes) should this process die.
func persistTx(fsys *hostfs.FS, file string, tx *Transaction) error {
	b, err := Encode(tx)
	if err != nil {
		return err
	}
	if err := fsys.WriteFileVia(file, hostfs.TempName(file, "w"), b, fileMode); err != nil {
		return fmt.Errorf("write journal: %w", err)
	}
	return nil
}

func (r *runner) runBatch(ctx context.Context, acts []Action) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	first := len(r.tx.Steps)
	var dos []func(context.Context) error
	for _, a := range acts {
		s := a.Step
		if a.Prepare != nil {
			ps, skip, err := a.Prepare(ctx)
			if err != nil {
				return err
			}
			if skip {
				continue
			}
			s = ps
		}
		if !r.o.kinds.Has(s.Kind) {
			return fmt.Errorf("journal %s: %w %q (register it with Kinds.Register)", r.tx.ID, ErrUnknownKind, s.Kind)
		}
		if a.Do == nil {
			return fmt.Errorf("journal %s: action %s %s has no Do", r.tx.ID, s.Kind, firstNonEmpty(s.Path, s.Target, s.ID))
		}
		if s.Path != "" {
			s.Path = path.Clean("/" + s.Path)
		}
		s.State = StepIntent
		r.tx.Steps = append(r.tx.Steps, s)
		dos = append(dos, a.Do)
	}
	if len(dos) == 0 {
		return nil
	}
	if err := r.tx.validate(); err != nil {
		return fmt.Errorf("journal %s: %w", r.tx.ID, err)
	}
	if err := r.persist(); err != nil {
		return err
	}
	for i, do := range dos {
		s := &r.tx.Steps[first+i]
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := do(ctx); err != nil {
			s.State = StepFailed
			return fmt.Errorf("%s %s: %w", s.Kind, firstNonEmpty(s.Path, s.Target, s.ID), err)
		}
	}
	for i := range dos {
		r.tx.Steps[first+i].State = StepDone
	}
	return r.persist()
}

// abort reverts the run after cause; it finishes even when ctx was
// cancelled (that is often why it aborts).
func (r *runner) abort(ctx context.Context, cause error) (*Result, error) {
	ctx = context.WithoutCancel(ctx)
	rep, err := revertTx(ctx, r.fsys, &r.tx, r.o, r.file, "aborted: "+cause.Error(), nil)
	res := &Result{ID: r.tx.ID, Steps: len(r.tx.Steps), State: r.tx.State, Aborted: &rep}
	return res, &Error{ID: r.tx.ID, Err: cause, Revert: err}
}

// interrupted explains why an open transaction blocks a new one.
func interrupted(t listed) error {
	msg := fmt.Sprintf("%v: transaction %s (%s, started %s) never committed; run the rollback first", ErrInterrupted, t.tx.ID, t.tx.Meta.Command, t.tx.Meta.Started.Format(time.RFC3339))
	for i, s := range t.tx.Steps {
		if s.RevertError != "" {
			msg += fmt.Sprintf("; its last revert failed at step %s:%d (%s): fix that and run the rollback again, or skip the step with --skip %s:%d (its original stays in the journal)", t.tx.ID, i, s.RevertError, t.tx.ID, i)
			break
		}
	}
	return interruptedError{msg}
}

type interruptedError struct{ msg string }

func (e interruptedError) Error() string { return e.msg }
func (e interruptedError) Unwrap() error { return ErrInterrupted }

// CheckDir refuses a journal directory that another user could have
// written to, as sshd's StrictModes does for ~/.ssh: it must be a
// directory owned by root or by the current user, not writable by group or
// others. The error names the path and the command that fixes it.
func CheckDir(fsys *hostfs.FS, dir string) error {
	fi, err := fsys.Stat(dir)
	if err != nil {
		return fmt.Errorf("journal directory %s: %w", dir, err)
	}
	uid := -1
	if st, ok := statUID(fi); ok {
		uid = st
	}
	return checkDirMode(dir, fsys.Path(dir), fi.IsDir(), fi.Mode(), uid, geteuid())
}

func checkDirMode(dir, local string, isDir bool, mode fs.FileMode, uid, euid int) error {
	if !isDir {
		return fmt.Errorf("journal directory %s (%s) is not a directory", dir, local)
	}
	if uid >= 0 && uid != 0 && uid != euid {
		return fmt.Errorf("journal directory %s (%s) is owned by uid %d, not root or you (uid %d): another user could forge or remove journals; fix with: chown %d %s", dir, local, uid, euid, euid, local)
	}
	if mode.Perm()&0o022 != 0 {
		return fmt.Errorf("journal directory %s (%s) is mode %04o: writable by group or others, who could forge or remove journals; fix with: chmod go-w %s", dir, local, mode.Perm(), local)
	}
	return nil
}

// checkFileMode refuses a journal file that another user could have
// written, as checkDirMode does for its directory: owned by root or the
// current user, not writable by group or others (journals are written
// 0600).
func checkFileMode(file, local string, mode fs.FileMode, uid, euid int) error {
	if uid >= 0 && uid != 0 && uid != euid {
		return fmt.Errorf("journal %s (%s) is owned by uid %d, not root or you (uid %d): another user could have forged it; fix with: chown %d %s", file, local, uid, euid, euid, local)
	}
	if mode.Perm()&0o022 != 0 {
		return fmt.Errorf("journal %s (%s) is mode %04o: writable by group or others, who could have forged it; check it, then fix with: chmod go-w %s", file, local, mode.Perm(), local)
	}
	return nil
}

// ensureDir creates the journal directory when missing (mode 0700; its
// missing parents 0755) and checks it (CheckDir).
func ensureDir(fsys *hostfs.FS, dir string) error {
	if _, err := fsys.MkdirAll(path.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("journal directory %s: %w", dir, err)
	}
	if _, err := fsys.MkdirAll(dir, dirMode); err != nil {
		return fmt.Errorf("journal directory %s: %w", dir, err)
	}
	return CheckDir(fsys, dir)
}

// cleanTemps removes temporary files of journal writes left in dir by a
// killed process. The caller holds the lock.
func cleanTemps(fsys *hostfs.FS, dir string) error {
	names, err := fsys.ReadDirNames(dir)
	if err != nil {
		return fmt.Errorf("journal directory: %w", err)
	}
	for _, n := range names {
		if hostfs.IsTempName(n) && strings.Contains(n, ext+".gpunode-tmp-") {
			if err := fsys.Remove(path.Join(dir, n)); err != nil {
				return fmt.Errorf("remove a journal temp file left by a killed gpunode: %w", err)
			}
		}
	}
	return nil
}

var errNotRegular = errors.New("not a regular file")
