package irq

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/goldenfile"

	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/journal"
	"github.com/gpunode/gpunode/internal/output"
	"github.com/gpunode/gpunode/internal/testhost"
	"github.com/gpunode/gpunode/internal/topo"
)

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name), got, *update)
}

func itoa(i int) string { return strconv.Itoa(i) }

func host(t *testing.T, root string) (*hostfs.FS, *topo.Topology) {
	t.Helper()
	fsys, err := hostfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := topo.Discover(context.Background(), fsys)
	if err != nil {
		t.Fatal(err)
	}
	return fsys, tp
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := output.Write(&b, output.JSON, v, output.Options{}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestPlanGolden(t *testing.T) {
	cases := []struct {
		name, host string
		o          Options
	}{
		{"plan-dgx-h100.json", "dgx-h100", Options{}},
		{"plan-dgx-h100-ranks.json", "dgx-h100", Options{RankCPUs: cpuset.New(1, 2, 3, 4, 5, 6, 7, 8, 113, 114, 115, 116), Avoid: cpuset.New(0, 112)}},
		{"plan-amd-8numa.json", "amd-8numa", Options{Kinds: []string{"gpu", "nic", "nvme"}}},
		{"plan-gh200.json", "gh200", Options{}},
		{"plan-downgraded.json", "downgraded", Options{Kinds: []string{"all"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if len(c.o.Kinds) == 1 && c.o.Kinds[0] == "all" {
				c.o.Kinds, _ = ParseKinds("all")
			}
			fsys, tp := host(t, testhost.Path(t, c.host))
			rep, err := Analyze(context.Background(), fsys, tp, c.o)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, c.name, mustJSON(t, rep))
			var tb bytes.Buffer
			if err := rep.WriteTable(&tb, output.Options{}); err != nil {
				t.Fatal(err)
			}
			golden(t, strings.TrimSuffix(c.name, ".json")+".txt", tb.Bytes())
		})
	}
}

// TestPlanInvariants checks the plan's rules on every fixture host directly,
// independent of the golden files.
func TestPlanInvariants(t *testing.T) {
	for _, name := range []string{"dgx-h100", "amd-8numa", "gh200", "downgraded"} {
		t.Run(name, func(t *testing.T) {
			fsys, tp := host(t, testhost.Path(t, name))
			avoid := cpuset.New(0, 1, 2)
			kinds, _ := ParseKinds("all")
			rep, err := Analyze(context.Background(), fsys, tp, Options{Kinds: kinds, Avoid: avoid})
			if err != nil {
				t.Fatal(err)
			}
			excl := tp.IsolatedCPUs.Union(tp.NohzFullCPUs.CPUSet).Union(avoid)
			coreOf := map[int][2]int{}
			for _, c := range tp.CPUs {
				coreOf[c.ID] = [2]int{c.Socket, c.Core}
			}
			if rep.Summary.IRQs == 0 {
				t.Fatal("no IRQs found")
			}
			perNode := map[int]map[[2]int]int{}
			for _, d := range rep.Devices {
				if len(d.IRQs) == 0 {
					t.Errorf("%s: no IRQs", d.Name)
				}
				for _, q := range d.IRQs {
					if q.Planned.Size() != 1 {
						t.Errorf("%s IRQ %d: planned %q, want one CPU (%s)", d.Name, q.IRQ, q.Planned, q.Reason)
						continue
					}
					c := q.Planned.List()[0]
					if excl.Contains(c) {
						t.Errorf("%s IRQ %d planned on excluded CPU %d", d.Name, q.IRQ, c)
					}
					if d.NodeCPUs.Size() > 0 && !d.NodeCPUs.Contains(c) {
						t.Errorf("%s IRQ %d planned on CPU %d outside node %d (%s)", d.Name, q.IRQ, c, d.NUMANode, d.NodeCPUs)
					}
					if perNode[d.NUMANode] == nil {
						perNode[d.NUMANode] = map[[2]int]int{}
					}
					perNode[d.NUMANode][coreOf[c]]++
					if q.Change == q.Affinity.Equals(q.Planned.CPUSet) {
						t.Errorf("IRQ %d: change=%v but affinity %s planned %s", q.IRQ, q.Change, q.Affinity, q.Planned)
					}
				}
			}
			// Spread: on each node the busiest core has at most one IRQ more
			// than the least busy core used.
			for node, cores := range perNode {
				lo, hi := 1<<30, 0
				for _, n := range cores {
					lo, hi = min(lo, n), max(hi, n)
				}
				if hi-lo > 1 {
					t.Errorf("node %d: IRQs per core range %d..%d, want an even spread", node, lo, hi)
				}
			}
		})
	}
}

func TestOffNodeDetection(t *testing.T) {
	fsys, tp := host(t, testhost.Path(t, "dgx-h100"))
	rep, err := Analyze(context.Background(), fsys, tp, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range rep.Devices {
		for _, q := range d.IRQs {
			// Recompute from the raw served counts.
			var off uint64
			for _, s := range q.Served {
				if !d.NodeCPUs.Contains(s.CPU) {
					off += s.Count
				}
			}
			if off != q.OffNodeCount {
				t.Errorf("IRQ %d: offNodeCount %d, recomputed %d", q.IRQ, q.OffNodeCount, off)
			}
			// The fixture pins every nvidia IRQ to CPU 1 (node 0): GPUs on
			// node 1 must be flagged, GPUs on node 0 not.
			if d.Kind == topo.KindGPU && q.OffNode != (d.NUMANode == 1) {
				t.Errorf("%s (node %d) IRQ %d: offNode=%v", d.Name, d.NUMANode, q.IRQ, q.OffNode)
			}
		}
	}
	if !rep.IRQBal.Running || len(rep.IRQBal.PIDs) != 1 || rep.IRQBal.PIDs[0] != 1432 {
		t.Errorf("irqbalance: %+v, want running pid 1432", rep.IRQBal)
	}
	cs := ChecksFromReport(rep)
	drift := 0
	for _, c := range cs {
		if c.ID != CheckOffNode || c.Subject == "" {
			t.Errorf("check %+v: want irq.off-node per device", c)
		}
		if c.Status == "drift" {
			drift++
			if len(c.Fix) != 1 || c.Fix[0] != "gpunode irq apply" {
				t.Errorf("%s fix %q", c.Key(), c.Fix)
			}
		}
	}
	wantDrift := 0
	for _, d := range rep.Devices {
		for _, q := range d.IRQs {
			if q.OffNode {
				wantDrift++
				break
			}
		}
	}
	if drift != wantDrift || drift < 4 {
		t.Fatalf("%d drifting devices, want %d (at least the 4 GPUs on node 1)", drift, wantDrift)
	}
	// gh200 has one node with CPUs: nothing can be off-node.
	fsys, tp = host(t, testhost.Path(t, "gh200"))
	cs, err = Source{FS: fsys, Topo: tp}.Checks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.Status != "ok" {
			t.Errorf("gh200 %s: %s", c.Key(), c.Status)
		}
	}
}

// TestOffNodeByRoutingNotBootCounts: an IRQ that was served off-node
// since boot but is routed on-node now (after 'irq apply') is not
// off-node; a sample window in which it is served off-node makes it so.
// (Before: any off-node count since boot flagged it until reboot.)
func TestOffNodeByRoutingNotBootCounts(t *testing.T) {
	root := testhost.Copy(t, "amd-8numa")
	fsys, tp := host(t, root)
	ctx := context.Background()
	rep, err := Analyze(ctx, fsys, tp, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Pick an IRQ with off-node history and route it to its node.
	var dev Device
	var q IRQ
	for _, d := range rep.Devices {
		for _, x := range d.IRQs {
			if x.OffNodeCount > 0 && d.NodeCPUs.Size() > 0 && q.IRQ == 0 {
				dev, q = d, x
			}
		}
	}
	if q.IRQ == 0 {
		t.Fatal("fixture has no IRQ with off-node counts")
	}
	cpu := dev.NodeCPUs.List()[0]
	for _, f := range []string{"smp_affinity_list", "effective_affinity_list"} {
		p := filepath.Join(root, "proc/irq", itoa(q.IRQ), f)
		if err := os.WriteFile(p, []byte(itoa(cpu)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	find := func(r *Report) IRQ {
		for _, d := range r.Devices {
			for _, x := range d.IRQs {
				if x.IRQ == q.IRQ {
					return x
				}
			}
		}
		t.Fatalf("IRQ %d gone", q.IRQ)
		return IRQ{}
	}
	rep, err = Analyze(ctx, fsys, tp, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := find(rep); got.OffNode || got.OffNodeCount == 0 {
		t.Errorf("after routing on-node: offNode=%v offNodeCount=%d, want false and the history kept", got.OffNode, got.OffNodeCount)
	}
	// Sample: between the two reads, an off-node CPU serves 5 more.
	off := -1
	for _, c := range tp.OnlineCPUs.List() {
		if !dev.NodeCPUs.Contains(c) {
			off = c
			break
		}
	}
	bump := func(by uint64) func(context.Context, time.Duration) error {
		return func(context.Context, time.Duration) error {
			p := filepath.Join(root, "proc/interrupts")
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			tab, err := ParseInterrupts(b)
			if err != nil {
				return err
			}
			col := -1
			for i, c := range tab.CPUs {
				if c == off {
					col = i
				}
			}
			lines := strings.Split(string(b), "\n")
			for i, l := range lines {
				if strings.HasPrefix(strings.TrimSpace(l), itoa(q.IRQ)+":") {
					f := strings.Fields(l)
					n, _ := strconv.ParseUint(f[1+col], 10, 64)
					f[1+col] = strconv.FormatUint(n+by, 10)
					lines[i] = strings.Join(f, " ")
				}
			}
			return os.WriteFile(p, []byte(strings.Join(lines, "\n")), 0o644)
		}
	}
	rep, err = Analyze(ctx, fsys, tp, Options{Sample: time.Second, wait: bump(0)})
	if err != nil {
		t.Fatal(err)
	}
	if got := find(rep); got.OffNode || got.WindowOffNode != 0 {
		t.Errorf("quiet sample: offNode=%v window=%d", got.OffNode, got.WindowOffNode)
	}
	rep, err = Analyze(ctx, fsys, tp, Options{Sample: time.Second, wait: bump(5)})
	if err != nil {
		t.Fatal(err)
	}
	if got := find(rep); !got.OffNode || got.OffNodeRouted || got.WindowOffNode != 5 || rep.SampleSeconds != 1 {
		t.Errorf("busy sample: offNode=%v routed=%v window=%d seconds=%g, want true false 5 1", got.OffNode, got.OffNodeRouted, got.WindowOffNode, rep.SampleSeconds)
	}
	if _, err := Analyze(ctx, fsys, tp, Options{Sample: -time.Second}); err == nil {
		t.Error("negative sample accepted")
	}
}

var fixedClock = journal.WithClock(func() time.Time { return time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC) })

func TestApplyRollbackByteIdentical(t *testing.T) {
	// amd-8numa: 8 nodes, IRQs of unknown-node devices; gh200: arm64 rows.
	// (The DGX tree takes seconds to copy; its plan is covered by goldens.)
	for _, name := range []string{"amd-8numa", "gh200"} {
		t.Run(name, func(t *testing.T) {
			root := testhost.Copy(t, name)
			before, err := testhost.Snapshot(root)
			if err != nil {
				t.Fatal(err)
			}
			fsys, tp := host(t, root)
			ctx := context.Background()
			rep, err := Analyze(ctx, fsys, tp, Options{RankCPUs: cpuset.New(2, 3)})
			if err != nil {
				t.Fatal(err)
			}
			res, err := Apply(ctx, fsys, rep, ApplyOptions{Command: "test", JournalOpts: []journal.Option{fixedClock}})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Changes) != rep.Summary.Changes || res.Transaction == "" {
				t.Fatalf("applied %d changes in %q, plan had %d", len(res.Changes), res.Transaction, rep.Summary.Changes)
			}
			// Every planned affinity is in place, and a second plan has
			// nothing to change.
			rep2, err := Analyze(ctx, fsys, tp, Options{RankCPUs: cpuset.New(2, 3)})
			if err != nil {
				t.Fatal(err)
			}
			if rep2.Summary.Changes != 0 {
				t.Fatalf("after apply, plan still has %d changes", rep2.Summary.Changes)
			}
			res2, err := Apply(ctx, fsys, rep2, ApplyOptions{})
			if err != nil || res2.Transaction != "" {
				t.Fatalf("second apply: %v %+v, want a no-op", err, res2)
			}
			mid, _ := testhost.Snapshot(root)
			if d := diffOutsideJournal(before, mid); len(d) != rep.Summary.Changes {
				t.Fatalf("apply changed %d files, want %d: %v", len(d), rep.Summary.Changes, d)
			}
			if _, err := Rollback(ctx, fsys, "", false); err != nil {
				t.Fatal(err)
			}
			after, _ := testhost.Snapshot(root)
			if d := diffOutsideJournal(before, after); len(d) > 0 {
				t.Fatalf("rollback left differences: %v", d)
			}
			// A second rollback has nothing to do.
			r, err := Rollback(ctx, fsys, "", false)
			if err != nil || len(r.Transactions) != 0 {
				t.Fatalf("second rollback: %v %+v", err, r)
			}
		})
	}
}

// diffOutsideJournal compares snapshots ignoring the journal directory.
func diffOutsideJournal(a, b map[string]string) []string {
	strip := func(m map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			if k == "var" || strings.HasPrefix(k, "var/lib") || k == "var/lib" {
				continue
			}
			out[k] = v
		}
		return out
	}
	return testhost.DiffSnapshots(strip(a), strip(b))
}

// TestApplyRefusesUnreadableIRQ: when an IRQ's affinity cannot be read,
// Apply stops before a journal is started and nothing changes.
func TestApplyRefusesUnreadableIRQ(t *testing.T) {
	root := testhost.Copy(t, "gh200")
	fsys, tp := host(t, root)
	ctx := context.Background()
	rep, err := Analyze(ctx, fsys, tp, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var last IRQ
	for _, d := range rep.Devices {
		for _, q := range d.IRQs {
			if q.Change {
				last = q
			}
		}
	}
	// A directory in place of the file makes every write fail, even as root.
	p := filepath.Join(root, "proc/irq", itoa(last.IRQ), "smp_affinity_list")
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(p, 0o755); err != nil {
		t.Fatal(err)
	}
	before, _ := testhost.Snapshot(root)
	// Analyze cannot read it any more; keep the original report.
	res, err := Apply(ctx, fsys, rep, ApplyOptions{})
	if err == nil || !strings.Contains(err.Error(), "smp_affinity_list") {
		// Reading the original fails first: Apply refuses before journaling.
		t.Fatalf("apply with a broken IRQ file: %v %+v", err, res)
	}
	if m, _ := filepath.Glob(filepath.Join(root, "var/lib/gpunode/*.journal")); len(m) > 0 {
		t.Fatalf("a journal was started although nothing could be applied: %v", m)
	}
	after, _ := testhost.Snapshot(root)
	if d := diffOutsideJournal(before, after); len(d) > 0 {
		t.Fatalf("failed apply changed files: %v", d)
	}
}

// TestApplySkipsUnwritableIRQ: an IRQ whose affinity file cannot be
// rewritten (the kernel answers EIO for managed IRQs; here a read-only file)
// is skipped (its journaled step changed nothing); the others are applied and
// rolled back. File modes do not bind root, so this runs unprivileged only.
func TestApplySkipsUnwritableIRQ(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores file modes")
	}
	root := testhost.Copy(t, "gh200")
	fsys, tp := host(t, root)
	ctx := context.Background()
	rep, err := Analyze(ctx, fsys, tp, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var last IRQ
	for _, d := range rep.Devices {
		for _, q := range d.IRQs {
			if q.Change {
				last = q
			}
		}
	}
	p := filepath.Join(root, "proc/irq", itoa(last.IRQ), "smp_affinity_list")
	if err := os.Chmod(p, 0o444); err != nil {
		t.Fatal(err)
	}
	before, _ := testhost.Snapshot(root)
	res, err := Apply(ctx, fsys, rep, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Skipped) != 1 || res.Skipped[0].IRQ != last.IRQ || len(res.Changes) != rep.Summary.Changes-1 {
		t.Fatalf("skipped %+v, changes %d; want IRQ %d skipped and %d changes", res.Skipped, len(res.Changes), last.IRQ, rep.Summary.Changes-1)
	}
	if _, err := Rollback(ctx, fsys, "", false); err != nil {
		t.Fatal(err)
	}
	after, _ := testhost.Snapshot(root)
	if d := diffOutsideJournal(before, after); len(d) > 0 {
		t.Fatalf("rollback left differences: %v", d)
	}
}

func TestParseKinds(t *testing.T) {
	for in, want := range map[string]string{"": "gpu,nic", "gpu": "gpu", "nics,gpu,nic": "nic,gpu", "all": "gpu,nic,nvme,nvswitch"} {
		got, err := ParseKinds(in)
		if err != nil || strings.Join(got, ",") != want {
			t.Errorf("ParseKinds(%q) = %v %v, want %s", in, got, err, want)
		}
	}
	if _, err := ParseKinds("gpu,tpu"); err == nil || !strings.Contains(err.Error(), `"tpu"`) {
		t.Errorf("ParseKinds(gpu,tpu) error %v", err)
	}
}

func TestRollbackNothing(t *testing.T) {
	fsys, err := hostfs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r, err := Rollback(context.Background(), fsys, "", false)
	if err != nil || len(r.Transactions) != 0 {
		t.Fatalf("%v %+v", err, r)
	}
}
