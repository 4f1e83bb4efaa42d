package hostfs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recordedSource returns an FS over tree(t) that has recorded a file read,
// a directory listing and a read through links.
func recordedSource(t *testing.T) *FS {
	t.Helper()
	root := tree(t)
	if err := os.WriteFile(filepath.Join(root, "proc/cpuinfo"), []byte("processor\t: 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	src.Record()
	for _, p := range []string{"/proc/cpuinfo", "/etc/abs/numa_node", "/proc/sys/vm/swappiness"} {
		if _, err := src.ReadFile(p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := src.ReadDirNames("/sys/bus/pci/devices/0000:01:00.0/msi_irqs"); err != nil {
		t.Fatal(err)
	}
	return src
}

// victim returns a file outside the capture that no capture may change.
func victim(t *testing.T) (string, []byte) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "victim")
	want := []byte("precious\n")
	if err := os.WriteFile(p, want, 0o600); err != nil {
		t.Fatal(err)
	}
	return p, want
}

func checkUnchanged(t *testing.T, p string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(p)
	if err != nil || string(got) != string(want) {
		t.Fatalf("%s was written through: %q, %v (want %q)", p, got, err, want)
	}
}

func mkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestCopyRecordedRefusesNonEmptyDir(t *testing.T) {
	src := recordedSource(t)
	dst := t.TempDir()
	if err := os.WriteFile(filepath.Join(dst, "old"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	err := src.CopyRecorded(dst)
	if err == nil || !strings.Contains(err.Error(), "not empty") || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("capture into a non-empty directory: %v; want a refusal naming --force", err)
	}
	if _, err := os.Stat(filepath.Join(dst, "proc")); err == nil {
		t.Error("a refused capture wrote files")
	}
	if err := src.CopyRecordedWith(dst, CopyOptions{Force: true}); err != nil {
		t.Fatalf("--force: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "proc/cpuinfo")); err != nil || !strings.HasPrefix(string(b), "processor") {
		t.Errorf("forced capture: cpuinfo %q, %v", b, err)
	}
}

// A link planted in the output directory before the capture must never be
// written through, with or without --force.
func TestCopyRecordedDoesNotFollowPlantedFileLink(t *testing.T) {
	for _, force := range []bool{false, true} {
		src := recordedSource(t)
		vp, want := victim(t)
		dst := t.TempDir()
		mkdir(t, filepath.Join(dst, "proc"))
		if err := os.Symlink(vp, filepath.Join(dst, "proc/cpuinfo")); err != nil {
			t.Fatal(err)
		}
		err := src.CopyRecordedWith(dst, CopyOptions{Force: force})
		checkUnchanged(t, vp, want)
		if !force {
			if err == nil {
				t.Error("capture into a directory holding a planted link succeeded without --force")
			}
			continue
		}
		if err != nil {
			t.Fatalf("--force: %v", err)
		}
		fi, err := os.Lstat(filepath.Join(dst, "proc/cpuinfo"))
		if err != nil || !fi.Mode().IsRegular() {
			t.Errorf("--force: proc/cpuinfo is %v, %v; want the planted link replaced by a regular file", fi, err)
		}
	}
}

func TestCopyRecordedDoesNotFollowPlantedDirLink(t *testing.T) {
	for _, planted := range []string{"sys", "sys/devices", "proc/sys/vm"} {
		src := recordedSource(t)
		victimDir := t.TempDir()
		dst := t.TempDir()
		mkdir(t, filepath.Dir(filepath.Join(dst, planted)))
		if err := os.Symlink(victimDir, filepath.Join(dst, planted)); err != nil {
			t.Fatal(err)
		}
		if err := src.CopyRecordedWith(dst, CopyOptions{Force: true}); err != nil {
			t.Fatalf("planted %s: %v", planted, err)
		}
		ents, _ := os.ReadDir(victimDir)
		if len(ents) != 0 {
			t.Errorf("planted directory link %s received %d entries", planted, len(ents))
		}
		fi, err := os.Lstat(filepath.Join(dst, planted))
		if err != nil || !fi.IsDir() {
			t.Errorf("planted %s: %v, %v; want a real directory", planted, fi, err)
		}
	}
}

// A hard link planted in place of a captured file must not be written
// through either: files are created afresh, never opened for writing.
func TestCopyRecordedDoesNotWriteThroughHardLink(t *testing.T) {
	src := recordedSource(t)
	dst := t.TempDir()
	vp := filepath.Join(dst, "victim-elsewhere")
	want := []byte("precious\n")
	if err := os.WriteFile(vp, want, 0o600); err != nil {
		t.Fatal(err)
	}
	mkdir(t, filepath.Join(dst, "proc"))
	if err := os.Link(vp, filepath.Join(dst, "proc/cpuinfo")); err != nil {
		t.Skipf("hard link: %v", err)
	}
	if err := src.CopyRecordedWith(dst, CopyOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	checkUnchanged(t, vp, want)
}

func TestCopyRecordedRefusesLinkAsOutputDir(t *testing.T) {
	src := recordedSource(t)
	realDir := t.TempDir()
	link := filepath.Join(t.TempDir(), "out")
	if err := os.Symlink(realDir, link); err != nil {
		t.Fatal(err)
	}
	for _, force := range []bool{false, true} {
		err := src.CopyRecordedWith(link, CopyOptions{Force: force})
		if err == nil || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("force=%v: capture into a symlinked --out: %v; want a refusal", force, err)
		}
	}
	if ents, _ := os.ReadDir(realDir); len(ents) != 0 {
		t.Errorf("the link's target received %d entries", len(ents))
	}
}

// Links captured from the host are recreated as links with their original
// targets, and the capture never follows them while writing: an absolute
// link target that exists on this machine is not written to.
func TestCopyRecordedKeepsHostLinksUnfollowed(t *testing.T) {
	root := tree(t)
	vdir := t.TempDir()
	// A host link whose target, read on this machine rather than below the
	// capture, would be an existing directory outside it.
	if err := os.Symlink(vdir, filepath.Join(root, "etc/outside")); err != nil {
		t.Fatal(err)
	}
	src, _ := New(root)
	src.Record()
	if _, err := src.Readlink("/etc/outside"); err != nil {
		t.Fatal(err)
	}
	if _, err := src.ReadDirNames("/etc"); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "cap")
	if err := src.CopyRecorded(dst); err != nil {
		t.Fatal(err)
	}
	if l, err := os.Readlink(filepath.Join(dst, "etc/outside")); err != nil || l != vdir {
		t.Errorf("etc/outside = %q, %v; want a link to %s", l, err, vdir)
	}
	if ents, _ := os.ReadDir(vdir); len(ents) != 0 {
		t.Errorf("a captured link was written through: %d entries", len(ents))
	}
}
