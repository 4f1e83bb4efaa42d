// Package goldenfile compares test output with golden files. Tests pass
// their package's -update flag; with it the golden file is rewritten from the
// output, so a reviewer sees every change of output as a diff in git.
package goldenfile

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Check compares got with the golden file at path (rewriting it first when
// update is set) and fails the test with the first differing line.
func Check(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run the test with -update and review the diff):\n%s\n--- got ---\n%s",
			path, FirstDiff(string(want), string(got)), clip(got))
	}
}

// FirstDiff describes the first line where want and got differ.
func FirstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d:\n want: %s\n  got: %s", i+1, w, g)
		}
	}
	return "(no line differs; trailing bytes differ)"
}

// clip keeps failure messages readable for big outputs.
func clip(b []byte) string {
	const clipAt = 4000
	if len(b) <= clipAt {
		return string(b)
	}
	return string(b[:clipAt]) + fmt.Sprintf("\n... (%d more bytes)", len(b)-clipAt)
}
