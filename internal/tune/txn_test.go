package tune

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/journal"
	"github.com/gpunode/gpunode/internal/journal/journaltest"
	"github.com/gpunode/gpunode/internal/output"
)

// This file holds the crash tests at system-call granularity: a fault (an
// errno, or a real SIGKILL in a child process) at the Nth write-side
// operation of 'tune apply' and 'tune rollback' on the DGX fixture, then
// recovery (status + rollback, or a rerun) and a byte-for-byte comparison
// of the whole tree (content, mode, owner, link target) with the original.

// onTmpfs makes t's temporary directories live on /dev/shm when it is
// usable: sweeps write thousands of small files.
func onTmpfs(t *testing.T) {
	t.Helper()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() && unix.Access("/dev/shm", unix.W_OK) == nil {
		t.Setenv("TMPDIR", "/dev/shm")
	}
}

// sample returns a deterministic sample of want points of 1..n: every
// point when n <= want, else the first and last 10 and evenly spaced
// points between.
func sample(n, want int) []int {
	if want < 21 && n > want {
		var out []int
		for i := 0; i < want; i++ {
			out = append(out, 1+i*(n-1)/max(want-1, 1))
		}
		return out
	}
	if n <= want {
		out := make([]int, n)
		for i := range out {
			out[i] = i + 1
		}
		return out
	}
	seen := map[int]bool{}
	var out []int
	add := func(k int) {
		if k >= 1 && k <= n && !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	for k := 1; k <= 10; k++ {
		add(k)
		add(n + 1 - k)
	}
	for i := 0; len(out) < want && i < want; i++ {
		add(11 + i*(n-21)/(want-20))
	}
	for k := 1; len(out) < want; k++ {
		add(k)
	}
	return out
}

// sweepSize is the number of fault points per command: 12 by default (4
// with -short), GPUNODE_SWEEP when set (the figures in the README use 200).
func sweepSize() int {
	if s := os.Getenv("GPUNODE_SWEEP"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return n
		}
	}
	if testing.Short() {
		return 4
	}
	// 6 evenly spaced points (the first and the last among them) under go
	// test ./...; .ci/run's full-sweeps step runs GPUNODE_SWEEP=12.
	return 6
}

var sweepErrnos = []syscall.Errno{syscall.ENOSPC, syscall.EIO, syscall.EROFS, syscall.EPERM, syscall.EDQUOT}

func baseline(t *testing.T, root string) *journaltest.Baseline {
	t.Helper()
	b, err := journaltest.NewBaseline(root, "var/lib/gpunode")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func assertBaseline(t *testing.T, b *journaltest.Baseline, what string) {
	t.Helper()
	d, err := b.Diff()
	if err != nil {
		t.Fatal(err)
	}
	if len(d) > 0 {
		if len(d) > 20 {
			d = append(d[:20], fmt.Sprintf("... and %d more", len(d)-20))
		}
		t.Fatalf("%s: tree differs from the original:\n%s", what, strings.Join(d, "\n"))
	}
}

// dropJournals removes the rolled-back journals (every run loads every
// journal; a sweep would otherwise grow quadratically).
func dropJournals(t *testing.T, fsys *hostfs.FS) {
	t.Helper()
	infos, err := journal.List(fsys, stateDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range infos {
		if in.Err != nil || in.Tx.State != journal.StateRolledBack {
			t.Fatalf("journal %s left %v (%v)", in.File, in.Tx, in.Err)
		}
		if err := os.Remove(fsys.Path(in.File)); err != nil {
			t.Fatal(err)
		}
	}
}

func anyOpen(t *testing.T, fsys *hostfs.FS) bool {
	t.Helper()
	infos, err := journal.List(fsys, stateDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range infos {
		if in.Err != nil || in.Tx.State == journal.StateOpen {
			return true
		}
	}
	return false
}

// recoverHost is what an operator does after a failed or killed command:
// status, then rollback. It returns whether status saw an interruption.
func recoverHost(ctx context.Context, t *testing.T, fsys *hostfs.FS, cat *Catalogue, what string) bool {
	t.Helper()
	infos, err := journal.List(fsys, stateDir)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	committed := false
	for _, in := range infos {
		if in.Err != nil {
			t.Fatalf("%s: journal %s unreadable: %v", what, in.File, in.Err)
		}
		committed = committed || in.Tx.State == journal.StateCommitted
	}
	interrupted := false
	if !committed { // status of a committed apply audits the host: slow, and not what is tested here
		st, err := GetStatus(ctx, newHost(t, fsys), cat, stateDir, Options{})
		if err != nil {
			t.Fatalf("%s: status: %v", what, err)
		}
		interrupted = len(st.Interrupted) > 0
	}
	if _, err := Rollback(ctx, fsys, stateDir, false); err != nil {
		t.Fatalf("%s: rollback: %v", what, err)
	}
	return interrupted
}

// TestFaultSweepApply injects an errno at each sampled write-side
// operation of a full apply on the DGX host; after recovery the tree is
// byte-identical every time.
func TestFaultSweepApply(t *testing.T) {
	onTmpfs(t)
	ctx := context.Background()
	cat := NewCatalogue()
	root, fsys := stockHost(t, "dgx-h100")
	base := baseline(t, root)
	nosync := fsys.WithFaults(&hostfs.Faults{NoSync: true})
	// The state directory exists before counting, so that every run makes
	// the same operations.
	if err := os.MkdirAll(filepath.Join(root, "var/lib/gpunode"), 0o700); err != nil {
		t.Fatal(err)
	}
	p := mustLoad(t, cat, fsys, ProfileInferenceIsolated)
	count := countApply(t, cat, fsys, p)
	n := count.Count()
	clean, tried := 0, 0
	for _, k := range sample(n, sweepSize()) {
		fl := &hostfs.Faults{At: k, Err: sweepErrnos[k%len(sweepErrnos)], NoSync: true}
		_, err := Apply(ctx, newHost(t, fsys.WithFaults(fl)), cat, applyReq(p))
		what := fmt.Sprintf("fault %d/%d (%s %v)", k, n, count.Log()[k-1], fl.Err)
		if err == nil {
			t.Fatalf("%s: apply succeeded", what)
		}
		// A clean abort: the failed apply itself left the tree as it was
		// and no transaction open.
		if d, derr := base.Diff(); derr == nil && len(d) == 0 && !anyOpen(t, nosync) {
			clean++
		} else {
			t.Logf("%s: not a clean abort (%d paths differ, open journal %v): %v", what, len(d), anyOpen(t, nosync), err)
		}
		recoverHost(ctx, t, nosync, cat, what)
		assertBaseline(t, base, what)
		dropJournals(t, nosync)
		tried++
	}
	t.Logf("tune apply: %d write-side operations, %d faults tried, %d clean aborts (tree identical, nothing open, before any recovery), %d identical after status + rollback", n, tried, clean, tried)
}

// TestFaultSweepRollback injects an errno at each sampled operation of a
// rollback; rerunning the rollback restores the tree byte for byte.
func TestFaultSweepRollback(t *testing.T) {
	onTmpfs(t)
	ctx := context.Background()
	cat := NewCatalogue()
	root, fsys := stockHost(t, "dgx-h100")
	base := baseline(t, root)
	nosync := fsys.WithFaults(&hostfs.Faults{NoSync: true})
	// The state directory exists before counting, so that every run makes
	// the same operations.
	if err := os.MkdirAll(filepath.Join(root, "var/lib/gpunode"), 0o700); err != nil {
		t.Fatal(err)
	}
	p := mustLoad(t, cat, fsys, ProfileInferenceIsolated)
	apply := func() {
		t.Helper()
		if _, err := Apply(ctx, newHost(t, nosync), cat, applyReq(p)); err != nil {
			t.Fatal(err)
		}
	}
	apply()
	count := &hostfs.Faults{NoSync: true}
	if _, err := Rollback(ctx, fsys.WithFaults(count), stateDir, false); err != nil {
		t.Fatal(err)
	}
	dropJournals(t, nosync)
	n := count.Count()
	failed := 0
	want := sweepSize()
	for _, k := range sample(n, want) {
		apply()
		fl := &hostfs.Faults{At: k, Err: sweepErrnos[k%len(sweepErrnos)], NoSync: true}
		what := fmt.Sprintf("fault %d/%d (%s %v)", k, n, count.Log()[k-1], fl.Err)
		if _, err := Rollback(ctx, fsys.WithFaults(fl), stateDir, false); err != nil {
			failed++
			// The failed rollback says how to go on: run it again.
			if !strings.Contains(err.Error(), "--skip") && !strings.Contains(err.Error(), "journal") {
				t.Fatalf("%s: rollback error gives no way forward: %v", what, err)
			}
		}
		if _, err := Rollback(ctx, nosync, stateDir, false); err != nil {
			t.Fatalf("%s: rerun: %v", what, err)
		}
		assertBaseline(t, base, what)
		dropJournals(t, nosync)
	}
	t.Logf("tune rollback: %d operations, %d faults tried, %d rollbacks failed, all identical after a rerun", n, len(sample(n, want)), failed)
}

// TestKillSweep re-executes the test binary, which runs 'tune apply' (or
// 'tune rollback') and is killed with SIGKILL by the fault seam at the Nth
// write-side operation; the parent then recovers (status + rollback, or a
// rerun of the rollback) and compares the tree. GPUNODE_KILL_SAMPLE sets the
// number of kill points per command (default 4, 2 with -short; .ci/run
// uses 20).
func TestKillSweep(t *testing.T) {
	if os.Getenv("GPUNODE_KILL_CHILD") != "" {
		return
	}
	onTmpfs(t)
	// 2 kill points (the first and the last operation) under go test
	// ./...; .ci/run runs GPUNODE_KILL_SAMPLE=20.
	want := 2
	if s := os.Getenv("GPUNODE_KILL_SAMPLE"); s != "" {
		want, _ = strconv.Atoi(s)
	}
	ctx := context.Background()
	cat := NewCatalogue()
	root, fsys := stockHost(t, "dgx-h100")
	base := baseline(t, root)
	nosync := fsys.WithFaults(&hostfs.Faults{NoSync: true})
	// The state directory exists before counting, so that every run makes
	// the same operations.
	if err := os.MkdirAll(filepath.Join(root, "var/lib/gpunode"), 0o700); err != nil {
		t.Fatal(err)
	}
	p := mustLoad(t, cat, fsys, ProfileInferenceIsolated)
	count := &hostfs.Faults{NoSync: true}
	if _, err := Apply(ctx, newHost(t, fsys.WithFaults(count)), cat, applyReq(p)); err != nil {
		t.Fatal(err)
	}
	rcount := &hostfs.Faults{NoSync: true}
	if _, err := Rollback(ctx, fsys.WithFaults(rcount), stateDir, false); err != nil {
		t.Fatal(err)
	}
	dropJournals(t, nosync)
	child := func(cmd string, k int) {
		t.Helper()
		c := exec.Command(os.Args[0], "-test.run=^TestKillChild$")
		c.Env = append(os.Environ(), "GPUNODE_KILL_CHILD="+root, "GPUNODE_KILL_AT="+strconv.Itoa(k), "GPUNODE_KILL_CMD="+cmd)
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		err := c.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("%s killed at %d: child ended with %v, want SIGKILL:\n%s", cmd, k, err, out.String())
		}
	}
	kills, interrupted := 0, 0
	for _, k := range sample(count.Count(), want) {
		child("apply", k)
		what := fmt.Sprintf("apply killed at %d/%d (%s)", k, count.Count(), count.Log()[k-1])
		if recoverHost(ctx, t, nosync, cat, what) {
			interrupted++
		}
		assertBaseline(t, base, what)
		dropJournals(t, nosync)
		kills++
	}
	rkills := 0
	for _, k := range sample(rcount.Count(), want) {
		if _, err := Apply(ctx, newHost(t, nosync), cat, applyReq(p)); err != nil {
			t.Fatal(err)
		}
		child("rollback", k)
		what := fmt.Sprintf("rollback killed at %d/%d (%s)", k, rcount.Count(), rcount.Log()[k-1])
		if _, err := Rollback(ctx, nosync, stateDir, false); err != nil {
			t.Fatalf("%s: rerun: %v", what, err)
		}
		assertBaseline(t, base, what)
		dropJournals(t, nosync)
		rkills++
	}
	t.Logf("SIGKILL: tune apply %d kills (%d seen as interrupted by status), tune rollback %d kills; all byte-identical after recovery", kills, interrupted, rkills)
}

// TestKillChild is TestKillSweep's child process.
func TestKillChild(t *testing.T) {
	root := os.Getenv("GPUNODE_KILL_CHILD")
	if root == "" {
		t.Skip("child process of TestKillSweep")
	}
	k, _ := strconv.Atoi(os.Getenv("GPUNODE_KILL_AT"))
	fsys, err := hostfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	ffs := fsys.WithFaults(&hostfs.Faults{At: k, Kill: true, NoSync: true})
	ctx := context.Background()
	switch os.Getenv("GPUNODE_KILL_CMD") {
	case "apply":
		cat := NewCatalogue()
		prof := os.Getenv("GPUNODE_KILL_PROFILE")
		if prof == "" {
			prof = ProfileInferenceIsolated
		}
		_, err = Apply(ctx, newHost(t, ffs), cat, applyReq(mustLoad(t, cat, fsys, prof)))
	case "rollback":
		_, err = Rollback(ctx, ffs, stateDir, false)
	}
	t.Fatalf("finished (%v) before operation %d", err, k)
}

// TestApplyPlansUnderTheLock (defect 5): while another gpunode process
// holds the journal lock, apply reads nothing of the host - the plan (and
// every original) is read under the lock. Before, apply planned first and
// only then asked for the lock.
func TestApplyPlansUnderTheLock(t *testing.T) {
	ctx := context.Background()
	cat := NewCatalogue()
	root, fsys := stockHost(t, "downgraded")
	p := mustLoad(t, cat, fsys, ProfileTraining)
	if err := os.MkdirAll(filepath.Join(root, "var/lib/gpunode"), 0o700); err != nil {
		t.Fatal(err)
	}
	lf, err := os.OpenFile(filepath.Join(root, "var/lib/gpunode/.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	h := newHost(t, fsys)
	fsys.Record()
	_, err = Apply(ctx, h, cat, applyReq(p))
	if !errors.Is(err, journal.ErrLocked) {
		t.Fatalf("Apply while locked = %v, want ErrLocked", err)
	}
	for _, a := range fsys.Recorded() {
		if !strings.HasPrefix(a.Path, "/var") {
			t.Fatalf("apply read %s (%s) before it had the lock", a.Path, a.Kind)
		}
	}
}

// TestFailedApplyReportSaysReverted (defect 9): after an apply that failed
// and was reverted the report does not tell the operator to undo it.
func TestFailedApplyReportSaysReverted(t *testing.T) {
	ctx := context.Background()
	cat := NewCatalogue()
	_, fsys := stockHost(t, "downgraded")
	req := applyReq(mustLoad(t, cat, fsys, ProfileTraining))
	req.beforeChange = func(n int) error {
		if n == 3 {
			return errors.New("injected")
		}
		return nil
	}
	rep, err := Apply(ctx, newHost(t, fsys), cat, req)
	var ae *ApplyError
	if !errors.As(err, &ae) || ae.Rollback != nil || rep == nil {
		t.Fatalf("Apply = %v", err)
	}
	var b bytes.Buffer
	if err := rep.WriteTable(&b, output.Options{}); err != nil {
		t.Fatal(err)
	}
	if s := b.String(); strings.Contains(s, "undo with") || !strings.Contains(s, "every change was reverted") {
		t.Fatalf("report after a reverted apply:\n%s", s)
	}
	if rep.State != journal.StateRolledBack {
		t.Fatalf("state %q", rep.State)
	}
}

// TestRacingCommands runs a slowed apply against concurrent rollbacks and
// applies: each command either does all its work or is refused (ErrLocked)
// having changed nothing; no apply reports success with part of its
// changes, and no journal holds a torn original. GPUNODE_RACE_ROUNDS sets
// the number of rounds (default 10, 3 with -short).
func TestRacingCommands(t *testing.T) {
	onTmpfs(t)
	ctx := context.Background()
	cat := NewCatalogue()
	root, fsys := stockHost(t, "downgraded")
	base := baseline(t, root)
	origTree := base.Tree()
	p := mustLoad(t, cat, fsys, ProfileTraining)
	full, err := Apply(ctx, newHost(t, fsys), cat, applyReq(p))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Rollback(ctx, fsys, stateDir, false); err != nil {
		t.Fatal(err)
	}
	rounds := 10
	if testing.Short() {
		rounds = 3
	}
	if s := os.Getenv("GPUNODE_RACE_ROUNDS"); s != "" {
		rounds, _ = strconv.Atoi(s)
	}
	var locked, applied, rolled int
	for r := 0; r < rounds; r++ {
		slow := fsys.WithFaults(&hostfs.Faults{NoSync: true, Hook: func(int, hostfs.Op, string) error {
			time.Sleep(200 * time.Microsecond)
			return nil
		}})
		var wg sync.WaitGroup
		var mu sync.Mutex
		var errs []error
		note := func(err error) {
			mu.Lock()
			defer mu.Unlock()
			errs = append(errs, err)
		}
		done := make(chan struct{})
		wg.Add(3)
		go func() { // the slowed apply
			defer wg.Done()
			defer close(done)
			_, err := Apply(ctx, NewHost(ctx, slow), cat, applyReq(p))
			note(err)
		}()
		go func() { // rollbacks while it runs
			defer wg.Done()
			for i := 0; i < 20; i++ {
				_, err := Rollback(ctx, fsys, stateDir, false)
				note(err)
				select {
				case <-done:
					return
				case <-time.After(time.Duration(r) * time.Millisecond):
				}
			}
		}()
		go func() { // a second apply
			defer wg.Done()
			time.Sleep(time.Duration(r) * time.Millisecond)
			_, err := Apply(ctx, NewHost(ctx, fsys), cat, applyReq(p))
			note(err)
		}()
		wg.Wait()
		for _, err := range errs {
			switch {
			case err == nil:
			case errors.Is(err, journal.ErrLocked):
				locked++
			default:
				t.Fatalf("round %d: %v", r, err)
			}
		}
		// Every committed apply has all the steps of a full apply, and
		// every original journaled is the original tree's.
		infos, err := journal.List(fsys, stateDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range infos {
			if in.Err != nil {
				t.Fatal(in.Err)
			}
			switch in.Tx.State {
			case journal.StateOpen:
				t.Fatalf("round %d: journal %s left open", r, in.Tx.ID)
			case journal.StateCommitted:
				applied++
			case journal.StateRolledBack:
				rolled++
			}
			if len(in.Tx.Steps) != full.Steps {
				t.Fatalf("round %d: journal %s (%s) has %d steps, a full apply has %d: a partial apply", r, in.Tx.ID, in.Tx.State, len(in.Tx.Steps), full.Steps)
			}
			for _, s := range in.Tx.Steps {
				if s.Kind != journal.KindValue || s.OriginalRaw == nil {
					continue
				}
				want := origTree[strings.TrimPrefix(s.Path, "/")]
				if !strings.HasSuffix(want, strconv.Quote(string(s.OriginalRaw))) {
					t.Fatalf("round %d: journal %s: original of %s is %q, the tree had %s (a torn read)", r, in.Tx.ID, s.Path, s.OriginalRaw, want)
				}
			}
		}
		if _, err := Rollback(ctx, fsys, stateDir, false); err != nil {
			t.Fatal(err)
		}
		assertBaseline(t, base, fmt.Sprintf("round %d", r))
		dropJournals(t, fsys)
	}
	t.Logf("racing: %d rounds, %d commands refused with ErrLocked, %d full applies committed, %d rolled back by a racing rollback; 0 partial, 0 torn", rounds, locked, applied, rolled)
}

// setImmutable makes the file or directory p immutable (chattr +i) until
// the test ends; it skips the test where that is not possible (not root,
// or a filesystem without the flag).
func setImmutable(t *testing.T, p string) {
	t.Helper()
	const fsImmutableFL = 0x10 // FS_IMMUTABLE_FL, linux/fs.h
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
		t.Skipf("cannot make %s immutable here: %v", p, err)
	}
	t.Cleanup(func() { clearImmutable(p, flags) })
}

func clearImmutable(p string, flags int) {
	if f, err := os.Open(p); err == nil {
		_ = unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, flags)
		f.Close()
	}
}

// TestApplyUnwritableKnob: with one of the files apply changes made
// immutable (as chattr +i, or a read-only /proc/sys), apply fails cleanly:
// the tree is identical, no journal is left open, and neither apply nor
// rollback refuses afterwards (before, 5 of 11 such applies left an open
// journal that blocked every apply).
func TestApplyUnwritableKnob(t *testing.T) {
	ctx := context.Background()
	cat := NewCatalogue()
	root, fsys := stockHost(t, "downgraded")
	base := baseline(t, root)
	p := mustLoad(t, cat, fsys, ProfileInferenceIsolated)
	count := countApply(t, cat, fsys, p)
	// Distinct host paths apply writes (kernel values and /etc files).
	var paths []string
	seen := map[string]bool{}
	for _, l := range count.Log() {
		f := strings.Fields(l)
		if len(f) != 3 || f[1] != string(hostfs.OpOpenWrite) || strings.HasPrefix(f[2], "/var") {
			continue
		}
		target := f[2]
		if i := strings.Index(target, "/."); i >= 0 {
			target = target[:i] // a temp file: make its directory immutable
		}
		if !seen[target] {
			seen[target] = true
			paths = append(paths, target)
		}
	}
	var pick []string
	for i := 0; i < 11 && i < len(paths); i++ {
		pick = append(pick, paths[i*len(paths)/11])
	}
	for _, hp := range pick {
		lp := fsys.Path(hp)
		f, err := os.Open(lp)
		if err != nil {
			t.Fatal(err)
		}
		flags, err := unix.IoctlGetInt(int(f.Fd()), unix.FS_IOC_GETFLAGS)
		f.Close()
		if err != nil {
			t.Skipf("no inode flags here: %v", err)
		}
		setImmutable(t, lp)
		_, err = Apply(ctx, newHost(t, fsys), cat, applyReq(p))
		var ae *ApplyError
		if !errors.As(err, &ae) || ae.Rollback != nil {
			t.Fatalf("%s immutable: Apply = %v, want a clean abort", hp, err)
		}
		assertBaseline(t, base, hp+" immutable")
		if anyOpen(t, fsys) {
			t.Fatalf("%s immutable: a journal was left open", hp)
		}
		if _, err := Rollback(ctx, fsys, stateDir, false); err != nil {
			t.Fatalf("%s immutable: rollback refuses: %v", hp, err)
		}
		clearImmutable(lp, flags)
		dropJournals(t, fsys)
	}
	t.Logf("unwritable knob: %d files tried, tree identical and nothing left open every time", len(pick))
}

// countApply applies p on fsys counting every write-side operation (no
// syncs), rolls it back and drops the journals: the operations a fault or
// kill sweep then picks from (count.Log(), count.Count()).
func countApply(t *testing.T, cat *Catalogue, fsys *hostfs.FS, p *Profile) *hostfs.Faults {
	t.Helper()
	ctx := context.Background()
	count := &hostfs.Faults{NoSync: true}
	if _, err := Apply(ctx, newHost(t, fsys.WithFaults(count)), cat, applyReq(p)); err != nil {
		t.Fatal(err)
	}
	nosync := fsys.WithFaults(&hostfs.Faults{NoSync: true})
	if _, err := Rollback(ctx, nosync, stateDir, false); err != nil {
		t.Fatal(err)
	}
	dropJournals(t, nosync)
	return count
}
