package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"golang.org/x/sys/unix"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/journal/journaltest"
)

const stateDir = "/var/lib/gpunode"

// newHost builds a small host tree with kernel-like files, a config file, a
// symlink and a directory.
func newHost(t *testing.T) (*hostfs.FS, string) {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"proc/sys/vm/swappiness":                     "60\n",
		"proc/sys/vm/dirty_ratio":                    "20\n",
		"sys/kernel/mm/transparent_hugepage/enabled": "always [madvise] never\n",
		"etc/sysctl.conf":                            "# stock\nvm.swappiness = 60\n",
		"etc/security/limits.conf":                   "# limits\n",
	}
	for p, c := range files {
		lp := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(lp), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(lp, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(root, "etc/security/limits.conf"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/sysctl.conf", filepath.Join(root, "etc/link.conf")); err != nil {
		t.Fatal(err)
	}
	fsys, err := hostfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	return fsys, root
}

func snap(t *testing.T, root string) journaltest.Tree {
	t.Helper()
	tr, err := journaltest.Snapshot(root, "var")
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func assertSame(t *testing.T, want journaltest.Tree, root string) {
	t.Helper()
	if d := journaltest.Diff(want, snap(t, root)); len(d) > 0 {
		t.Fatalf("tree differs from the original:\n%s", strings.Join(d, "\n"))
	}
}

var fixedClock = WithClock(func() time.Time { return time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC) })

// allActions is one change of every built-in kind.
func allActions(t *testing.T, tx *Tx) []Action {
	t.Helper()
	var out []Action
	add := func(a []Action, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, a...)
	}
	one := func(a Action, err error) ([]Action, error) { return []Action{a}, err }
	add(one(tx.SetValue("vm.swappiness", "/proc/sys/vm/swappiness", "60", "0")))
	add(one(tx.SetValue("thp", "/sys/kernel/mm/transparent_hugepage/enabled", "madvise", "always")))
	add(tx.WriteFile("sysctl", "/etc/sysctl.d/90-gpunode.conf", []byte("vm.swappiness = 0\n"), 0o644))
	add(tx.WriteFile("limits", "/etc/security/limits.conf", []byte("replaced\n"), 0o600))
	add(tx.Symlink("link", "/etc/sysctl.d/90-gpunode.conf", "/etc/link.conf"))
	add(tx.RemoveFile("rm", "/etc/sysctl.conf"))
	add(tx.MkdirAll("dir", "/etc/systemd/system/gpunode.d", 0o755))
	return out
}

func plan(acts func(*Tx) []Action) PlanFunc {
	return func(_ context.Context, tx *Tx) ([]Action, error) { return acts(tx), nil }
}

func TestRunCommitRollbackRestoresTree(t *testing.T) {
	ctx := context.Background()
	fsys, root := newHost(t)
	orig := snap(t, root)
	res, err := Run(ctx, fsys, stateDir, Meta{Owner: "tune", Command: "test"}, plan(func(tx *Tx) []Action { return allActions(t, tx) }), fixedClock)
	if err != nil {
		t.Fatal(err)
	}
	if res.State != StateCommitted || res.ID != "000001-tune" || res.Steps < 8 {
		t.Fatalf("Run = %+v", res)
	}
	if d := journaltest.Diff(orig, snap(t, root)); len(d) == 0 {
		t.Fatal("Run changed nothing")
	}
	// Nothing left to do: no journal at all.
	res2, err := Run(ctx, fsys, stateDir, Meta{Owner: "tune"}, plan(func(*Tx) []Action { return nil }))
	if err != nil || res2.ID != "" {
		t.Fatalf("empty Run = %+v, %v", res2, err)
	}
	rep, err := Rollback(ctx, fsys, stateDir, WithOwner("tune"))
	if err != nil || len(rep.Transactions) != 1 {
		t.Fatalf("Rollback = %+v, %v", rep, err)
	}
	assertSame(t, orig, root)
	infos, _ := List(fsys, stateDir)
	if len(infos) != 1 || infos[0].Tx.State != StateRolledBack {
		t.Fatalf("after rollback: %+v", infos)
	}
	for _, s := range infos[0].Tx.Steps {
		if s.State != StepReverted {
			t.Errorf("step %s %s: state %s after rollback", s.Kind, s.Path, s.State)
		}
	}
	// Rolling back again changes nothing.
	if rep, err := Rollback(ctx, fsys, stateDir); err != nil || len(rep.Transactions) != 0 {
		t.Fatalf("second Rollback = %+v, %v", rep, err)
	}
}

// TestRunOrder: each step is persisted as an intent before its change and
// as done after it; a batch is recorded with one journal write.
func TestRunOrder(t *testing.T) {
	ctx := context.Background()
	fsys, _ := newHost(t)
	file := stateDir + "/000001-tune.journal"
	var seen []string
	check := func(i int, want ...StepState) func(context.Context) error {
		return func(context.Context) error {
			tx, err := Load(fsys, file)
			if err != nil {
				return err
			}
			var got []StepState
			for _, s := range tx.Steps {
				got = append(got, s.State)
			}
			seen = append(seen, fmt.Sprint(i, got))
			if fmt.Sprint(got) != fmt.Sprint(want) {
				return fmt.Errorf("action %d sees journal states %v, want %v", i, got, want)
			}
			return nil
		}
	}
	step := func(p string) Step { return Step{Kind: KindValue, Path: p, Original: "x"} }
	fl := &hostfs.Faults{}
	res, err := Run(ctx, fsys.WithFaults(fl), stateDir, Meta{Owner: "tune"}, plan(func(*Tx) []Action {
		return []Action{
			{Step: step("/a"), Do: check(0, StepIntent)},
			{Step: step("/b"), Do: check(1, StepDone, StepIntent, StepIntent), Batch: true},
			{Step: step("/c"), Do: check(2, StepDone, StepIntent, StepIntent), Batch: true},
			{Step: step("/d"), Do: check(3, StepDone, StepDone, StepDone, StepIntent)},
		}
	}))
	if err != nil {
		t.Fatal(err, seen)
	}
	tx, _ := Load(fsys, file)
	if tx.State != StateCommitted || len(tx.Steps) != 4 {
		t.Fatalf("final %+v", tx)
	}
	for _, s := range tx.Steps {
		if s.State != StepDone {
			t.Fatalf("step %s: %s after commit", s.Path, s.State)
		}
	}
	// Journal writes: begin, intent a, done a, intents b+c, dones b+c,
	// intent d, done d, commit = 8 renames of the journal.
	renames := 0
	for _, l := range fl.Log() {
		if strings.Contains(l, " rename "+file) {
			renames++
		}
	}
	if renames != 8 || res.Steps != 4 {
		t.Fatalf("%d journal writes, want 8:\n%s", renames, strings.Join(fl.Log(), "\n"))
	}
}

// TestAbortRevertsOnlyWhatWasDone: a failing change is not "reverted" by
// writing a file that refuses writes (defect 2: Abort rewrote the failed
// step's original; when that write failed too the transaction stayed open
// and both apply and rollback refused for good).
func TestAbortRevertsOnlyWhatWasDone(t *testing.T) {
	ctx := context.Background()
	fsys, root := newHost(t)
	orig := snap(t, root)
	// /proc/sys/vm/dirty_ratio refuses every write (like chattr +i or a
	// read-only /proc/sys in a container).
	fl := &hostfs.Faults{Hook: func(_ int, op hostfs.Op, p string) error {
		if p == "/proc/sys/vm/dirty_ratio" && op == hostfs.OpOpenWrite {
			return syscall.EPERM
		}
		return nil
	}}
	ffs := fsys.WithFaults(fl)
	res, err := Run(ctx, ffs, stateDir, Meta{Owner: "tune"}, plan(func(tx *Tx) []Action {
		a, err := tx.SetValue("a", "/proc/sys/vm/swappiness", "60", "0")
		if err != nil {
			t.Fatal(err)
		}
		b, err := tx.SetValue("b", "/proc/sys/vm/dirty_ratio", "20", "5")
		if err != nil {
			t.Fatal(err)
		}
		c, err := tx.WriteFile("c", "/etc/sysctl.d/90-gpunode.conf", []byte("x\n"), 0o644)
		if err != nil {
			t.Fatal(err)
		}
		return append([]Action{a, b}, c...)
	}))
	var je *Error
	if !errors.As(err, &je) || je.Revert != nil || !errors.Is(err, syscall.EPERM) {
		t.Fatalf("Run = %v, want an *Error with a clean revert", err)
	}
	if res.State != StateRolledBack {
		t.Fatalf("state %s, want rolled-back", res.State)
	}
	assertSame(t, orig, root)
	tx, _ := Load(fsys, stateDir+"/"+res.ID+".journal")
	if len(tx.Steps) != 2 || tx.Steps[0].State != StepReverted || tx.Steps[1].State != StepReverted {
		t.Fatalf("steps %+v", tx.Steps)
	}
	// Neither apply nor rollback refuses afterwards.
	if _, err := Rollback(ctx, ffs, stateDir); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(ctx, ffs, stateDir, Meta{Owner: "tune"}, plan(func(tx *Tx) []Action {
		a, _ := tx.SetValue("a", "/proc/sys/vm/swappiness", "60", "1")
		return []Action{a}
	})); err != nil {
		t.Fatal(err)
	}
}

// TestAbortImmutableKnob is TestAbortRevertsOnlyWhatWasDone with a real
// immutable file (chattr +i; root on a filesystem that supports it).
func TestAbortImmutableKnob(t *testing.T) {
	ctx := context.Background()
	fsys, root := newHost(t)
	orig := snap(t, root)
	setImmutable(t, filepath.Join(root, "proc/sys/vm/dirty_ratio"))
	res, err := Run(ctx, fsys, stateDir, Meta{Owner: "tune"}, plan(func(tx *Tx) []Action {
		a, _ := tx.SetValue("a", "/proc/sys/vm/swappiness", "60", "0")
		b, _ := tx.SetValue("b", "/proc/sys/vm/dirty_ratio", "20", "5")
		return []Action{a, b}
	}))
	var je *Error
	if !errors.As(err, &je) || je.Revert != nil || res.State != StateRolledBack {
		t.Fatalf("Run = %+v, %v; want a clean abort", res, err)
	}
	assertSame(t, orig, root)
	if _, err := Rollback(ctx, fsys, stateDir); err != nil {
		t.Fatalf("rollback after the abort: %v", err)
	}
}

func setImmutable(t *testing.T, p string) {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	flags, err := unix.IoctlGetInt(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err == nil {
		err = unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, flags|fsImmutableFL)
	}
	if err != nil {
		// A skip that CI would hide: .ci/run (as root) sets the switch.
		if os.Getenv("GPUNODE_REQUIRE_CHATTR") != "" {
			t.Fatalf("GPUNODE_REQUIRE_CHATTR: cannot make %s immutable: %v", p, err)
		}
		t.Skipf("cannot make %s immutable here: %v", p, err)
	}
	t.Cleanup(func() {
		f, err := os.Open(p)
		if err != nil {
			return
		}
		defer f.Close()
		_ = unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, flags)
	})
}

// TestRevertFailure: a done change whose revert cannot be written leaves the
// transaction open with the exact path and value; apply refuses and says
// how to go on; rollback retries once the cause is fixed, or skips the step
// (keeping its original in the journal and printing it).
func TestRevertFailure(t *testing.T) {
	ctx := context.Background()
	for _, way := range []string{"retry", "skip"} {
		t.Run(way, func(t *testing.T) {
			fsys, root := newHost(t)
			orig := snap(t, root)
			res, err := Run(ctx, fsys, stateDir, Meta{Owner: "tune"}, plan(func(tx *Tx) []Action {
				a, _ := tx.SetValue("a", "/proc/sys/vm/swappiness", "60\n", "0")
				b, _ := tx.SetValue("b", "/proc/sys/vm/dirty_ratio", "20\n", "5")
				return []Action{a, b}
			}))
			if err != nil {
				t.Fatal(err)
			}
			// Now swappiness refuses writes (made immutable after apply).
			broken := true
			ffs := fsys.WithFaults(&hostfs.Faults{Hook: func(_ int, op hostfs.Op, p string) error {
				if broken && p == "/proc/sys/vm/swappiness" && op == hostfs.OpOpenWrite {
					return syscall.EPERM
				}
				return nil
			}})
			_, err = Rollback(ctx, ffs, stateDir)
			ref := res.ID + ":0"
			if err == nil || !strings.Contains(err.Error(), "/proc/sys/vm/swappiness") || !strings.Contains(err.Error(), `"60\n"`) || !strings.Contains(err.Error(), "--skip "+ref) {
				t.Fatalf("Rollback = %v; want the path, the value and the way forward", err)
			}
			// The other step was reverted; the transaction is open.
			if got, _ := fsys.ReadString("/proc/sys/vm/dirty_ratio"); got != "20" {
				t.Fatalf("dirty_ratio = %q", got)
			}
			tx, _ := Load(fsys, stateDir+"/"+res.ID+".journal")
			if tx.State != StateOpen || tx.Steps[0].RevertError == "" || tx.Steps[1].State != StepReverted {
				t.Fatalf("journal after a failed revert: %+v", tx)
			}
			_, err = Run(ctx, ffs, stateDir, Meta{Owner: "tune"}, plan(func(*Tx) []Action { return nil }))
			if !errors.Is(err, ErrInterrupted) || !strings.Contains(err.Error(), "--skip "+ref) {
				t.Fatalf("Run after a failed revert = %v", err)
			}
			switch way {
			case "retry":
				broken = false
				if _, err := Rollback(ctx, ffs, stateDir); err != nil {
					t.Fatal(err)
				}
				assertSame(t, orig, root)
			case "skip":
				if _, err := Rollback(ctx, ffs, stateDir, WithSkip("nope:1")); err == nil {
					t.Fatal("unknown --skip ref accepted")
				}
				rep, err := Rollback(ctx, ffs, stateDir, WithSkip(ref))
				if err != nil {
					t.Fatal(err)
				}
				sr := rep.Transactions[0].Steps
				if len(sr) != 1 || !sr[0].Skipped || sr[0].Restored != `"60\n"` || sr[0].Path != "/proc/sys/vm/swappiness" {
					t.Fatalf("skip report %+v", sr)
				}
				tx, _ := Load(fsys, stateDir+"/"+res.ID+".journal")
				if tx.State != StateRolledBack || tx.Steps[0].State != StepSkipped || tx.Steps[0].Original != "60\n" || !strings.Contains(tx.Reason, ref) {
					t.Fatalf("journal after skip: %+v", tx)
				}
			}
			// The node is usable again.
			if _, err := Run(ctx, fsys, stateDir, Meta{Owner: "tune"}, plan(func(*Tx) []Action { return nil })); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestFaultEveryOperation fails each write-side operation of a Run in turn
// (with an errno); every time the tree ends identical to the original
// after at most one Rollback, and the journal is never left unreadable.
func TestFaultEveryOperation(t *testing.T) {
	ctx := context.Background()
	fsys, root := newHost(t)
	orig := snap(t, root)
	nosync := fsys.WithFaults(&hostfs.Faults{NoSync: true})
	count := &hostfs.Faults{NoSync: true}
	if _, err := Run(ctx, fsys.WithFaults(count), stateDir, Meta{Owner: "tune"}, plan(func(tx *Tx) []Action { return allActions(t, tx) })); err != nil {
		t.Fatal(err)
	}
	if _, err := Rollback(ctx, nosync, stateDir); err != nil {
		t.Fatal(err)
	}
	n := count.Count()
	if n < 100 {
		t.Fatalf("only %d operations", n)
	}
	clean := 0
	for k := 1; k <= n; k++ {
		fl := &hostfs.Faults{At: k, Err: syscall.ENOSPC, NoSync: true}
		_, err := Run(ctx, fsys.WithFaults(fl), stateDir, Meta{Owner: "tune"}, plan(func(tx *Tx) []Action { return allActions(t, tx) }))
		if err == nil {
			// The fault hit the last directory fsync of the commit after
			// the rename: the transaction is committed.
			if _, err := Rollback(ctx, nosync, stateDir); err != nil {
				t.Fatal(err)
			}
		} else {
			var je *Error
			if errors.As(err, &je) && je.Revert == nil {
				clean++
			}
			if _, err := Rollback(ctx, nosync, stateDir); err != nil {
				t.Fatalf("k=%d (%s): rollback after the fault: %v", k, fl.Log()[k-1], err)
			}
		}
		if d := journaltest.Diff(orig, snap(t, root)); len(d) > 0 {
			t.Fatalf("k=%d (%s): tree differs:\n%s", k, fl.Log()[k-1], strings.Join(d, "\n"))
		}
		infos, err := List(fsys, stateDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range infos {
			if in.Err != nil || in.Tx.State == StateOpen {
				t.Fatalf("k=%d: journal %s: %v %v", k, in.File, in.Err, in.Tx)
			}
			// Keep the directory small: every Run loads every journal.
			if err := os.Remove(fsys.Path(in.File)); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("%d faults, %d clean aborts (the rest failed before the transaction began or at its last fsync)", n, clean)
}

// TestTempFilesRemoved (defect 3): a temp file left by a kill in a
// directory the transaction created is removed by the rollback, which then
// removes the directory; journal temp files are removed by the next run.
func TestTempFilesRemoved(t *testing.T) {
	ctx := context.Background()
	fsys, root := newHost(t)
	orig := snap(t, root)
	// Kill at the rename of the new file: its temp file is left behind.
	var stop bool
	fl := &hostfs.Faults{Hook: func(_ int, op hostfs.Op, p string) error {
		if op == hostfs.OpRename && p == "/etc/new.d/gpunode.conf" {
			stop = true
			return errKilled
		}
		return nil
	}}
	r := &runner{fsys: fsys.WithFaults(fl), file: stateDir + "/000001-tune.journal", o: buildOptions(nil),
		tx: Transaction{ID: "000001-tune", Meta: Meta{Owner: "tune"}, State: StateOpen}}
	if err := ensureDir(fsys, stateDir); err != nil {
		t.Fatal(err)
	}
	tx := &Tx{fsys: fsys.WithFaults(fl), id: "000001-tune"}
	acts, err := tx.WriteFile("x", "/etc/new.d/gpunode.conf", []byte("x\n"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range acts {
		if err := r.runBatch(ctx, []Action{a}); err != nil {
			break // "killed": no abort runs
		}
	}
	if !stop {
		t.Fatal("never reached the rename")
	}
	temp := filepath.Join(root, "etc/new.d/.gpunode.conf.gpunode-tmp-000001-tune-1")
	if _, err := os.Lstat(temp); err != nil {
		// WriteFileVia removes its temp on error; put it back as a kill leaves it.
		if err := os.WriteFile(temp, []byte("half"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	jtemp := filepath.Join(root, "var/lib/gpunode/.000001-tune.journal.gpunode-tmp-w")
	if err := os.WriteFile(jtemp, []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Rollback(ctx, fsys, stateDir); err != nil {
		t.Fatalf("rollback with a temp file left: %v", err)
	}
	assertSame(t, orig, root)
	if _, err := os.Lstat(jtemp); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("journal temp file still there: %v", err)
	}
}

var errKilled = errors.New("killed")

// TestChecksumCatchesFlippedValue: a byte changed inside a JSON value (the
// payload stays valid JSON) is caught by the checksum, not by the parser.
func TestChecksumCatchesFlippedValue(t *testing.T) {
	tx := &Transaction{ID: "000001-tune", Meta: Meta{Owner: "tune"}, State: StateCommitted,
		Steps: []Step{{Kind: KindValue, Path: "/proc/sys/vm/swappiness", Original: "60", New: "0", State: StepDone}}}
	b, err := Encode(tx)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte(`"original": "60"`))
	if i < 0 {
		t.Fatalf("no original in %s", b)
	}
	bad := bytes.Clone(b)
	bad[i+len(`"original": "6`)] = '1' // "60" -> "61"
	_, payload, _ := bytes.Cut(bad, []byte("\n"))
	if !json.Valid(payload) {
		t.Fatal("the flipped payload is not valid JSON: the test would not test the checksum")
	}
	_, err = Decode(bad)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("Decode of a flipped value = %v, want a checksum mismatch", err)
	}
	// The header's checksum itself flipped.
	bad = bytes.Clone(b)
	bad[bytes.IndexByte(b, ':')+1] ^= 1
	if _, err := Decode(bad); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("Decode with a flipped header = %v", err)
	}
	// Version 1 files (no step states) still load.
	v1 := bytes.Replace(b, []byte(" v2 "), []byte(" v1 "), 1)
	if _, err := Decode(v1); err != nil {
		t.Fatalf("v1: %v", err)
	}
}

// TestLoadBounds: a journal over MaxSize is refused without being read, and
// a FIFO (or link) in place of a journal is refused without blocking.
func TestLoadBounds(t *testing.T) {
	fsys, root := newHost(t)
	if err := ensureDir(fsys, stateDir); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(root, "var/lib/gpunode/000001-tune.journal")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(65 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = Load(fsys, stateDir+"/000001-tune.journal")
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "not read") {
		t.Fatalf("Load of a 65 MiB journal = %v", err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "var/lib/gpunode/000002-tune.journal"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(fsys, stateDir+"/000002-tune.journal"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Load of a FIFO = %v", err)
	}
	if _, err := Rollback(context.Background(), fsys, stateDir); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Fatalf("Rollback next to them = %v", err)
	}
}

// TestCheckDir: a journal directory writable by group/others, or owned by
// another user, is refused with the path and the fix.
func TestCheckDir(t *testing.T) {
	ctx := context.Background()
	fsys, root := newHost(t)
	if err := ensureDir(fsys, stateDir); err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(root, "var/lib/gpunode")
	noop := plan(func(tx *Tx) []Action {
		a, _ := tx.SetValue("a", "/proc/sys/vm/swappiness", "60", "1")
		return []Action{a}
	})
	for _, mode := range []fs.FileMode{0o777, 0o720, 0o702} {
		if err := os.Chmod(local, mode); err != nil {
			t.Fatal(err)
		}
		_, err := Run(ctx, fsys, stateDir, Meta{Owner: "tune"}, noop)
		if err == nil || !strings.Contains(err.Error(), local) || !strings.Contains(err.Error(), "chmod go-w "+local) {
			t.Fatalf("mode %04o: Run = %v", mode, err)
		}
		if _, err := Rollback(ctx, fsys, stateDir); err == nil {
			t.Fatalf("mode %04o: Rollback accepted the directory", mode)
		}
	}
	if err := os.Chmod(local, 0o700); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(local, 1000, 1000); err != nil {
			t.Fatal(err)
		}
		_, err := Run(ctx, fsys, stateDir, Meta{Owner: "tune"}, noop)
		if err == nil || !strings.Contains(err.Error(), "uid 1000") || !strings.Contains(err.Error(), "chown 0 "+local) {
			t.Fatalf("foreign owner: Run = %v", err)
		}
		if err := os.Chown(local, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Run(ctx, fsys, stateDir, Meta{Owner: "tune"}, noop); err != nil {
		t.Fatal(err)
	}
	// The pure check, for owners a non-root test cannot set.
	if err := checkDirMode("/d", "/r/d", true, 0o700, 1000, 1001); err == nil {
		t.Error("uid 1000 accepted for euid 1001")
	}
	if err := checkDirMode("/d", "/r/d", true, 0o755, 1001, 1001); err != nil {
		t.Errorf("own 0755 directory refused: %v", err)
	}
	if err := checkDirMode("/d", "/r/d", false, 0o700, 0, 0); err == nil {
		t.Error("a file accepted as the directory")
	}
}

// TestCheckJournalFileMode: a journal file is checked like its directory:
// one writable by group or others (0666 inside the 0700 directory) is
// refused by Load, List's callers, Run and Rollback, with the path and the
// fix; group- or world-readable is not writable and is accepted.
func TestCheckJournalFileMode(t *testing.T) {
	ctx := context.Background()
	fsys, root := newHost(t)
	swap := filepath.Join(root, "proc/sys/vm/swappiness")
	before, _ := os.ReadFile(swap)
	res, err := Run(ctx, fsys, stateDir, Meta{Owner: "tune"}, plan(func(tx *Tx) []Action {
		a, _ := tx.SetValue("a", "/proc/sys/vm/swappiness", string(bytes.TrimSpace(before)), "1")
		return []Action{a}
	}))
	if err != nil {
		t.Fatal(err)
	}
	file := path.Join(stateDir, res.ID+ext)
	local := fsys.Path(file)
	for _, mode := range []fs.FileMode{0o600, 0o640, 0o644, 0o400} {
		if err := os.Chmod(local, mode); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(fsys, file); err != nil {
			t.Errorf("mode %04o refused: %v", mode, err)
		}
	}
	for _, mode := range []fs.FileMode{0o666, 0o620, 0o602, 0o622} {
		if err := os.Chmod(local, mode); err != nil {
			t.Fatal(err)
		}
		_, err := Load(fsys, file)
		if err == nil || !strings.Contains(err.Error(), local) || !strings.Contains(err.Error(), "chmod go-w "+local) {
			t.Fatalf("mode %04o: Load = %v", mode, err)
		}
		if _, err := Rollback(ctx, fsys, stateDir); err == nil {
			t.Fatalf("mode %04o: Rollback trusted the journal", mode)
		}
		if b, _ := os.ReadFile(swap); string(b) != "1" {
			t.Fatalf("mode %04o: a refused rollback changed swappiness to %q", mode, b)
		}
	}
	if err := checkFileMode("/j", "/r/j", 0o600, 1000, 1001); err == nil {
		t.Error("a journal of uid 1000 accepted for euid 1001")
	}
	if err := checkFileMode("/j", "/r/j", 0o600, 0, 1001); err != nil {
		t.Errorf("root's journal refused: %v", err)
	}
	if err := os.Chmod(local, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Rollback(ctx, fsys, stateDir); err != nil {
		t.Fatal(err)
	}
}

// TestEditedFiles: rollback refuses to overwrite a generated file edited
// since, unless forced; then the edited version is kept in the journal.
func TestEditedFiles(t *testing.T) {
	ctx := context.Background()
	fsys, root := newHost(t)
	orig := snap(t, root)
	res, err := Run(ctx, fsys, stateDir, Meta{Owner: "tune"}, plan(func(tx *Tx) []Action {
		a, _ := tx.WriteFile("limits", "/etc/security/limits.conf", []byte("gpunode\n"), 0o640)
		return a
	}))
	if err != nil {
		t.Fatal(err)
	}
	edit := filepath.Join(root, "etc/security/limits.conf")
	if err := os.WriteFile(edit, []byte("admin edit\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	_, err = Rollback(ctx, fsys, stateDir)
	var ee *EditedError
	if !errors.As(err, &ee) || len(ee.Files) != 1 || ee.Files[0] != "/etc/security/limits.conf" || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("Rollback over an edit = %v", err)
	}
	if b, _ := os.ReadFile(edit); string(b) != "admin edit\n" {
		t.Fatalf("refused rollback changed the file: %q", b)
	}
	rep, err := Rollback(ctx, fsys, stateDir, WithForce(true))
	if err != nil {
		t.Fatal(err)
	}
	assertSame(t, orig, root)
	if k := rep.Transactions[0].Steps[0].Kept; !strings.Contains(k, "displaced") {
		t.Fatalf("report does not say where the edit went: %+v", rep.Transactions[0].Steps)
	}
	tx, _ := Load(fsys, stateDir+"/"+res.ID+".journal")
	if d := tx.Steps[0].Displaced; d == nil || string(d.Data) != "admin edit\n" {
		t.Fatalf("edited version not kept: %+v", tx.Steps[0])
	}
}

func TestCustomKind(t *testing.T) {
	ctx := context.Background()
	fsys, _ := newHost(t)
	device := map[string]string{"GPU-1": "0"}
	kinds := NewKinds()
	if err := kinds.Register("gpu.persistence", func(_ context.Context, _ *hostfs.FS, s Step) error {
		device[s.Target] = s.Original
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := kinds.Register("gpu.persistence", func(context.Context, *hostfs.FS, Step) error { return nil }); err == nil {
		t.Error("duplicate Register succeeded")
	}
	if err := kinds.Register("Bad Kind", func(context.Context, *hostfs.FS, Step) error { return nil }); err == nil {
		t.Error("bad kind name accepted")
	}
	set := Action{Step: Step{Kind: "gpu.persistence", Target: "GPU-1", Original: "0", New: "1"}, Do: func(context.Context) error {
		device["GPU-1"] = "1"
		return nil
	}}
	if _, err := Run(ctx, fsys, stateDir, Meta{Owner: "gpu"}, plan(func(*Tx) []Action {
		return []Action{set, {Step: Step{Kind: "gpu.clocks", Target: "GPU-1"}, Do: set.Do}}
	}), WithKinds(kinds)); !errors.Is(err, ErrUnknownKind) || device["GPU-1"] != "0" {
		t.Fatalf("Run with an unregistered kind = %v (device %v)", err, device)
	}
	if _, err := Run(ctx, fsys, stateDir, Meta{Owner: "gpu"}, plan(func(*Tx) []Action { return []Action{set} }), WithKinds(kinds)); err != nil {
		t.Fatal(err)
	}
	// Without the registry the journal is refused, and nothing changes.
	if _, err := Rollback(ctx, fsys, stateDir); !errors.Is(err, ErrUnknownKind) {
		t.Fatalf("Rollback without kinds = %v, want ErrUnknownKind", err)
	}
	if device["GPU-1"] != "1" {
		t.Fatal("refused rollback changed the device")
	}
	if _, err := Rollback(ctx, fsys, stateDir, WithKinds(kinds)); err != nil {
		t.Fatal(err)
	}
	if device["GPU-1"] != "0" {
		t.Fatalf("device = %v after rollback", device)
	}
}

func commitOne(t *testing.T, fsys *hostfs.FS, owner string) *Result {
	t.Helper()
	res, err := Run(context.Background(), fsys, stateDir, Meta{Owner: owner}, plan(func(tx *Tx) []Action {
		a, err := tx.SetValue("a", "/proc/sys/vm/swappiness", "60\n", "0")
		if err != nil {
			t.Fatal(err)
		}
		return []Action{a}
	}))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestRollbackRefusesBadJournals(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		mangle func([]byte) []byte
		want   error
	}{
		{"flipped byte", func(b []byte) []byte { b[len(b)-5] ^= 1; return b }, ErrCorrupt},
		{"truncated", func(b []byte) []byte { return b[:len(b)/2] }, ErrCorrupt},
		{"foreign version", func(b []byte) []byte { return bytes.Replace(b, []byte(" v2 "), []byte(" v9 "), 1) }, ErrVersion},
		{"not a journal", func([]byte) []byte { return []byte("hello\n") }, ErrCorrupt},
		{"empty", func([]byte) []byte { return nil }, ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys, root := newHost(t)
			res := commitOne(t, fsys, "tune")
			lp := filepath.Join(root, "var/lib/gpunode", res.ID+".journal")
			b, _ := os.ReadFile(lp)
			if err := os.WriteFile(lp, tt.mangle(b), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Rollback(ctx, fsys, stateDir)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), "refusing") || !strings.Contains(err.Error(), res.ID) {
				t.Fatalf("Rollback = %v, want %v naming the file", err, tt.want)
			}
			if got, _ := fsys.ReadString("/proc/sys/vm/swappiness"); got != "0" {
				t.Errorf("refused rollback changed swappiness to %q", got)
			}
			if _, err := Run(ctx, fsys, stateDir, Meta{Owner: "tune"}, plan(func(*Tx) []Action { return nil })); err == nil {
				t.Error("Run next to a corrupted journal succeeded")
			}
		})
	}
}

func TestLock(t *testing.T) {
	ctx := context.Background()
	fsys, _ := newHost(t)
	var inner, innerRB error
	_, err := Run(ctx, fsys, stateDir, Meta{Owner: "tune"}, func(ctx context.Context, tx *Tx) ([]Action, error) {
		// The plan runs under the lock: another command is refused.
		_, inner = Run(ctx, fsys, stateDir, Meta{Owner: "irq"}, plan(func(*Tx) []Action { return nil }))
		_, innerRB = Rollback(ctx, fsys, stateDir)
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(inner, ErrLocked) || !errors.Is(innerRB, ErrLocked) {
		t.Fatalf("concurrent Run = %v, Rollback = %v; want ErrLocked", inner, innerRB)
	}
	if _, err := Run(ctx, fsys, stateDir, Meta{Owner: "irq"}, plan(func(*Tx) []Action { return nil })); err != nil {
		t.Errorf("Run after the first: %v", err)
	}
}

// TestKilledRunRefusesNext: an open transaction (the process died) makes
// the next Run of that owner refuse; another owner is not blocked;
// Rollback restores, intents that never happened included.
func TestKilledRunRefusesNext(t *testing.T) {
	ctx := context.Background()
	fsys, root := newHost(t)
	orig := snap(t, root)
	fl := &hostfs.Faults{Hook: func(_ int, op hostfs.Op, p string) error {
		if p == "/proc/sys/vm/dirty_ratio" && op == hostfs.OpOpenWrite {
			return errKilled
		}
		return nil
	}}
	r := &runner{fsys: fsys.WithFaults(fl), file: stateDir + "/000001-tune.journal", o: buildOptions(nil),
		tx: Transaction{ID: "000001-tune", Meta: Meta{Owner: "tune"}, State: StateOpen}}
	if err := ensureDir(fsys, stateDir); err != nil {
		t.Fatal(err)
	}
	tx := &Tx{fsys: r.fsys, id: r.tx.ID}
	a, _ := tx.SetValue("a", "/proc/sys/vm/swappiness", "60\n", "0")
	b, _ := tx.SetValue("b", "/proc/sys/vm/dirty_ratio", "20\n", "5")
	c, _ := tx.SetValue("c", "/proc/sys/vm/swappiness", "60\n", "0")
	a.Batch, b.Batch, c.Batch = true, true, true
	if err := r.runBatch(ctx, []Action{a, b, c}); !errors.Is(err, errKilled) {
		t.Fatal(err)
	}
	if _, err := Run(ctx, fsys, stateDir, Meta{Owner: "tune"}, plan(func(*Tx) []Action { return nil })); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("Run after a kill = %v", err)
	}
	commitOne(t, fsys, "irq")
	if _, err := Rollback(ctx, fsys, stateDir, WithOwner("irq")); err != nil {
		t.Fatal(err)
	}
	rep, err := Rollback(ctx, fsys, stateDir, WithOwner("tune"))
	if err != nil || len(rep.Transactions) != 1 || rep.Transactions[0].Was != StateOpen {
		t.Fatalf("Rollback = %+v, %v", rep, err)
	}
	assertSame(t, orig, root)
}

func TestRollbackMissingDir(t *testing.T) {
	fsys, _ := newHost(t)
	rep, err := Rollback(context.Background(), fsys, "/nonexistent")
	if err != nil || len(rep.Transactions) != 0 {
		t.Fatalf("Rollback = %+v, %v", rep, err)
	}
}

func TestDryRunRollback(t *testing.T) {
	ctx := context.Background()
	fsys, _ := newHost(t)
	commitOne(t, fsys, "tune")
	rep, err := Rollback(ctx, fsys, stateDir, WithDryRun(true))
	if err != nil || len(rep.Transactions) != 1 || !rep.DryRun {
		t.Fatalf("dry run = %+v, %v", rep, err)
	}
	if got, _ := fsys.ReadString("/proc/sys/vm/swappiness"); got != "0" {
		t.Errorf("dry-run rollback changed swappiness to %q", got)
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	tx := &Transaction{ID: "000001-tune", Meta: Meta{Owner: "tune", Started: time.Unix(0, 0).UTC()}, State: StateCommitted,
		Steps: []Step{{Kind: KindFile, Path: "/etc/x", File: &FileState{Type: FileRegular, Mode: 0o644, Data: []byte{0, 1, 2, 0xff}}, State: StepDone, Temp: "/etc/.x.gpunode-tmp-1"}}}
	b, err := Encode(tx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Steps[0].File.Data, tx.Steps[0].File.Data) || got.ID != tx.ID || got.Steps[0].Temp != tx.Steps[0].Temp {
		t.Fatalf("round trip = %+v", got)
	}
	bad := []*Transaction{
		{ID: "x", Meta: Meta{Owner: "tune"}, State: "weird"},
		{ID: "x", Meta: Meta{}, State: StateOpen},
		{ID: "x", Meta: Meta{Owner: "t"}, State: StateOpen, Steps: []Step{{Kind: KindFile, Path: "/etc/x"}}},
		{ID: "x", Meta: Meta{Owner: "t"}, State: StateOpen, Steps: []Step{{Kind: KindValue, Path: "relative"}}},
		{ID: "x", Meta: Meta{Owner: "t"}, State: StateOpen, Steps: []Step{{Kind: KindValue, Path: "/a", State: "maybe"}}},
		{ID: "x", Meta: Meta{Owner: "t"}, State: StateOpen, Steps: []Step{{Kind: KindValue, Path: "/etc/a", Temp: "/tmp/evil"}}},
	}
	for i, tx := range bad {
		b, _ := Encode(tx)
		if _, err := Decode(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("bad[%d]: Decode = %v, want ErrCorrupt", i, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	tx := &Transaction{ID: "000001-tune", Meta: Meta{Owner: "tune"}, State: StateOpen,
		Steps: []Step{{Kind: KindValue, Path: "/proc/sys/vm/swappiness", Original: "60", State: StepIntent}}}
	b, _ := Encode(tx)
	f.Add(b)
	f.Add([]byte("gpunode-journal v1 sha256:00\n{}"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, b []byte) {
		tx, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) {
				t.Fatalf("Decode error %v is neither ErrCorrupt nor ErrVersion", err)
			}
			return
		}
		// Whatever decodes must re-encode and decode to the same thing,
		// and its encoding is a fixed point.
		b2, err := Encode(tx)
		if err != nil {
			t.Fatal(err)
		}
		tx2, err := Decode(b2)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if !reflect.DeepEqual(tx2, tx) {
			t.Fatalf("decoded %+v, after a round trip %+v", tx, tx2)
		}
		if b3, err := Encode(tx2); err != nil || !bytes.Equal(b3, b2) {
			t.Fatalf("encoding is not a fixed point: %v\n%s\n%s", err, b2, b3)
		}
	})
}

// fsImmutableFL is FS_IMMUTABLE_FL of linux/fs.h (chattr +i).
const fsImmutableFL = 0x10

// TestEmptyOpenJournalDoesNotBlock: a transaction interrupted before its
// first step (here: the directory fsync after the journal's first rename
// fails) changed nothing and never blocks the next run.
func TestEmptyOpenJournalDoesNotBlock(t *testing.T) {
	ctx := context.Background()
	fsys, root := newHost(t)
	orig := snap(t, root)
	fl := &hostfs.Faults{Hook: func(n int, op hostfs.Op, p string) error {
		if op == hostfs.OpFsync && p == stateDir {
			return syscall.EIO
		}
		return nil
	}}
	act := plan(func(tx *Tx) []Action {
		a, _ := tx.SetValue("a", "/proc/sys/vm/swappiness", "60\n", "0")
		return []Action{a}
	})
	if _, err := Run(ctx, fsys.WithFaults(fl), stateDir, Meta{Owner: "tune"}, act); err == nil {
		t.Fatal("Run succeeded")
	}
	assertSame(t, orig, root)
	// Even when the empty journal is left (a kill right after its rename).
	tx := &Transaction{ID: "000001-tune", Meta: Meta{Owner: "tune"}, State: StateOpen, Steps: []Step{}}
	if err := persistTx(fsys, stateDir+"/000001-tune.journal", tx); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(ctx, fsys, stateDir, Meta{Owner: "tune"}, act); err != nil {
		t.Fatalf("Run after an empty open journal: %v", err)
	}
	got, err := Load(fsys, stateDir+"/000001-tune.journal")
	if err != nil || got.State != StateRolledBack {
		t.Fatalf("empty journal: %+v %v", got, err)
	}
}

// TestLockNeverLeavesRoot (defect 6): when the journal directory cannot be
// resolved inside the root (here a link to an absolute path whose first
// component is a regular file inside the root), the lock used to be opened
// at the unresolved path, which the kernel followed out of the root.
func TestLockNeverLeavesRoot(t *testing.T) {
	ctx := context.Background()
	fsys, root := newHost(t)
	outside := t.TempDir() // e.g. /tmp/TestX/002
	first := strings.Split(strings.TrimPrefix(outside, "/"), "/")[0]
	if err := os.WriteFile(filepath.Join(root, first), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "var/lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "var/lib/gpunode")); err != nil {
		t.Fatal(err)
	}
	_, rerr := Rollback(ctx, fsys, stateDir)
	_, werr := Run(ctx, fsys, stateDir, Meta{Owner: "tune"}, plan(func(*Tx) []Action { return nil }))
	if ents, _ := os.ReadDir(outside); len(ents) > 0 {
		t.Fatalf("files created outside the root: %v (rollback: %v, run: %v)", ents, rerr, werr)
	}
	if rerr == nil || werr == nil {
		t.Fatalf("rollback = %v, run = %v; want both to refuse the unresolvable directory", rerr, werr)
	}
}

// TestSymlinkedDirKept (defect 4): an administrator's symlinked directory
// is never journaled as created, so neither a failed run nor a rollback
// removes it.
func TestSymlinkedDirKept(t *testing.T) {
	ctx := context.Background()
	fsys, root := newHost(t)
	if err := os.MkdirAll(filepath.Join(root, "usr/local/etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/usr/local/etc/tmpfiles.d", filepath.Join(root, "etc/tmpfiles.d")); err != nil {
		t.Fatal(err)
	}
	write := func(tx *Tx) ([]Action, error) {
		return tx.WriteFile("tmpfiles", "/etc/tmpfiles.d/90-gpunode.conf", []byte("w /x - - - - 1\n"), 0o644)
	}
	// Dangling: refused before anything changes.
	orig := snap(t, root)
	if _, err := Run(ctx, fsys, stateDir, Meta{Owner: "tune"}, func(_ context.Context, tx *Tx) ([]Action, error) { return write(tx) }); err == nil {
		t.Fatal("Run through a dangling directory link succeeded")
	}
	assertSame(t, orig, root)
	// With its target: the file goes through the link; rollback removes
	// the file only.
	if err := os.Mkdir(filepath.Join(root, "usr/local/etc/tmpfiles.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	orig = snap(t, root)
	if _, err := Run(ctx, fsys, stateDir, Meta{Owner: "tune"}, func(_ context.Context, tx *Tx) ([]Action, error) { return write(tx) }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "usr/local/etc/tmpfiles.d/90-gpunode.conf")); err != nil {
		t.Fatal(err)
	}
	if _, err := Rollback(ctx, fsys, stateDir); err != nil {
		t.Fatal(err)
	}
	assertSame(t, orig, root)
}

// TestSharedMissingDirCreatedOnce: two files planned under the same missing
// directories create each directory once. Creating it twice failed the
// second mkdir with EEXIST, and reverting that failed step removed the
// directory the first one made (a plain `tune apply` on a host without /etc
// ended "reverting failed too").
func TestSharedMissingDirCreatedOnce(t *testing.T) {
	ctx := context.Background()
	fsys, root := newHost(t)
	if err := os.RemoveAll(filepath.Join(root, "etc")); err != nil {
		t.Fatal(err)
	}
	orig := snap(t, root)
	var mkdirs int
	res, err := Run(ctx, fsys, stateDir, Meta{Owner: "tune", Command: "test"}, func(_ context.Context, tx *Tx) ([]Action, error) {
		var out []Action
		for _, p := range []string{"/etc/sysctl.d/90-gpunode.conf", "/etc/sysctl.d/91-gpunode.conf", "/etc/security/limits.d/90-gpunode.conf"} {
			acts, err := tx.WriteFile("f", p, []byte("x\n"), 0o644)
			if err != nil {
				return nil, err
			}
			out = append(out, acts...)
		}
		for _, a := range out {
			if a.Step.Note == "directory created" {
				mkdirs++
			}
		}
		return out, nil
	}, fixedClock)
	if err != nil {
		t.Fatal(err)
	}
	if res.State != StateCommitted {
		t.Fatalf("state %s, want committed", res.State)
	}
	if mkdirs != 4 { // /etc, /etc/sysctl.d, /etc/security, /etc/security/limits.d
		t.Fatalf("%d directory steps, want 4", mkdirs)
	}
	if _, err := Rollback(ctx, fsys, stateDir); err != nil {
		t.Fatal(err)
	}
	assertSame(t, orig, root)
}

// TestDanglingStateDirLink: a journal directory that is a symbolic link to
// nothing is refused alike by List (status) and Rollback, naming the link
// and its target; a missing directory is still "nothing there".
func TestDanglingStateDirLink(t *testing.T) {
	ctx := context.Background()
	fsys, root := newHost(t)
	local := filepath.Join(root, "var/lib/gpunode")
	if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
		t.Fatal(err)
	}
	if infos, err := List(fsys, stateDir); err != nil || len(infos) != 0 {
		t.Fatalf("missing directory: List = %v, %v", infos, err)
	}
	if _, err := Rollback(ctx, fsys, stateDir); err != nil {
		t.Fatalf("missing directory: Rollback = %v", err)
	}
	if err := os.Symlink("/mnt/state/gpunode", local); err != nil {
		t.Fatal(err)
	}
	if _, err := List(fsys, stateDir); !errors.Is(err, ErrDanglingDir) || !strings.Contains(err.Error(), "/var/lib/gpunode -> /mnt/state/gpunode") {
		t.Errorf("List = %v, want ErrDanglingDir naming the link", err)
	}
	if _, err := Rollback(ctx, fsys, stateDir); !errors.Is(err, ErrDanglingDir) {
		t.Errorf("Rollback = %v, want ErrDanglingDir", err)
	}
	// Once the target exists the link is a directory like any other.
	if err := os.MkdirAll(filepath.Join(root, "mnt/state/gpunode"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := List(fsys, stateDir); err != nil {
		t.Errorf("List through a live link: %v", err)
	}
}
