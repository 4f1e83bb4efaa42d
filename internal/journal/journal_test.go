package journal

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
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

// applyAll performs one change of every built-in kind.
func applyAll(ctx context.Context, t *testing.T, j *Journal) {
	t.Helper()
	if err := j.SetValue(ctx, "vm.swappiness", "/proc/sys/vm/swappiness", "60", "0"); err != nil {
		t.Fatal(err)
	}
	if err := j.SetValue(ctx, "thp", "/sys/kernel/mm/transparent_hugepage/enabled", "madvise", "always"); err != nil {
		t.Fatal(err)
	}
	if _, err := j.WriteFile(ctx, "sysctl", "/etc/sysctl.d/90-gpunode.conf", []byte("vm.swappiness = 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := j.WriteFile(ctx, "limits", "/etc/security/limits.conf", []byte("replaced\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Symlink(ctx, "link", "/etc/sysctl.d/90-gpunode.conf", "/etc/link.conf"); err != nil {
		t.Fatal(err)
	}
	if _, err := j.RemoveFile(ctx, "rm", "/etc/sysctl.conf"); err != nil {
		t.Fatal(err)
	}
	if err := j.MkdirAll(ctx, "dir", "/etc/systemd/system/gpunode.d", 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestApplyCommitRollbackRestoresTree(t *testing.T) {
	ctx := context.Background()
	fsys, root := newHost(t)
	orig := snap(t, root)
	j, err := Begin(fsys, stateDir, Meta{Owner: "tune", Command: "test"}, fixedClock)
	if err != nil {
		t.Fatal(err)
	}
	applyAll(ctx, t, j)
	if err := j.Commit(); err != nil {
		t.Fatal(err)
	}
	if got, _ := fsys.ReadString("/proc/sys/vm/swappiness"); got != "0" {
		t.Fatalf("swappiness = %q after apply", got)
	}
	if d := journaltest.Diff(orig, snap(t, root)); len(d) == 0 {
		t.Fatal("apply changed nothing")
	}
	fi, err := os.Stat(filepath.Join(root, "var/lib/gpunode", j.ID()+".journal"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("journal file: %v, %v; want mode 0600", fi, err)
	}
	rep, err := Rollback(ctx, fsys, stateDir, WithOwner("tune"), fixedClock)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Transactions) != 1 || len(rep.Transactions[0].Steps) != j.Len() {
		t.Fatalf("report = %+v", rep)
	}
	// Plain files (a captured tree) get their exact original bytes back.
	assertSame(t, orig, root)
	// A second rollback has nothing left to do.
	rep, err = Rollback(ctx, fsys, stateDir, WithOwner("tune"))
	if err != nil || len(rep.Transactions) != 0 {
		t.Fatalf("second rollback = %+v, %v", rep, err)
	}
	infos, err := List(fsys, stateDir)
	if err != nil || len(infos) != 1 || infos[0].Tx.State != StateRolledBack || infos[0].Tx.Reason != "rollback" {
		t.Fatalf("List = %+v, %v", infos, err)
	}
}

func TestWriteFileIdempotent(t *testing.T) {
	ctx := context.Background()
	fsys, _ := newHost(t)
	j, err := Begin(fsys, stateDir, Meta{Owner: "tune"})
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("vm.swappiness = 0\n")
	for i, want := range []bool{true, false} {
		changed, err := j.WriteFile(ctx, "sysctl", "/etc/sysctl.d/90-gpunode.conf", data, 0o644)
		if err != nil || changed != want {
			t.Fatalf("write %d: changed = %v, %v; want %v", i, changed, err, want)
		}
	}
	// mkdir of /etc/sysctl.d + the file itself
	if j.Len() != 2 {
		t.Errorf("recorded %d steps, want 2: %+v", j.Len(), j.Steps())
	}
	if err := j.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestKill9 simulates a process killed after recording and changing some
// steps: the journal stays open, the next Begin refuses, Rollback restores.
func TestKill9(t *testing.T) {
	ctx := context.Background()
	for k := 0; k <= 3; k++ {
		fsys, root := newHost(t)
		orig := snap(t, root)
		j, err := Begin(fsys, stateDir, Meta{Owner: "tune"})
		if err != nil {
			t.Fatal(err)
		}
		steps := []func() error{
			func() error { return j.SetValue(ctx, "a", "/proc/sys/vm/swappiness", "60\n", "0") },
			func() error {
				_, err := j.WriteFile(ctx, "b", "/etc/security/limits.conf", []byte("x"), 0o644)
				return err
			},
			func() error { return j.SetValue(ctx, "c", "/proc/sys/vm/dirty_ratio", "20\n", "5") },
		}
		for _, s := range steps[:k] {
			if err := s(); err != nil {
				t.Fatal(err)
			}
		}
		if k == 3 {
			// Killed after recording the next step but before changing it.
			if err := j.Record(ctx, Step{Kind: KindValue, Path: "/proc/sys/vm/dirty_ratio", Original: "20\n", New: "9"}); err != nil {
				t.Fatal(err)
			}
		}
		j.lock.Close() // the process died: the kernel drops its lock

		if _, err := Begin(fsys, stateDir, Meta{Owner: "tune"}); !errors.Is(err, ErrInterrupted) {
			t.Fatalf("k=%d: Begin after a kill = %v, want ErrInterrupted", k, err)
		}
		// Another owner is not blocked.
		j2, err := Begin(fsys, stateDir, Meta{Owner: "irq"})
		if err != nil {
			t.Fatalf("k=%d: Begin of another owner: %v", k, err)
		}
		if err := j2.Commit(); err != nil {
			t.Fatal(err)
		}
		rep, err := Rollback(ctx, fsys, stateDir, WithOwner("tune"))
		if err != nil {
			t.Fatalf("k=%d: %v", k, err)
		}
		if len(rep.Transactions) != 1 || rep.Transactions[0].Was != StateOpen {
			t.Fatalf("k=%d: report %+v", k, rep)
		}
		assertSame(t, orig, root)
		if _, err := Begin(fsys, stateDir, Meta{Owner: "tune"}); err != nil {
			t.Fatalf("k=%d: Begin after rollback: %v", k, err)
		}
	}
}

func TestAbort(t *testing.T) {
	ctx := context.Background()
	fsys, root := newHost(t)
	orig := snap(t, root)
	j, err := Begin(fsys, stateDir, Meta{Owner: "tune"})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.SetValue(ctx, "a", "/proc/sys/vm/swappiness", "60\n", "0"); err != nil {
		t.Fatal(err)
	}
	// A missing target fails before anything is recorded.
	if err := j.SetValue(ctx, "b", "/proc/sys/vm/missing", "1", "0"); err == nil || j.Len() != 1 {
		t.Fatalf("write to a missing kernel file: %v, %d steps", err, j.Len())
	}
	// A change that fails after being recorded is reverted with the rest.
	err = j.Do(ctx, Step{Kind: KindValue, Path: "/proc/sys/vm/dirty_ratio", Original: "20\n", OriginalRaw: []byte("20\n"), New: "x"}, func(context.Context) error {
		if err := fsys.WriteString("/proc/sys/vm/dirty_ratio", "half-written"); err != nil {
			return err
		}
		return errors.New("EINVAL")
	})
	if err == nil {
		t.Fatal("failing Do returned nil")
	}
	rep, aerr := j.Abort(ctx, err)
	if aerr != nil || len(rep.Steps) != 2 {
		t.Fatalf("Abort = %+v, %v", rep, aerr)
	}
	if got, _ := fsys.ReadFile("/proc/sys/vm/swappiness"); string(got) != "60\n" {
		t.Fatalf("swappiness = %q after abort", got)
	}
	assertSame(t, orig, root)
	if err := j.Commit(); err == nil {
		t.Error("Commit after Abort succeeded")
	}
}

func TestAbortClean(t *testing.T) {
	ctx := context.Background()
	fsys, root := newHost(t)
	orig := snap(t, root)
	j, err := Begin(fsys, stateDir, Meta{Owner: "tune"})
	if err != nil {
		t.Fatal(err)
	}
	applyAll(ctx, t, j)
	if _, err := j.Abort(ctx, errors.New("step 8 failed")); err != nil {
		t.Fatal(err)
	}
	assertSame(t, orig, root)
	infos, _ := List(fsys, stateDir)
	if len(infos) != 1 || infos[0].Tx.State != StateRolledBack || !strings.Contains(infos[0].Tx.Reason, "step 8 failed") {
		t.Fatalf("List = %+v", infos)
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
	j, err := Begin(fsys, stateDir, Meta{Owner: "gpu"}, WithKinds(kinds))
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Do(ctx, Step{Kind: "gpu.persistence", Target: "GPU-1", Original: "0", New: "1"}, func(context.Context) error {
		device["GPU-1"] = "1"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := j.Record(ctx, Step{Kind: "gpu.clocks", Target: "GPU-1"}); !errors.Is(err, ErrUnknownKind) {
		t.Errorf("Record of an unregistered kind = %v", err)
	}
	if err := j.Commit(); err != nil {
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

func TestRollbackRefusesBadJournals(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		mangle func([]byte) []byte
		want   error
	}{
		{"flipped byte", func(b []byte) []byte { b[len(b)-5] ^= 1; return b }, ErrCorrupt},
		{"truncated", func(b []byte) []byte { return b[:len(b)/2] }, ErrCorrupt},
		{"foreign version", func(b []byte) []byte { return bytes.Replace(b, []byte(" v1 "), []byte(" v9 "), 1) }, ErrVersion},
		{"not a journal", func([]byte) []byte { return []byte("hello\n") }, ErrCorrupt},
		{"empty", func([]byte) []byte { return nil }, ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys, root := newHost(t)
			j, err := Begin(fsys, stateDir, Meta{Owner: "tune"})
			if err != nil {
				t.Fatal(err)
			}
			if err := j.SetValue(ctx, "a", "/proc/sys/vm/swappiness", "60\n", "0"); err != nil {
				t.Fatal(err)
			}
			if err := j.Commit(); err != nil {
				t.Fatal(err)
			}
			lp := filepath.Join(root, "var/lib/gpunode", j.ID()+".journal")
			b, _ := os.ReadFile(lp)
			if err := os.WriteFile(lp, tt.mangle(b), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err = Rollback(ctx, fsys, stateDir)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), "refusing") || !strings.Contains(err.Error(), j.ID()) {
				t.Fatalf("Rollback = %v, want %v naming the file", err, tt.want)
			}
			if got, _ := fsys.ReadString("/proc/sys/vm/swappiness"); got != "0" {
				t.Errorf("refused rollback changed swappiness to %q", got)
			}
			if _, err := Begin(fsys, stateDir, Meta{Owner: "tune"}); err == nil {
				t.Error("Begin next to a corrupted journal succeeded")
			}
		})
	}
}

func TestLock(t *testing.T) {
	fsys, _ := newHost(t)
	j, err := Begin(fsys, stateDir, Meta{Owner: "tune"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Begin(fsys, stateDir, Meta{Owner: "irq"}); !errors.Is(err, ErrLocked) {
		t.Errorf("concurrent Begin = %v, want ErrLocked", err)
	}
	if _, err := Rollback(context.Background(), fsys, stateDir); !errors.Is(err, ErrLocked) {
		t.Errorf("concurrent Rollback = %v, want ErrLocked", err)
	}
	if err := j.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := Begin(fsys, stateDir, Meta{Owner: "irq"}); err != nil {
		t.Errorf("Begin after Commit: %v", err)
	}
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
	j, _ := Begin(fsys, stateDir, Meta{Owner: "tune"})
	if err := j.SetValue(ctx, "a", "/proc/sys/vm/swappiness", "60\n", "0"); err != nil {
		t.Fatal(err)
	}
	if err := j.Commit(); err != nil {
		t.Fatal(err)
	}
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
		Steps: []Step{{Kind: KindFile, Path: "/etc/x", File: &FileState{Type: FileRegular, Mode: 0o644, Data: []byte{0, 1, 2, 0xff}}}}}
	b, err := Encode(tx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Steps[0].File.Data, tx.Steps[0].File.Data) || got.ID != tx.ID {
		t.Fatalf("round trip = %+v", got)
	}
	bad := []*Transaction{
		{ID: "x", Meta: Meta{Owner: "tune"}, State: "weird"},
		{ID: "x", Meta: Meta{}, State: StateOpen},
		{ID: "x", Meta: Meta{Owner: "t"}, State: StateOpen, Steps: []Step{{Kind: KindFile, Path: "/etc/x"}}},
		{ID: "x", Meta: Meta{Owner: "t"}, State: StateOpen, Steps: []Step{{Kind: KindValue, Path: "relative"}}},
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
		Steps: []Step{{Kind: KindValue, Path: "/proc/sys/vm/swappiness", Original: "60"}}}
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
		// Whatever decodes must re-encode and decode to the same thing.
		b2, err := Encode(tx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Decode(b2); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
	})
}

func TestRecordBatch(t *testing.T) {
	ctx := context.Background()
	fsys, root := newHost(t)
	orig := snap(t, root)
	j, err := Begin(fsys, stateDir, Meta{Owner: "tune"})
	if err != nil {
		t.Fatal(err)
	}
	steps := []Step{
		{Kind: KindValue, Path: "/proc/sys/vm/swappiness", Original: "60", OriginalRaw: []byte("60\n"), New: "0"},
		{Kind: KindValue, Path: "/proc/sys/vm/dirty_ratio", Original: "20", OriginalRaw: []byte("20\n"), New: "5"},
	}
	if err := j.RecordBatch(ctx, append(steps, Step{Kind: "nope"})); !errors.Is(err, ErrUnknownKind) || j.Len() != 0 {
		t.Fatalf("batch with an unknown kind: %v, %d steps recorded", err, j.Len())
	}
	if err := j.RecordBatch(ctx, steps); err != nil || j.Len() != 2 {
		t.Fatalf("RecordBatch = %v, %d steps", err, j.Len())
	}
	// Only the first change is made before the "crash".
	if err := fsys.WriteString("/proc/sys/vm/swappiness", "0"); err != nil {
		t.Fatal(err)
	}
	j.lock.Close()
	if _, err := Rollback(ctx, fsys, stateDir); err != nil {
		t.Fatal(err)
	}
	assertSame(t, orig, root)
}
