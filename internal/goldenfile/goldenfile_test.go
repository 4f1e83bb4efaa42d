package goldenfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckUpdatesThenMatches(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sub", "x.txt")
	Check(t, p, []byte("a\nb\n"), true)
	if b, err := os.ReadFile(p); err != nil || string(b) != "a\nb\n" {
		t.Fatalf("golden not written: %q %v", b, err)
	}
	Check(t, p, []byte("a\nb\n"), false)
}

func TestCheckFailsOnDifference(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.txt")
	if err := os.WriteFile(p, []byte("a\nb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ft := &fakeT{TB: t}
	Check(ft, p, []byte("a\nc\n"), false)
	if !ft.failed || !strings.Contains(ft.msg, "line 2:\n want: b\n  got: c") {
		t.Fatalf("failed=%v msg=%q", ft.failed, ft.msg)
	}
}

type fakeT struct {
	testing.TB
	failed bool
	msg    string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Errorf(format string, args ...any) {
	f.failed = true
	f.msg = strings.TrimSpace(sprintf(format, args...))
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
