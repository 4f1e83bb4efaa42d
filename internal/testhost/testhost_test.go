package testhost

import (
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/hosts from the specs")

// TestFixturesUpToDate regenerates every synthetic host and fails when the
// committed tree differs (run with -update to rewrite it).
func TestFixturesUpToDate(t *testing.T) {
	hosts, err := HostsDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range Specs() {
		t.Run(spec.Name, func(t *testing.T) {
			dst := filepath.Join(hosts, spec.Name)
			if *update {
				tmp := filepath.Join(t.TempDir(), spec.Name)
				if err := Write(spec, tmp); err != nil {
					t.Fatal(err)
				}
				if err := os.RemoveAll(dst); err != nil {
					t.Fatal(err)
				}
				if err := CopyTree(tmp, dst); err != nil {
					t.Fatal(err)
				}
			}
			want, err := Expected(spec)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Snapshot(dst)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/testhost -update)", err)
			}
			for k, v := range got {
				if strings.HasPrefix(v, "dir ") {
					delete(got, k)
				}
			}
			if d := DiffSnapshots(want, got); len(d) > 0 {
				if len(d) > 10 {
					d = d[:10]
				}
				t.Fatalf("testdata/hosts/%s is stale (run go test ./internal/testhost -update):\n%v", spec.Name, d)
			}
		})
	}
}

func TestExpectedMatchesWrite(t *testing.T) {
	dir := t.TempDir()
	if err := Write(GH200(), dir); err != nil {
		t.Fatal(err)
	}
	got, _ := Snapshot(dir)
	for k, v := range got {
		if strings.HasPrefix(v, "dir ") {
			delete(got, k)
		}
	}
	want, _ := Expected(GH200())
	if d := DiffSnapshots(want, got); len(d) > 0 {
		t.Fatalf("Expected and Write disagree: %v", d[:min(len(d), 10)])
	}
	// git keeps no empty directories, so a fixture must not rely on one.
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		ents, err := os.ReadDir(p)
		if err == nil && len(ents) == 0 {
			t.Errorf("empty directory %s would be lost in git", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestCopyAndSnapshotRoundTrip(t *testing.T) {
	src := t.TempDir()
	if err := Write(Downgraded(), src); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	if err := CopyTree(src, dst); err != nil {
		t.Fatal(err)
	}
	a, _ := Snapshot(src)
	b, _ := Snapshot(dst)
	if d := DiffSnapshots(a, b); len(d) > 0 {
		t.Fatalf("copy differs: %v", d)
	}
	// A change must be detected.
	if err := os.WriteFile(filepath.Join(dst, "proc/sys/kernel/hostname"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, _ := Snapshot(dst)
	if d := DiffSnapshots(a, c); len(d) != 1 {
		t.Fatalf("want exactly one difference, got %v", d)
	}
}
