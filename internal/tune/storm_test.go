package tune

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gpunode/gpunode/internal/journal/journaltest"
	"golang.org/x/sys/unix"
)

// linkCPUFreq turns every cpuN/cpufreq directory of root into the link the
// kernel makes (cpuN/cpufreq -> ../cpufreq/policyN): a path with a "..",
// which openat2(RESOLVE_IN_ROOT) answers EAGAIN for when a rename races it.
func linkCPUFreq(t *testing.T, root string) int {
	t.Helper()
	cpuDir := filepath.Join(root, "sys/devices/system/cpu")
	ents, err := os.ReadDir(cpuDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(cpuDir, "cpufreq"), 0o755); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		var k int
		if _, err := fmt.Sscanf(e.Name(), "cpu%d", &k); err != nil || fmt.Sprintf("cpu%d", k) != e.Name() {
			continue
		}
		d := filepath.Join(cpuDir, e.Name(), "cpufreq")
		if fi, err := os.Lstat(d); err != nil || !fi.IsDir() {
			continue
		}
		pol := fmt.Sprintf("policy%d", k)
		if err := os.Rename(d, filepath.Join(cpuDir, "cpufreq", pol)); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("../cpufreq/"+pol, d); err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// TestApplyAuditUnderRenameStorm: with another goroutine renaming a file in
// a loop (on the same filesystem, as kubelet and containerd do on a node),
// apply and audit give exactly the results of a quiet run, every time:
// the same report, the same tree, no setting skipped, no spurious error.
func TestApplyAuditUnderRenameStorm(t *testing.T) {
	ctx := context.Background()
	cat := NewCatalogue()
	root, fsys := stockHost(t, "downgraded")
	if n := linkCPUFreq(t, root); n == 0 {
		t.Fatal("no cpufreq directories to link")
	}
	p := mustLoad(t, cat, fsys, ProfileTraining)
	orig := snapshot(t, root)
	run := func() (applied, audited string, tree journaltest.Tree) {
		t.Helper()
		rep, err := Apply(ctx, newHost(t, fsys), cat, applyReq(p))
		if err != nil {
			t.Fatalf("apply: %v", err)
		}
		if len(rep.Skipped) > 0 || rep.State != "committed" {
			t.Fatalf("apply: skipped %+v, state %q", rep.Skipped, rep.State)
		}
		rep.Journal = "" // numbered per run
		a, _ := json.Marshal(rep)
		tree = snapshot(t, root)
		ar, err := Audit(ctx, newHost(t, fsys), cat, p, Options{})
		if err != nil {
			t.Fatalf("audit: %v", err)
		}
		b, _ := json.Marshal(ar)
		if _, err := Rollback(ctx, fsys, stateDir, false); err != nil {
			t.Fatalf("rollback: %v", err)
		}
		if d := journaltest.Diff(orig, snapshot(t, root)); len(d) > 0 {
			t.Fatalf("rollback left differences:\n%s", strings.Join(d, "\n"))
		}
		return string(a), string(b), tree
	}
	quietApply, quietAudit, quietTree := run()
	if !strings.Contains(quietApply, "cpu.governor") {
		t.Fatalf("the quiet apply does not change cpu.governor: the storm would test nothing\n%s", quietApply)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var renames atomic.Int64
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := os.WriteFile(a, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for x, y := a, b; ; x, y = y, x {
			select {
			case <-stop:
				return
			default:
			}
			if unix.Rename(x, y) == nil {
				renames.Add(1)
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	// 50 runs take about two minutes on a loaded 2-core machine: CI runs
	// them (.ci/run, GPUNODE_RENAME_STORM_RUNS=50); go test runs a few.
	runs := 3
	if n, err := strconv.Atoi(os.Getenv("GPUNODE_RENAME_STORM_RUNS")); err == nil && n > 0 {
		runs = n
	}
	same := 0
	for i := 0; i < runs; i++ {
		ap, au, tree := run()
		d := journaltest.Diff(quietTree, tree)
		switch {
		case ap != quietApply:
			t.Errorf("run %d: the apply report differs from the quiet run's:\n%s\nquiet:\n%s", i, ap, quietApply)
		case au != quietAudit:
			t.Errorf("run %d: the audit differs from the quiet run's:\n%s\nquiet:\n%s", i, au, quietAudit)
		case len(d) > 0:
			t.Errorf("run %d: the applied tree differs:\n%s", i, strings.Join(d, "\n"))
		default:
			same++
		}
	}
	t.Logf("%d of %d apply+audit+rollback runs identical to the quiet run under %d renames", same, runs, renames.Load())
}
