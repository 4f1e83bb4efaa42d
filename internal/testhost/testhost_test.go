package testhost

import (
	"context"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/topo"
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

// TestMixedPCIe: the mixed-pcie fixture has the PHB, PXB, PIX and SYS paths
// its spec promises (as topology discovery classifies them) and nohz_full
// different from the isolated CPUs.
func TestMixedPCIe(t *testing.T) {
	root := Path(t, "mixed-pcie")
	fsys, err := hostfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := topo.Discover(context.Background(), fsys)
	if err != nil {
		t.Fatal(err)
	}
	byBDF := map[string]*topo.PCIDevice{}
	for i := range tp.GPUs {
		byBDF[tp.GPUs[i].BDF] = &tp.GPUs[i]
	}
	for i := range tp.NICs {
		byBDF[tp.NICs[i].BDF] = &tp.NICs[i]
	}
	for _, c := range []struct{ a, b, want string }{
		{"0000:11:00.0", "0000:12:00.0", topo.LinkPHB},
		{"0000:35:00.0", "0000:37:00.0", topo.LinkPXB},
		{"0000:35:00.0", "0000:36:00.0", topo.LinkPIX},
		{"0000:11:00.0", "0000:91:00.0", topo.LinkSYS},
	} {
		a, b := byBDF[c.a], byBDF[c.b]
		if a == nil || b == nil {
			t.Fatalf("%s or %s not discovered", c.a, c.b)
		}
		if got := topo.Class(a, b); got != c.want {
			t.Errorf("%s-%s: %s, want %s", c.a, c.b, got, c.want)
		}
	}
	iso, _ := os.ReadFile(filepath.Join(root, "sys/devices/system/cpu/isolated"))
	nohz, _ := os.ReadFile(filepath.Join(root, "sys/devices/system/cpu/nohz_full"))
	if strings.TrimSpace(string(iso)) != "4-15,20-31" || strings.TrimSpace(string(nohz)) != "8-15,24-31" {
		t.Errorf("isolated %q, nohz_full %q", iso, nohz)
	}
}
