package userfile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadBound: a regular file is refused from its size above the bound
// (before a byte is read: the check never runs), read at and below it.
func TestReadBound(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	data := []byte("apiVersion: v1\nkind: Pod\n")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	n := int64(len(data))
	for _, tc := range []struct {
		max int64
		ok  bool
	}{{n - 1, false}, {n, true}, {n + 1, true}} {
		checked := false
		b, err := ReadChecked(p, tc.max, 4, func([]byte) error { checked = true; return nil })
		if tc.ok != (err == nil) || tc.ok && !bytes.Equal(b, data) {
			t.Errorf("max %d: %q, %v", tc.max, b, err)
		}
		if !tc.ok {
			want := p + ": input too large: 25 bytes, the limit is " + itoa(tc.max) + " bytes (" + FormatBytes(tc.max) + "); raise it with --max-input-bytes"
			if !errors.Is(err, ErrTooLarge) || err.Error() != want || checked {
				t.Errorf("max %d: %v (checked %v), want %q", tc.max, err, checked, want)
			}
		}
		b, err = ReadAll(bytes.NewReader(data), "stdin", tc.max)
		if tc.ok != (err == nil) || tc.ok && !bytes.Equal(b, data) {
			t.Errorf("stdin, max %d: %q, %v", tc.max, b, err)
		}
		if !tc.ok && (!errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "stdin: input too large: more than "+itoa(tc.max)+" bytes")) {
			t.Errorf("stdin, max %d: %v", tc.max, err)
		}
	}
	// The default bound applies for max <= 0.
	if b, err := Read(p, 0); err != nil || !bytes.Equal(b, data) {
		t.Errorf("default bound: %q %v", b, err)
	}
}

// TestReadCheckedHead: a head that shows the input is bad refuses it
// without reading the rest; the whole file is returned otherwise.
func TestReadCheckedHead(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	data := bytes.Repeat([]byte("0123456789"), 100)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	bad := errors.New("bad head")
	var seen []byte
	_, err := ReadChecked(p, 0, 16, func(h []byte) error { seen = h; return bad })
	if !errors.Is(err, bad) || string(seen) != "0123456789012345" {
		t.Errorf("err %v, head %q", err, seen)
	}
	b, err := ReadChecked(p, 0, 16, func([]byte) error { return nil })
	if err != nil || !bytes.Equal(b, data) {
		t.Errorf("good head: %d bytes, %v", len(b), err)
	}
}

// TestReadNeverBlocksOrFillsFromDevices: a FIFO without a writer does not
// hold the open (it reads as empty), one with a writer is read through the
// bound, a device is refused, a directory is an error.
func TestReadNeverBlocksOrFillsFromDevices(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := Read(fifo, 0); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("FIFO without a writer: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Read of a FIFO without a writer blocked")
	}
	// A writer of 100 bytes against a bound of 10: refused after 11. The
	// writer is in place before Read opens the FIFO (O_RDWR does not wait
	// for a reader on Linux, and 100 bytes fit in the pipe's buffer), so
	// Read sees a writer and the bytes: no race with a writer that opens
	// between Read's open and its first read, which then reads as empty
	// and leaves the writer's 100 bytes to EPIPE.
	w, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Write(bytes.Repeat([]byte("y"), 100)); err != nil {
		t.Fatal(err)
	}
	done = make(chan error, 1)
	go func() { _, err := Read(fifo, 10); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "more than 10 bytes") {
			t.Errorf("FIFO with a writer, bound 10: %v, want input too large", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Read of a FIFO holding 100 bytes, bound 10, did not return")
	}
	if _, err := Read("/dev/zero", 0); !errors.Is(err, ErrNotFile) {
		t.Errorf("/dev/zero: %v, want a refusal", err)
	}
	if _, err := Read(dir, 0); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("directory: %v", err)
	}
}

// TestReadOpen: a file opened elsewhere is read under the same bound.
func TestReadOpen(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		max int64
		ok  bool
	}{{9, false}, {10, true}, {11, true}} {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		b, err := ReadOpen(f, "/root/img.json", tc.max)
		f.Close()
		if tc.ok != (err == nil) || tc.ok && string(b) != "0123456789" {
			t.Errorf("max %d: %q %v", tc.max, b, err)
		}
		if !tc.ok && (!errors.Is(err, ErrTooLarge) || !strings.HasPrefix(err.Error(), "/root/img.json: input too large: 10 bytes")) {
			t.Errorf("max %d: %v", tc.max, err)
		}
	}
}

func TestParseAndFormatBytes(t *testing.T) {
	for in, want := range map[string]int64{"1": 1, "256Mi": 256 << 20, "1Gi": 1 << 30, "2k": 2000, "3M": 3e6, " 7Ki ": 7 << 10} {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1", "1.5Mi", "Mi", "x", "9999999999Ti"} {
		if _, err := ParseBytes(in); err == nil {
			t.Errorf("ParseBytes(%q) accepted", in)
		}
	}
	for n, want := range map[int64]string{DefaultMaxBytes: "256Mi", 1024: "1Ki", 1025: "1025", 3 << 30: "3Gi"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestReadStream: a regular file is read and is no stream; a pipe named by
// path (/dev/fd/N, as -f <(...) passes it) is read and is one.
func TestReadStream(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("a: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, stream, err := ReadStream(p, 0); err != nil || stream || string(b) != "a: 1\n" {
		t.Errorf("regular file: %q, stream %v, %v", b, stream, err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := w.WriteString("b: 2\n"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if b, stream, err := ReadStream("/dev/fd/"+strconv.Itoa(int(r.Fd())), 0); err != nil || !stream || string(b) != "b: 2\n" {
		t.Errorf("pipe: %q, stream %v, %v", b, stream, err)
	}
	if _, _, err := ReadStream(filepath.Join(t.TempDir(), "missing"), 0); err == nil {
		t.Error("a missing file read")
	}
}
