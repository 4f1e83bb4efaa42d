package container

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/hostfs"
)

// finding collects the problems of one check.
type finding struct {
	c        check.Check
	problems []string
	notes    []string
}

func newFinding(id, section string) *finding {
	return &finding{c: check.Check{ID: id, Section: section}}
}

// drift records one problem and its fix.
func (f *finding) drift(problem string, fix ...string) {
	f.problems = append(f.problems, problem)
	for _, x := range fix {
		if x != "" && !slices.Contains(f.c.Fix, x) {
			f.c.Fix = append(f.c.Fix, x)
		}
	}
}

func (f *finding) note(s string) { f.notes = append(f.notes, s) }

// done returns the check: drift when a problem was recorded, else ok.
func (f *finding) done() check.Check {
	c := f.c
	if c.Status == "" {
		c.Status = check.OK
		if len(f.problems) > 0 {
			c.Status = check.Drift
		}
	}
	c.Detail = check.JoinDetail(strings.Join(f.problems, "; "), strings.Join(f.notes, "; "))
	return c
}

// errorCheck is the check of a file that cannot be read or parsed.
func errorCheck(id, section, current string, err error) check.Check {
	return check.Check{ID: id, Section: section, Status: check.Error, Current: current, Detail: err.Error()}
}

// ParseError is a runtime file that does not parse: file, line, reason.
type ParseError struct {
	File   string
	Line   int
	Column int
	Reason string
}

func (e *ParseError) Error() string {
	reason := strings.Join(strings.Fields(e.Reason), " ")
	switch {
	case e.Line > 0 && e.Column > 0:
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, reason)
	case e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, reason)
	}
	return fmt.Sprintf("%s: %s", e.File, reason)
}

// lineCol converts a byte offset of data to a 1-based line and column.
func lineCol(data []byte, off int64) (int, int) {
	if off < 0 {
		off = 0
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}

// binDirs are where a runtime binary named without a path is looked up.
var binDirs = [...]string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}

// findBinary resolves a runtime binary (absolute, or a name looked up in
// the usual PATH directories) under the host root; "" when it is missing.
func findBinary(h *hostfs.FS, name string) string {
	if name == "" {
		return ""
	}
	if strings.HasPrefix(name, "/") {
		if fi, err := h.Stat(name); err == nil && !fi.IsDir() {
			return path.Clean(name)
		}
		return ""
	}
	if strings.Contains(name, "/") {
		return ""
	}
	for _, d := range binDirs {
		p := d + "/" + name
		if fi, err := h.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	return ""
}

// versionAtLeast compares dotted versions numerically.
func versionAtLeast(v string, major, minor int) bool {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

// errNotExistValue reports a runtime with no configuration file at all.

func isNotExist(err error) bool { return err != nil && errors.Is(err, fs.ErrNotExist) }
