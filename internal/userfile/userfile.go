// Package userfile reads the files users name on the command line
// (manifests, cluster exports, specs, configs) under one announced bound:
// --max-input-bytes, 256 MiB by default. A regular file is stat'ed first
// (refused before any byte is read when it is larger) and read into one
// buffer of its size; anything else (stdin, a pipe, process substitution)
// is read through a bound. A user file that names a host path (container
// check's --image-config under --root) is opened by hostfs and read here
// (ReadOpen), under the same bound. Every command's user files come here:
// internal/houserules fails on a reader that does not.
//
// No open blocks: a file is opened with O_NONBLOCK (a FIFO without a writer
// reads as empty instead of holding the open forever), and a device is
// refused.
package userfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/gpunode/gpunode/internal/hostfs"
)

// DefaultMaxBytes is the default of --max-input-bytes.
const DefaultMaxBytes int64 = 256 << 20

// FlagName is the flag that changes the bound, named in errors.
const FlagName = "max-input-bytes"

// ErrTooLarge is wrapped by the error of an input over the bound.
var ErrTooLarge = errors.New("input too large")

func tooLarge(name string, size, limit int64) error {
	what := "more than " + strconv.FormatInt(limit, 10) + " bytes"
	if size > 0 {
		what = strconv.FormatInt(size, 10) + " bytes"
	}
	return fmt.Errorf("%s: %w: %s, the limit is %d bytes (%s); raise it with --%s", name, ErrTooLarge, what, limit, FormatBytes(limit), FlagName)
}

// Read reads the file at path, at most limit bytes (limit <= 0:
// DefaultMaxBytes).
func Read(path string, limit int64) ([]byte, error) { return ReadChecked(path, limit, 0, nil) }

// ReadStream is Read that also says whether the file was a stream, not a
// regular file (a pipe: -f /dev/stdin, -f <(...)): reading it took what a
// second reader would have got.
func ReadStream(path string, limit int64) (data []byte, stream bool, err error) {
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	f, err := hostfs.OpenLocal(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && !st.Mode().IsRegular() {
		stream = true
	}
	data, err = read(f, path, limit, 0, nil)
	return data, stream, err
}

// ReadChecked is Read that first reads at most head bytes of a regular
// file and passes them to check: an input the start of which already
// shows it is bad is refused without reading the rest.
func ReadChecked(path string, limit int64, head int, check func(head []byte) error) ([]byte, error) {
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	f, err := hostfs.OpenLocal(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return read(f, path, limit, head, check)
}

// ReadOpen is Read of a file opened elsewhere (a host path that hostfs
// opened under --root); name labels errors. It does not close f.
func ReadOpen(f *os.File, name string, limit int64) ([]byte, error) {
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	return read(f, name, limit, 0, nil)
}

// ReadUnder reads a file the user named as a host path under fs's root
// (container check's --image-config): opened by hostfs, read under limit.
func ReadUnder(fs *hostfs.FS, p string, limit int64) ([]byte, error) {
	f, err := fs.OpenUser(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadOpen(f, p, limit)
}

// ErrNotFile is wrapped by the refusal of a device named as an input.
var ErrNotFile = errors.New("not a regular file or a pipe")

func read(f *os.File, path string, limit int64, head int, check func([]byte) error) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s: is a directory", path)
	}
	if st.Mode()&os.ModeDevice != 0 {
		// /dev/zero would fill the bound; a terminal or a tape would wait.
		return nil, fmt.Errorf("%s: %w (a device)", path, ErrNotFile)
	}
	if !st.Mode().IsRegular() {
		return ReadAll(f, path, limit)
	}
	if st.Size() > limit {
		return nil, tooLarge(path, st.Size(), limit)
	}
	// One buffer of the stat'ed size (and one byte more, to see a file
	// that grew since); no doubling copies of a large file.
	buf := make([]byte, st.Size()+1)
	h := 0
	if check != nil && head > 0 && int64(head) < st.Size() {
		if h, err = io.ReadFull(f, buf[:head]); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if err := check(buf[:h]); err != nil {
			return nil, err
		}
	}
	n, err := io.ReadFull(f, buf[h:])
	n += h
	switch {
	case err == nil: // grew since the stat: read on through the bound
		if int64(n) > limit {
			return nil, tooLarge(path, 0, limit)
		}
		rest, err := io.ReadAll(io.LimitReader(f, limit-int64(n)+1))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if int64(n+len(rest)) > limit {
			return nil, tooLarge(path, 0, limit)
		}
		return append(buf, rest...), nil
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return buf[:n:n], nil
	default:
		return nil, fmt.Errorf("%s: %w", path, err)
	}
}

// ReadAll reads r to its end, at most limit bytes (limit <= 0:
// DefaultMaxBytes); name labels errors ("stdin", a path).
func ReadAll(r io.Reader, name string, limit int64) ([]byte, error) {
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if int64(len(b)) > limit {
		return nil, tooLarge(name, 0, limit)
	}
	return b, nil
}

// ParseBytes parses a byte count: digits with an optional binary (Ki, Mi,
// Gi, Ti) or decimal (k, K, M, G, T) suffix; it must be at least 1.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40}, {"k", 1e3}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSuffix(t, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 1 || n > (1<<62)/mult {
		return 0, fmt.Errorf("invalid byte count %q (want a positive number, optionally with Ki, Mi, Gi, Ti, k, M, G or T)", s)
	}
	return n * mult, nil
}

// FormatBytes renders n in the largest binary unit that divides it.
func FormatBytes(n int64) string {
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"Ti", 1 << 40}, {"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}} {
		if n >= u.mult && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// Flag is a pflag.Value for --max-input-bytes.
type Flag struct{ Bytes *int64 }

func (f Flag) String() string {
	if f.Bytes == nil {
		return FormatBytes(DefaultMaxBytes)
	}
	return FormatBytes(*f.Bytes)
}

// Set parses a byte count.
func (f Flag) Set(s string) error {
	n, err := ParseBytes(s)
	if err != nil {
		return err
	}
	*f.Bytes = n
	return nil
}

// Type is the flag's type in help.
func (Flag) Type() string { return "bytes" }
