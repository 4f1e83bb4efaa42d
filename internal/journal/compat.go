package journal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sync"
	"time"

	"github.com/gpunode/gpunode/internal/hostfs"
)

// The Begin/Journal API below is being replaced by Run (tx.go); it goes
// once every caller has moved.

// Journal is an open transaction. Its methods are safe for use by one
// goroutine at a time (they serialise on a mutex).
type Journal struct {
	mu   sync.Mutex
	fsys *hostfs.FS
	dir  string
	file string
	opts options
	tx   Transaction
	lock *os.File
	done bool
}

// Begin starts a transaction in journal directory dir (a host path; created
// with mode 0700 when missing) and persists it, empty, before returning. It
// takes an exclusive lock on the directory until Commit or Abort, and
// refuses to start (ErrInterrupted) while an earlier transaction of the same
// owner is still open.
func Begin(fsys *hostfs.FS, dir string, meta Meta, opts ...Option) (*Journal, error) {
	o := buildOptions(opts)
	if meta.Owner == "" || !kindRE.MatchString(meta.Owner) {
		return nil, fmt.Errorf("journal: owner %q: want a lowercase word", meta.Owner)
	}
	dir = path.Clean("/" + dir)
	// Missing parents (a bare --root without /var/lib) get the usual 0755;
	// only the journal directory itself is private.
	if _, err := fsys.MkdirAll(path.Dir(dir), 0o755); err != nil {
		return nil, fmt.Errorf("journal directory %s: %w", dir, err)
	}
	if _, err := fsys.MkdirAll(dir, dirMode); err != nil {
		return nil, fmt.Errorf("journal directory %s: %w", dir, err)
	}
	lock, err := lockDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			lock.Close()
		}
	}()
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
			return nil, fmt.Errorf("%w: transaction %s (%s, started %s) never committed; run the rollback first", ErrInterrupted, t.tx.ID, t.tx.Meta.Command, t.tx.Meta.Started.Format(time.RFC3339))
		}
		if t.seq > seq {
			seq = t.seq
		}
	}
	if meta.Started.IsZero() {
		meta.Started = o.now().UTC()
	}
	id := fmt.Sprintf("%06d-%s", seq+1, meta.Owner)
	j := &Journal{
		fsys: fsys, dir: dir, file: path.Join(dir, id+ext), opts: o, lock: lock,
		tx: Transaction{ID: id, Meta: meta, State: StateOpen, Steps: []Step{}},
	}
	if err := j.persist(); err != nil {
		return nil, err
	}
	ok = true
	return j, nil
}

// ID returns the transaction id ("000042-tune").
func (j *Journal) ID() string { return j.tx.ID }

// Len returns the number of recorded steps.
func (j *Journal) Len() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.tx.Steps)
}

// Steps returns a copy of the recorded steps.
func (j *Journal) Steps() []Step {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]Step(nil), j.tx.Steps...)
}

func (j *Journal) persist() error {
	b, err := Encode(&j.tx)
	if err != nil {
		return err
	}
	if err := j.fsys.WriteFileAtomic(j.file, b, fileMode); err != nil {
		return fmt.Errorf("write journal: %w", err)
	}
	return nil
}

// Record persists step s. The caller makes the change only after Record
// returns nil. The step's kind must be registered.
func (j *Journal) Record(ctx context.Context, s Step) error {
	return j.RecordBatch(ctx, []Step{s})
}

// RecordBatch persists several steps with one atomic write (one fsync), for
// callers about to make many small changes (a value on every CPU). The
// caller makes the changes only after RecordBatch returns nil; reverting a
// recorded step that was never applied writes back the value that is
// already there, which is harmless.
func (j *Journal) RecordBatch(ctx context.Context, steps []Step) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.done {
		return fmt.Errorf("journal %s: already %s", j.tx.ID, j.tx.State)
	}
	tmp := j.tx
	tmp.Steps = append([]Step(nil), j.tx.Steps...)
	for _, s := range steps {
		if !j.opts.kinds.Has(s.Kind) {
			return fmt.Errorf("journal %s: %w %q (register it with Kinds.Register)", j.tx.ID, ErrUnknownKind, s.Kind)
		}
		if s.Path != "" {
			s.Path = path.Clean("/" + s.Path)
		}
		tmp.Steps = append(tmp.Steps, s)
	}
	if err := tmp.validate(); err != nil {
		return fmt.Errorf("journal %s: %w", j.tx.ID, err)
	}
	prev := j.tx.Steps
	j.tx.Steps = tmp.Steps
	if err := j.persist(); err != nil {
		j.tx.Steps = prev
		return err
	}
	return nil
}

// Do records s and then runs apply. When apply fails the step stays
// recorded (reverting it writes back the original, which is harmless when
// nothing changed); the caller normally calls Abort.
func (j *Journal) Do(ctx context.Context, s Step, apply func(ctx context.Context) error) error {
	if err := j.Record(ctx, s); err != nil {
		return err
	}
	if err := apply(ctx); err != nil {
		return fmt.Errorf("%s %s: %w", s.Kind, firstNonEmpty(s.Path, s.Target, s.ID), err)
	}
	return nil
}

// SetValue records and performs a kernel-file write: original is the value
// to write back on revert (in the form the file accepts), value the new one.
// The file's current bytes are kept too (Step.OriginalRaw).
func (j *Journal) SetValue(ctx context.Context, id, p, original, value string) error {
	raw, err := j.fsys.ReadFile(p)
	if err != nil {
		return err
	}
	return j.Do(ctx, Step{Kind: KindValue, ID: id, Path: p, Original: original, OriginalRaw: raw, New: value}, func(context.Context) error {
		return j.fsys.WriteString(p, value)
	})
}

// WriteFile records the original state of p and replaces it atomically with
// data and mode perm, creating (and journaling) missing parent directories.
// When p already holds exactly data with mode perm nothing is recorded or
// written and changed is false.
func (j *Journal) WriteFile(ctx context.Context, id, p string, data []byte, perm fs.FileMode) (changed bool, err error) {
	orig, err := Snapshot(j.fsys, p)
	if err != nil {
		return false, err
	}
	if orig.Type == FileRegular && orig.Mode == perm && string(orig.Data) == string(data) {
		return false, nil
	}
	if err := j.mkdirParents(ctx, id, path.Dir(path.Clean("/"+p))); err != nil {
		return false, err
	}
	sum := sha256.Sum256(data)
	s := Step{Kind: KindFile, ID: id, Path: p, File: orig, NewSHA256: hex.EncodeToString(sum[:])}
	err = j.Do(ctx, s, func(context.Context) error { return j.fsys.WriteFileAtomic(p, data, perm) })
	return err == nil, err
}

// RemoveFile records the original state of p and removes it. Removing a
// missing path records nothing.
func (j *Journal) RemoveFile(ctx context.Context, id, p string) (changed bool, err error) {
	orig, err := Snapshot(j.fsys, p)
	if err != nil {
		return false, err
	}
	if orig.Type == FileAbsent {
		return false, nil
	}
	err = j.Do(ctx, Step{Kind: KindFile, ID: id, Path: p, File: orig}, func(context.Context) error { return j.fsys.Remove(p) })
	return err == nil, err
}

// Symlink records the original state of p and makes it a link to target.
func (j *Journal) Symlink(ctx context.Context, id, target, p string) (changed bool, err error) {
	orig, err := Snapshot(j.fsys, p)
	if err != nil {
		return false, err
	}
	if orig.Type == FileSymlink && orig.Link == target {
		return false, nil
	}
	if err := j.mkdirParents(ctx, id, path.Dir(path.Clean("/"+p))); err != nil {
		return false, err
	}
	err = j.Do(ctx, Step{Kind: KindFile, ID: id, Path: p, File: orig, New: target}, func(context.Context) error { return j.fsys.Symlink(target, p) })
	return err == nil, err
}

// MkdirAll creates directory p and its missing parents with mode perm,
// recording each directory (as originally absent) before creating it.
func (j *Journal) MkdirAll(ctx context.Context, id, p string, perm fs.FileMode) error {
	missing, err := j.fsys.MissingDirs(p)
	if err != nil {
		return err
	}
	for _, d := range missing {
		err := j.Do(ctx, Step{Kind: KindFile, ID: id, Path: d, File: &FileState{Type: FileAbsent}, Note: "directory created"}, func(context.Context) error {
			_, err := j.fsys.MkdirAll(d, perm)
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (j *Journal) mkdirParents(ctx context.Context, id, dir string) error {
	return j.MkdirAll(ctx, id, dir, 0o755)
}

// Commit marks the transaction committed and releases the directory lock.
func (j *Journal) Commit() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.done {
		return fmt.Errorf("journal %s: already %s", j.tx.ID, j.tx.State)
	}
	j.tx.State = StateCommitted
	j.tx.Ended = j.opts.now().UTC()
	if err := j.persist(); err != nil {
		j.tx.State = StateOpen
		return err
	}
	j.done = true
	j.lock.Close()
	return nil
}

// Abort reverts every recorded step in reverse order (after a failure part
// way), marks the transaction rolled back with cause as the reason, and
// releases the lock. When a revert fails the transaction stays open so that
// the next Rollback retries it.
func (j *Journal) Abort(ctx context.Context, cause error) (TxReport, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.done {
		return TxReport{}, fmt.Errorf("journal %s: already %s", j.tx.ID, j.tx.State)
	}
	defer j.lock.Close()
	j.done = true
	reason := "aborted"
	if cause != nil {
		reason = "aborted: " + cause.Error()
	}
	// Abort must finish even when the caller's context was cancelled (that
	// is often why it aborts).
	rep, err := revertTx(context.WithoutCancel(ctx), j.fsys, &j.tx, j.opts, j.file, reason, nil)
	return rep, err
}
