package cli

import (
	"errors"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/gpunode/gpunode/internal/container"
	"github.com/gpunode/gpunode/internal/hostfs"
)

// Checks of flag values that are the caller's to get right (exit 2, the
// flag named), made before a command reasons about them.

// hexRun reports whether s is n hex digits.
func hexRun(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// isUUID: 8-4-4-4-12 hex digits.
func isUUID(s string) bool {
	parts := strings.Split(s, "-")
	if len(parts) != 5 {
		return false
	}
	for i, n := range []int{8, 4, 4, 4, 12} {
		if !hexRun(parts[i], n) {
			return false
		}
	}
	return true
}

// checkMIGUUID accepts the two forms NVML and nvidia-smi -L print:
// MIG-<uuid> (R470 and later) and MIG-GPU-<uuid>/<gi>/<ci> (earlier).
func checkMIGUUID(flag, v string) error {
	rest, ok := strings.CutPrefix(v, "MIG-")
	if ok && isUUID(rest) {
		return nil
	}
	if g, ok2 := strings.CutPrefix(rest, "GPU-"); ok && ok2 {
		parts := strings.Split(g, "/")
		if len(parts) == 3 && isUUID(parts[0]) {
			if _, err := strconv.ParseUint(parts[1], 10, 32); err == nil {
				if _, err := strconv.ParseUint(parts[2], 10, 32); err == nil {
					return nil
				}
			}
		}
	}
	return Usagef("%s %q: Invalid value: not a MIG device UUID (want MIG-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, or MIG-GPU-<uuid>/<gi>/<ci>, as 'nvidia-smi -L' lists them)", flag, v)
}

// checkPathsExist refuses paths that do not exist on the host (read
// through --root). A captured tree holds no data directories: there a path
// at or under a mount point of its mount table (other than /) counts as
// existing.
func checkPathsExist(host *hostfs.FS, flag string, paths []string) error {
	var mounts []container.Mount
	if b, err := host.ReadFile(container.MountInfo); err == nil {
		mounts, _ = container.ParseMountInfo(b)
	}
	mounted := func(p string) bool {
		p = path.Clean(p)
		for _, m := range mounts {
			if mp := path.Clean(m.MountPoint); mp != "/" && (p == mp || strings.HasPrefix(p, mp+"/")) {
				return true
			}
		}
		return false
	}
	for _, p := range paths {
		if p == "" {
			return Usagef("%s: Required value: an empty path", flag)
		}
		if _, err := host.Stat(p); err != nil {
			if errors.Is(err, fs.ErrNotExist) && !mounted(p) {
				where := ""
				if r := host.Root(); r != "/" && r != "" {
					where = " under --root " + r
				}
				return Usagef("%s %s: Not found: no such file or directory%s", flag, p, where)
			}
		}
	}
	return nil
}
