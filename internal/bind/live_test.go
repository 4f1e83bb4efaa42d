package bind

// The live end of the NUMA chain over stand-ins for its two system calls:
// get_mempolicy(2)'s words decoded, and the choice between the memory
// policy's node and the node of the CPU gpunode runs on.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/topo"
)

// The mode word and node mask as get_mempolicy(2) writes them: modes 0-6
// (MPOL_DEFAULT .. MPOL_WEIGHTED_INTERLEAVE), flags MPOL_F_STATIC_NODES
// (1<<15), MPOL_F_RELATIVE_NODES (1<<14), MPOL_F_NUMA_BALANCING (1<<13),
// node n in bit n%64 of word n/64.
func TestDecodeMemPolicy(t *testing.T) {
	mask := func(nodes ...int) []uint64 {
		m := make([]uint64, 1024/64)
		for _, n := range nodes {
			m[n/64] |= 1 << (n % 64)
		}
		return m
	}
	for _, c := range []struct {
		mode  int
		mask  []uint64
		want  string
		flags []string
		nodes []int
	}{
		{0, mask(), "default", nil, []int{}},
		{1, mask(1), "preferred", nil, []int{1}},
		{2, mask(0, 1), "bind", nil, []int{0, 1}},
		{3, mask(0, 63, 64, 65), "interleave", nil, []int{0, 63, 64, 65}},
		{4, mask(), "local", nil, []int{}},
		{5, mask(127, 128, 1023), "preferred-many", nil, []int{127, 128, 1023}},
		{6, mask(2), "weighted-interleave", nil, []int{2}},
		{7, mask(), "mode-7", nil, []int{}},
		{2 | 1<<15, mask(3), "bind", []string{"static"}, []int{3}},
		{3 | 1<<14, mask(3), "interleave", []string{"relative"}, []int{3}},
		{2 | 1<<13, mask(3), "bind", []string{"numa-balancing"}, []int{3}},
		{1 | 1<<15 | 1<<14 | 1<<13, mask(), "preferred", []string{"static", "relative", "numa-balancing"}, []int{}},
	} {
		st := decodeMemPolicy(c.mode, c.mask)
		if st.Mode != c.want || !slices.Equal(st.Flags, c.flags) || st.Nodes == nil || !slices.Equal(st.Nodes, c.nodes) {
			t.Errorf("mode %#x: %+v, want %s %v %v", c.mode, st, c.want, c.flags, c.nodes)
		}
	}
}

func TestCurrentNode(t *testing.T) {
	gh := discover(t, "gh200") // node 0 has the CPUs, nodes 1-8 memory only
	pol := func(mode string, nodes ...int) func() (MemPolicyState, error) {
		return func() (MemPolicyState, error) { return MemPolicyState{Mode: mode, Nodes: nodes}, nil }
	}
	cpu := func(c, n int) func() (int, int, error) {
		return func() (int, int, error) { return c, n, nil }
	}
	for _, c := range []struct {
		name string
		pol  func() (MemPolicyState, error)
		node int
		how  string
	}{
		{"bind to a node with CPUs", pol("bind", 0), 0, "NUMA node 0 of the current memory policy (bind [0])"},
		{"memory-only nodes first", pol("preferred-many", 1, 2, 0), 0, "NUMA node 0 of the current memory policy (preferred-many [1 2 0])"},
		{"only memory-only nodes", pol("bind", 1, 2), 5, "NUMA node 5 of CPU 17, where gpunode runs (memory policy bind)"},
		{"no such node", pol("bind", 40), 5, "NUMA node 5 of CPU 17, where gpunode runs (memory policy bind)"},
		{"default", pol("default", 0), 5, "NUMA node 5 of CPU 17, where gpunode runs (memory policy default)"},
		{"local", pol("local", 0), 5, "NUMA node 5 of CPU 17, where gpunode runs (memory policy local)"},
		{"get_mempolicy fails", func() (MemPolicyState, error) {
			return MemPolicyState{Mode: "bind", Nodes: []int{0}}, syscall.ENOSYS
		}, 5, "NUMA node 5 of CPU 17, where gpunode runs (memory policy bind)"},
		{"no policy", pol(""), 5, "NUMA node 5 of CPU 17, where gpunode runs (memory policy none)"},
	} {
		node, how, err := currentNode(gh, c.pol, cpu(17, 5))
		if err != nil || node != c.node || how != c.how {
			t.Errorf("%s: %d %q %v, want %d %q", c.name, node, how, err, c.node, c.how)
		}
	}
	// getcpu(2) failing is an error, not node 0.
	_, how, err := currentNode(gh, pol("default"), func() (int, int, error) { return 3, 4, syscall.EPERM })
	if !errors.Is(err, syscall.EPERM) || how != "" {
		t.Errorf("getcpu failing: %q %v, want the error", how, err)
	}
	// And the live one answers with a node of this machine.
	node, how, err := LivePolicy{}.CurrentNode(gh)
	if err != nil || node < 0 || !strings.HasPrefix(how, "NUMA node ") {
		t.Errorf("live: %d %q %v", node, how, err)
	}
}

// setAffinity refuses an empty set with exactly that input error.
func TestSetAffinityEmpty(t *testing.T) {
	for _, cpus := range [][]int{nil, {}} {
		err := setAffinity(cpus)
		if !errors.Is(err, ErrInput) || err.Error() != "bad input: empty CPU set" {
			t.Errorf("setAffinity(%v) = %v", cpus, err)
		}
	}
}

// A cgroup whose directory is missing is made (mode 0755) under a parent
// with cpuset enabled; on a fake tree the kernel's files do not appear in
// it, so the next step fails on cpuset.cpus - after the directory exists.
func TestJoinCgroupMakesTheDirectory(t *testing.T) {
	root := t.TempDir()
	cg := filepath.Join(root, "sys/fs/cgroup")
	if err := os.MkdirAll(filepath.Join(cg, "gpu"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"cgroup.controllers", "cgroup.subtree_control", "gpu/cgroup.subtree_control"} {
		if err := os.WriteFile(filepath.Join(cg, f), []byte("cpuset cpu\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fsys, err := hostfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	c := &Cgroup{Name: "gpu/new", Path: DefaultCgFS + "/gpu/new", CPUs: topo.NewCPUList(cpuset.New(2, 3)), Mems: "0"}
	err = joinCgroup(fsys, c)
	if err == nil || !strings.Contains(err.Error(), "--cgroup gpu/new: /sys/fs/cgroup/gpu/new/cpuset.cpus: ") {
		t.Fatalf("joinCgroup = %v, want the cpuset.cpus write to fail after the directory was made", err)
	}
	fi, serr := os.Stat(filepath.Join(cg, "gpu/new"))
	if serr != nil || !fi.IsDir() || fi.Mode().Perm() != 0o755 {
		t.Fatalf("gpu/new: %v %v, want a directory of mode 0755", fi, serr)
	}
}

// A policy the kernel refuses (a node that is not online) is an error
// naming the call, the mode and the nodes; nothing is changed.
func TestSetMemPolicyRefused(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, err := GetMemPolicy()
	if err != nil {
		t.Fatal(err)
	}
	err = SetMemPolicy(MemPolicy{Mode: MemBind, Nodes: []int{1000}})
	if err == nil || !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "set_mempolicy(bind, nodes [1000]): ") {
		t.Fatalf("SetMemPolicy(bind 1000) = %v, want EINVAL naming the call", err)
	}
	if after, err := GetMemPolicy(); err != nil || after.Mode != before.Mode || !slices.Equal(after.Nodes, before.Nodes) {
		t.Errorf("policy %+v after a refused call, was %+v (%v)", after, before, err)
	}
}

// ParseRank: a non-negative decimal, else an input error naming the
// variable, with 0.
func TestParseRankEdges(t *testing.T) {
	for in, want := range map[string]int{"0": 0, " 7 ": 7, "+3": 3} {
		if n, err := ParseRank("LOCAL_RANK", in); err != nil || n != want {
			t.Errorf("ParseRank(%q) = %d, %v", in, n, err)
		}
	}
	for _, in := range []string{"-1", "", "x", "1.5"} {
		n, err := ParseRank("LOCAL_RANK", in)
		if !errors.Is(err, ErrInput) || n != 0 || !strings.Contains(err.Error(), "LOCAL_RANK=") {
			t.Errorf("ParseRank(%q) = %d, %v; want 0 and an input error", in, n, err)
		}
	}
}

// The live policy naming a node without CPUs (or no node at all) is an
// input error that says to use --node, not a plan.
func TestPolicyNodeWithoutCPUs(t *testing.T) {
	for _, c := range []struct {
		host string
		node int
	}{{"vm-2vcpu", 5}, {"gh200", 3}} {
		tp := discover(t, c.host)
		tp.GPUs = nil // the policy is asked only on a host without GPUs
		p, err := Resolve(context.Background(), tp, Request{}, Sources{Policy: fakePolicy{node: c.node}})
		want := fmt.Sprintf("current policy points at NUMA node %d, which has no CPUs; use --node", c.node)
		if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), want) || p != nil {
			t.Errorf("%s, policy node %d: %v, %v; want %q", c.host, c.node, p, err, want)
		}
	}
}

// A local world size without a local rank plans rank 0's target alone
// (no peers to share the node with).
func TestWorldSizeWithoutRank(t *testing.T) {
	dgx := discover(t, "dgx-h100")
	alone, err := Resolve(context.Background(), dgx, Request{}, Sources{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Resolve(context.Background(), dgx, Request{LocalWorldSize: 8}, Sources{})
	if err != nil {
		t.Fatalf("world size 8 without a rank: %v", err)
	}
	if p.NUMANode != alone.NUMANode || p.CPUs.String() != alone.CPUs.String() {
		t.Errorf("world size 8 without a rank: node %d CPUs %s; alone: node %d CPUs %s", p.NUMANode, p.CPUs, alone.NUMANode, alone.CPUs)
	}
}

// A thread's stat that cannot be parsed is an error naming the file.
func TestReadShowBadTaskStat(t *testing.T) {
	root := t.TempDir()
	for p, s := range map[string]string{
		"proc/77/status":         "Name:\tx\nCpus_allowed_list:\t0-1\n",
		"proc/77/numa_maps":      "",
		"proc/77/task/77/stat":   "77 x S",
		"proc/77/task/77/status": "",
	} {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fsys, err := hostfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ReadShow(fsys, discover(t, "vm-2vcpu"), 77, 1)
	if err == nil || s != nil || !strings.Contains(err.Error(), "/proc/77/task/77/stat: no (comm) in ") {
		t.Fatalf("ReadShow = %v, %v; want the stat file's error", s, err)
	}
}

// numa_maps: the policy most mappings report wins; a tie goes to the word
// that sorts first, whatever the order of the lines.
func TestNumaMapsMostCommonPolicy(t *testing.T) {
	for i := range 5 { // each rotation of the five lines
		lines := []string{"a prefer:1 N1=1", "b bind:0 N0=2", "c prefer:1 N1=3", "d bind:0 N0=4", "e default N0=5"}
		// Rotate the lines: the winner must not depend on their order.
		lines = append(lines[i:], lines[:i]...)
		pol, pages := ParseNumaMaps([]byte(strings.Join(lines, "\n")))
		if pol.Mode != "bind" || !slices.Equal(pol.Nodes, []int{0}) {
			t.Fatalf("tie of bind:0 and prefer:1 (rotation %d): %+v, want bind [0]", i, pol)
		}
		if len(pages) != 2 || pages[0] != (NodePages{Node: 0, Pages: 11}) || pages[1] != (NodePages{Node: 1, Pages: 4}) {
			t.Fatalf("pages %+v", pages)
		}
	}
	pol, _ := ParseNumaMaps([]byte("a bind:0\nb prefer:1\nc prefer:1\n"))
	if pol.Mode != "preferred" {
		t.Errorf("prefer:1 on two mappings of three: %+v", pol)
	}
}
