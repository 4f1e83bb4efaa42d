package podresources

import (
	"fmt"
	"path"
	"strings"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/sysfmt"
)

// The PodResources API names pods and containers but carries neither the
// pod's UID nor the container's id, and the cgroup tree carries only those.
// Two host sources join them (names only are read, never a log):
//
//   - /var/log/containers/<pod>_<namespace>_<container>-<id>.log, the links
//     kubelet makes for every container it runs;
//   - /var/log/pods/<namespace>_<pod>_<uid>, kubelet's per-pod log
//     directory.
//
// Without them the cpuset of a container is still known when it is not
// ambiguous: when every container cgroup without exclusive CPUs has the same
// cpuset (the shared pool: CPU manager none, or a non-Guaranteed pod).
const (
	containerLogDir = "/var/log/containers"
	podLogDir       = "/var/log/pods"
	// maxCgroups bounds the container cgroups read (a node runs at most a
	// few hundred pods: kubelet's maxPods defaults to 110).
	maxCgroups = 4096
)

// cgroupLayout is one place kubelet puts its pods' cgroups.
type cgroupLayout struct {
	root       string // host path of the kubepods cgroup
	cpus, mems string // file names of the effective cpuset
}

// cgroupLayouts are the kubepods roots kubelet uses: cgroup v2 with the
// systemd and cgroupfs drivers (and the kubelet.slice nesting of kind-like
// nodes), then cgroup v1's cpuset hierarchy.
func cgroupLayouts() []cgroupLayout {
	return []cgroupLayout{
		{"/sys/fs/cgroup/kubepods.slice", "cpuset.cpus.effective", "cpuset.mems.effective"},
		{"/sys/fs/cgroup/kubepods", "cpuset.cpus.effective", "cpuset.mems.effective"},
		{"/sys/fs/cgroup/kubelet.slice/kubelet-kubepods.slice", "cpuset.cpus.effective", "cpuset.mems.effective"},
		{"/sys/fs/cgroup/kubelet/kubepods", "cpuset.cpus.effective", "cpuset.mems.effective"},
		{"/sys/fs/cgroup/cpuset/kubepods.slice", "cpuset.effective_cpus", "cpuset.effective_mems"},
		{"/sys/fs/cgroup/cpuset/kubepods", "cpuset.effective_cpus", "cpuset.effective_mems"},
	}
}

// cgroupEntry is one container's cgroup.
type cgroupEntry struct {
	Path        string // host path
	PodUID      string
	ContainerID string
	CPUs, Mems  string // cpulists as the kernel prints them
}

// cgroupIndex is the container cgroups under kubepods and the names that
// join them to the API's containers.
type cgroupIndex struct {
	root    string // the kubepods root found; "" when none
	entries []cgroupEntry
	byID    map[string]int
	// ids maps namespace/pod/container to container ids (newest restart
	// order unknown: every id is tried), uids namespace/pod to pod UIDs.
	ids  map[string][]string
	uids map[string]string
	// truncated is set when maxCgroups stopped the scan.
	truncated bool
}

// scanCgroups reads the kubepods cgroup tree and the log-directory names.
func scanCgroups(host *hostfs.FS) *cgroupIndex {
	x := &cgroupIndex{byID: map[string]int{}, ids: map[string][]string{}, uids: map[string]string{}}
	for _, l := range cgroupLayouts() {
		names, err := host.ReadDirNames(l.root)
		if err != nil {
			continue
		}
		x.root = l.root
		for _, n := range names {
			switch {
			case isQoSDir(n):
				sub, err := host.ReadDirNames(path.Join(l.root, n))
				if err != nil {
					continue
				}
				for _, p := range sub {
					if uid, ok := podUID(p); ok {
						x.addPod(host, l, path.Join(l.root, n, p), uid)
					}
				}
			default:
				if uid, ok := podUID(n); ok {
					x.addPod(host, l, path.Join(l.root, n), uid)
				}
			}
		}
		break
	}
	if names, err := host.ReadDirNames(containerLogDir); err == nil {
		for _, n := range names {
			if k, id, ok := parseContainerLog(n); ok {
				x.ids[k] = append(x.ids[k], id)
			}
		}
	}
	if names, err := host.ReadDirNames(podLogDir); err == nil {
		for _, n := range names {
			if f := strings.Split(n, "_"); len(f) == 3 && f[0] != "" && f[1] != "" && f[2] != "" {
				x.uids[f[0]+"/"+f[1]] = f[2]
			}
		}
	}
	return x
}

func (x *cgroupIndex) addPod(host *hostfs.FS, l cgroupLayout, dir, uid string) {
	names, err := host.ReadDirNames(dir)
	if err != nil {
		return
	}
	for _, n := range names {
		id, ok := containerID(n)
		if !ok {
			continue
		}
		if len(x.entries) >= maxCgroups {
			x.truncated = true
			return
		}
		p := path.Join(dir, n)
		cpus, err1 := readList(host, path.Join(p, l.cpus))
		mems, err2 := readList(host, path.Join(p, l.mems))
		if err1 != nil || err2 != nil {
			continue
		}
		x.byID[id] = len(x.entries)
		x.entries = append(x.entries, cgroupEntry{Path: p, PodUID: uid, ContainerID: id, CPUs: cpus, Mems: mems})
	}
}

func isQoSDir(n string) bool {
	switch n {
	case "burstable", "besteffort", "kubepods-burstable.slice", "kubepods-besteffort.slice":
		return true
	}
	return false
}

// podUID reads a pod cgroup's name: pod<uid> (cgroupfs) or
// kubepods[-<qos>]-pod<uid with '_' for '-'>.slice (systemd).
func podUID(n string) (string, bool) {
	if s, ok := strings.CutPrefix(n, "pod"); ok && s != "" && !strings.Contains(s, ".") {
		return s, validUID(s)
	}
	s, ok := strings.CutSuffix(n, ".slice")
	if !ok {
		return "", false
	}
	i := strings.LastIndex(s, "-pod")
	if i < 0 {
		return "", false
	}
	uid := strings.ReplaceAll(s[i+4:], "_", "-")
	return uid, validUID(uid)
}

func validUID(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F' || r == '-') {
			return false
		}
	}
	return true
}

// containerID reads a container cgroup's name: <runtime>-<id>.scope
// (systemd: cri-containerd-, crio-, docker-) or the bare id (cgroupfs).
// CRI-O's crio-conmon-<id>.scope holds the monitor, not the container.
func containerID(n string) (string, bool) {
	if s, ok := strings.CutSuffix(n, ".scope"); ok {
		if strings.HasPrefix(s, "crio-conmon-") {
			return "", false
		}
		if i := strings.LastIndex(s, "-"); i >= 0 {
			s = s[i+1:]
		}
		return s, isHexID(s)
	}
	return n, isHexID(n)
}

func isHexID(s string) bool {
	if len(s) < 12 || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}

// parseContainerLog reads <pod>_<namespace>_<container>-<id>.log into the
// key namespace/pod/container and the id. Pod, namespace and container
// names hold no '_' (they are DNS names); the id is hex.
func parseContainerLog(n string) (string, string, bool) {
	s, ok := strings.CutSuffix(n, ".log")
	if !ok || strings.Contains(s, "/") {
		return "", "", false
	}
	f := strings.Split(s, "_")
	if len(f) != 3 || f[0] == "" || f[1] == "" {
		return "", "", false
	}
	i := strings.LastIndex(f[2], "-")
	if i <= 0 || !isHexID(f[2][i+1:]) {
		return "", "", false
	}
	return f[1] + "/" + f[0] + "/" + f[2][:i], f[2][i+1:], true
}

// lookup finds the cgroup of namespace/pod/container: through its
// container id, else through the pod's UID when all the pod's containers
// share one cpuset. how says which.
func (x *cgroupIndex) lookup(ns, pod, ctr string) (e cgroupEntry, how string, ok bool) {
	for _, id := range x.ids[ns+"/"+pod+"/"+ctr] {
		if i, found := x.byID[id]; found {
			return x.entries[i], "container " + shortID(id), true
		}
	}
	uid := x.uids[ns+"/"+pod]
	if uid == "" {
		return cgroupEntry{}, "", false
	}
	var pick *cgroupEntry
	for i := range x.entries {
		c := &x.entries[i]
		if c.PodUID != uid {
			continue
		}
		if pick != nil && (pick.CPUs != c.CPUs || pick.Mems != c.Mems) {
			return cgroupEntry{}, "", false
		}
		pick = c
	}
	if pick == nil {
		return cgroupEntry{}, "", false
	}
	return *pick, "pod " + uid, true
}

// shared returns the one value pick gives every container cgroup not in
// skip (when skip leaves none, every cgroup counts); false when they differ
// or there are none.
func (x *cgroupIndex) shared(pick func(cgroupEntry) string, skip map[string]bool) (string, bool) {
	val, found := "", false
	for pass := 0; pass < 2 && !found; pass++ {
		for _, c := range x.entries {
			v := pick(c)
			if pass == 0 && skip[v] {
				continue
			}
			if found && v != val {
				return "", false
			}
			val, found = v, true
		}
	}
	return val, found
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// readList reads a cpuset file and returns it in canonical form (what
// cpuset.CPUSet.String prints), so that lists compare as strings.
func readList(host *hostfs.FS, p string) (string, error) {
	s, err := host.ReadString(p)
	if err != nil {
		return "", err
	}
	set, err := sysfmt.ParseCPUList(s)
	if err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	return set.String(), nil
}
