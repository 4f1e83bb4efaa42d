package gpu

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/journal"
	"github.com/gpunode/gpunode/internal/journal/journaltest"
	"github.com/gpunode/gpunode/internal/testhost"
)

// TestFaultSweepGPUApply injects an errno at write-side operations (all of
// them with GPUNODE_FULL_SWEEPS=1, else a sample of every kind) of
// a persistence change and of a clock lock on the DGX fixture's fake GPUs;
// after the failed apply (and a rollback when one is left open) the GPUs
// and the host tree are exactly as before.
func TestFaultSweepGPUApply(t *testing.T) {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		t.Setenv("TMPDIR", "/dev/shm")
	}
	ctx := context.Background()
	root := testhost.Copy(t, "dgx-h100")
	if err := os.MkdirAll(filepath.Join(root, "var/lib/gpunode"), 0o700); err != nil {
		t.Fatal(err)
	}
	h, err := hostfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenFake(h, FakeFile)
	if err != nil {
		t.Fatal(err)
	}
	state := func() string {
		st, err := b.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		j, _ := json.Marshal(st)
		return string(j)
	}
	base, err := journaltest.NewBaseline(root, "var/lib/gpunode")
	if err != nil {
		t.Fatal(err)
	}
	orig := state()
	st, _ := b.Status(ctx)
	kinds := journal.NewKinds()
	if err := RegisterJournalKinds(kinds, b); err != nil {
		t.Fatal(err)
	}
	const dir = journal.DefaultDir
	rollback := func(what string) {
		t.Helper()
		if _, err := journal.Rollback(ctx, h, dir, journal.WithOwner(JournalOwner), journal.WithKinds(kinds)); err != nil {
			t.Fatalf("%s: rollback: %v", what, err)
		}
		infos, _ := journal.List(h, dir)
		for _, in := range infos {
			os.Remove(h.Path(in.File))
		}
	}
	lock, err := PlanClockLock(b.Name(), st.GPUs, 0)
	if err != nil {
		t.Fatal(err)
	}
	plans := []Plan{PlanPersistence(b.Name(), st.GPUs, !*st.GPUs[0].Persistence), lock}
	tried, clean, total := 0, 0, 0
	for _, p := range plans {
		count := &hostfs.Faults{NoSync: true}
		if got, err := Apply(ctx, b, h.WithFaults(count), dir, p, "test", false); err != nil || !got.Applied {
			t.Fatalf("%s: %+v %v", p.Action, got, err)
		}
		rollback(p.Action)
		if state() != orig {
			t.Fatalf("%s: rollback did not restore the GPUs", p.Action)
		}
		n := count.Count()
		total += n
		// Every point with GPUNODE_FULL_SWEEPS=1 (.ci/run); otherwise
		// a sample covering every kind of operation.
		for _, k := range journaltest.Points(count.Log(), 1) {
			fl := &hostfs.Faults{At: k, Err: []syscall.Errno{syscall.ENOSPC, syscall.EIO, syscall.EROFS}[k%3], NoSync: true}
			what := fmt.Sprintf("%s: fault %d/%d (%s)", p.Action, k, n, count.Log()[k-1])
			_, err := Apply(ctx, b, h.WithFaults(fl), dir, p, "test", false)
			if err == nil {
				t.Fatalf("%s: apply succeeded", what)
			}
			tried++
			if state() == orig && !strings.Contains(err.Error(), "reverting failed") {
				clean++
			}
			rollback(what)
			if got := state(); got != orig {
				t.Fatalf("%s: GPUs differ after recovery", what)
			}
			if d, err := base.Diff(); err != nil || len(d) > 0 {
				t.Fatalf("%s: tree differs: %v %v", what, err, d)
			}
		}
	}
	t.Logf("gpu apply: %d faults tried (full sweep %v; counted %d), %d clean aborts, all identical after recovery", tried, journaltest.FullSweeps(), total, clean)
}
