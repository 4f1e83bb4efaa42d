package journaltest

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Baseline is a snapshot that can be compared with the tree again quickly:
// an entry whose inode change time, size, mode and owner are unchanged
// cannot have had its bytes changed (ctime moves on every write and cannot
// be set back), so only the other entries are read again. The comparison is
// as exact as Snapshot + Diff.
type Baseline struct {
	root    string
	exclude []string
	tree    Tree
	stat    map[string]statKey
}

type statKey struct {
	ctime  syscall.Timespec
	size   int64
	mode   fs.FileMode
	uid    uint32
	gid    uint32
	nlink  uint64
	inode  uint64
	device uint64
}

// NewBaseline snapshots root (see Snapshot for exclude).
func NewBaseline(root string, exclude ...string) (*Baseline, error) {
	t, err := Snapshot(root, exclude...)
	if err != nil {
		return nil, err
	}
	b := &Baseline{root: root, exclude: exclude, tree: t}
	b.stat, err = b.stats()
	return b, err
}

// Tree returns the full snapshot taken by NewBaseline.
func (b *Baseline) Tree() Tree { return b.tree }

func (b *Baseline) stats() (map[string]statKey, error) {
	out := map[string]statKey{}
	err := filepath.WalkDir(b.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(b.root, p)
		rel = filepath.ToSlash(rel)
		for _, ex := range b.exclude {
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
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("%s: no stat", p)
		}
		out[rel] = statKey{ctime: st.Ctim, size: fi.Size(), mode: fi.Mode(), uid: st.Uid, gid: st.Gid, nlink: uint64(st.Nlink), inode: st.Ino, device: uint64(st.Dev)}
		return nil
	})
	return out, err
}

// Diff compares the tree now with the baseline, like Diff(b.Tree(),
// Snapshot(root)).
func (b *Baseline) Diff() ([]string, error) {
	now, err := b.stats()
	if err != nil {
		return nil, err
	}
	var changed []string
	for p, k := range now {
		if old, ok := b.stat[p]; !ok || old != k {
			changed = append(changed, p)
		}
	}
	got := Tree{}
	for p := range b.tree {
		if _, ok := now[p]; ok {
			got[p] = b.tree[p]
		}
	}
	for _, p := range changed {
		one, err := describeOne(filepath.Join(b.root, filepath.FromSlash(p)))
		if err != nil {
			return nil, err
		}
		got[p] = one
	}
	return Diff(b.tree, got), nil
}

func describeOne(p string) (string, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return "", err
	}
	owner := ""
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		owner = fmt.Sprintf("%d:%d", st.Uid, st.Gid)
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("link %s -> %s", owner, target), nil
	case fi.IsDir():
		return fmt.Sprintf("dir %v %s", fi.Mode(), owner), nil
	case fi.Mode().IsRegular():
		b, err := os.ReadFile(p)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("file %v %s %q", fi.Mode(), owner, b), nil
	}
	return fmt.Sprintf("other %v %s", fi.Mode(), owner), nil
}
