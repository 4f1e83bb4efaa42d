package journal

// Journal decisions at their edges, with the states read back from disk
// after each run: sequence numbers, --skip references at and beyond the
// last step, the skipped-step record, the journal directory's owner rule.

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func twoSteps(t *testing.T) PlanFunc {
	return plan(func(tx *Tx) []Action {
		a, err := tx.SetValue("a", "/proc/sys/vm/swappiness", "60\n", "0")
		if err != nil {
			t.Fatal(err)
		}
		b, err := tx.SetValue("b", "/proc/sys/vm/dirty_ratio", "20\n", "5")
		if err != nil {
			t.Fatal(err)
		}
		return []Action{a, b}
	})
}

// Transactions are numbered from 1, one more than the highest on disk.
func TestSequenceFromOne(t *testing.T) {
	fsys, root := newHost(t)
	first := commitOne(t, fsys, "tune")
	second := commitOne(t, fsys, "tune")
	if !strings.HasPrefix(first.ID, "000001-") || !strings.HasPrefix(second.ID, "000002-") {
		t.Errorf("ids %s, %s; want 000001-..., 000002-...", first.ID, second.ID)
	}
	names, _ := filepath.Glob(filepath.Join(root, stateDir, "*.journal"))
	if len(names) != 2 {
		t.Errorf("journal files %v", names)
	}
}

// --skip <tx>:<step>: the last step is a step, one beyond is not; a
// reference without a step, a negative or non-numeric step, or another
// transaction is refused and changes nothing.
func TestSkipRefsAtTheEdge(t *testing.T) {
	ctx := context.Background()
	fsys, root := newHost(t)
	res, err := Run(ctx, fsys, stateDir, Meta{Owner: "tune"}, twoSteps(t))
	if err != nil || res.State != StateCommitted || res.Steps != 2 {
		t.Fatalf("run: %+v %v", res, err)
	}
	for _, ref := range []string{res.ID, res.ID + ":2", res.ID + ":-1", res.ID + ":x", "000009-tune:0", ":0"} {
		_, err := Rollback(ctx, fsys, stateDir, WithSkip(ref))
		if err == nil || !strings.Contains(err.Error(), "--skip "+ref+": no such step") {
			t.Errorf("--skip %q: %v", ref, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, "proc/sys/vm/swappiness")); string(b) != "0" {
		t.Fatalf("a refused rollback changed swappiness to %q", b)
	}
	// Skip the last step: the first is reverted, the second kept, and the
	// journal says so.
	rep, err := Rollback(ctx, fsys, stateDir, WithSkip(res.ID+":1"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Transactions) != 1 {
		t.Fatalf("report %+v", rep)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "proc/sys/vm/swappiness")); strings.TrimSpace(string(b)) != "60" {
		t.Errorf("swappiness %q, want 60 (reverted)", b)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "proc/sys/vm/dirty_ratio")); string(b) != "5" {
		t.Errorf("dirty_ratio %q, want 5 (skipped)", b)
	}
	infos, err := List(fsys, stateDir)
	if err != nil || len(infos) != 1 || infos[0].Tx == nil {
		t.Fatalf("list: %v %v", infos, err)
	}
	tx := infos[0].Tx
	if string(tx.State) != "rolled-back" || !strings.Contains(tx.Reason, " (skipped, originals kept here: "+res.ID+":1") {
		t.Errorf("read back: state %q reason %q", tx.State, tx.Reason)
	}
}

// The journal directory may belong to root or to the user running gpunode,
// nobody else (uid 1 is not root).
func TestCheckDirModeOwners(t *testing.T) {
	for _, c := range []struct {
		uid, euid int
		ok        bool
	}{{-1, 1000, true}, {0, 1000, true}, {1000, 1000, true}, {1, 0, false}, {1000, 0, false}, {1001, 1000, false}} {
		err := checkDirMode("/var/lib/gpunode", "/r/var/lib/gpunode", true, 0o700, c.uid, c.euid)
		if (err == nil) != c.ok {
			t.Errorf("uid %d euid %d: %v, want ok=%v", c.uid, c.euid, err, c.ok)
		}
		if !c.ok && err != nil && !strings.Contains(err.Error(), "not root or you") {
			t.Errorf("uid %d: %v", c.uid, err)
		}
	}
	if err := checkDirMode("/var/lib/gpunode", "/r", false, 0o700, 0, 0); err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Errorf("not a directory: %v", err)
	}
}

// The on-disk names of file types are the format's literals.
func TestFileTypesOnDisk(t *testing.T) {
	for _, ft := range []string{"absent", "file", "symlink", "dir"} {
		st := &FileState{Type: FileType(ft)}
		switch ft {
		case "symlink":
			st.Link = "target"
		case "file":
			st.Mode = 0o644
		case "dir":
			st.Mode = 0o755
		}
		tx := &Transaction{ID: "000001-tune", Meta: Meta{Owner: "tune"}, State: StateOpen, Steps: []Step{{Kind: KindFile, Path: "/etc/x", File: st}}}
		b, err := Encode(tx)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `"type": "`+ft+`"`) {
			t.Errorf("%s encoded as\n%s", ft, b)
		}
		got, err := Decode(b)
		if err != nil || string(got.Steps[0].File.Type) != ft {
			t.Errorf("%s: decoded %v", ft, err)
		}
	}
	if FileSymlink != "symlink" || FileAbsent != "absent" || FileRegular != "file" || FileDir != "dir" {
		t.Errorf("file type constants renamed")
	}
}

// A step's temporary file is a clean gpunode temp name next to its path.
func TestStepTempNames(t *testing.T) {
	for _, c := range []struct {
		path, temp string
		ok         bool
	}{
		{"/etc/x", "/etc/.x.gpunode-tmp-1", true},
		{"", "/etc/.x.gpunode-tmp-1", false},
		{"/etc/x", "/etc/../etc/.x.gpunode-tmp-1", false},
		{"/etc/x", "/tmp/.x.gpunode-tmp-1", false},
		{"/etc/x", "/etc/.x.tmp", false},
	} {
		tx := &Transaction{ID: "000001-tune", Meta: Meta{Owner: "tune"}, State: StateOpen,
			Steps: []Step{{Kind: KindValue, Path: c.path, Temp: c.temp}}}
		if c.path == "" {
			tx.Steps[0].Kind = "gpu.persistence" // a kind that may have no path
		}
		b, err := Encode(tx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Decode(b)
		if (err == nil) != c.ok {
			t.Errorf("path %q temp %q: %v, want ok=%v", c.path, c.temp, err, c.ok)
		}
	}
}

// Encode refuses a payload over MaxSize-128 bytes, naming the bound in
// MiB; at the bound it encodes.
func TestEncodeSizeEdge(t *testing.T) {
	mk := func(n int) *Transaction {
		return &Transaction{ID: "000001-tune", Meta: Meta{Owner: "tune"}, State: StateOpen,
			Steps: []Step{{Kind: KindValue, Path: "/proc/sys/vm/swappiness", Original: strings.Repeat("a", n)}}}
	}
	base, err := Encode(mk(1))
	if err != nil {
		t.Fatal(err)
	}
	header := bytes.IndexByte(base, '\n') + 1
	over := len(base) - header - 1 // payload bytes besides the value
	limit := MaxSize - 128
	for _, c := range []struct {
		payload int
		ok      bool
	}{{limit, true}, {limit + 1, false}} { // below the edge: every other test
		_, err := Encode(mk(c.payload - over))
		if (err == nil) != c.ok {
			t.Errorf("payload %d bytes: %v, want ok=%v", c.payload, err, c.ok)
		}
		if !c.ok && (err == nil || !strings.Contains(err.Error(), "over the 64 MiB bound")) {
			t.Errorf("payload %d: %v", c.payload, err)
		}
	}
}
