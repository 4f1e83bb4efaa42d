// Package journal records every change gpunode makes to a host, before it is
// made, so that the change can be undone byte for byte - even when the
// process that made it was killed half way.
//
// # Model
//
// A journal directory (default /var/lib/gpunode, a host path under --root)
// holds one file per transaction, named "<seq>-<owner>.journal" (seq is a
// zero-padded counter; higher is newer). A transaction is a list of steps;
// each step says what was changed (Kind, Path or Target), what it was
// before (Original, or File for files) and how far it got (State: intent,
// done, failed, reverted, skipped). The file is rewritten atomically - temp
// file in the same directory, fsync, rename, fsync of the directory, mode
// 0600 - at every state change.
//
// # The one transaction loop
//
// Run is the only way gpunode changes a host (tune, irq, gpu, mig, mps):
//
//	res, err := journal.Run(ctx, fsys, dir, journal.Meta{Owner: "tune"},
//		func(ctx context.Context, tx *journal.Tx) ([]journal.Action, error) {
//			// called under the directory's lock: read originals here
//			a, err := tx.SetValue("vm.swappiness", "/proc/sys/vm/swappiness", "60", "0")
//			files, err := tx.WriteFile("sysctl", "/etc/sysctl.d/90-gpunode.conf", data, 0o644)
//			return append([]journal.Action{a}, files...), err
//		}, journal.WithKinds(kinds))
//	rep, err := journal.Rollback(ctx, fsys, dir, journal.WithOwner("tune"), journal.WithKinds(kinds))
//
// Each action's step is persisted as an intent before its Do runs and as
// done after; temporary files are named in the step before they are
// created. A failure reverts what was done (see Run); a kill leaves the
// transaction open, and Rollback restores every recorded step - each revert
// first compares the host with the original and writes only when they
// differ, so reverting an intent that never happened changes nothing and a
// rollback that is itself interrupted is simply run again.
//
// When a revert cannot be written the transaction stays open with the error
// recorded in its step; Rollback retries it, and WithSkip ("ID:N") marks a
// step skipped - its original stays in the journal and is printed - so the
// rest can finish. A node is never left where both apply and rollback
// refuse.
//
// # File format
//
// Line 1 is "gpunode-journal v<Version> sha256:<hex>"; the rest is the
// Transaction as JSON and the checksum covers exactly those bytes. Load
// refuses a file with a bad checksum (ErrCorrupt), another format version
// (ErrVersion), a file that is not regular or is over MaxSize, and says why;
// Rollback refuses to start while any journal in the directory cannot be
// read, rather than undo half a history blindly.
//
// Custom kinds: a RevertFunc registered in a Kinds value (no globals) undoes
// a step of that kind; Run refuses kinds that are not registered, and
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

// MaxSize bounds a journal file: Load refuses (without reading) a larger
// one and Encode refuses to write one.
const MaxSize = hostfs.MaxFileSize

// fileMode is the mode of journal files; dirMode of the journal directory.
const (
	fileMode = 0o600
	dirMode  = 0o700
	ext      = ".journal"
	lockName = ".lock"
)

// RevertFunc undoes one step of a custom kind: it puts s.Original back.
// It must be idempotent (it may run again after an interrupted rollback,
// and on a step whose change never happened).
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

var kindRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9]*([._-][a-z0-9]+)*$`) }) // compiled on first use: package inits run at every start

// Register adds a custom kind. Kinds are lowercase dotted words
// ("gpu.persistence"); registering a kind twice is an error.
func (k *Kinds) Register(kind string, f RevertFunc) error {
	if !kindRE().MatchString(kind) {
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

// Option configures Run, Rollback and List.
type Option func(*options)

type options struct {
	kinds  *Kinds
	owner  string
	now    func() time.Time
	dryRun bool
	skip   []string
	force  bool
}

// WithKinds sets the kind registry (default: NewKinds()).
func WithKinds(k *Kinds) Option { return func(o *options) { o.kinds = k } }

// WithOwner limits Rollback and List to transactions of one owner.
func WithOwner(owner string) Option { return func(o *options) { o.owner = owner } }

// WithClock sets the clock used for timestamps (tests).
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithDryRun makes Rollback report what it would do without doing it.
func WithDryRun(dry bool) Option { return func(o *options) { o.dryRun = dry } }

// WithSkip makes Rollback skip steps ("<transaction id>:<step index>", as
// its errors print them) whose revert cannot be written: each is marked
// skipped in the journal, which keeps its original, and the report prints
// that original so an operator can put it back by hand.
func WithSkip(refs ...string) Option { return func(o *options) { o.skip = append(o.skip, refs...) } }

// WithForce lets Rollback restore generated files an administrator edited
// after gpunode wrote them; the edited version is first kept in the journal
// (Step.Displaced). Without it Rollback refuses to overwrite them.
func WithForce(force bool) Option { return func(o *options) { o.force = force } }

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

// sameState reports whether cur is orig (owners compared only as root, the
// only case where a revert can set them).
func sameState(cur, orig *FileState) bool {
	if cur.Type != orig.Type {
		return false
	}
	if geteuid() == 0 && cur.Type != FileAbsent && (cur.UID != orig.UID || cur.GID != orig.GID) {
		return false
	}
	switch cur.Type {
	case FileRegular:
		return cur.Mode == orig.Mode && string(cur.Data) == string(orig.Data)
	case FileSymlink:
		return cur.Link == orig.Link
	case FileDir:
		return cur.Mode == orig.Mode
	}
	return true
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
	// Ref names the step for --skip ("000003-tune:4").
	Ref      string `json:"ref"`
	Kind     string `json:"kind"`
	ID       string `json:"id,omitempty"`
	Path     string `json:"path,omitempty"`
	Target   string `json:"target,omitempty"`
	Restored string `json:"restored"`
	// Skipped: the step was skipped (WithSkip); Restored is the original
	// that was NOT written back and stays in the journal.
	Skipped bool   `json:"skipped,omitempty"`
	Kept    string `json:"kept,omitempty"`
	Error   string `json:"error,omitempty"`
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

// revertTx reverts tx's steps newest first and records the outcome in file.
// Steps already reverted or skipped are left alone; skip lists step indexes
// to mark skipped. When a revert fails the others are still attempted, the
// error is kept in the step, and the transaction is left open.
func revertTx(ctx context.Context, fsys *hostfs.FS, tx *Transaction, o options, file, reason string, skip map[int]bool) (TxReport, error) {
	rep := TxReport{ID: tx.ID, Owner: tx.Meta.Owner, Command: tx.Meta.Command, Profile: tx.Meta.Profile, Started: tx.Meta.Started, Was: tx.State, Steps: []StepReport{}}
	var errs, skipped []string
	var ferrs []error
	for i := len(tx.Steps) - 1; i >= 0; i-- {
		s := &tx.Steps[i]
		ref := fmt.Sprintf("%s:%d", tx.ID, i)
		sr := StepReport{Ref: ref, Kind: s.Kind, ID: s.ID, Path: s.Path, Target: s.Target, Restored: describe(*s)}
		if s.Displaced != nil {
			sr.Kept = fmt.Sprintf("the edited version (%s) is kept in %s, steps[%d].displaced", describeState(s.Displaced), file, i)
		}
		switch {
		case s.State == StepReverted:
			continue
		case s.State == StepSkipped || skip[i]:
			if !o.dryRun {
				s.State, s.RevertError = StepSkipped, ""
			}
			sr.Skipped = true
			skipped = append(skipped, ref)
			rep.Steps = append(rep.Steps, sr)
			continue
		}
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		if !o.dryRun {
			if err := o.kinds.revert(ctx, fsys, *s); err != nil {
				where := firstNonEmpty(s.Path, s.Target)
				s.RevertError = fmt.Sprintf("could not write back %s to %s: %v", describe(*s), where, err)
				sr.Error = s.RevertError
				errs = append(errs, ref)
				ferrs = append(ferrs, fmt.Errorf("step %s (%s): could not write back %s to %s: %w; fix the cause and run the rollback again, or skip it with --skip %s (the original stays in the journal)", ref, s.Kind, describe(*s), where, err, ref))
			} else {
				s.State, s.RevertError = StepReverted, ""
			}
		}
		rep.Steps = append(rep.Steps, sr)
	}
	if o.dryRun {
		return rep, nil
	}
	if len(errs) > 0 {
		tx.State = StateOpen
		tx.Reason = "revert incomplete (" + strings.Join(errs, ", ") + " failed); " + reason
	} else {
		tx.State = StateRolledBack
		tx.Ended = o.now().UTC()
		tx.Reason = reason
		if len(skipped) > 0 {
			tx.Reason += " (skipped, originals kept here: " + strings.Join(skipped, ", ") + ")"
		}
	}
	if err := persistTx(fsys, file, tx); err != nil {
		ferrs = append(ferrs, fmt.Errorf("record the rollback of %s: %w", tx.ID, err))
	}
	return rep, errors.Join(ferrs...)
}

func describeState(st *FileState) string {
	return describe(Step{Kind: KindFile, File: st})
}

// EditedError is returned by Rollback when generated files were edited
// since gpunode wrote them and WithForce was not given; nothing of that
// transaction was changed.
type EditedError struct {
	ID    string
	Files []string
}

func (e *EditedError) Error() string {
	return fmt.Sprintf("refusing to roll back %s: %s changed since gpunode wrote them (edited by hand?); nothing of %s was changed. Rerun with --force to restore the originals anyway: the edited versions are kept in the journal first", e.ID, strings.Join(e.Files, ", "), e.ID)
}

// edited lists the done file steps of tx whose path no longer holds what
// gpunode wrote (nor the original).
func edited(fsys *hostfs.FS, tx *Transaction) (map[int]*FileState, error) {
	out := map[int]*FileState{}
	for i, s := range tx.Steps {
		if s.Kind != KindFile || s.NewSHA256 == "" || s.File == nil || (s.State != StepDone && s.State != "") {
			continue
		}
		cur, err := Snapshot(fsys, s.Path)
		if err != nil {
			return nil, err
		}
		if cur.Type == FileRegular {
			sum := sha256.Sum256(cur.Data)
			if hex.EncodeToString(sum[:]) == s.NewSHA256 {
				continue
			}
		}
		if sameState(cur, s.File) || cur.Type == FileAbsent {
			continue
		}
		out[i] = cur
	}
	return out, nil
}

// Rollback reverts every open or committed transaction in dir (limited to
// one owner with WithOwner), newest first, and marks each rolled back. It
// refuses to start when any journal in dir cannot be read (corrupted or
// foreign version) or holds a step kind the registry does not know; nothing
// is changed then. It refuses a transaction whose generated files were
// edited since (*EditedError) unless WithForce. A missing directory means
// there is nothing to roll back.
func Rollback(ctx context.Context, fsys *hostfs.FS, dir string, opts ...Option) (Report, error) {
	o := buildOptions(opts)
	dir = path.Clean("/" + dir)
	rep := Report{DryRun: o.dryRun, Transactions: []TxReport{}}
	if gone, err := dirGone(fsys, dir); err != nil || gone {
		return rep, err
	}
	if err := CheckDir(fsys, dir); err != nil {
		return rep, err
	}
	if !o.dryRun {
		lk, err := lockDir(fsys, dir)
		if err != nil {
			return rep, err
		}
		defer lk.Close()
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
	skips := map[string]map[int]bool{}
	for _, ref := range o.skip {
		id, n, ok := strings.Cut(ref, ":")
		i, err := strconv.Atoi(n)
		found := false
		for _, t := range todo {
			found = found || (ok && err == nil && t.tx.ID == id && i >= 0 && i < len(t.tx.Steps))
		}
		if !found {
			return rep, fmt.Errorf("--skip %s: no such step in a transaction to roll back (want <transaction>:<step>, as the rollback error prints it); nothing was changed", ref)
		}
		if skips[id] == nil {
			skips[id] = map[int]bool{}
		}
		skips[id][i] = true
	}
	// Newest first.
	sort.Slice(todo, func(a, b int) bool { return todo[a].seq > todo[b].seq })
	for _, t := range todo {
		ed, err := edited(fsys, t.tx)
		if err != nil {
			return rep, err
		}
		if len(ed) > 0 && !o.force {
			e := &EditedError{ID: t.tx.ID}
			for i := range ed {
				e.Files = append(e.Files, t.tx.Steps[i].Path)
			}
			sort.Strings(e.Files)
			if !o.dryRun {
				return rep, e
			}
		}
		if len(ed) > 0 && o.force && !o.dryRun {
			for i, cur := range ed {
				t.tx.Steps[i].Displaced = cur
			}
			if err := persistTx(fsys, t.file, t.tx); err != nil {
				return rep, fmt.Errorf("keep the edited files of %s in the journal: %w; nothing of it was changed", t.tx.ID, err)
			}
		}
		tr, err := revertTx(ctx, fsys, t.tx, o, t.file, "rollback", skips[t.tx.ID])
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
	if gone, err := dirGone(fsys, dir); err != nil || gone {
		return nil, err
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

// ErrDanglingDir marks a journal directory that is a symbolic link to
// nothing (an unmounted disk, a removed target): its journals, if any,
// cannot be read, so neither "nothing applied" nor "nothing to roll back"
// may be said.
var ErrDanglingDir = errors.New("journal directory is a dangling symbolic link")

// dirGone reports whether the journal directory dir does not exist (there
// is nothing to list or roll back). A symbolic link there whose target is
// missing is ErrDanglingDir, for List (status) and Rollback alike.
func dirGone(fsys *hostfs.FS, dir string) (bool, error) {
	fi, err := fsys.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return false, nil // CheckDir and the listing report the rest
	}
	if _, err := fsys.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		target, _ := fsys.Readlink(dir)
		return false, fmt.Errorf("%w: %s -> %s, which does not exist (an unmounted disk?); its journals, if any, cannot be read: mount or restore the target, or remove the link if nothing was ever applied", ErrDanglingDir, dir, target)
	}
	return false, nil
}

// Load reads and verifies one journal file (a host path). It refuses,
// without reading it, anything but a regular file and a file over MaxSize.
func Load(fsys *hostfs.FS, file string) (*Transaction, error) {
	fi, err := fsys.Lstat(file)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w: %w (%s)", file, ErrCorrupt, errNotRegular, fi.Mode().Type())
	}
	if fi.Size() > MaxSize {
		return nil, fmt.Errorf("%s: %w: %d bytes, over the %d MiB bound of a journal; not read", file, ErrCorrupt, fi.Size(), MaxSize>>20)
	}
	// The file is checked like its directory (CheckDir): a journal
	// another user could have rewritten is not trusted to roll back with.
	uid := -1
	if u, ok := statUID(fi); ok {
		uid = u
	}
	if err := checkFileMode(file, fsys.Path(file), fi.Mode(), uid, geteuid()); err != nil {
		return nil, err
	}
	b, err := fsys.ReadFileNoFollow(file)
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

var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([0-9]{6,})-[a-z0-9._-]+\.journal$`) }) // compiled on first use: package inits run at every start

// maxJournals bounds the files list reads in one directory.
const maxJournals = 100000

func list(fsys *hostfs.FS, dir string) ([]listed, error) {
	names, err := fsys.ReadDirNames(dir)
	if err != nil {
		return nil, fmt.Errorf("journal directory: %w", err)
	}
	if len(names) > maxJournals {
		return nil, fmt.Errorf("journal directory %s: %d entries, more than %d", dir, len(names), maxJournals)
	}
	var out []listed
	for _, n := range names {
		if !strings.HasSuffix(n, ext) || strings.HasPrefix(n, ".") {
			continue
		}
		l := listed{file: path.Join(dir, n)}
		m := nameRE().FindStringSubmatch(n)
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

// lockDir takes the exclusive lock of journal directory dir (the file
// .lock in it, opened through hostfs inside the root) and removes journal
// temp files a killed process left there.
func lockDir(fsys *hostfs.FS, dir string) (*os.File, error) {
	lp := path.Join(dir, lockName)
	f, err := fsys.OpenLock(lp)
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
	if err := cleanTemps(fsys, dir); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// revertValue writes a kernel file's original back - unless the file
// already holds it (a write that failed, or never happened, changed
// nothing and is not rewritten: the file may refuse every write).
func revertValue(_ context.Context, fsys *hostfs.FS, s Step) error {
	if cur, err := fsys.ReadFile(s.Path); err == nil {
		if s.OriginalRaw != nil && string(cur) == string(s.OriginalRaw) {
			return nil
		}
		if s.OriginalRaw == nil && strings.TrimSpace(string(cur)) == strings.TrimSpace(s.Original) {
			return nil
		}
	}
	if s.OriginalRaw != nil && !fsys.IsKernelFile(s.Path) {
		return fsys.WriteString(s.Path, string(s.OriginalRaw))
	}
	return fsys.WriteString(s.Path, s.Original)
}

// revertFile restores a path's original state: it removes the step's
// temporary file (left by a kill), and rewrites the path only when it
// differs from the original.
func revertFile(_ context.Context, fsys *hostfs.FS, s Step) error {
	st := s.File
	tmp := s.Temp
	if tmp == "" {
		tmp = hostfs.TempName(s.Path, "revert")
	}
	if _, err := fsys.Lstat(path.Dir(s.Path)); err == nil {
		if err := fsys.Remove(tmp); err != nil {
			return err
		}
	}
	cur, err := Snapshot(fsys, s.Path)
	if err != nil {
		return err
	}
	if sameState(cur, st) {
		return nil
	}
	switch st.Type {
	case FileAbsent:
		return fsys.Remove(s.Path)
	case FileRegular:
		if cur.Type == FileDir {
			return &fs.PathError{Op: "restore", Path: s.Path, Err: errors.New("a directory is in the way")}
		}
		if cur.Type != FileRegular || cur.Mode != st.Mode || string(cur.Data) != string(st.Data) {
			if err := fsys.WriteFileVia(s.Path, tmp, st.Data, st.Mode); err != nil {
				return err
			}
		}
	case FileSymlink:
		if cur.Type == FileDir {
			return &fs.PathError{Op: "restore", Path: s.Path, Err: errors.New("a directory is in the way")}
		}
		if cur.Type != FileSymlink || cur.Link != st.Link {
			if err := fsys.SymlinkVia(st.Link, s.Path, tmp); err != nil {
				return err
			}
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
	if geteuid() == 0 {
		if err := fsys.Lchown(s.Path, st.UID, st.GID); err != nil {
			return err
		}
	}
	return nil
}

func geteuid() int { return os.Geteuid() }

func statUID(fi fs.FileInfo) (int, bool) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), true
	}
	return 0, false
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
