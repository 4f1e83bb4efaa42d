// Package journaltest holds test helpers for code that changes a host tree
// through internal/journal: snapshot a whole tree (every file's bytes, mode,
// owner and every link target) and diff two snapshots, so a test can assert
// that apply followed by rollback leaves the tree byte-identical.
package journaltest

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// Tree maps a slash path relative to the root to a description of the entry
// (type, mode, owner, and contents or link target).
type Tree map[string]string

// Snapshot walks root and describes every entry. Paths under any of the
// exclude prefixes (slash paths relative to root, e.g. "var/lib/gpunode")
// are skipped.
func Snapshot(root string, exclude ...string) (Tree, error) {
	t := Tree{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		for _, ex := range exclude {
			if rel == ex || strings.HasPrefix(rel, ex+"/") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		owner := ""
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			owner = fmt.Sprintf("%d:%d", st.Uid, st.Gid)
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			t[rel] = fmt.Sprintf("link %s -> %s", owner, target)
		case fi.IsDir():
			t[rel] = fmt.Sprintf("dir %v %s", fi.Mode(), owner)
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			t[rel] = fmt.Sprintf("file %v %s %q", fi.Mode(), owner, b)
		default:
			t[rel] = fmt.Sprintf("other %v %s", fi.Mode(), owner)
		}
		return nil
	})
	return t, err
}

// Diff lists the differences between want and got, one line per path,
// sorted; empty when the trees are identical.
func Diff(want, got Tree) []string {
	var out []string
	for p, w := range want {
		g, ok := got[p]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s: missing (was %s)", p, clip(w)))
		case g != w:
			out = append(out, fmt.Sprintf("%s: %s, want %s", p, clip(g), clip(w)))
		}
	}
	for p, g := range got {
		if _, ok := want[p]; !ok {
			out = append(out, fmt.Sprintf("%s: unexpected %s", p, clip(g)))
		}
	}
	sort.Strings(out)
	return out
}

func clip(s string) string {
	if len(s) > 160 {
		return s[:160] + "..."
	}
	return s
}
