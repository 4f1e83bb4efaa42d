package bind

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/output"
	"github.com/gpunode/gpunode/internal/sysfmt"
	"github.com/gpunode/gpunode/internal/topo"
)

// LivePolicy is the last step of the NUMA chain on a live host: the node
// named by gpunode's own memory policy (as numactl/libnuma set it for a
// wrapped process), else the node of the CPU it runs on.
type LivePolicy struct{}

// CurrentNode implements PolicySource.
func (LivePolicy) CurrentNode(t *topo.Topology) (int, string, error) {
	return currentNode(t, GetMemPolicy, Getcpu)
}

// currentNode is CurrentNode over the two system calls it makes.
func currentNode(t *topo.Topology, memPolicy func() (MemPolicyState, error), getcpu func() (cpu, node int, err error)) (int, string, error) {
	st, err := memPolicy()
	if err == nil && st.Mode != "default" && st.Mode != "local" {
		for _, n := range st.Nodes {
			if x := t.NodeByID(n); x != nil && x.CPUs.Size() > 0 {
				return n, fmt.Sprintf("NUMA node %d of the current memory policy (%s %v)", n, st.Mode, st.Nodes), nil
			}
		}
	}
	cpu, node, err := getcpu()
	if err != nil {
		return 0, "", err
	}
	return node, fmt.Sprintf("NUMA node %d of CPU %d, where gpunode runs (memory policy %s)", node, cpu, orNone(st.Mode)), nil
}

// ShowSchemaVersion identifies the JSON/YAML layout of Show.
const ShowSchemaVersion = "gpunode.bind.show/v1"

// Show is a process's CPU affinity, memory policy and threads.
type Show struct {
	SchemaVersion string       `json:"schemaVersion"`
	PID           int          `json:"pid"`
	Comm          string       `json:"comm"`
	CPUs          topo.CPUList `json:"cpus"`
	// CPUNodes are the NUMA nodes the allowed CPUs belong to.
	CPUNodes    []int  `json:"cpuNodes"`
	MemsAllowed string `json:"memsAllowed"`
	// Policy is the memory policy; PolicySource says how it was read:
	// get_mempolicy (gpunode itself) or numa_maps (the policy most mappings
	// report; mappings without their own policy show the task's).
	Policy       MemPolicyState `json:"policy"`
	PolicySource string         `json:"policySource"`
	// Pages are the resident pages per NUMA node from numa_maps.
	Pages   []NodePages `json:"pages"`
	Threads []Thread    `json:"threads"`
}

// NodePages counts a process's pages on one node.
type NodePages struct {
	Node  int    `json:"node"`
	Pages uint64 `json:"pages"`
}

// Thread is one task of the process (ps -L -o tid,psr,policy,rtprio,ni,comm).
type Thread struct {
	TID     int    `json:"tid"`
	Comm    string `json:"comm"`
	LastCPU int    `json:"lastCPU"`
	// Policy is TS (SCHED_OTHER), B (batch), IDL, FF (fifo), RR or DLN.
	Policy string       `json:"policy"`
	RTPrio int          `json:"rtPrio"`
	Nice   int          `json:"nice"`
	CPUs   topo.CPUList `json:"cpus"`
}

// ReadShow reads process pid (0: gpunode itself) through fsys. For
// gpunode itself on a live host the memory policy comes from
// get_mempolicy(2); otherwise from /proc/<pid>/numa_maps. Thread scheduling
// comes from sched_getattr(2) on a live host and /proc/<pid>/task/*/stat
// otherwise.
func ReadShow(fsys *hostfs.FS, t *topo.Topology, pid int, self int) (*Show, error) {
	isSelf := pid == 0 || pid == self
	if pid == 0 {
		pid = self
	}
	dir := "/proc/" + strconv.Itoa(pid)
	b, err := fsys.ReadFile(dir + "/status")
	if err != nil {
		return nil, fmt.Errorf("process %d: %w", pid, err)
	}
	st := parseStatus(b)
	s := &Show{SchemaVersion: ShowSchemaVersion, PID: pid, Comm: st["Name"], MemsAllowed: st["Mems_allowed_list"], CPUNodes: []int{}, Pages: []NodePages{}, Threads: []Thread{}}
	cpus, err := sysfmt.ParseCPUList(st["Cpus_allowed_list"])
	if err != nil {
		return nil, fmt.Errorf("%s/status: Cpus_allowed_list: %w", dir, err)
	}
	s.CPUs = topo.NewCPUList(cpus)
	if t != nil {
		for _, n := range t.NUMANodes {
			if !n.CPUs.Intersection(cpus).IsEmpty() {
				s.CPUNodes = append(s.CPUNodes, n.ID)
			}
		}
	}
	if nm, err := fsys.ReadFile(dir + "/numa_maps"); err == nil {
		pol, pages := ParseNumaMaps(nm)
		s.Pages = pages
		s.Policy, s.PolicySource = pol, "numa_maps"
	}
	if isSelf && fsys.IsLive() {
		if pol, err := GetMemPolicy(); err == nil {
			s.Policy, s.PolicySource = pol, "get_mempolicy"
		}
	}
	if s.Policy.Nodes == nil {
		s.Policy.Nodes = []int{}
	}
	tids, err := fsys.ReadDirNames(dir + "/task")
	if err != nil {
		return nil, fmt.Errorf("process %d: %w", pid, err)
	}
	for _, name := range tids {
		tid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		stat, err := fsys.ReadFile(dir + "/task/" + name + "/stat")
		if err != nil {
			continue // the thread exited
		}
		th, err := ParseTaskStat(stat)
		if err != nil {
			return nil, fmt.Errorf("%s/task/%s/stat: %w", dir, name, err)
		}
		th.TID = tid
		if fsys.IsLive() {
			if a, err := unix.SchedGetAttr(tid, 0); err == nil {
				th.Policy, th.RTPrio, th.Nice = policyAbbrev(int(a.Policy)), int(a.Priority), int(a.Nice)
			}
		}
		th.CPUs = topo.NewCPUList(cpuset.New())
		if tb, err := fsys.ReadFile(dir + "/task/" + name + "/status"); err == nil {
			if set, err := sysfmt.ParseCPUList(parseStatus(tb)["Cpus_allowed_list"]); err == nil {
				th.CPUs = topo.NewCPUList(set)
			}
		}
		s.Threads = append(s.Threads, th)
	}
	sort.Slice(s.Threads, func(i, j int) bool { return s.Threads[i].TID < s.Threads[j].TID })
	return s, nil
}

func parseStatus(b []byte) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok {
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out
}

// ParseTaskStat parses /proc/<pid>/task/<tid>/stat: the comm between the
// first "(" and the last ")", then the space-separated fields of proc(5)
// (nice is field 19, processor 39, rt_priority 40, policy 41).
func ParseTaskStat(b []byte) (Thread, error) {
	s := strings.TrimSpace(string(b))
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return Thread{}, fmt.Errorf("no (comm) in %q", short(s))
	}
	th := Thread{Comm: s[open+1 : closing]}
	f := strings.Fields(s[closing+1:])
	// f[0] is field 3 (state).
	get := func(field int) (int, error) {
		i := field - 3
		if i >= len(f) {
			return 0, fmt.Errorf("only %d fields, want field %d", len(f)+2, field)
		}
		n, err := strconv.Atoi(f[i])
		if err != nil {
			return 0, fmt.Errorf("field %d: %q is not a number", field, short(f[i]))
		}
		return n, nil
	}
	var err error
	if th.Nice, err = get(19); err != nil {
		return Thread{}, err
	}
	if th.LastCPU, err = get(39); err != nil {
		return Thread{}, err
	}
	if th.RTPrio, err = get(40); err != nil {
		return Thread{}, err
	}
	pol, err := get(41)
	if err != nil {
		return Thread{}, err
	}
	th.Policy = policyAbbrev(pol)
	return th, nil
}

func policyAbbrev(p int) string {
	switch p &^ unix.SCHED_RESET_ON_FORK {
	case unix.SCHED_NORMAL:
		return "TS"
	case unix.SCHED_FIFO:
		return "FF"
	case unix.SCHED_RR:
		return "RR"
	case unix.SCHED_BATCH:
		return "B"
	case unix.SCHED_IDLE:
		return "IDL"
	case 6:
		return "DLN"
	}
	return "#" + strconv.Itoa(p)
}

// ParseNumaMaps parses /proc/<pid>/numa_maps ("<addr> <policy> [key=value]...
// N<node>=<pages>..."). It returns the policy most mappings report (the
// task's policy shows on every mapping without its own) and the pages per
// node.
func ParseNumaMaps(b []byte) (MemPolicyState, []NodePages) {
	count := map[string]int{}
	pages := map[int]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		count[f[1]]++
		for _, kv := range f[2:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || len(k) < 2 || k[0] != 'N' {
				continue
			}
			n, err1 := strconv.Atoi(k[1:])
			p, err2 := strconv.ParseUint(v, 10, 64)
			if err1 == nil && err2 == nil && n >= 0 && n < maxNodes {
				pages[n] += p
			}
		}
	}
	best, bestN := "", 0
	for k, n := range count {
		if n > bestN || (n == bestN && k < best) {
			best, bestN = k, n
		}
	}
	out := make([]NodePages, 0, len(pages))
	for n, p := range pages {
		out = append(out, NodePages{Node: n, Pages: p})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return parsePolicyWord(best), out
}

// parsePolicyWord parses a numa_maps policy ("default", "prefer:1",
// "bind:0-1", "interleave=static:0-3", "local", "prefer (many):0-1").
func parsePolicyWord(w string) MemPolicyState {
	st := MemPolicyState{Nodes: []int{}}
	mode, nodes, _ := strings.Cut(w, ":")
	if m, flags, ok := strings.Cut(mode, "="); ok {
		mode = m
		st.Flags = strings.Split(flags, "|")
	}
	switch mode {
	case "prefer":
		mode = "preferred"
	case "":
		mode = "unknown"
	}
	st.Mode = mode
	if set, err := sysfmt.ParseCPUList(nodes); err == nil {
		st.Nodes = set.List()
	}
	return st
}

func short(s string) string {
	if len(s) > 64 {
		return s[:61] + "..."
	}
	return s
}

// WriteTable renders the process view like taskset, numactl --show and
// ps -L -o pid,tid,psr,policy,rtprio,ni,comm.
func (s *Show) WriteTable(w io.Writer, o output.Options) error {
	g := output.NewGrid("TID", "PSR", "POL", "RTPRIO", "NI", "CPUS", "COMMAND")
	for _, th := range s.Threads {
		rt, ni := "-", strconv.Itoa(th.Nice)
		if th.Policy == "FF" || th.Policy == "RR" {
			rt, ni = strconv.Itoa(th.RTPrio), "-"
		}
		g.AddRow(strconv.Itoa(th.TID), strconv.Itoa(th.LastCPU), th.Policy, rt, ni, th.CPUs.String(), th.Comm)
	}
	if o.NoHeaders {
		return output.Print(w, g, o)
	}
	nodes := make([]string, len(s.CPUNodes))
	for i, n := range s.CPUNodes {
		nodes[i] = strconv.Itoa(n)
	}
	fmt.Fprintf(w, "pid %d (%s)\n", s.PID, s.Comm)
	fmt.Fprintf(w, "cpus:     %s (NUMA nodes %s)\n", s.CPUs.String(), orNone(strings.Join(nodes, ",")))
	pol := s.Policy.Mode
	if len(s.Policy.Nodes) > 0 {
		pol += " " + cpuset.New(s.Policy.Nodes...).String()
	}
	if len(s.Policy.Flags) > 0 {
		pol += " (" + strings.Join(s.Policy.Flags, ",") + ")"
	}
	fmt.Fprintf(w, "mempolicy: %s (from %s)\n", orNone(pol), orNone(s.PolicySource))
	fmt.Fprintf(w, "mems allowed: %s\n", orNone(s.MemsAllowed))
	if len(s.Pages) > 0 {
		var parts []string
		for _, p := range s.Pages {
			parts = append(parts, fmt.Sprintf("N%d=%d", p.Node, p.Pages))
		}
		fmt.Fprintf(w, "pages:    %s\n", strings.Join(parts, " "))
	}
	fmt.Fprintln(w)
	return output.Print(w, g, o)
}

// ListItems implements output.Lister: one row per thread.
func (s *Show) ListItems() any { return s.Threads }
