package miglive

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/journal"
	"github.com/gpunode/gpunode/internal/journal/journaltest"
	"github.com/gpunode/gpunode/internal/mig"
)

// TestFaultSweepMIGApply injects an errno at every write-side operation of
// a MIG apply (fake A100s: mode changes, destroys and creations); after
// the failed apply and a rollback every GPU has its original mode and
// layout and the host tree is unchanged.
func TestFaultSweepMIGApply(t *testing.T) {
	ctx := context.Background()
	cat := mig.Builtin()
	devs := fakeDevs(t, "a100-mig")
	// GPU 1 has a pending disable in the fixture; make it a clean GPU.
	if err := devs[1].SetMIGMode(ctx, true); err != nil {
		t.Fatal(err)
	}
	s := spec(t)
	h := tmpHost(t)
	if err := os.MkdirAll(h.Path(journal.DefaultDir), 0o700); err != nil {
		t.Fatal(err)
	}
	base, err := journaltest.NewBaseline(h.Root(), "var/lib/gpunode")
	if err != nil {
		t.Fatal(err)
	}
	state := func() string {
		var out []any
		for _, d := range devs {
			cur, pend, err := d.MIGMode(ctx)
			if err != nil {
				t.Fatal(err)
			}
			insts, err := d.Instances(ctx)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, cur, pend, insts)
		}
		b, _ := json.Marshal(out)
		return string(b)
	}
	byUUID := map[string]Device{}
	for _, d := range devs {
		byUUID[d.Info().UUID] = d
	}
	kinds := journal.NewKinds()
	if err := RegisterJournalKinds(kinds, func(u string) (Device, error) { return byUUID[u], nil }); err != nil {
		t.Fatal(err)
	}
	rollback := func(what string) {
		t.Helper()
		if _, err := journal.Rollback(ctx, h, journal.DefaultDir, journal.WithOwner(JournalOwner), journal.WithKinds(kinds)); err != nil {
			t.Fatalf("%s: rollback: %v", what, err)
		}
		infos, _ := journal.List(h, journal.DefaultDir)
		for _, in := range infos {
			os.Remove(h.Path(in.File))
		}
	}
	tried, clean := 0, 0
	for _, label := range []string{"all-balanced", "all-disabled"} {
		orig := state()
		count := &hostfs.Faults{NoSync: true}
		res, err := Apply(ctx, cat, devs, s, Options{Label: label, Host: h.WithFaults(count), JournalDir: journal.DefaultDir})
		if err != nil || res.Journal == "" {
			t.Fatalf("%s: %+v %v", label, res, err)
		}
		rollback(label)
		if state() != orig {
			t.Fatalf("%s: rollback did not restore the GPUs", label)
		}
		n := count.Count()
		for k := 1; k <= n; k++ {
			fl := &hostfs.Faults{At: k, Err: []syscall.Errno{syscall.ENOSPC, syscall.EIO, syscall.EROFS}[k%3], NoSync: true}
			what := fmt.Sprintf("%s: fault %d/%d (%s)", label, k, n, count.Log()[k-1])
			if _, err := Apply(ctx, cat, devs, s, Options{Label: label, Host: h.WithFaults(fl), JournalDir: journal.DefaultDir}); err == nil {
				t.Fatalf("%s: apply succeeded", what)
			}
			tried++
			if state() == orig {
				clean++
			}
			rollback(what)
			if state() != orig {
				t.Fatalf("%s: GPUs differ after recovery", what)
			}
			if d, err := base.Diff(); err != nil || len(d) > 0 {
				t.Fatalf("%s: tree differs: %v %v", what, err, d)
			}
		}
		// Leave the GPUs changed for the next label (all-disabled
		// destroys what all-balanced made).
		if _, err := Apply(ctx, cat, devs, s, Options{Label: label, Host: h, JournalDir: journal.DefaultDir}); err != nil {
			t.Fatal(err)
		}
		infos, _ := journal.List(h, journal.DefaultDir)
		for _, in := range infos {
			os.Remove(h.Path(in.File))
		}
	}
	t.Logf("mig apply: %d faults tried (every write-side operation of 2 configs), %d clean aborts, all identical after rollback", tried, clean)
}
