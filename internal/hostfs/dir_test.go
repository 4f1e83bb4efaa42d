package hostfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A Dir reads what the FS reads by whole path: same values, same errors
// naming DIR/NAME, same refusals, same containment in the root.
func TestDirReadsLikeTheFS(t *testing.T) {
	root := t.TempDir()
	dev := filepath.Join(root, "sys", "devices", "pci0000:00", "0000:00:01.0")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(dev, 0o755))
	must(os.MkdirAll(filepath.Join(root, "sys", "bus", "pci", "devices"), 0o755))
	must(os.MkdirAll(filepath.Join(root, "etc"), 0o755))
	must(os.Symlink("../../../devices/pci0000:00/0000:00:01.0", filepath.Join(root, "sys", "bus", "pci", "devices", "0000:00:01.0")))
	must(os.WriteFile(filepath.Join(dev, "numa_node"), []byte("1\n"), 0o644))
	must(os.WriteFile(filepath.Join(dev, "bad"), []byte("x\n"), 0o644))
	must(os.WriteFile(filepath.Join(dev, "big"), []byte(strings.Repeat("y", 3*oneRead)), 0o644))
	must(os.WriteFile(filepath.Join(root, "etc", "secret"), []byte("inside\n"), 0o644))
	must(os.Symlink("/etc/secret", filepath.Join(dev, "abs")))                       // absolute: resolved in the root
	must(os.Symlink("../../../../../../../../etc/passwd", filepath.Join(dev, "up"))) // climbs out: stays in the root
	must(os.Symlink("../../../bus/pci/drivers/nvidia", filepath.Join(dev, "driver")))
	must(unix.Mkfifo(filepath.Join(dev, "fifo"), 0o644))

	f, err := New(root)
	must(err)
	const dir = "/sys/bus/pci/devices/0000:00:01.0"
	d := f.Dir(dir)
	defer d.Close()
	if resolved, err := d.Real(); err != nil || resolved != "/sys/devices/pci0000:00/0000:00:01.0" {
		t.Errorf("Real() = %q, %v", resolved, err)
	}
	for _, name := range []string{"numa_node", "bad", "big", "abs", "up", "fifo", "missing", "", ".", "..", "/etc/secret", "../0000:00:01.0/numa_node"} {
		want, werr := f.ReadFile(dir + "/" + name)
		got, gerr := d.ReadFile(name)
		if string(want) != string(got) || (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
			t.Errorf("%s: Dir read %q, %v; FS read %q, %v", name, got, gerr, want, werr)
		}
	}
	if n, err := d.ReadInt("numa_node"); err != nil || n != 1 {
		t.Errorf("ReadInt = %d, %v", n, err)
	}
	if _, err := d.ReadInt("bad"); err == nil || !strings.Contains(err.Error(), dir+"/bad") {
		t.Errorf("ReadInt(bad) = %v, want an error naming %s/bad", err, dir)
	}
	if _, err := d.ReadFile("fifo"); !errors.Is(err, ErrNotRegular) {
		t.Errorf("fifo: %v, want ErrNotRegular", err)
	}
	if _, err := d.ReadFile("missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v, want ErrNotExist", err)
	}
	if b, _ := d.ReadFile("abs"); string(b) != "inside\n" {
		t.Errorf("abs link read %q: want the root's /etc/secret", b)
	}
	if l, err := d.Readlink("driver"); err != nil || l != "../../../bus/pci/drivers/nvidia" {
		t.Errorf("Readlink = %q, %v", l, err)
	}
	// A directory that cannot be opened reads through the FS by whole path,
	// with that path's own errors.
	gone := f.Dir("/sys/bus/pci/devices/0000:ff:00.0")
	_, gerr := gone.ReadString("numa_node")
	_, werr := f.ReadString("/sys/bus/pci/devices/0000:ff:00.0/numa_node")
	if gerr == nil || werr == nil || gerr.Error() != werr.Error() {
		t.Errorf("missing directory: Dir read %v, FS read %v", gerr, werr)
	}
	gone.Close()
	// Recording (topo capture) sees the same accesses through a Dir.
	f.Record()
	d2 := f.Dir(dir)
	if b, err := d2.ReadFile("numa_node"); err != nil || string(b) != "1\n" {
		t.Fatalf("recorded read: %q, %v", b, err)
	}
	d2.Close()
	if b, ok := f.recordedData(dir + "/numa_node"); !ok || string(b) != "1\n" {
		t.Errorf("recorded %q, %v", b, ok)
	}
}

// A Dir's read is the agent's hot path: the entry's host path is made once
// (the Faults seam is handed the same string, not a second join), so a
// small attribute costs at most three allocations (four when the seam's
// argument was joined again on every read, faults or not).
func TestDirReadFileAllocations(t *testing.T) {
	root, f := mtRoot(t)
	mtWrite(t, filepath.Join(root, "sys/d/a"), []byte("1\n"))
	d := f.Dir("/sys/d")
	defer d.Close()
	allocs := testing.AllocsPerRun(50, func() {
		if b, err := d.ReadFile("a"); err != nil || string(b) != "1\n" {
			t.Fatalf("ReadFile = %q, %v", b, err)
		}
	})
	if allocs > 3 {
		t.Errorf("Dir.ReadFile of a small attribute: %.0f allocations, want at most 3", allocs)
	}
}
