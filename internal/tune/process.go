package tune

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/sysfmt"
)

// Process is what 'gpunode audit --pid' learns about one process (seed 1.1,
// 1.2, 1.5, 1.8): swap, locked memory, allocator, and the CPU and memory
// placement of its threads relative to the GPUs it has open.
type Process struct {
	PID          int      `json:"pid"`
	Comm         string   `json:"comm"`
	VmRSSBytes   uint64   `json:"vmRssBytes"`
	VmSwapBytes  uint64   `json:"vmSwapBytes"`
	VmLckBytes   uint64   `json:"vmLckBytes"`
	VmPinBytes   uint64   `json:"vmPinBytes"`
	MemlockLimit string   `json:"memlockLimit"`
	Allocator    string   `json:"allocator"`
	GPUs         []int    `json:"gpus"`
	GPUNodes     []int    `json:"gpuNumaNodes"`
	Threads      int      `json:"threads"`
	Affinities   []string `json:"affinities"`
	MemPolicies  []string `json:"memPolicies"`
	Checks       []Check  `json:"checks"`
}

// ErrNoProcess: the --pid process does not exist.
var ErrNoProcess = errors.New("no such process")

// parseStatus parses /proc/PID/status into key -> value (units kept).
func parseStatus(b []byte) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

// kB parses "1234 kB" into bytes.
func kB(s string) uint64 {
	f := strings.Fields(s)
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.ParseUint(f[0], 10, 64)
	if len(f) > 1 && f[1] == "kB" {
		n *= 1024
	}
	return n
}

// parseLimitsMemlock returns the soft and hard "Max locked memory" of a
// /proc/PID/limits file.
func parseLimitsMemlock(b []byte) (soft, hard string, ok bool) {
	for _, line := range strings.Split(string(b), "\n") {
		if rest, found := strings.CutPrefix(line, "Max locked memory"); found {
			f := strings.Fields(rest)
			if len(f) >= 2 {
				return f[0], f[1], true
			}
		}
	}
	return "", "", false
}

// allocatorOf names the malloc implementation mapped into a process from its
// /proc/PID/maps.
func allocatorOf(maps []byte) string {
	s := string(maps)
	switch {
	case strings.Contains(s, "libjemalloc"):
		return "jemalloc"
	case strings.Contains(s, "libtcmalloc"):
		return "tcmalloc"
	case strings.Contains(s, "libmimalloc"):
		return "mimalloc"
	case strings.Contains(s, "/libc.so") || strings.Contains(s, "/libc-"):
		return "glibc"
	}
	return "unknown (static binary?)"
}

// numaPolicies returns the distinct memory policies of a numa_maps file
// ("default", "bind:0", "prefer:1", "interleave:0-1").
func numaPolicies(b []byte) []string {
	seen := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 {
			seen[f[1]] = true
		}
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// policyNodes returns the nodes a policy names; ok is false for "default"
// and "local".
func policyNodes(p string) (cpuset.CPUSet, bool) {
	_, nodes, found := strings.Cut(p, ":")
	if !found {
		return cpuset.New(), false
	}
	if i := strings.IndexByte(nodes, '='); i >= 0 { // "prefer=static:0"
		nodes = nodes[i+1:]
	}
	set, err := sysfmt.ParseCPUList(nodes)
	if err != nil {
		return cpuset.New(), false
	}
	return set, true
}

// CheckProcess inspects process pid.
func CheckProcess(ctx context.Context, h *Host, pid int) (*Process, error) {
	base := fmt.Sprintf("/proc/%d", pid)
	st, err := h.FS.ReadFile(base + "/status")
	if err != nil {
		if isNotExist(err) {
			return nil, fmt.Errorf("%w: %d (%s)", ErrNoProcess, pid, base)
		}
		return nil, fmt.Errorf("--pid %d: %w", pid, err)
	}
	status := parseStatus(st)
	p := &Process{PID: pid, Comm: status["Name"], VmRSSBytes: kB(status["VmRSS"]), VmSwapBytes: kB(status["VmSwap"]),
		VmLckBytes: kB(status["VmLck"]), VmPinBytes: kB(status["VmPin"]), GPUs: []int{}, GPUNodes: []int{}}
	add := func(c Check) {
		c.Layer = LayerProcess
		c.Subject = fmt.Sprintf("pid%d", pid)
		p.Checks = append(p.Checks, c)
	}

	// Swap (seed 1.5).
	c := Check{ID: "process.swap", Current: strconv.FormatUint(p.VmSwapBytes, 10), CurrentBytes: check.Bytes(p.VmSwapBytes),
		Expected: "0", ExpectedBytes: check.Bytes(0),
		Reason: "a swapped-out page turns a host-to-device copy into disk I/O (seed 1.5)"}
	if _, ok := status["VmSwap"]; !ok {
		c.Status, c.Detail = StatusAbsent, "no VmSwap in status (kernel without swap, or a kernel thread)"
	} else if p.VmSwapBytes == 0 {
		c.Status = StatusOK
	} else {
		c.Status = StatusDrift
		c.Fix = []string{"swapoff -a", fixNote("or give the job's cgroup memory.swap.max=0 (seed 1.5)")}
	}
	add(c)

	// Locked memory vs RLIMIT_MEMLOCK (seed 1.2, 1.3.2).
	c = Check{ID: "process.memlock", Expected: "unlimited",
		Reason: "pinned buffers (pin_memory=True, RDMA registrations) count against RLIMIT_MEMLOCK; at the limit pinning fails or falls back to pageable memory (seed 1.2, 1.3.2)"}
	if lb, err := h.FS.ReadFile(base + "/limits"); err != nil {
		c.Status, c.Detail = StatusError, err.Error()
	} else if soft, _, ok := parseLimitsMemlock(lb); !ok {
		c.Status, c.Detail = StatusError, base+"/limits: no 'Max locked memory' line"
	} else {
		p.MemlockLimit = soft
		locked := p.VmLckBytes + p.VmPinBytes
		// Current is the limit (bytes, as /proc/PID/limits prints it); what
		// counts against it goes in Detail, in bytes too.
		c.Current = soft
		if n, err := strconv.ParseUint(soft, 10, 64); err == nil {
			c.CurrentBytes = check.Bytes(n)
		}
		c.Detail = fmt.Sprintf("locked %d bytes (VmLck), pinned %d bytes (VmPin)", p.VmLckBytes, p.VmPinBytes)
		if soft == "unlimited" {
			c.Status = StatusOK
		} else {
			c.Status = StatusDrift
			if lim, err := strconv.ParseUint(soft, 10, 64); err == nil && locked*10 >= lim*9 {
				c.Detail = check.JoinDetail("locked memory is at 90% or more of the limit", c.Detail)
			}
			c.Fix = []string{fixNote("raise the limit (gpunode audit's limits.memlock and systemd.DefaultLimitMEMLOCK fixes, or gpunode tune apply), then restart the job; containers: --ulimit memlock=-1")}
		}
	}
	add(c)

	// Allocator (seed 1.8).
	c = Check{ID: "process.allocator", Expected: "(report only)",
		Reason: "glibc malloc can bloat and fragment under many data-loader threads; jemalloc or tcmalloc via LD_PRELOAD are the usual fixes (seed 1.8)"}
	if mb, err := h.FS.ReadFile(base + "/maps"); err != nil {
		c.Status, c.Detail = StatusError, err.Error()
	} else {
		p.Allocator = allocatorOf(mb)
		c.Status, c.Current = StatusOK, p.Allocator
	}
	add(c)

	// GPUs the process has open (/dev/nvidiaN; N follows PCI order like the
	// topology's GPU index).
	if fds, err := h.FS.ReadDirNames(base + "/fd"); err == nil {
		seen := map[int]bool{}
		for _, fd := range fds {
			t, err := h.FS.Readlink(base + "/fd/" + fd)
			if err != nil {
				continue
			}
			if n, ok := strings.CutPrefix(t, "/dev/nvidia"); ok {
				if i, err := strconv.Atoi(n); err == nil && !seen[i] {
					seen[i] = true
					p.GPUs = append(p.GPUs, i)
				}
			}
		}
		sort.Ints(p.GPUs)
	}
	gpuCPUs := cpuset.New()
	gpuNodes := cpuset.New()
	if h.Topo != nil {
		for _, i := range p.GPUs {
			if i < len(h.Topo.GPUs) && h.Topo.GPUs[i].NUMANode >= 0 {
				n := h.Topo.GPUs[i].NUMANode
				gpuNodes = gpuNodes.Union(cpuset.New(n))
				if node := h.Topo.NodeByID(n); node != nil {
					gpuCPUs = gpuCPUs.Union(node.CPUs.CPUSet)
				}
			}
		}
	}
	p.GPUNodes = gpuNodes.List()

	// Thread CPU affinity (seed 1.1.3, 1.4.2).
	affs := map[string]int{}
	allowed := cpuset.New()
	tids, err := h.FS.ReadDirNames(base + "/task")
	if err != nil {
		tids = []string{strconv.Itoa(pid)}
	}
	for _, tid := range tids {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		tb, err := h.FS.ReadFile(base + "/task/" + tid + "/status")
		if err != nil {
			tb = st
		}
		a := parseStatus(tb)["Cpus_allowed_list"]
		if a == "" {
			continue
		}
		p.Threads++
		affs[a]++
		if set, err := sysfmt.ParseCPUList(a); err == nil {
			allowed = allowed.Union(set)
		}
	}
	for a, n := range affs {
		p.Affinities = append(p.Affinities, fmt.Sprintf("%s (%d threads)", a, n))
	}
	sort.Strings(p.Affinities)
	c = Check{ID: "process.cpu-affinity", Current: strings.Join(p.Affinities, "; "),
		Reason: "threads feeding a GPU should run on its NUMA node: remote CPUs add cross-socket hops to every host-to-device copy (seed 1.1.3-1.1.5)"}
	switch {
	case len(p.GPUs) == 0:
		c.Status, c.Expected, c.Detail = StatusOK, "(report only)", "the process has no /dev/nvidiaN open"
	case gpuCPUs.Size() == 0:
		c.Status, c.Detail = StatusAbsent, "the GPUs' NUMA nodes are unknown"
	default:
		c.Expected = fmt.Sprintf("within %s (node %s of GPU %s)", gpuCPUs.String(), gpuNodes.String(), intsString(p.GPUs))
		if allowed.IsSubsetOf(gpuCPUs) {
			c.Status = StatusOK
		} else {
			c.Status = StatusDrift
			c.Detail = fmt.Sprintf("threads may run on %s, outside the GPU's node", allowed.Difference(gpuCPUs).String())
			c.Fix = []string{fixNote(fmt.Sprintf("relaunch the job under numactl --cpunodebind=%s --membind=%s, or with gpunode bind", gpuNodes.String(), gpuNodes.String()))}
		}
	}
	add(c)

	// NUMA memory policy (seed 1.1.3).
	c = Check{ID: "process.numa-policy",
		Reason: "memory allocated on a remote node makes every copy to the GPU cross the socket interconnect (seed 1.1.3)"}
	if nb, err := h.FS.ReadFile(base + "/numa_maps"); err != nil {
		if isNotExist(err) {
			c.Status, c.Detail = StatusAbsent, "no numa_maps (kernel without NUMA)"
		} else {
			c.Status, c.Detail = StatusError, err.Error()
		}
	} else {
		p.MemPolicies = numaPolicies(nb)
		c.Current = strings.Join(p.MemPolicies, ", ")
		switch {
		case len(p.GPUs) == 0 || gpuNodes.Size() == 0:
			c.Status, c.Expected = StatusOK, "(report only)"
		default:
			c.Expected = "default, or bind/prefer to node " + gpuNodes.String()
			c.Status = StatusOK
			var bad []string
			for _, pol := range p.MemPolicies {
				if nodes, ok := policyNodes(pol); ok && !nodes.IsSubsetOf(gpuNodes) {
					bad = append(bad, pol)
				}
			}
			if len(bad) > 0 {
				c.Status = StatusDrift
				c.Detail = "policies naming other nodes: " + strings.Join(bad, ", ")
				c.Fix = []string{fixNote(fmt.Sprintf("relaunch the job under numactl --membind=%s", gpuNodes.String()))}
			}
		}
	}
	add(c)
	return p, nil
}

func intsString(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
