package irq

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/topo"
)

// TestRealKernelApplyRollback applies an IRQ plan to this machine's real
// /proc/irq and rolls it back, checking every smp_affinity_list after each
// step. It changes the live host, so it runs only as root with
// GPUNODE_REAL_KERNEL=1 (as the tune layer's real-kernel test).
func TestRealKernelApplyRollback(t *testing.T) {
	if os.Getenv("GPUNODE_REAL_KERNEL") != "1" || os.Geteuid() != 0 {
		t.Skip("set GPUNODE_REAL_KERNEL=1 and run as root to change the live host's IRQ affinity")
	}
	ctx := context.Background()
	fsys, err := hostfs.New("/")
	if err != nil {
		t.Fatal(err)
	}
	tp, err := topo.Discover(ctx, fsys)
	if err != nil {
		t.Fatal(err)
	}
	kinds, _ := ParseKinds("all")
	rep, err := Analyze(ctx, fsys, tp, Options{Kinds: kinds})
	if err != nil {
		t.Fatal(err)
	}
	orig := map[int]string{}
	for _, d := range rep.Devices {
		for _, q := range d.IRQs {
			b, err := os.ReadFile(fmt.Sprintf("/proc/irq/%d/smp_affinity_list", q.IRQ))
			if err != nil {
				t.Fatal(err)
			}
			orig[q.IRQ] = strings.TrimSpace(string(b))
		}
	}
	if rep.Summary.Changes == 0 {
		t.Skip("no IRQ to change on this host")
	}
	dir := t.TempDir()
	res, err := Apply(ctx, fsys, rep, ApplyOptions{JournalDir: dir, Command: "realkernel test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("applied %d, skipped %d (kernel-managed)", len(res.Changes), len(res.Skipped))
	for _, c := range res.Changes {
		got, err := readList(fsys, fmt.Sprintf("/proc/irq/%d/smp_affinity_list", c.IRQ))
		if err != nil || got.String() != c.To {
			t.Errorf("IRQ %d: smp_affinity_list %s after apply, want %s (%v)", c.IRQ, got, c.To, err)
		}
	}
	if _, err := Rollback(ctx, fsys, dir, false); err != nil {
		t.Fatal(err)
	}
	for irq, want := range orig {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/irq/%d/smp_affinity_list", irq))
		if got := strings.TrimSpace(string(b)); got != want {
			t.Errorf("IRQ %d: smp_affinity_list %q after rollback, want %q", irq, got, want)
		}
	}
}
