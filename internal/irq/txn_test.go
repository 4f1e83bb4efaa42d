package irq

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/journal"
	"github.com/gpunode/gpunode/internal/journal/journaltest"
	"github.com/gpunode/gpunode/internal/testhost"
)

// affinityCtimes returns the inode change time of every IRQ affinity file
// under root: a rewrite, even of the same bytes, moves it.
func affinityCtimes(t *testing.T, root string) map[string]unix.Timespec {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(root, "proc/irq/*/smp_affinity_list"))
	if err != nil || len(m) == 0 {
		t.Fatalf("no affinity files: %v", err)
	}
	out := map[string]unix.Timespec{}
	for _, p := range m {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			t.Fatal(err)
		}
		out[p] = st.Ctim
	}
	return out
}

// TestApplyWritesNothingBeforeItsJournal (defect 7): apply used to probe
// each IRQ by rewriting its current affinity before any journal existed;
// with an unusable journal directory it had already written every IRQ file
// when it failed. Now nothing is written before the step is journaled.
func TestApplyWritesNothingBeforeItsJournal(t *testing.T) {
	root := testhost.Copy(t, "gh200")
	fsys, tp := host(t, root)
	ctx := context.Background()
	rep, err := Analyze(ctx, fsys, tp, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Summary.Changes == 0 {
		t.Fatal("nothing planned: the test would not test")
	}
	// A regular file where the journal directory should be.
	if err := os.MkdirAll(filepath.Join(root, "var/lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "var/lib/gpunode"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	before := affinityCtimes(t, root)
	if _, err := Apply(ctx, fsys, rep, ApplyOptions{}); err == nil {
		t.Fatal("apply with an unusable journal directory succeeded")
	}
	for p, c := range affinityCtimes(t, root) {
		if c != before[p] {
			t.Fatalf("%s was written although no journal could be started", p)
		}
	}
}

// TestFaultSweepIRQApply injects an errno at every write-side operation of
// an IRQ apply on the DGX host (a sample when there are more than
// GPUNODE_SWEEP, default 24); after a rollback the tree is byte-identical.
func TestFaultSweepIRQApply(t *testing.T) {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() && unix.Access("/dev/shm", unix.W_OK) == nil {
		t.Setenv("TMPDIR", "/dev/shm")
	}
	want := 24
	if testing.Short() {
		want = 6
	}
	if s := os.Getenv("GPUNODE_SWEEP"); s != "" {
		want, _ = strconv.Atoi(s)
	}
	root := testhost.Copy(t, "dgx-h100")
	if err := os.MkdirAll(filepath.Join(root, "var/lib/gpunode"), 0o700); err != nil {
		t.Fatal(err)
	}
	fsys, tp := host(t, root)
	base, err := journaltest.NewBaseline(root, "var/lib/gpunode")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rep, err := Analyze(ctx, fsys, tp, Options{})
	if err != nil {
		t.Fatal(err)
	}
	nosync := fsys.WithFaults(&hostfs.Faults{NoSync: true})
	count := &hostfs.Faults{NoSync: true}
	res, err := Apply(ctx, fsys.WithFaults(count), rep, ApplyOptions{})
	if err != nil || len(res.Changes) == 0 {
		t.Fatalf("apply: %v %+v", err, res)
	}
	if _, err := Rollback(ctx, nosync, "", false); err != nil {
		t.Fatal(err)
	}
	drop := func() {
		infos, err := journal.List(fsys, journal.DefaultDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range infos {
			if in.Err != nil || in.Tx.State != journal.StateRolledBack {
				t.Fatalf("journal %s: %v %v", in.File, in.Tx, in.Err)
			}
			os.Remove(fsys.Path(in.File))
		}
	}
	drop()
	n := count.Count()
	points := make([]int, 0, n)
	for k := 1; k <= n; k++ {
		if n <= want || (k-1)%((n+want-1)/want) == 0 || k == n {
			points = append(points, k)
		}
	}
	clean := 0
	errnos := []syscall.Errno{syscall.ENOSPC, syscall.EROFS, syscall.EDQUOT, syscall.EINVAL}
	for _, k := range points {
		fl := &hostfs.Faults{At: k, Err: errnos[k%len(errnos)], NoSync: true}
		what := fmt.Sprintf("fault %d/%d (%s %v)", k, n, count.Log()[k-1], fl.Err)
		_, err := Apply(ctx, fsys.WithFaults(fl), rep, ApplyOptions{})
		if err == nil {
			t.Fatalf("%s: apply succeeded", what)
		}
		// A clean abort: the failed apply itself left the tree as it was
		// and no transaction open.
		var je *journal.Error
		if d, _ := base.Diff(); len(d) == 0 && (!errors.As(err, &je) || je.Revert == nil) {
			clean++
		}
		if _, err := Rollback(ctx, nosync, "", false); err != nil {
			t.Fatalf("%s: rollback: %v", what, err)
		}
		if d, err := base.Diff(); err != nil || len(d) > 0 {
			t.Fatalf("%s: tree differs after rollback: %v\n%s", what, err, strings.Join(d, "\n"))
		}
		drop()
	}
	t.Logf("irq apply: %d IRQ changes, %d write-side operations, %d faults tried, %d clean aborts, %d identical after rollback", len(res.Changes), n, len(points), clean, len(points))
}

// TestKillSweepIRQ re-executes the test binary, which runs 'irq apply' on
// the DGX host and is killed with SIGKILL by the fault seam at a sampled
// write-side operation; the parent rolls back and compares the tree.
// GPUNODE_KILL_SAMPLE sets the number of points (default 4, 2 with -short).
func TestKillSweepIRQ(t *testing.T) {
	if os.Getenv("GPUNODE_IRQ_KILL_CHILD") != "" {
		return
	}
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() && unix.Access("/dev/shm", unix.W_OK) == nil {
		t.Setenv("TMPDIR", "/dev/shm")
	}
	want := 4
	if testing.Short() {
		want = 2
	}
	if s := os.Getenv("GPUNODE_KILL_SAMPLE"); s != "" {
		want, _ = strconv.Atoi(s)
	}
	root := testhost.Copy(t, "dgx-h100")
	if err := os.MkdirAll(filepath.Join(root, "var/lib/gpunode"), 0o700); err != nil {
		t.Fatal(err)
	}
	fsys, tp := host(t, root)
	base, err := journaltest.NewBaseline(root, "var/lib/gpunode")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rep, err := Analyze(ctx, fsys, tp, Options{})
	if err != nil {
		t.Fatal(err)
	}
	count := &hostfs.Faults{NoSync: true}
	if _, err := Apply(ctx, fsys.WithFaults(count), rep, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Rollback(ctx, fsys, "", false); err != nil {
		t.Fatal(err)
	}
	n := count.Count()
	kills, interrupted := 0, 0
	for i := 0; i < want; i++ {
		k := 1 + i*(n-1)/max(want-1, 1)
		c := exec.Command(os.Args[0], "-test.run=^TestKillChildIRQ$")
		c.Env = append(os.Environ(), "GPUNODE_IRQ_KILL_CHILD="+root, "GPUNODE_KILL_AT="+strconv.Itoa(k))
		out, err := c.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("kill at %d: child ended with %v, want SIGKILL:\n%s", k, err, out)
		}
		infos, err := journal.List(fsys, journal.DefaultDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range infos {
			if in.Err != nil {
				t.Fatalf("kill at %d: journal %s unreadable: %v", k, in.File, in.Err)
			}
			if in.Tx.State == journal.StateOpen {
				interrupted++
			}
		}
		if _, err := Rollback(ctx, fsys, "", false); err != nil {
			t.Fatalf("kill at %d (%s): rollback: %v", k, count.Log()[k-1], err)
		}
		if d, err := base.Diff(); err != nil || len(d) > 0 {
			t.Fatalf("kill at %d (%s): tree differs: %v\n%s", k, count.Log()[k-1], err, strings.Join(d, "\n"))
		}
		infos, _ = journal.List(fsys, journal.DefaultDir)
		for _, in := range infos {
			os.Remove(fsys.Path(in.File))
		}
		kills++
	}
	t.Logf("SIGKILL: irq apply %d kills (%d left an open journal), all byte-identical after rollback", kills, interrupted)
}

// TestKillChildIRQ is TestKillSweepIRQ's child process.
func TestKillChildIRQ(t *testing.T) {
	root := os.Getenv("GPUNODE_IRQ_KILL_CHILD")
	if root == "" {
		t.Skip("child process of TestKillSweepIRQ")
	}
	k, _ := strconv.Atoi(os.Getenv("GPUNODE_KILL_AT"))
	fsys, tp := host(t, root)
	rep, err := Analyze(context.Background(), fsys, tp, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Apply(context.Background(), fsys.WithFaults(&hostfs.Faults{At: k, Kill: true, NoSync: true}), rep, ApplyOptions{})
	t.Fatalf("finished (%v) before operation %d", err, k)
}
