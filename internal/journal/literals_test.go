package journal

import (
	"errors"
	"strings"
	"testing"
)

// TestStatesOnDisk pins the state names written into journal files as the
// literals of the file format (not the package's constants): an old
// journal on a host must keep decoding after any rename in the code.
func TestStatesOnDisk(t *testing.T) {
	for _, st := range []string{"open", "committed", "rolled-back"} {
		tx := &Transaction{ID: "000001-tune", Meta: Meta{Owner: "tune"}, State: State(st)}
		b, err := Encode(tx)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `"state": "`+st+`"`) {
			t.Fatalf("%s: encoded as\n%s", st, b)
		}
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("%s: %v", st, err)
		}
		if string(got.State) != st {
			t.Fatalf("%s: decoded state %q", st, got.State)
		}
	}
	if string(StateRolledBack) != "rolled-back" || string(StateOpen) != "open" || string(StateCommitted) != "committed" {
		t.Fatalf("state constants %q %q %q", StateOpen, StateCommitted, StateRolledBack)
	}
}

// TestValueStepNeedsPath: a value step (and a file step) without a path is
// corrupt; a custom kind may leave the path empty.
func TestValueStepNeedsPath(t *testing.T) {
	for _, c := range []struct {
		step Step
		ok   bool
		msg  string
	}{
		{Step{Kind: KindValue}, false, "path is empty"},
		{Step{Kind: KindValue, Path: "/proc/sys/vm/swappiness"}, true, ""},
		{Step{Kind: KindFile, Path: "/", File: &FileState{Type: FileAbsent}}, false, "path is empty or /"},
		{Step{Kind: KindFile, Path: "/etc/x", File: &FileState{Type: FileSymlink}}, false, "symlink target is empty"},
		{Step{Kind: KindFile, Path: "/etc/x", File: &FileState{Type: FileSymlink, Link: "y"}}, true, ""},
		{Step{Kind: "gpu.persistence", Target: "GPU-1"}, true, ""},
	} {
		tx := &Transaction{ID: "000001-tune", Meta: Meta{Owner: "tune"}, State: StateOpen, Steps: []Step{c.step}}
		b, err := Encode(tx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Decode(b)
		if c.ok != (err == nil) || (!c.ok && (!errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.msg))) {
			t.Errorf("%+v: Decode = %v, want ok=%v %q", c.step, err, c.ok, c.msg)
		}
	}
}

// TestShortenAtItsEdge: texts up to 40 bytes are quoted whole, longer ones
// cut at 40 with "...".
func TestShortenAtItsEdge(t *testing.T) {
	s40, s41 := strings.Repeat("a", 40), strings.Repeat("a", 41)
	if shorten(s40) != s40 || shorten(strings.Repeat("a", 39)) != strings.Repeat("a", 39) {
		t.Errorf("shorten of 39/40 bytes changed it")
	}
	if shorten(s41) != s40+"..." {
		t.Errorf("shorten(41 bytes) = %q", shorten(s41))
	}
}
