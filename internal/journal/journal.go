// Package journal records every change gpunode makes to a host, before it is
// made, so that the change can be undone byte for byte - even when the
// process that made it was killed half way.
//
// # Model
//
// A journal directory (default /var/lib/gpunode, a host path under --root)
// holds one file per transaction, named "<seq>-<owner>.journal" (seq is a
// zero-padded counter; higher is newer). A transaction is a list of steps;
// each step says what was changed (Kind, Path or Target) and what it was
// before (Original, or File for files). Steps are persisted - the whole file
// rewritten atomically: temp file in the same directory, fsync, rename, fsync
// of the directory, mode 0600 - before the caller changes anything.
//
// # File format
//
// Line 1 is "gpunode-journal v<Version> sha256:<hex>"; the rest is the
// Transaction as JSON and the checksum covers exactly those bytes. Load
// refuses a file with a bad checksum (ErrCorrupt) or another format version
// (ErrVersion) and says why; Rollback refuses to start while any journal in
// the directory cannot be read, rather than undo half a history blindly.
//
// # Using it
//
//	kinds := journal.NewKinds()                  // built-ins: kernel.value, file
//	kinds.Register("gpu.persistence", revertFn)  // optional custom kinds
//	j, err := journal.Begin(fsys, dir, journal.Meta{Owner: "tune"}, journal.WithKinds(kinds))
//	err = j.SetValue(ctx, "vm.swappiness", "/proc/sys/vm/swappiness", "60", "0")
//	_, err = j.WriteFile(ctx, "sysctl", "/etc/sysctl.d/90-gpunode.conf", data, 0o644)
//	err = j.Do(ctx, journal.Step{Kind: "gpu.persistence", Target: uuid, Original: "0", New: "1"}, apply)
//	err = j.RecordBatch(ctx, steps)              // many steps, one fsync; then make the changes
//	err = j.Commit()                             // or: report, err := j.Abort(ctx, cause)
//	report, err := journal.Rollback(ctx, fsys, dir, journal.WithOwner("tune"), journal.WithKinds(kinds))
//
// Rollback reverts every open (interrupted) or committed transaction of the
// owner, newest first, each step in reverse order, and marks them rolled
// back. Reverting is idempotent (it writes back originals), so a rollback
// that is itself interrupted is simply run again. Begin refuses to start
// while a transaction of the same owner is still open (ErrInterrupted).
//
// Custom kinds: a RevertFunc registered in a Kinds value (no globals) undoes
// a step of that kind; Record refuses kinds that are not registered, and
// Rollback refuses journals holding them.
package journal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gpunode/gpunode/internal/hostfs"
)

// DefaultDir is the default journal directory (a host path under --root).
const DefaultDir = "/var/lib/gpunode"

// fileMode is the mode of journal files; dirMode of the journal directory.
const (
	fileMode = 0o600
	dirMode  = 0o700
	ext      = ".journal"
	lockName = ".lock"
)

// RevertFunc undoes one step of a custom kind: it puts s.Original back.
// It must be idempotent (it may run again after an interrupted rollback).
type RevertFunc func(ctx context.Context, fsys *hostfs.FS, s Step) error

// Kinds maps step kinds to their reverters. The zero value is not usable;
// build one with NewKinds, which registers the built-in kinds.
type Kinds struct {
	m map[string]RevertFunc
}

// NewKinds returns a registry holding the built-in kinds KindValue and
// KindFile.
func NewKinds() *Kinds {
	return &Kinds{m: map[string]RevertFunc{
		KindValue: revertValue,
		KindFile:  revertFile,
	}}
}

var kindRE = regexp.MustCompile(`^[a-z][a-z0-9]*([._-][a-z0-9]+)*$`)

// Register adds a custom kind. Kinds are lowercase dotted words
// ("gpu.persistence"); registering a kind twice is an error.
func (k *Kinds) Register(kind string, f RevertFunc) error {
	if !kindRE.MatchString(kind) {
		return fmt.Errorf("journal kind %q: want lowercase words joined by '.', '-' or '_'", kind)
	}
	if f == nil {
		return fmt.Errorf("journal kind %q: nil reverter", kind)
	}
	if _, dup := k.m[kind]; dup {
		return fmt.Errorf("journal kind %q: already registered", kind)
	}
	k.m[kind] = f
	return nil
}

// Has reports whether kind is registered.
func (k *Kinds) Has(kind string) bool {
	_, ok := k.m[kind]
	return ok
}

func (k *Kinds) revert(ctx context.Context, fsys *hostfs.FS, s Step) error {
	f, ok := k.m[s.Kind]
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownKind, s.Kind)
	}
	return f(ctx, fsys, s)
}

// Option configures Begin, Rollback and List.
type Option func(*options)

type options struct {
	kinds  *Kinds
	owner  string
	now    func() time.Time
	dryRun bool
}

// WithKinds sets the kind registry (default: NewKinds()).
func WithKinds(k *Kinds) Option { return func(o *options) { o.kinds = k } }

// WithOwner limits Rollback and List to transactions of one owner.
func WithOwner(owner string) Option { return func(o *options) { o.owner = owner } }

// WithClock sets the clock used for timestamps (tests).
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithDryRun makes Rollback report what it would do without doing it.
func WithDryRun(dry bool) Option { return func(o *options) { o.dryRun = dry } }

func buildOptions(opts []Option) options {
	o := options{now: time.Now}
	for _, f := range opts {
		f(&o)
	}
	if o.kinds == nil {
		o.kinds = NewKinds()
	}
	return o
}

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

// Snapshot captures the state of host path p (without following a final
// link) so that it can be restored later.
func Snapshot(fsys *hostfs.FS, p string) (*FileState, error) {
	fi, err := fsys.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return &FileState{Type: FileAbsent}, nil
	}
	if err != nil {
		return nil, err
	}
	st := &FileState{Mode: fi.Mode().Perm() | fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.UID, st.GID = int(sys.Uid), int(sys.Gid)
	}
	switch {
	case fi.Mode().IsRegular():
		st.Type = FileRegular
		if st.Data, err = fsys.ReadFileNoFollow(p); err != nil {
			return nil, err
		}
	case fi.Mode()&fs.ModeSymlink != 0:
		st.Type = FileSymlink
		st.Mode = 0
		if st.Link, err = fsys.Readlink(p); err != nil {
			return nil, err
		}
	case fi.IsDir():
		st.Type = FileDir
	default:
		return nil, &fs.PathError{Op: "snapshot", Path: p, Err: fmt.Errorf("unsupported file type %s", fi.Mode().Type())}
	}
	return st, nil
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
	rep, err := revertTx(context.WithoutCancel(ctx), j.fsys, &j.tx, j.opts, j.file, reason)
	return rep, err
}

// Report is the result of a Rollback.
type Report struct {
	DryRun       bool       `json:"dryRun,omitempty"`
	Transactions []TxReport `json:"transactions"`
}

// TxReport is the result of reverting one transaction.
type TxReport struct {
	ID      string       `json:"id"`
	Owner   string       `json:"owner"`
	Command string       `json:"command,omitempty"`
	Profile string       `json:"profile,omitempty"`
	Started time.Time    `json:"started"`
	Was     State        `json:"was"`
	Steps   []StepReport `json:"steps"`
}

// StepReport is one reverted step.
type StepReport struct {
	Kind     string `json:"kind"`
	ID       string `json:"id,omitempty"`
	Path     string `json:"path,omitempty"`
	Target   string `json:"target,omitempty"`
	Restored string `json:"restored"`
	Error    string `json:"error,omitempty"`
}

// describe says what reverting s puts back, for reports.
func describe(s Step) string {
	if s.Kind == KindFile && s.File != nil {
		switch s.File.Type {
		case FileAbsent:
			return "removed (did not exist)"
		case FileSymlink:
			return "symlink -> " + s.File.Link
		case FileDir:
			return fmt.Sprintf("directory %04o", s.File.Mode.Perm())
		default:
			return fmt.Sprintf("%d bytes, mode %04o", len(s.File.Data), s.File.Mode.Perm())
		}
	}
	return strconv.Quote(s.Original)
}

func revertTx(ctx context.Context, fsys *hostfs.FS, tx *Transaction, o options, file, reason string) (TxReport, error) {
	rep := TxReport{ID: tx.ID, Owner: tx.Meta.Owner, Command: tx.Meta.Command, Profile: tx.Meta.Profile, Started: tx.Meta.Started, Was: tx.State, Steps: []StepReport{}}
	var errs []error
	for i := len(tx.Steps) - 1; i >= 0; i-- {
		s := tx.Steps[i]
		sr := StepReport{Kind: s.Kind, ID: s.ID, Path: s.Path, Target: s.Target, Restored: describe(s)}
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		if !o.dryRun {
			if err := o.kinds.revert(ctx, fsys, s); err != nil {
				sr.Error = err.Error()
				errs = append(errs, fmt.Errorf("journal %s step %d (%s %s): %w", tx.ID, i, s.Kind, firstNonEmpty(s.Path, s.Target), err))
			}
		}
		rep.Steps = append(rep.Steps, sr)
	}
	if len(errs) > 0 || o.dryRun {
		return rep, errors.Join(errs...)
	}
	tx.State = StateRolledBack
	tx.Ended = o.now().UTC()
	tx.Reason = reason
	b, err := Encode(tx)
	if err != nil {
		return rep, err
	}
	if err := fsys.WriteFileAtomic(file, b, fileMode); err != nil {
		return rep, fmt.Errorf("mark journal %s rolled back: %w", tx.ID, err)
	}
	return rep, nil
}

// Rollback reverts every open or committed transaction in dir (limited to
// one owner with WithOwner), newest first, and marks each rolled back. It
// refuses to start when any journal in dir cannot be read (corrupted or
// foreign version) or holds a step kind the registry does not know; nothing
// is changed then. A missing directory means there is nothing to roll back.
func Rollback(ctx context.Context, fsys *hostfs.FS, dir string, opts ...Option) (Report, error) {
	o := buildOptions(opts)
	dir = path.Clean("/" + dir)
	rep := Report{DryRun: o.dryRun, Transactions: []TxReport{}}
	if _, err := fsys.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return rep, nil
	}
	var lock *os.File
	if !o.dryRun {
		l, err := lockDir(fsys, dir)
		if err != nil {
			return rep, err
		}
		lock = l
		defer lock.Close()
	}
	txs, err := list(fsys, dir)
	if err != nil {
		return rep, err
	}
	var todo []listed
	for _, t := range txs {
		if t.err != nil {
			return rep, fmt.Errorf("refusing to roll back: journal %s: %w; nothing was changed (inspect the file, or move it out of %s to roll back the others)", t.file, t.err, dir)
		}
		if o.owner != "" && t.tx.Meta.Owner != o.owner {
			continue
		}
		if t.tx.State == StateRolledBack {
			continue
		}
		for i, s := range t.tx.Steps {
			if !o.kinds.Has(s.Kind) {
				return rep, fmt.Errorf("refusing to roll back: journal %s step %d: %w %q (this gpunode cannot revert it); nothing was changed", t.file, i, ErrUnknownKind, s.Kind)
			}
		}
		todo = append(todo, t)
	}
	// Newest first.
	sort.Slice(todo, func(a, b int) bool { return todo[a].seq > todo[b].seq })
	for _, t := range todo {
		tr, err := revertTx(ctx, fsys, t.tx, o, t.file, "rollback")
		rep.Transactions = append(rep.Transactions, tr)
		if err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// Info is one transaction as listed by List.
type Info struct {
	File string       `json:"file"`
	Tx   *Transaction `json:"transaction,omitempty"`
	// Err explains why the file could not be loaded.
	Err error `json:"-"`
}

// List returns every journal in dir, oldest first (limited to one owner with
// WithOwner). Files that fail to load are returned with Err set. A missing
// directory yields an empty list.
func List(fsys *hostfs.FS, dir string, opts ...Option) ([]Info, error) {
	o := buildOptions(opts)
	dir = path.Clean("/" + dir)
	if _, err := fsys.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	txs, err := list(fsys, dir)
	if err != nil {
		return nil, err
	}
	out := make([]Info, 0, len(txs))
	for _, t := range txs {
		if t.err == nil && o.owner != "" && t.tx.Meta.Owner != o.owner {
			continue
		}
		out = append(out, Info{File: t.file, Tx: t.tx, Err: t.err})
	}
	return out, nil
}

// Load reads and verifies one journal file (a host path).
func Load(fsys *hostfs.FS, file string) (*Transaction, error) {
	b, err := fsys.ReadFile(file)
	if err != nil {
		return nil, err
	}
	tx, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if want := strings.TrimSuffix(path.Base(file), ext); tx.ID != want {
		return nil, fmt.Errorf("%s: %w: payload id %q does not match the file name", file, ErrCorrupt, tx.ID)
	}
	return tx, nil
}

type listed struct {
	file string
	seq  int
	tx   *Transaction
	err  error
}

var nameRE = regexp.MustCompile(`^([0-9]{6,})-[a-z0-9._-]+\.journal$`)

func list(fsys *hostfs.FS, dir string) ([]listed, error) {
	names, err := fsys.ReadDirNames(dir)
	if err != nil {
		return nil, fmt.Errorf("journal directory: %w", err)
	}
	var out []listed
	for _, n := range names {
		if !strings.HasSuffix(n, ext) || strings.HasPrefix(n, ".") {
			continue
		}
		l := listed{file: path.Join(dir, n)}
		m := nameRE.FindStringSubmatch(n)
		if m == nil {
			l.err = fmt.Errorf("%w: file name %q is not <seq>-<owner>.journal", ErrCorrupt, n)
		} else {
			l.seq, _ = strconv.Atoi(m[1])
			l.tx, l.err = Load(fsys, l.file)
			if l.err != nil {
				// Load already names the file.
				l.err = unwrapFile(l.err, l.file)
			}
		}
		out = append(out, l)
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].seq < out[b].seq })
	return out, nil
}

// unwrapFile strips the "<file>: " prefix Load adds, since callers name the
// file themselves.
func unwrapFile(err error, file string) error {
	if msg := err.Error(); strings.HasPrefix(msg, file+": ") {
		return prefixless{err, strings.TrimPrefix(msg, file+": ")}
	}
	return err
}

type prefixless struct {
	err error
	msg string
}

func (p prefixless) Error() string { return p.msg }
func (p prefixless) Unwrap() error { return p.err }

func lockDir(fsys *hostfs.FS, dir string) (*os.File, error) {
	lp := path.Join(dir, lockName)
	local := fsys.Path(lp)
	if r, err := fsys.Resolve(lp); err == nil {
		local = fsys.Path(r)
	}
	f, err := os.OpenFile(local, os.O_RDWR|os.O_CREATE, fileMode)
	if err != nil {
		return nil, fmt.Errorf("journal lock %s: %w", lp, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w (%s)", ErrLocked, lp)
		}
		return nil, fmt.Errorf("journal lock %s: %w", lp, err)
	}
	return f, nil
}

func revertValue(_ context.Context, fsys *hostfs.FS, s Step) error {
	if s.OriginalRaw != nil && !fsys.IsKernelFile(s.Path) {
		return fsys.WriteString(s.Path, string(s.OriginalRaw))
	}
	return fsys.WriteString(s.Path, s.Original)
}

func revertFile(_ context.Context, fsys *hostfs.FS, s Step) error {
	st := s.File
	cur, err := Snapshot(fsys, s.Path)
	if err != nil {
		return err
	}
	switch st.Type {
	case FileAbsent:
		if cur.Type == FileAbsent {
			return nil
		}
		return fsys.Remove(s.Path)
	case FileRegular:
		if cur.Type == FileDir {
			return &fs.PathError{Op: "restore", Path: s.Path, Err: errors.New("a directory is in the way")}
		}
		if err := fsys.WriteFileAtomic(s.Path, st.Data, st.Mode); err != nil {
			return err
		}
	case FileSymlink:
		if cur.Type == FileDir {
			return &fs.PathError{Op: "restore", Path: s.Path, Err: errors.New("a directory is in the way")}
		}
		if err := fsys.Symlink(st.Link, s.Path); err != nil {
			return err
		}
	case FileDir:
		switch cur.Type {
		case FileAbsent:
			if _, err := fsys.MkdirAll(s.Path, st.Mode); err != nil {
				return err
			}
		case FileDir:
			if err := fsys.Chmod(s.Path, st.Mode); err != nil {
				return err
			}
		default:
			return &fs.PathError{Op: "restore", Path: s.Path, Err: fmt.Errorf("a %s is in the way of a directory", cur.Type)}
		}
	default:
		return fmt.Errorf("unknown file type %q", st.Type)
	}
	// Owners only matter (and can only be set) when running as root.
	if os.Geteuid() == 0 {
		if err := fsys.Lchown(s.Path, st.UID, st.GID); err != nil {
			return err
		}
	}
	return nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
