package hostfs

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestReadFileSizes reads files around the one-read buffer's size (sysfs
// attributes are read once into 4 KiB) and checks every byte comes back.
func TestReadFileSizes(t *testing.T) {
	root := tree(t)
	f, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 1, 511, 512, 4095, 4096, 4097, 8191, 8192, 100_000, 1 << 20} {
		want := make([]byte, n)
		for i := range want {
			want[i] = byte('a' + i%26)
		}
		name := fmt.Sprintf("/size-%d", n)
		if err := os.WriteFile(filepath.Join(root, name), want, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := f.ReadFile(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes back, want %d (equal prefix: %v)", name, len(got), n, bytes.HasPrefix(want, got))
		}
		if got == nil {
			t.Errorf("%s: nil slice, want an empty one", name)
		}
	}
}
