package hostfs

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// listenAt binds a unix socket at dir/name through the directory's
// /proc/self/fd name (dir may be longer than a socket address allows).
func listenAt(t *testing.T, dir, name string) net.Listener {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	ln, err := net.Listen("unix", "/proc/self/fd/"+strconv.Itoa(fd)+"/"+name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("hi"))
			c.Close()
		}
	}()
	return ln
}

func TestDialUnix(t *testing.T) {
	// A root deeper than the 108 bytes of a socket address.
	root := filepath.Join(t.TempDir(), strings.Repeat("d", 100), strings.Repeat("e", 100))
	listenAt(t, filepath.Join(root, "run"), "k.sock")
	f, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	c, err := f.DialUnix(context.Background(), "/run/k.sock")
	if err != nil {
		t.Fatalf("dial under a %d-byte root: %v", len(root), err)
	}
	b := make([]byte, 2)
	if _, err := c.Read(b); err != nil || string(b) != "hi" {
		t.Errorf("read %q %v", b, err)
	}
	c.Close()

	_, err = f.DialUnix(context.Background(), "/run/missing.sock")
	var pe *fs.PathError
	if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) || pe.Path != "/run/missing.sock" {
		t.Errorf("missing socket: %v", err)
	}
	os.WriteFile(filepath.Join(root, "run/file"), nil, 0o644)
	if _, err := f.DialUnix(context.Background(), "/run/file"); !errors.Is(err, ErrNotSocket) {
		t.Errorf("regular file: %v", err)
	}
	// A cancelled context dials nothing.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.DialUnix(ctx, "/run/k.sock"); err == nil {
		t.Error("dial with a cancelled context succeeded")
	}
}
