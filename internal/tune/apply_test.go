package tune

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
	"time"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/journal"
	"github.com/gpunode/gpunode/internal/journal/journaltest"
	"github.com/gpunode/gpunode/internal/output"
)

const stateDir = journal.DefaultDir

// fixable reports whether apply can make check c pass at runtime or for
// the next boot.
func fixable(cat *Catalogue, c Check) bool {
	s := cat.Get(c.ID)
	if s == nil {
		return false // gpu, process and other sources
	}
	switch s.knob.(type) {
	case checkKnob, manualKnob, shmKnob:
		return false
	}
	return true
}

func applyReq(p *Profile) ApplyRequest {
	return ApplyRequest{Profile: p, StateDir: stateDir, Bootloader: true, Command: "test", Clock: testClock}
}

// assertAuditPasses checks that after apply every setting apply can fix is
// ok or waiting for a reboot.
func assertAuditPasses(t *testing.T, h *Host, cat *Catalogue, p *Profile) {
	t.Helper()
	r, err := Audit(context.Background(), h, cat, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Checks {
		if !fixable(cat, c) || c.Status == StatusAbsent {
			continue
		}
		want := StatusOK
		if cat.Get(c.ID).NeedsReboot {
			want = StatusPendingReboot
		}
		if c.Status != want {
			t.Errorf("after apply: %s is %s (%s -> %s: %s), want %s", c.ID, c.Status, c.Current, c.Expected, c.Detail, want)
		}
	}
}

// TestApplyAuditRollback: apply -> audit passes -> apply again changes
// nothing -> status -> rollback -> the tree is byte-identical (every file,
// mode and link).
func TestApplyAuditRollback(t *testing.T) {
	cases := []struct {
		host     string
		profiles []string
	}{
		{"downgraded", allProfiles},
		{"gh200", []string{ProfileInferenceIsolated}},
		{"amd-8numa", []string{ProfileTraining}},
		{"dgx-h100", []string{ProfileInferenceIsolated}},
	}
	ctx := context.Background()
	cat := NewCatalogue()
	for _, tc := range cases {
		if testing.Short() && tc.host != "downgraded" {
			continue
		}
		root, fsys := stockHost(t, tc.host)
		orig := snapshot(t, root)
		for _, prof := range tc.profiles {
			t.Run(tc.host+"/"+prof, func(t *testing.T) {
				p := mustLoad(t, cat, fsys, prof)
				rep, err := Apply(ctx, newHost(t, fsys), cat, applyReq(p))
				if err != nil {
					t.Fatal(err)
				}
				if !rep.Changed || rep.Journal == "" || rep.Steps == 0 {
					t.Fatalf("first apply: changed=%v journal=%q steps=%d", rep.Changed, rep.Journal, rep.Steps)
				}
				assertAuditPasses(t, newHost(t, fsys), cat, p)
				after := snapshot(t, root)

				// Idempotent: a second apply changes nothing, writes no journal.
				rep2, err := Apply(ctx, newHost(t, fsys), cat, applyReq(p))
				if err != nil {
					t.Fatal(err)
				}
				if rep2.Changed || rep2.Journal != "" || len(rep2.Items) != 0 {
					t.Fatalf("second apply changed something: %+v", rep2)
				}
				if d := journaltest.Diff(after, snapshot(t, root)); len(d) > 0 {
					t.Fatalf("second apply changed the tree:\n%s", strings.Join(d, "\n"))
				}
				for _, f := range []string{fileSysctl, fileLimits, fileTmpfiles} {
					b, _ := fsys.ReadFile(f)
					seen := map[string]bool{}
					for _, l := range strings.Split(string(b), "\n") {
						if l != "" && seen[l] {
							t.Errorf("%s: duplicate line %q", f, l)
						}
						seen[l] = true
					}
				}

				st, err := GetStatus(ctx, newHost(t, fsys), cat, stateDir, Options{})
				if err != nil {
					t.Fatal(err)
				}
				if !st.Applied || st.Profile != prof || len(st.Interrupted)+len(st.ModifiedFiles) > 0 {
					t.Fatalf("status = %+v", st)
				}

				rb, err := Rollback(ctx, fsys, stateDir, false)
				if err != nil {
					t.Fatal(err)
				}
				if len(rb.Transactions) != 1 {
					t.Fatalf("rollback reverted %d transactions, want 1", len(rb.Transactions))
				}
				if d := journaltest.Diff(orig, snapshot(t, root)); len(d) > 0 {
					t.Fatalf("tree differs after rollback:\n%s", strings.Join(d, "\n"))
				}
				st, err = GetStatus(ctx, newHost(t, fsys), cat, stateDir, Options{})
				if err != nil || st.Applied {
					t.Fatalf("status after rollback = %+v, %v", st, err)
				}
			})
		}
	}
}

// TestApplyTwoProfilesRollback applies two profiles in a row; rollback
// undoes both, newest first.
func TestApplyTwoProfilesRollback(t *testing.T) {
	ctx := context.Background()
	cat := NewCatalogue()
	root, fsys := stockHost(t, "downgraded")
	orig := snapshot(t, root)
	for _, prof := range []string{ProfileTraining, ProfileInference} {
		if _, err := Apply(ctx, newHost(t, fsys), cat, applyReq(mustLoad(t, cat, fsys, prof))); err != nil {
			t.Fatal(err)
		}
	}
	assertAuditPasses(t, newHost(t, fsys), cat, mustLoad(t, cat, fsys, ProfileInference))
	rb, err := Rollback(ctx, fsys, stateDir, false)
	if err != nil || len(rb.Transactions) != 2 {
		t.Fatalf("rollback = %+v, %v", rb, err)
	}
	if d := journaltest.Diff(orig, snapshot(t, root)); len(d) > 0 {
		t.Fatalf("tree differs after rollback:\n%s", strings.Join(d, "\n"))
	}
}

// TestApplyFaultInjection makes change k of an apply fail, for every k (a
// sample of k on the larger host with -short); the tree must end
// byte-identical to the original each time.
func TestApplyFaultInjection(t *testing.T) {
	ctx := context.Background()
	cat := NewCatalogue()
	for _, host := range []string{"vm-2vcpu", "downgraded"} {
		t.Run(host, func(t *testing.T) {
			root, fsys := stockHost(t, host)
			orig := snapshot(t, root)
			p := mustLoad(t, cat, fsys, ProfileInferenceIsolated)
			// Count the changes of a full apply, then undo it.
			n := 0
			req := applyReq(p)
			req.beforeChange = func(int) error { n++; return nil }
			if _, err := Apply(ctx, newHost(t, fsys), cat, req); err != nil {
				t.Fatal(err)
			}
			if _, err := Rollback(ctx, fsys, stateDir, false); err != nil {
				t.Fatal(err)
			}
			if n < 5 {
				t.Fatalf("only %d changes to inject faults into", n)
			}
			for k := 1; k <= n; k++ {
				// -short: every k on the small host, a sample on the larger.
				if testing.Short() && host != "vm-2vcpu" && k > 10 && k < n-10 && k%9 != 0 {
					continue
				}
				req := applyReq(p)
				req.beforeChange = func(i int) error {
					if i == k {
						return fmt.Errorf("injected failure at change %d", k)
					}
					return nil
				}
				_, err := Apply(ctx, newHost(t, fsys), cat, req)
				var ae *ApplyError
				if !errors.As(err, &ae) || ae.Rollback != nil || !strings.Contains(err.Error(), "injected failure") {
					t.Fatalf("k=%d: Apply = %v, want an ApplyError with a clean rollback", k, err)
				}
				if d := journaltest.Diff(orig, snapshot(t, root)); len(d) > 0 {
					t.Fatalf("k=%d of %d: tree differs after a failed apply:\n%s", k, n, strings.Join(d, "\n"))
				}
			}
			// Every failed apply left a rolled-back journal and nothing open.
			infos, err := journal.List(fsys, stateDir)
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range infos {
				if in.Err != nil || in.Tx.State != journal.StateRolledBack {
					t.Errorf("journal %s: %v %v", in.File, in.Err, in.Tx.State)
				}
			}
		})
	}
}

// TestKill9 runs an apply in a child process, SIGKILLs it part way, and
// checks that the next apply refuses, status reports the interruption and
// rollback restores the tree byte for byte.
func TestKill9(t *testing.T) {
	if os.Getenv("GPUNODE_TUNE_KILL_HELPER") != "" {
		return
	}
	ctx := context.Background()
	cat := NewCatalogue()
	root, fsys := stockHost(t, "downgraded")
	orig := snapshot(t, root)
	for _, k := range []int{1, 17, 70} {
		marker := filepath.Join(t.TempDir(), "stopped")
		cmd := exec.Command(os.Args[0], "-test.run=^TestKillHelper$", "-test.v")
		cmd.Env = append(os.Environ(), "GPUNODE_TUNE_KILL_HELPER="+root, "GPUNODE_TUNE_KILL_AT="+strconv.Itoa(k), "GPUNODE_TUNE_KILL_MARKER="+marker)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(2 * time.Minute)
		for {
			if _, err := os.Stat(marker); err == nil {
				break
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatal("helper never reached the kill point")
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		if d := journaltest.Diff(orig, snapshot(t, root)); len(d) == 0 && k > 1 {
			t.Fatalf("k=%d: the killed apply changed nothing; the test is not testing", k)
		}
		st, err := GetStatus(ctx, newHost(t, fsys), cat, stateDir, Options{})
		if err != nil || len(st.Interrupted) != 1 || !st.Drifted() {
			t.Fatalf("k=%d: status = %+v, %v; want one interrupted transaction", k, st, err)
		}
		_, err = Apply(ctx, newHost(t, fsys), cat, applyReq(mustLoad(t, cat, fsys, ProfileTraining)))
		if !errors.Is(err, journal.ErrInterrupted) {
			t.Fatalf("k=%d: apply after a kill = %v, want ErrInterrupted", k, err)
		}
		rb, err := Rollback(ctx, fsys, stateDir, false)
		if err != nil || len(rb.Transactions) != 1 || rb.Transactions[0].Was != journal.StateOpen {
			t.Fatalf("k=%d: rollback = %+v, %v", k, rb, err)
		}
		if d := journaltest.Diff(orig, snapshot(t, root)); len(d) > 0 {
			t.Fatalf("k=%d: tree differs after rollback of a killed apply:\n%s", k, strings.Join(d, "\n"))
		}
	}
}

// TestKillHelper is the child of TestKill9: it applies and stops forever at
// change k, waiting for SIGKILL.
func TestKillHelper(t *testing.T) {
	root := os.Getenv("GPUNODE_TUNE_KILL_HELPER")
	if root == "" {
		t.Skip("helper process for TestKill9")
	}
	k, _ := strconv.Atoi(os.Getenv("GPUNODE_TUNE_KILL_AT"))
	fsys, err := hostfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	cat := NewCatalogue()
	req := applyReq(mustLoad(t, cat, fsys, ProfileInferenceIsolated))
	req.beforeChange = func(i int) error {
		if i == k {
			if err := os.WriteFile(os.Getenv("GPUNODE_TUNE_KILL_MARKER"), nil, 0o644); err != nil {
				return err
			}
			select {} // wait for SIGKILL
		}
		return nil
	}
	_, err = Apply(context.Background(), newHost(t, fsys), cat, req)
	t.Fatalf("apply finished (%v) before change %d", err, k)
}

// TestApplyDryRunAndPlan: plan and dry-run change nothing.
func TestApplyDryRunAndPlan(t *testing.T) {
	ctx := context.Background()
	cat := NewCatalogue()
	root, fsys := stockHost(t, "downgraded")
	orig := snapshot(t, root)
	p := mustLoad(t, cat, fsys, ProfileTraining)
	pl, err := Plan(ctx, newHost(t, fsys), cat, applyReq(p))
	if err != nil || !pl.Changed || len(pl.Items) == 0 || len(pl.Files) == 0 {
		t.Fatalf("plan = %+v, %v", pl, err)
	}
	req := applyReq(p)
	req.DryRun = true
	dr, err := Apply(ctx, newHost(t, fsys), cat, req)
	if err != nil || dr.Mode != "dry-run" || dr.Journal != "" {
		t.Fatalf("dry run = %+v, %v", dr, err)
	}
	if d := journaltest.Diff(orig, snapshot(t, root)); len(d) > 0 {
		t.Fatalf("plan/dry-run changed the tree:\n%s", strings.Join(d, "\n"))
	}
	if _, err := os.Stat(filepath.Join(root, "var/lib/gpunode")); err == nil {
		t.Error("dry run created the state directory")
	}
}

// TestApplyWithoutBootloader leaves /etc/default/grub alone and says so.
func TestApplyWithoutBootloader(t *testing.T) {
	ctx := context.Background()
	cat := NewCatalogue()
	root, fsys := stockHost(t, "downgraded")
	grub, _ := os.ReadFile(filepath.Join(root, "etc/default/grub"))
	req := applyReq(mustLoad(t, cat, fsys, ProfileInference))
	req.Bootloader = false
	rep, err := Apply(ctx, newHost(t, fsys), cat, req)
	if err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(filepath.Join(root, "etc/default/grub")); string(after) != string(grub) {
		t.Error("grub changed without --bootloader")
	}
	if !strings.Contains(strings.Join(rep.Notes, "\n"), "--bootloader") {
		t.Errorf("notes do not mention --bootloader: %q", rep.Notes)
	}
	if _, err := os.Stat(filepath.Join(root, fileGrubBak)); err == nil {
		t.Error("grub backup written without --bootloader")
	}
}

// TestApplySkipsUnreadableAndStatusSeesEdits: a setting whose target cannot
// be read fails the apply (nothing changes) unless the profile marks it
// optional; then it is skipped as a finding (PlanReport.Skipped) while the
// rest is applied; a generated file edited after apply shows in status.
func TestApplySkipsUnreadableAndStatusSeesEdits(t *testing.T) {
	ctx := context.Background()
	cat := NewCatalogue()
	root, fsys := stockHost(t, "downgraded")
	target := filepath.Join(root, "proc/sys/net/core/rmem_max")
	if err := os.Remove(target); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	orig := snapshot(t, root)
	rep, err := Apply(ctx, newHost(t, fsys), cat, applyReq(mustLoad(t, cat, fsys, ProfileBase)))
	if !errors.Is(err, ErrUnplannable) || !strings.Contains(err.Error(), "net.core.rmem_max: ") || rep != nil {
		t.Fatalf("unreadable setting, not optional: %v (report %v); want ErrUnplannable naming net.core.rmem_max", err, rep)
	}
	if d := journaltest.Diff(orig, snapshot(t, root)); len(d) > 0 {
		t.Fatalf("a refused apply changed the tree:\n%s", strings.Join(d, "\n"))
	}
	if _, err := Plan(ctx, newHost(t, fsys), cat, applyReq(mustLoad(t, cat, fsys, ProfileBase))); !errors.Is(err, ErrUnplannable) {
		t.Errorf("plan of an unreadable setting: %v, want ErrUnplannable", err)
	}
	pf := filepath.Join(t.TempDir(), "opt.yaml")
	if err := os.WriteFile(pf, []byte("name: opt\ninclude: base\noptional: [net.core.rmem_max]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err = Apply(ctx, newHost(t, fsys), cat, applyReq(mustLoad(t, cat, fsys, pf)))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Skipped) != 1 || rep.Skipped[0].ID != "net.core.rmem_max" || rep.Skipped[0].Reason == "" {
		t.Errorf("skipped = %+v, want net.core.rmem_max with its reason", rep.Skipped)
	}
	for _, n := range rep.Notes {
		if strings.Contains(n, "rmem_max") {
			t.Errorf("a skip reported as a note: %q", n)
		}
	}
	var tb strings.Builder
	if err := rep.WriteTable(&tb, output.Options{}); err != nil || !strings.Contains(tb.String(), "SKIPPED net.core.rmem_max (optional in the profile): ") {
		t.Errorf("table does not show the skip (%v):\n%s", err, tb.String())
	}
	if b, _ := os.ReadFile(filepath.Join(root, "proc/sys/net/core/wmem_max")); string(b) != "268435456" {
		t.Errorf("wmem_max = %q: the other settings were not applied", b)
	}
	sysctlConf := filepath.Join(root, fileSysctl)
	b, _ := os.ReadFile(sysctlConf)
	if strings.Contains(string(b), "rmem_max") {
		t.Error("a skipped setting was persisted")
	}
	if err := os.WriteFile(sysctlConf, append(b, "vm.swappiness = 60\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := GetStatus(ctx, newHost(t, fsys), cat, stateDir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.ModifiedFiles) != 1 || st.ModifiedFiles[0] != fileSysctl || !st.Drifted() {
		t.Fatalf("status = %+v", st)
	}
	if c := checkByID(st.Audit, "vm.swappiness"); c == nil || c.Status != StatusDrift || !strings.Contains(c.Detail, "60") {
		t.Errorf("vm.swappiness after an edit of the sysctl file: %+v", c)
	}
}

// TestStatusAfterTwoApplies: a second apply rewrites the generated files;
// status compares each file with the newest committed write, so nothing is
// "modified since apply".
func TestStatusAfterTwoApplies(t *testing.T) {
	ctx := context.Background()
	cat := NewCatalogue()
	_, fsys := stockHost(t, "downgraded")
	for _, prof := range []string{ProfileTraining, ProfileInference} {
		if _, err := Apply(ctx, newHost(t, fsys), cat, applyReq(mustLoad(t, cat, fsys, prof))); err != nil {
			t.Fatal(err)
		}
	}
	st, err := GetStatus(ctx, newHost(t, fsys), cat, stateDir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Profile != ProfileInference || len(st.ModifiedFiles) != 0 {
		t.Fatalf("status after two applies: profile %q, modified %q; want inference, none", st.Profile, st.ModifiedFiles)
	}
	// A hand edit still shows.
	if err := fsys.WriteFileAtomic(fileSysctl, []byte("vm.swappiness = 60\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err = GetStatus(ctx, newHost(t, fsys), cat, stateDir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.ModifiedFiles) != 1 || st.ModifiedFiles[0] != fileSysctl {
		t.Fatalf("modified = %q, want [%s]", st.ModifiedFiles, fileSysctl)
	}
}
