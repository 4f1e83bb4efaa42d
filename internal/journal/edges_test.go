package journal

// Rollback decisions read back from disk and from the rendered table: the
// owner filter of List, the temporary file of a revert, a restore that only
// changes a mode, an original that is an empty file of mode 0, the
// journal's record of a failed revert, and the table's literals for errors
// and kept edits.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/output"
)

// List without an owner lists every journal; WithOwner keeps that owner's
// journals and every journal that cannot be read (its owner is unknown).
func TestListOwnerFilter(t *testing.T) {
	fsys, root := newHost(t)
	tune := commitOne(t, fsys, "tune")
	irq := commitOne(t, fsys, "irq")
	bad := filepath.Join(root, stateDir, "000003-gpu.journal")
	if err := os.WriteFile(bad, []byte("gpunode-journal v1 sha256:00\n{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ids := func(infos []Info) []string {
		var out []string
		for _, in := range infos {
			if in.Tx != nil {
				out = append(out, in.Tx.ID)
			} else {
				out = append(out, "error:"+filepath.Base(in.File))
			}
		}
		return out
	}
	for _, c := range []struct {
		opts []Option
		want string
	}{
		{nil, tune.ID + " " + irq.ID + " error:000003-gpu.journal"},
		{[]Option{WithOwner("tune")}, tune.ID + " error:000003-gpu.journal"},
		{[]Option{WithOwner("irq")}, irq.ID + " error:000003-gpu.journal"},
		{[]Option{WithOwner("mig")}, "error:000003-gpu.journal"},
	} {
		infos, err := List(fsys, stateDir, c.opts...)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(ids(infos), " "); got != c.want {
			t.Errorf("List(%d options) = %s, want %s", len(c.opts), got, c.want)
		}
	}
}

// A rollback that puts back a removed file writes it through the temporary
// file "<dir>/.<name>.gpunode-tmp-revert" and first removes one a killed
// rollback left there.
func TestRevertRemovesStaleRevertTemp(t *testing.T) {
	ctx := context.Background()
	fsys, root := newHost(t)
	orig := snap(t, root)
	if _, err := Run(ctx, fsys, stateDir, Meta{Owner: "tune"}, plan(func(tx *Tx) []Action {
		a, err := tx.RemoveFile("rm", "/etc/sysctl.conf")
		if err != nil || len(a) != 1 {
			t.Fatalf("RemoveFile: %v %v", a, err)
		}
		return a
	})); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(root, "etc/.sysctl.conf.gpunode-tmp-revert")
	if err := os.WriteFile(stale, []byte("half a file"), 0o600); err != nil {
		t.Fatal(err)
	}
	var opened []string
	ffs := fsys.WithFaults(&hostfs.Faults{Hook: func(_ int, op hostfs.Op, p string) error {
		if op == hostfs.OpOpenWrite {
			opened = append(opened, p)
		}
		return nil
	}})
	if _, err := Rollback(ctx, ffs, stateDir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale revert temp is still there: %v", err)
	}
	if !strings.Contains(strings.Join(opened, " "), "/etc/.sysctl.conf.gpunode-tmp-revert") {
		t.Errorf("files opened for writing %v, want the revert temp", opened)
	}
	assertSame(t, orig, root)
}

// A change of mode alone is rolled back: same bytes, the original mode.
func TestRollbackOfAModeOnlyChange(t *testing.T) {
	ctx := context.Background()
	fsys, root := newHost(t)
	orig := snap(t, root)
	p := filepath.Join(root, "etc/security/limits.conf")
	if _, err := Run(ctx, fsys, stateDir, Meta{Owner: "tune"}, plan(func(tx *Tx) []Action {
		a, err := tx.WriteFile("limits", "/etc/security/limits.conf", []byte("# limits\n"), 0o600)
		if err != nil {
			t.Fatal(err)
		}
		return a
	})); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("apply: %v %v, want mode 0600", fi, err)
	}
	if _, err := Rollback(ctx, fsys, stateDir); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("rollback: %v %v, want mode 0640 back", fi, err)
	}
	assertSame(t, orig, root)
}

// An original that was an empty file of mode 0 (nothing in it, nobody may
// read it) and is gone is created again, empty and of mode 0.
func TestRollbackRecreatesEmptyModeZeroFile(t *testing.T) {
	ctx := context.Background()
	fsys, root := newHost(t)
	res, err := Run(ctx, fsys, stateDir, Meta{Owner: "tune"}, plan(func(*Tx) []Action {
		return []Action{{
			Step: Step{Kind: KindFile, ID: "empty", Path: "/etc/empty", File: &FileState{Type: FileRegular, Mode: 0}},
			Do:   func(context.Context) error { return nil },
		}}
	}))
	if err != nil || res.Steps != 1 {
		t.Fatalf("run: %+v %v", res, err)
	}
	if _, err := Rollback(ctx, fsys, stateDir); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(filepath.Join(root, "etc/empty"))
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0 || fi.Size() != 0 {
		t.Fatalf("after rollback: %v %v, want an empty regular file of mode 0", fi, err)
	}
}

// A revert that cannot be written: the journal on disk and the report name
// the path the original goes back to; the table marks the step
// "ERROR (see below)" and prints the error under "Not restored".
func TestFailedRevertRecordAndTable(t *testing.T) {
	ctx := context.Background()
	fsys, _ := newHost(t)
	res, err := Run(ctx, fsys, stateDir, Meta{Owner: "tune"}, twoSteps(t))
	if err != nil {
		t.Fatal(err)
	}
	ffs := fsys.WithFaults(&hostfs.Faults{Hook: func(_ int, op hostfs.Op, p string) error {
		if p == "/proc/sys/vm/swappiness" && op == hostfs.OpOpenWrite {
			return syscall.EPERM
		}
		return nil
	}})
	rep, err := Rollback(ctx, ffs, stateDir)
	if err == nil {
		t.Fatal("rollback through a refused write succeeded")
	}
	const want = `could not write back "60\n" to /proc/sys/vm/swappiness: `
	tx, lerr := Load(fsys, stateDir+"/"+res.ID+".journal")
	if lerr != nil {
		t.Fatal(lerr)
	}
	if tx.State != StateOpen || tx.Steps[0].State != StepDone || !strings.HasPrefix(tx.Steps[0].RevertError, want) || tx.Steps[1].State != StepReverted || tx.Steps[1].RevertError != "" {
		t.Fatalf("journal on disk: state %s, steps %+v", tx.State, tx.Steps)
	}
	if len(rep.Transactions) != 1 || len(rep.Transactions[0].Steps) != 2 {
		t.Fatalf("report %+v", rep)
	}
	var failed StepReport
	for _, s := range rep.Transactions[0].Steps {
		if s.Ref == res.ID+":0" {
			failed = s
		}
	}
	if !strings.HasPrefix(failed.Error, want) {
		t.Fatalf("report step %+v, want error %q...", failed, want)
	}
	var b bytes.Buffer
	if err := (RollbackReport{SchemaVersion: "gpunode.tune.rollback/v1", Report: rep}).WriteTable(&b, output.Options{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(res.ID) + `\s.*\sERROR \(see below\)$`).MatchString(out) {
		t.Errorf("no row of %s ends in the cell \"ERROR (see below)\":\n%s", res.ID, out)
	}
	for _, w := range []string{
		"Not restored (fix the cause and run the rollback again, or --skip REF):",
		res.ID + ":0 /proc/sys/vm/swappiness: " + want,
		"rolled back 1 transaction(s), 2 step(s)",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("table lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "Kept:") {
		t.Errorf("table has a Kept section without a kept edit:\n%s", out)
	}
}

// A forced rollback over an edited file: the table's "Kept:" section says,
// per step, "<ref> <path>: " and where the edited version went.
func TestKeptEditInTable(t *testing.T) {
	ctx := context.Background()
	fsys, root := newHost(t)
	res, err := Run(ctx, fsys, stateDir, Meta{Owner: "tune"}, plan(func(tx *Tx) []Action {
		a, _ := tx.WriteFile("limits", "/etc/security/limits.conf", []byte("gpunode\n"), 0o640)
		b, _ := tx.SetValue("a", "/proc/sys/vm/swappiness", "60\n", "0")
		return append(a, b)
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/security/limits.conf"), []byte("admin edit\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	rep, err := Rollback(ctx, fsys, stateDir, WithForce(true))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := (RollbackReport{Report: rep}).WriteTable(&b, output.Options{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	_, kept, ok := strings.Cut(out, "Kept:")
	if !ok {
		t.Fatalf("no Kept section:\n%s", out)
	}
	lines := 0
	for _, l := range strings.Split(kept, "\n") {
		if strings.Contains(l, "the edited version") {
			lines++
			if !strings.Contains(l, res.ID+":0 /etc/security/limits.conf: the edited version") || !strings.Contains(l, "steps[0].displaced") {
				t.Errorf("kept line %q", l)
			}
		}
	}
	if lines != 1 || strings.Contains(out, "ERROR") {
		t.Errorf("want one kept line and no error:\n%s", out)
	}
}

// A read of the journal directory that fails under the lock (cleaning
// temps, listing the journals, loading one) either makes Run fail before
// its plan runs, with no journal written, or is recovered from (hostfs
// resolves by hand) so that Run still sees the journal on disk and numbers
// the next one after it. A sweep over the opens of the directory between
// taking the lock and running the plan, every one from the k-th on failed.
func TestRunFailsOnUnreadableJournalDir(t *testing.T) {
	for _, only := range []bool{false, true} {
		t.Run(fmt.Sprintf("only=%v", only), func(t *testing.T) { unreadableJournalDir(t, only) })
	}
}

// unreadableJournalDir fails the k-th open of the journal directory under
// the lock and, unless only, every one after it.
func unreadableJournalDir(t *testing.T, only bool) {
	ctx := context.Background()
	refused, swept := 0, false
	for k := 1; k <= 20; k++ {
		fsys, root := newHost(t)
		commitOne(t, fsys, "tune")
		locked, planned, opens, failed := false, false, 0, false
		ffs := fsys.WithFaults(&hostfs.Faults{
			Hook: func(_ int, op hostfs.Op, p string) error {
				locked = locked || p == stateDir+"/.lock"
				return nil
			},
			Open: func(p string, _ int) error {
				if locked && !planned && p == stateDir {
					opens++
					if opens == k || !only && opens > k {
						failed = true
						return syscall.EACCES
					}
				}
				return nil
			},
		})
		res, err := Run(ctx, ffs, stateDir, Meta{Owner: "tune"}, func(_ context.Context, tx *Tx) ([]Action, error) {
			planned = true
			a, err := tx.SetValue("a", "/proc/sys/vm/dirty_ratio", "20\n", "7")
			return []Action{a}, err
		})
		names, _ := filepath.Glob(filepath.Join(root, stateDir, "*.journal"))
		if !failed {
			if err != nil || res.ID != "000002-tune" {
				t.Fatalf("k=%d: no open failed, yet Run = %+v, %v", k, res, err)
			}
			swept = true
			break
		}
		switch {
		case err != nil:
			refused++
			if planned || len(names) != 1 {
				t.Errorf("k=%d: Run failed (%v) after its plan ran (%v) or with journals %v", k, err, planned, names)
			}
			if b, _ := os.ReadFile(filepath.Join(root, "proc/sys/vm/dirty_ratio")); string(b) != "20\n" {
				t.Errorf("k=%d: a refused Run changed dirty_ratio to %q", k, b)
			}
		case res.ID != "000002-tune" || len(names) != 2:
			t.Errorf("k=%d: Run = %+v with journals %v: it did not see the journal on disk", k, res, names)
		}
	}
	if !swept {
		t.Errorf("Run opened the journal directory more than 20 times under the lock: the sweep did not reach its end")
	}
	if refused < 2 {
		t.Errorf("%d refusals; want at least cleaning the temps and listing", refused)
	}
}

// A link made in a missing directory creates it with mode 0755.
func TestSymlinkCreatesParent0755(t *testing.T) {
	ctx := context.Background()
	fsys, root := newHost(t)
	orig := snap(t, root)
	if _, err := Run(ctx, fsys, stateDir, Meta{Owner: "tune"}, plan(func(tx *Tx) []Action {
		a, err := tx.Symlink("link", "/etc/sysctl.conf", "/etc/new.d/sub/link.conf")
		if err != nil {
			t.Fatal(err)
		}
		return a
	})); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"etc/new.d", "etc/new.d/sub"} {
		if fi, err := os.Lstat(filepath.Join(root, d)); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o755 {
			t.Errorf("%s: %v %v, want a directory of mode 0755", d, fi, err)
		}
	}
	if l, err := os.Readlink(filepath.Join(root, "etc/new.d/sub/link.conf")); err != nil || l != "/etc/sysctl.conf" {
		t.Errorf("link %q %v", l, err)
	}
	if _, err := Rollback(ctx, fsys, stateDir); err != nil {
		t.Fatal(err)
	}
	assertSame(t, orig, root)
}

// A file step whose restore cannot be written fails the rollback, and the
// journal read back keeps the step done with its error; once writes work
// again the rollback restores the bytes, the mode and (as root) the owner.
func TestFileRevertWriteFailureAndOwner(t *testing.T) {
	ctx := context.Background()
	fsys, root := newHost(t)
	p := filepath.Join(root, "etc/security/limits.conf")
	asRoot := os.Geteuid() == 0
	if asRoot {
		if err := os.Lchown(p, 1234, 4321); err != nil {
			t.Fatal(err)
		}
	}
	orig := snap(t, root)
	res, err := Run(ctx, fsys, stateDir, Meta{Owner: "tune"}, plan(func(tx *Tx) []Action {
		a, err := tx.WriteFile("limits", "/etc/security/limits.conf", []byte("gpunode\n"), 0o600)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}))
	if err != nil {
		t.Fatal(err)
	}
	if asRoot {
		if err := os.Lchown(p, 0, 0); err != nil { // as a later edit by root would leave it
			t.Fatal(err)
		}
	}
	broken := true
	ffs := fsys.WithFaults(&hostfs.Faults{Hook: func(_ int, op hostfs.Op, q string) error {
		if broken && op == hostfs.OpOpenWrite && strings.HasPrefix(q, "/etc/security/") {
			return syscall.EIO
		}
		return nil
	}})
	if _, err := Rollback(ctx, ffs, stateDir, WithForce(true)); err == nil || !strings.Contains(err.Error(), "/etc/security/limits.conf") {
		t.Fatalf("rollback through a failing write = %v, want an error naming the file", err)
	}
	tx, err := Load(fsys, stateDir+"/"+res.ID+".journal")
	if err != nil {
		t.Fatal(err)
	}
	last := len(tx.Steps) - 1
	if tx.State != StateOpen || tx.Steps[last].State != StepDone || tx.Steps[last].RevertError == "" {
		t.Fatalf("journal after the failed restore: %s %+v", tx.State, tx.Steps[last])
	}
	if b, _ := os.ReadFile(p); string(b) != "gpunode\n" {
		t.Fatalf("failed restore left %q", b)
	}
	broken = false
	if _, err := Rollback(ctx, ffs, stateDir, WithForce(true)); err != nil {
		t.Fatal(err)
	}
	assertSame(t, orig, root)
	if asRoot {
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil || st.Uid != 1234 || st.Gid != 4321 {
			t.Errorf("owner after rollback %d:%d (%v), want 1234:4321", st.Uid, st.Gid, err)
		}
	}
}

// A journal of a foreign version names the version it has and the ones
// this build reads.
func TestDecodeNamesTheForeignVersion(t *testing.T) {
	for _, v := range []string{"v0", "v3", "v9", "x2"} {
		_, err := Decode([]byte("gpunode-journal " + v + " sha256:00\n{}\n"))
		if !errors.Is(err, ErrVersion) || !strings.Contains(err.Error(), "file is format "+v+", this gpunode reads v1 to v2") {
			t.Errorf("%s: %v", v, err)
		}
	}
}

// A value step written by an older build (no raw original) whose restore
// cannot be written fails the rollback; once writes work it restores the
// original.
func TestValueRevertWithoutRawOriginal(t *testing.T) {
	ctx := context.Background()
	fsys, root := newHost(t)
	p := filepath.Join(root, "proc/sys/vm/swappiness")
	if _, err := Run(ctx, fsys, stateDir, Meta{Owner: "tune"}, plan(func(*Tx) []Action {
		return []Action{{
			Step: Step{Kind: KindValue, ID: "a", Path: "/proc/sys/vm/swappiness", Original: "60", New: "0"},
			Do:   func(context.Context) error { return fsys.WriteString("/proc/sys/vm/swappiness", "0") },
		}}
	})); err != nil {
		t.Fatal(err)
	}
	broken := true
	ffs := fsys.WithFaults(&hostfs.Faults{Hook: func(_ int, op hostfs.Op, q string) error {
		if broken && op == hostfs.OpOpenWrite && q == "/proc/sys/vm/swappiness" {
			return syscall.EIO
		}
		return nil
	}})
	if _, err := Rollback(ctx, ffs, stateDir); err == nil || !strings.Contains(err.Error(), "/proc/sys/vm/swappiness") {
		t.Fatalf("rollback through a failing write = %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "0" {
		t.Fatalf("swappiness %q after a failed restore", b)
	}
	broken = false
	if _, err := Rollback(ctx, ffs, stateDir); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); strings.TrimSpace(string(b)) != "60" {
		t.Fatalf("swappiness %q, want 60", b)
	}
}

// The rollback table's columns, as the spec names them: five, and four
// more with -o wide; a dry run says WOULD RESTORE.
func TestRollbackTableColumns(t *testing.T) {
	ctx := context.Background()
	fsys, _ := newHost(t)
	if _, err := Run(ctx, fsys, stateDir, Meta{Owner: "tune", Profile: "p"}, twoSteps(t)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dry  bool
		wide bool
		want string
	}{
		{true, false, "TRANSACTION OWNER STEP TARGET WOULD RESTORE"},
		{true, true, "TRANSACTION OWNER STEP TARGET WOULD RESTORE REF PROFILE STARTED WAS"},
		{false, true, "TRANSACTION OWNER STEP TARGET RESTORED REF PROFILE STARTED WAS"},
	} {
		rep, err := Rollback(ctx, fsys, stateDir, WithDryRun(c.dry))
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := (RollbackReport{Report: rep}).WriteTable(&b, output.Options{Wide: c.wide}); err != nil {
			t.Fatal(err)
		}
		header, _, _ := strings.Cut(b.String(), "\n")
		if got := strings.Join(strings.Fields(header), " "); got != c.want {
			t.Errorf("dry %v wide %v: header %q, want %q", c.dry, c.wide, got, c.want)
		}
	}
}

// A file whose original state cannot be read (its parent is a link loop)
// is an error when the change is planned, not a change skipped.
func TestWriteFileUnreadableOriginal(t *testing.T) {
	ctx := context.Background()
	fsys, root := newHost(t)
	if err := os.Symlink("/etc/loop", filepath.Join(root, "etc/loop")); err != nil {
		t.Fatal(err)
	}
	_, err := Run(ctx, fsys, stateDir, Meta{Owner: "tune"}, func(_ context.Context, tx *Tx) ([]Action, error) {
		a, err := tx.WriteFile("x", "/etc/loop/x.conf", []byte("x\n"), 0o644)
		if err == nil {
			t.Errorf("WriteFile under a link loop = %v, nil; want an error", a)
		}
		return a, err
	})
	if err == nil {
		t.Fatal("Run succeeded")
	}
	if names, _ := filepath.Glob(filepath.Join(root, stateDir, "*.journal")); len(names) != 0 {
		t.Errorf("journals %v after a refused plan", names)
	}
}

// Batched actions, the last of them too, are each done and journaled.
func TestBatchToTheEnd(t *testing.T) {
	ctx := context.Background()
	fsys, root := newHost(t)
	res, err := Run(ctx, fsys, stateDir, Meta{Owner: "tune"}, plan(func(tx *Tx) []Action {
		var out []Action
		for _, c := range [][2]string{{"/proc/sys/vm/swappiness", "1"}, {"/proc/sys/vm/dirty_ratio", "2"}} {
			a, err := tx.SetValue(c[0], c[0], "", c[1])
			if err != nil {
				t.Fatal(err)
			}
			a.Batch = true
			out = append(out, a)
		}
		return out
	}))
	if err != nil || res.Steps != 2 {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	for p, want := range map[string]string{"proc/sys/vm/swappiness": "1", "proc/sys/vm/dirty_ratio": "2"} {
		if b, _ := os.ReadFile(filepath.Join(root, p)); string(b) != want {
			t.Errorf("%s = %q, want %q", p, b, want)
		}
	}
	tx, err := Load(fsys, stateDir+"/"+res.ID+".journal")
	if err != nil || len(tx.Steps) != 2 || tx.Steps[0].State != StepDone || tx.Steps[1].State != StepDone {
		t.Fatalf("journal: %+v %v", tx, err)
	}
}
