package tune

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/goldenfile"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/journal/journaltest"
	"github.com/gpunode/gpunode/internal/testhost"
	"github.com/gpunode/gpunode/internal/tune/tunetest"
)

var update = flag.Bool("update", false, "rewrite golden files")

// fixtureHosts are the testhost fixtures audited in golden tests.
var fixtureHosts = []string{"dgx-h100", "gh200", "amd-8numa", "downgraded"}

// stockHost copies fixture host name (which carries a stock, untuned OS;
// the captured vm-2vcpu gets it added) to a temp dir.
func stockHost(t testing.TB, name string) (string, *hostfs.FS) {
	t.Helper()
	root := testhost.Copy(t, name)
	if err := tunetest.Overlay(root, tunetest.Options{Stock: name == "vm-2vcpu"}); err != nil {
		t.Fatal(err)
	}
	fsys, err := hostfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	return root, fsys
}

func mustLoad(t testing.TB, cat *Catalogue, fsys *hostfs.FS, name string) *Profile {
	t.Helper()
	p, err := (&Loader{Cat: cat, Host: fsys}).Load(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func snapshot(t testing.TB, root string) journaltest.Tree {
	t.Helper()
	tr, err := journaltest.Snapshot(root, "var/lib/gpunode")
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", "golden", name), got, *update)
}

var testClock = func() time.Time { return time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC) }

func newHost(t testing.TB, fsys *hostfs.FS) *Host {
	t.Helper()
	return NewHost(context.Background(), fsys)
}

func mustFS(t testing.TB, root string) *hostfs.FS {
	t.Helper()
	fsys, err := hostfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	return fsys
}

// writeUnder writes c to root/p (mode 0644), making its directories.
func writeUnder(t *testing.T, root, p, c string) {
	t.Helper()
	full := filepath.Join(root, p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
		t.Fatal(err)
	}
}
