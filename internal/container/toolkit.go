package container

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gpunode/gpunode/internal/check"
)

// toolkitParts are the pieces of the NVIDIA Container Toolkit: binaries
// looked up in the PATH directories, the library in the loader's
// directories.
var toolkitBinaries = [...]string{"nvidia-ctk", "nvidia-container-runtime", "nvidia-container-runtime-hook", "nvidia-container-cli"}

var libDirs = [...]string{"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/lib/x86_64-linux-gnu", "/lib64"}

// toolkitPackages are the Debian packages of the toolkit.
var toolkitPackages = [...]string{"nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools", "libnvidia-container1"}

const fixInstallToolkit = "apt-get install -y nvidia-container-toolkit   # or dnf install nvidia-container-toolkit (NVIDIA's repository)"

func toolkitCheck(h *host) check.Check {
	f := newFinding(CheckToolkit, "4.1")
	var have, missing []string
	for _, b := range toolkitBinaries {
		if p := findBinary(h.fs, b); p != "" {
			have = append(have, b)
		} else {
			missing = append(missing, b)
		}
	}
	lib, libVer := findLibNvidiaContainer(h)
	if lib != "" {
		have = append(have, "libnvidia-container")
	} else {
		missing = append(missing, "libnvidia-container")
	}
	versions := map[string]string{}
	for _, p := range toolkitPackages {
		if v, ok := h.pkgs[p]; ok {
			versions[p] = upstreamVersion(v)
		}
	}
	if len(versions) == 0 && libVer != "" {
		versions["libnvidia-container.so"] = libVer
	}
	if len(have) == 0 {
		f.c.Current = "not installed"
		f.c.Expected = "nvidia-container-toolkit"
		if len(h.gpus) == 0 {
			f.c.Status = check.Absent
			f.c.Detail = "no NVIDIA Container Toolkit and no NVIDIA GPU"
			return f.c
		}
		f.drift(fmt.Sprintf("%d GPUs but no NVIDIA Container Toolkit: containers cannot see them", len(h.gpus)), fixInstallToolkit)
		return f.done()
	}
	f.c.Expected = strings.Join(append(toolkitBinaries[:], "libnvidia-container"), ", ") + "; one version"
	f.c.Current = "installed: " + strings.Join(have, ", ")
	if vs := versionList(versions); vs != "" {
		f.c.Current += " (" + vs + ")"
	}
	if len(missing) > 0 {
		f.drift("missing: "+strings.Join(missing, ", "), fixInstallToolkit)
	}
	distinct := map[string]bool{}
	for _, v := range versions {
		distinct[v] = true
	}
	if len(distinct) > 1 {
		f.drift("toolkit packages at different versions (a partial upgrade)", "apt-get install -y --only-upgrade nvidia-container-toolkit nvidia-container-toolkit-base libnvidia-container-tools libnvidia-container1")
	}
	if h.pkgErr != nil {
		f.note("package database: " + h.pkgErr.Error())
	}
	return f.done()
}

func versionList(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+" "+m[k])
	}
	return strings.Join(parts, ", ")
}

// findLibNvidiaContainer finds libnvidia-container.so.1 and the version
// in the name of the file it links to (libnvidia-container.so.1.17.3).
func findLibNvidiaContainer(h *host) (string, string) {
	const base = "libnvidia-container.so."
	for _, d := range libDirs {
		names, err := h.fs.ReadDirNames(d)
		if err != nil {
			continue
		}
		found, ver := "", ""
		for i, n := range names {
			if i > 100000 {
				break
			}
			if !strings.HasPrefix(n, base) {
				continue
			}
			found = d + "/" + n
			if v := strings.TrimPrefix(n, base); strings.Count(v, ".") >= 2 && v > ver {
				ver = v
			}
		}
		if found != "" {
			return found, ver
		}
	}
	return "", ""
}
