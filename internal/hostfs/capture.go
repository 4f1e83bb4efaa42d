package hostfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// CopyRecorded copies every path f recorded (see Record) into the directory
// dst, so that New(dst) reads back exactly what f read: file contents,
// directory listings (entries as empty placeholders unless their contents
// were read too) and symbolic links, which are recreated as links with their
// original targets. Paths that vanished since they were read are skipped.
func (f *FS) CopyRecorded(dst string) error {
	if f.rec == nil {
		return errors.New("copy recorded: the FS was not recording")
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	c := &copier{src: f, dst: dst}
	acc := f.Recorded()
	var files []string
	var errs []error
	data := map[string][]byte{} // resolved path -> bytes read at discovery time
	for _, a := range acc {
		resolved, err := c.walk(a.Path, 0)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			errs = append(errs, err)
			continue
		}
		switch a.Kind {
		case AccessDir:
			if err := c.placeholders(resolved); err != nil {
				errs = append(errs, err)
			}
		case AccessFile, AccessStat:
			files = append(files, resolved)
			if b, ok := f.recordedData(a.Path); ok {
				data[resolved] = b
			}
		}
	}
	for _, p := range files {
		if err := c.copyFile(p, data); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

type copier struct {
	src *FS
	dst string
}

func (c *copier) d(p string) string { return filepath.Join(c.dst, filepath.FromSlash(p)) }

// walk recreates every directory and symlink on the way to host path p and
// returns p's resolved host path.
func (c *copier) walk(p string, depth int) (string, error) {
	if depth > maxLinks {
		return "", fmt.Errorf("%s: too many levels of symbolic links", p)
	}
	cur := "/"
	for _, part := range splitPath(p) {
		if part == ".." {
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, part)
		fi, err := os.Lstat(c.src.Path(next))
		if err != nil {
			return "", err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(c.src.Path(next))
			if err != nil {
				return "", err
			}
			if err := os.MkdirAll(c.d(cur), 0o755); err != nil {
				return "", err
			}
			if err := os.Symlink(target, c.d(next)); err != nil && !errors.Is(err, fs.ErrExist) {
				return "", err
			}
			if !path.IsAbs(target) {
				target = path.Join(cur, target)
			}
			if cur, err = c.walk(clean(target), depth+1); err != nil {
				return "", err
			}
		case fi.IsDir():
			if err := os.MkdirAll(c.d(next), 0o755); err != nil {
				return "", err
			}
			cur = next
		default:
			cur = next
		}
	}
	return cur, nil
}

// placeholders recreates the entries of a listed directory: links as links,
// directories as empty directories, files as empty files.
func (c *copier) placeholders(dir string) error {
	ents, err := os.ReadDir(c.src.Path(dir))
	if err != nil {
		return err
	}
	for _, e := range ents {
		src := c.src.Path(path.Join(dir, e.Name()))
		dst := c.d(path.Join(dir, e.Name()))
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			t, err := os.Readlink(src)
			if err != nil {
				return err
			}
			if err := os.Symlink(t, dst); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
		case e.IsDir():
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
		default:
			fh, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			fh.Close()
		}
	}
	return nil
}

func (c *copier) copyFile(p string, data map[string][]byte) error {
	fi, err := os.Lstat(c.src.Path(p))
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		if fi.IsDir() {
			return os.MkdirAll(c.d(p), 0o755)
		}
		return nil
	}
	b, ok := data[p]
	if !ok {
		// Stat-only paths: copy current contents. Unreadable files
		// (write-only attributes, permissions) are captured empty.
		var err error
		if b, err = readLocal(c.src.Path(p)); err != nil {
			b = nil
		}
	}
	if err := os.MkdirAll(path.Dir(c.d(p)), 0o755); err != nil {
		return err
	}
	return os.WriteFile(c.d(p), b, 0o644)
}

// readLocal reads a local file (a resolved path, no links left) with the
// same bound as ReadFile, without recording it.
func readLocal(p string) ([]byte, error) {
	fh, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return io.ReadAll(io.LimitReader(fh, MaxFileSize))
}

// splitPath returns the elements of a host path, without empty ones.
func splitPath(p string) []string {
	var out []string
	for _, s := range strings.Split(clean(p), "/") {
		if s != "" && s != "." {
			out = append(out, s)
		}
	}
	return out
}
