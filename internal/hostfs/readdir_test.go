package hostfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
)

// ReadDirNames lists with getdents on a raw descriptor: every name, across
// several getdents buffers, sorted, without "." and "..", through a Dir
// as through the FS; and it fails like a listing should.
func TestReadDirNames(t *testing.T) {
	root := t.TempDir()
	big := filepath.Join(root, "sys", "bus", "pci", "devices")
	if err := os.MkdirAll(big, 0o755); err != nil {
		t.Fatal(err)
	}
	// 2,000 names of 24 bytes are ~80 KB of dirents: ten getdents calls.
	var want []string
	for i := range 2000 {
		n := fmt.Sprintf("0000:%02x:%02x.%d-long-name", i/256, i%256, i%8)
		want = append(want, n)
		if err := os.WriteFile(filepath.Join(big, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sort.Strings(want)
	if err := os.Mkdir(filepath.Join(big, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	want = append(want, "sub")
	sort.Strings(want)
	f, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.ReadDirNames("/sys/bus/pci/devices")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ReadDirNames: %d names (first %q), want %d", len(got), got[:min(3, len(got))], len(want))
	}
	d := f.Dir("/sys/bus/pci")
	defer d.Close()
	viaDir, err := d.ReadDirNames("devices")
	if err != nil || !slices.Equal(viaDir, want) {
		t.Errorf("Dir.ReadDirNames(devices): %d names, %v", len(viaDir), err)
	}
	dot, err := f.Dir("/sys/bus/pci/devices").ReadDirNames(".")
	if err != nil || !slices.Equal(dot, want) {
		t.Errorf(`Dir.ReadDirNames("."): %d names, %v`, len(dot), err)
	}
	if names, err := f.ReadDirNames("/sys/bus/pci/devices/sub"); err != nil || len(names) != 0 {
		t.Errorf("empty directory: %q, %v", names, err)
	}

	for _, tc := range []struct {
		p    string
		want error
	}{
		{"/sys/missing", fs.ErrNotExist},
		{"/sys/bus/pci/devices/" + want[0], syscall.ENOTDIR},
	} {
		_, ferr := f.ReadDirNames(tc.p)
		_, derr := d.ReadDirNames(strings.TrimPrefix(tc.p, "/sys/bus/pci/"))
		if !errors.Is(ferr, tc.want) || !strings.Contains(ferr.Error(), tc.p) {
			t.Errorf("ReadDirNames(%s) = %v, want %v naming the path", tc.p, ferr, tc.want)
		}
		if !strings.HasPrefix(tc.p, "/sys/bus/pci/") {
			continue
		}
		if !errors.Is(derr, tc.want) || !strings.Contains(derr.Error(), tc.p) {
			t.Errorf("Dir.ReadDirNames(%s) = %v, want %v naming the path", tc.p, derr, tc.want)
		}
	}

	// A recording FS records the listing, through a Dir too.
	f.Record()
	rd := f.Dir("/sys/bus/pci")
	if _, err := rd.ReadDirNames("devices"); err != nil {
		t.Fatal(err)
	}
	rd.Close()
	found := false
	for _, a := range f.Recorded() {
		found = found || a.Path == "/sys/bus/pci/devices" && a.Kind == AccessDir
	}
	if !found {
		t.Errorf("listing not recorded: %v", f.Recorded())
	}
}

// Listing a directory costs no DirEntry per name: allocations stay a
// handful plus the names, whatever the directory holds.
func TestReadDirNamesAllocations(t *testing.T) {
	root := t.TempDir()
	for i := range 64 {
		if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("cpu%d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := f.ReadDirNames("/"); err != nil {
			t.Fatal(err)
		}
	})
	// 64 names, the slice growing to 64, the path: about 75. os.ReadDir
	// made three objects per name.
	t.Logf("%.0f allocations", allocs)
	if allocs > 90 {
		t.Errorf("%.0f allocations to list 64 names", allocs)
	}
}
