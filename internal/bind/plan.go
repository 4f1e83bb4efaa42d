package bind

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/sysfmt"
	"github.com/gpunode/gpunode/internal/topo"
)

// SchemaVersion identifies the JSON/YAML layout of Plan.
const SchemaVersion = "gpunode.bind/v1"

// Environment variables bind exports to the command.
const (
	EnvCPUs = "GPUNODE_CPUS"      // the chosen CPU list, for worker_init code
	EnvNode = "GPUNODE_NUMA_NODE" // the chosen NUMA node
	EnvOMP  = "OMP_NUM_THREADS"   // physical cores of the share, unless set
	// EnvOMPBind and EnvOMPPlaces pin OpenMP threads one per core when the
	// rank runs on isolated pipeline CPUs (unless set).
	EnvOMPBind   = "OMP_PROC_BIND"
	EnvOMPPlaces = "OMP_PLACES"
	EnvRank      = "LOCAL_RANK"
	EnvWorld     = "LOCAL_WORLD_SIZE"
	EnvVisible   = "CUDA_VISIBLE_DEVICES"
	DefaultCgFS  = "/sys/fs/cgroup"
)

// The OpenMP pinning exported on pipeline CPUs: one thread per core,
// threads close to the primary.
const (
	ompBind   = "close"
	ompPlaces = "cores"
)

// NUMA sources beyond topo's (sysfs, local_cpulist, single-node).
const (
	SourceFlag   = "flag"   // --node
	SourcePolicy = "policy" // the current memory policy / CPU of gpunode itself
)

// Request is what the user asked for.
type Request struct {
	// Target: at most one of GPU, Node, NIC; else the local rank's GPU.
	GPU  string
	Node *int
	NIC  string
	// LocalRank is --local-rank or $LOCAL_RANK (nil: not given).
	LocalRank *int
	// LocalWorldSize is --local-world-size or $LOCAL_WORLD_SIZE (0: unknown).
	LocalWorldSize int
	// CUDAVisibleDevices is $CUDA_VISIBLE_DEVICES (nil: unset).
	CUDAVisibleDevices *string
	CPUsPerRank        int
	ExcludeCPUs        cpuset.CPUSet
	// IncludeIsolated uses the whole node, isolated and nohz_full CPUs
	// included. SkipIsolated never uses them, even when they are the
	// pipeline set of gpunode's inference-isolated profile (where ranks go
	// by default).
	IncludeIsolated bool
	SkipIsolated    bool
	Mem             string
	Sched           *Sched
	Cgroup          string
	Command         []string
	// Getenv reads the environment (to leave a set OMP_NUM_THREADS alone).
	Getenv func(string) string
}

// GPUInfo is what a GPU driver layer knows about one GPU.
type GPUInfo struct {
	Index int
	UUID  string
	BDF   string
	// NUMANode is the driver's NUMA node for the GPU (NVML's
	// nvmlDeviceGetNumaNodeId: set on coherent systems, where it is the
	// node of the GPU's own memory), nil when unknown.
	NUMANode *int
	// CPUAffinity is the driver's CPU affinity (nvmlDeviceGetCpuAffinity),
	// empty when unknown.
	CPUAffinity cpuset.CPUSet
	// MIGUUIDs are the UUIDs of the GPU's MIG devices ("MIG-..."), which
	// CUDA_VISIBLE_DEVICES names under Kubernetes; a MIG UUID binds to
	// its parent GPU's NUMA node.
	MIGUUIDs []string
}

// GPUSource is the GPU driver layer (NVML); nil when there is none.
type GPUSource interface {
	// Name names the source in plans ("nvml").
	Name() string
	GPUs(ctx context.Context) ([]GPUInfo, error)
}

// PolicySource reports the NUMA node gpunode itself is on: the preferred or
// bound node of its memory policy, else the node of the CPU it runs on. It
// is the last resort of the NUMA chain.
type PolicySource interface {
	CurrentNode(t *topo.Topology) (node int, how string, err error)
}

// Sources are the optional inputs of Resolve.
type Sources struct {
	GPUs GPUSource
	// GPUsAlways consults GPUs on every run. By default the driver is asked
	// only when sysfs cannot answer: a GPU- or MIG- UUID is named, a GPU's
	// NUMA node is unknown, or a GPU's memory is a NUMA node of its own
	// (Grace), the only case where NVML reports a NUMA node. Initialising
	// NVML costs tens to hundreds of milliseconds per launch.
	GPUsAlways bool
	Policy     PolicySource
}

// Plan is what bind will do.
type Plan struct {
	SchemaVersion  string `json:"schemaVersion"`
	Rank           *int   `json:"rank,omitempty"`
	LocalWorldSize int    `json:"localWorldSize,omitempty"`
	Target         Target `json:"target"`
	NUMANode       int    `json:"numaNode"`
	// NUMASource says which step of the chain answered: nvml, sysfs,
	// local_cpulist, single-node, policy or flag.
	NUMASource string `json:"numaSource"`
	// NodeCPUs are the node's online CPUs; Excluded what was taken away.
	NodeCPUs topo.CPUList `json:"nodeCPUs"`
	Excluded Exclusions   `json:"excluded"`
	// Isolation says how the node's isolated CPUs were treated (nil when
	// it has none).
	Isolation *Isolation `json:"isolation,omitempty"`
	// Share is the rank's part of the node when several ranks share it.
	Share *Share       `json:"share,omitempty"`
	CPUs  topo.CPUList `json:"cpus"`
	Cores int          `json:"cores"`
	Mem   MemPolicy    `json:"mem"`
	Sched *Sched       `json:"sched,omitempty"`
	// Cgroup is the cgroup v2 cpuset the process joins.
	Cgroup   *Cgroup  `json:"cgroup,omitempty"`
	Env      []EnvVar `json:"env"`
	Command  []string `json:"command"`
	Line     string   `json:"line"`
	Warnings []string `json:"warnings"`
}

// Target is the device (or node) bound next to.
type Target struct {
	Kind string `json:"kind"` // gpu, nic, node, policy
	// Index is the physical GPU index (nvidia-smi order).
	Index *int   `json:"index,omitempty"`
	Name  string `json:"name,omitempty"`
	BDF   string `json:"bdf,omitempty"`
	UUID  string `json:"uuid,omitempty"`
	// Visible is the CUDA_VISIBLE_DEVICES entry the rank mapped through.
	Visible string `json:"visible,omitempty"`
	// MemoryNode is the CPU-less node holding the GPU's memory (GH200).
	MemoryNode *int `json:"memoryNode,omitempty"`
}

// Exclusions are the CPUs of the node not used.
type Exclusions struct {
	Isolated topo.CPUList `json:"isolated"`
	NohzFull topo.CPUList `json:"nohzFull"`
	User     topo.CPUList `json:"user"`
	// Housekeeping are the node's CPUs left to the kernel, system services
	// and IRQs when the rank runs on the pipeline set.
	Housekeeping topo.CPUList `json:"housekeeping"`
}

// Isolation modes of Plan.Isolation.
const (
	// IsolationPipeline: the host's isolation is the split of gpunode's
	// inference-isolated profile (topo.PipelineSplit); the rank runs on
	// the node's pipeline (isolated) CPUs, off the housekeeping CPUs.
	IsolationPipeline = "pipeline"
	// IsolationSkip: the isolated and nohz_full CPUs are skipped (an
	// isolation gpunode did not set, or --skip-isolated).
	IsolationSkip = "skip"
	// IsolationInclude: --include-isolated, the whole node.
	IsolationInclude = "include"
	// IsolationWholeNode: gpunode's split, but the node's pipeline CPUs
	// are too few for its ranks: the whole node is shared.
	IsolationWholeNode = "whole-node"
)

// Isolation is how bind treated the node's isolated CPUs, and why.
type Isolation struct {
	Mode   string `json:"mode"`
	Reason string `json:"reason"`
}

// Share is one rank's slice of a node shared by several local ranks.
type Share struct {
	// Ranks are the local ranks on this node, Position this rank's place.
	Ranks    []int `json:"ranks"`
	Position int   `json:"position"`
	// Cores is the number of physical cores given to this rank, of
	// UsableCores on the node.
	Cores       int `json:"cores"`
	UsableCores int `json:"usableCores"`
}

// MemPolicy is the set_mempolicy call.
type MemPolicy struct {
	Mode  string `json:"mode"`
	Nodes []int  `json:"nodes"`
}

// Cgroup is the cgroup v2 cpuset to join.
type Cgroup struct {
	Name string       `json:"name"`
	Path string       `json:"path"`
	CPUs topo.CPUList `json:"cpus"`
	Mems string       `json:"mems"`
}

// EnvVar is one exported variable.
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	// Kept is set when the variable was already set and left alone.
	Kept bool `json:"kept,omitempty"`
}

// gpuEntry is one GPU with everything known about it.
type gpuEntry struct {
	dev  *topo.PCIDevice
	info *GPUInfo
}

type resolver struct {
	t    *topo.Topology
	req  Request
	src  Sources
	gpus []gpuEntry // by physical index
	vis  []VisibleDevice
	warn []string
}

// Resolve builds the plan for req on topology t. Errors caused by the
// request (unknown GPU, rank beyond the GPUs, empty CPU set) wrap ErrInput.
func Resolve(ctx context.Context, t *topo.Topology, req Request, src Sources) (*Plan, error) {
	if req.Getenv == nil {
		req.Getenv = func(string) string { return "" }
	}
	mem, err := ParseMem(req.Mem)
	if err != nil {
		return nil, err
	}
	req.Mem = mem
	n := 0
	for _, set := range []bool{req.GPU != "", req.Node != nil, req.NIC != ""} {
		if set {
			n++
		}
	}
	if n > 1 {
		return nil, inputf("--gpu, --node and --nic are exclusive; give one")
	}
	if req.CPUsPerRank < 0 {
		return nil, inputf("--cpus-per-rank %d: want a positive number", req.CPUsPerRank)
	}
	if req.LocalRank != nil && req.LocalWorldSize > 0 && *req.LocalRank >= req.LocalWorldSize {
		return nil, inputf("local rank %d is not below the local world size %d", *req.LocalRank, req.LocalWorldSize)
	}
	if err := validCgroupName(req.Cgroup); err != nil {
		return nil, err
	}
	r := &resolver{t: t, req: req, src: src}
	if req.CUDAVisibleDevices != nil {
		if r.vis, err = ParseCUDAVisibleDevices(*req.CUDAVisibleDevices); err != nil {
			return nil, err
		}
	}
	if err := r.loadGPUs(ctx); err != nil {
		return nil, err
	}
	p := &Plan{SchemaVersion: SchemaVersion, Rank: req.LocalRank, LocalWorldSize: req.LocalWorldSize, Command: req.Command, Sched: req.Sched}
	if p.Command == nil {
		p.Command = []string{}
	}
	rank := 0
	if req.LocalRank != nil {
		rank = *req.LocalRank
	}
	tgt, node, source, err := r.target(rank, req.LocalRank != nil)
	if err != nil {
		return nil, err
	}
	p.Target, p.NUMANode, p.NUMASource = tgt, node, source
	ranks := r.peers(node)
	usable, err := r.usable(p, len(ranks))
	if err != nil {
		return nil, err
	}
	cores := t.CoreGroups(usable)
	chosen := cores
	if len(ranks) > 1 || req.CPUsPerRank > 0 {
		pos := sort.SearchInts(ranks, rank)
		if len(ranks) <= 1 {
			ranks, pos = []int{rank}, 0
		}
		chosen, err = shareCores(cores, len(ranks), pos, req.CPUsPerRank)
		if err != nil {
			return nil, inputf("NUMA node %d (usable CPUs %s): %v", node, usable.String(), err)
		}
		p.Share = &Share{Ranks: ranks, Position: pos, Cores: len(chosen), UsableCores: len(cores)}
	}
	set := cpuset.New()
	for _, c := range chosen {
		set = set.Union(c)
	}
	p.CPUs = topo.NewCPUList(set)
	p.Cores = len(chosen)
	if err := r.memPolicy(p); err != nil {
		return nil, err
	}
	if req.Cgroup != "" {
		p.Cgroup = &Cgroup{Name: req.Cgroup, Path: DefaultCgFS + "/" + strings.Trim(req.Cgroup, "/"), CPUs: p.CPUs, Mems: cpuset.New(p.Mem.Nodes...).String()}
		if len(p.Mem.Nodes) == 0 {
			p.Cgroup.Mems = strconv.Itoa(p.NUMANode)
		}
	}
	p.Env = []EnvVar{{Name: EnvCPUs, Value: p.CPUs.String()}, {Name: EnvNode, Value: strconv.Itoa(p.NUMANode)}}
	omp := EnvVar{Name: EnvOMP, Value: strconv.Itoa(p.Cores)}
	if v := req.Getenv(EnvOMP); v != "" {
		omp.Value, omp.Kept = v, true
	}
	p.Env = append(p.Env, omp)
	if p.Isolation != nil && p.Isolation.Mode == IsolationPipeline {
		for _, kv := range [][2]string{{EnvOMPBind, ompBind}, {EnvOMPPlaces, ompPlaces}} {
			e := EnvVar{Name: kv[0], Value: kv[1]}
			if v := req.Getenv(kv[0]); v != "" {
				e.Value, e.Kept = v, true
			}
			p.Env = append(p.Env, e)
		}
	}
	p.Line = p.line()
	p.Warnings = r.warn
	if p.Warnings == nil {
		p.Warnings = []string{}
	}
	return p, nil
}

// loadGPUs merges topo's GPUs (PCI order) with the driver's view.
func (r *resolver) loadGPUs(ctx context.Context) error {
	byBDF := map[string]*topo.PCIDevice{}
	for i := range r.t.GPUs {
		byBDF[r.t.GPUs[i].BDF] = &r.t.GPUs[i]
	}
	if r.src.GPUs != nil && (r.src.GPUsAlways || r.needDriver()) {
		infos, err := r.src.GPUs.GPUs(ctx)
		if err != nil {
			r.warn = append(r.warn, fmt.Sprintf("%s: %v (using sysfs)", r.src.GPUs.Name(), err))
		} else if len(infos) > 0 {
			sort.Slice(infos, func(i, j int) bool { return infos[i].Index < infos[j].Index })
			for i := range infos {
				info := &infos[i]
				if b := normalizeBDF(info.BDF); b != "" {
					info.BDF = b
				}
				r.gpus = append(r.gpus, gpuEntry{dev: byBDF[info.BDF], info: info})
			}
			return nil
		}
	}
	for i := range r.t.GPUs {
		r.gpus = append(r.gpus, gpuEntry{dev: &r.t.GPUs[i]})
	}
	return nil
}

// needDriver reports whether sysfs alone cannot resolve the request.
func (r *resolver) needDriver() bool {
	uuid := func(v string) bool {
		u := strings.ToUpper(v)
		return strings.Contains(u, "GPU-") || strings.Contains(u, "MIG-")
	}
	if uuid(r.req.GPU) || (r.req.CUDAVisibleDevices != nil && uuid(*r.req.CUDAVisibleDevices)) {
		return true
	}
	for _, g := range r.t.GPUs {
		if g.NUMASource == topo.NUMAUnknown || g.MemoryNUMANode != nil {
			return true
		}
	}
	return false
}

// findGPU selects a GPU by physical index, UUID (or unique prefix) or PCI
// address.
func (r *resolver) findGPU(sel string) (int, error) {
	sel = strings.TrimSpace(sel)
	if n, err := strconv.Atoi(sel); err == nil {
		if n < 0 || n >= len(r.gpus) {
			return 0, inputf("GPU %d does not exist (this host has %d GPUs)", n, len(r.gpus))
		}
		return n, nil
	}
	if strings.HasPrefix(strings.ToUpper(sel), "MIG-") {
		// A MIG device runs on its parent GPU: bind to the parent.
		for i, g := range r.gpus {
			if g.info == nil {
				continue
			}
			for _, m := range g.info.MIGUUIDs {
				if strings.EqualFold(m, sel) {
					return i, nil
				}
			}
		}
		if r.src.GPUs == nil {
			return 0, inputf("MIG device %q: MIG UUIDs need the NVIDIA driver (NVML, nvidia-smi or the fake GPU file), which is not available here; use the parent GPU's index or PCI address", sel)
		}
		return 0, inputf("unknown MIG device %q (no GPU has a MIG device with that UUID)", sel)
	}
	if strings.HasPrefix(strings.ToUpper(sel), "GPU-") {
		hits := []int{}
		for i, g := range r.gpus {
			if g.info != nil && strings.HasPrefix(strings.ToUpper(g.info.UUID), strings.ToUpper(sel)) {
				hits = append(hits, i)
			}
		}
		switch {
		case len(hits) == 1:
			return hits[0], nil
		case len(hits) > 1:
			return 0, inputf("GPU UUID prefix %q matches %d GPUs", sel, len(hits))
		case r.src.GPUs == nil:
			return 0, inputf("GPU %q: UUIDs need the NVIDIA driver (NVML), which is not available here; use an index or PCI address", sel)
		default:
			return 0, inputf("unknown GPU %q (no GPU has that UUID)", sel)
		}
	}
	if bdf := normalizeBDF(sel); bdf != "" {
		for i, g := range r.gpus {
			if (g.dev != nil && g.dev.BDF == bdf) || (g.info != nil && strings.EqualFold(g.info.BDF, bdf)) {
				return i, nil
			}
		}
		return 0, inputf("unknown GPU %q (no GPU at that PCI address)", sel)
	}
	return 0, inputf("unknown GPU %q: want an index, a GPU- UUID or a PCI address", sel)
}

// normalizeBDF turns "00000000:C1:00.0" or "c1:00.0" into "0000:c1:00.0";
// "" when s is not a PCI address.
func normalizeBDF(s string) string {
	// Users may leave out the domain ("c1:00.0"), as lspci prints it.
	if strings.Count(s, ":") == 1 {
		s = "0000:" + strings.TrimSpace(s)
	}
	b, err := sysfmt.ParseBDF(s)
	if err != nil {
		return ""
	}
	return b
}

// rankGPU maps a local rank to a physical GPU index through
// CUDA_VISIBLE_DEVICES.
func (r *resolver) rankGPU(rank int) (int, string, error) {
	if r.vis != nil {
		if len(r.vis) == 0 {
			return 0, "", inputf("CUDA_VISIBLE_DEVICES is set but empty: rank %d has no GPU", rank)
		}
		if rank >= len(r.vis) {
			return 0, "", inputf("local rank %d is beyond CUDA_VISIBLE_DEVICES=%s (%d GPUs)", rank, *r.req.CUDAVisibleDevices, len(r.vis))
		}
		v := r.vis[rank]
		sel := v.UUID
		if v.UUID == "" {
			sel = strconv.Itoa(v.Index)
		}
		i, err := r.findGPU(sel)
		if err != nil {
			return 0, "", fmt.Errorf("CUDA_VISIBLE_DEVICES entry %d: %w", rank, err)
		}
		return i, sel, nil
	}
	if len(r.gpus) == 0 {
		return 0, "", inputf("local rank %d: this host has no GPUs (use --node or --nic)", rank)
	}
	if rank >= len(r.gpus) {
		return 0, "", inputf("local rank %d is beyond the %d GPUs of this host", rank, len(r.gpus))
	}
	return rank, "", nil
}

// target resolves the device and NUMA node of a rank.
func (r *resolver) target(rank int, hasRank bool) (Target, int, string, error) {
	req := r.req
	switch {
	case req.Node != nil:
		n := r.t.NodeByID(*req.Node)
		if n == nil {
			return Target{}, 0, "", inputf("--node %d: no such NUMA node (have %s)", *req.Node, nodeIDs(r.t))
		}
		if n.CPUs.Size() == 0 {
			return Target{}, 0, "", inputf("--node %d has no CPUs (it holds memory only)", *req.Node)
		}
		return Target{Kind: "node"}, n.ID, SourceFlag, nil
	case req.NIC != "":
		d := r.findNIC(req.NIC)
		if d == nil {
			return Target{}, 0, "", inputf("--nic %q: no such NIC (have %s)", req.NIC, nicNames(r.t))
		}
		node, src, err := r.devNode(d)
		if err != nil {
			return Target{}, 0, "", err
		}
		return Target{Kind: "nic", Name: d.Name, BDF: d.BDF}, node, src, nil
	}
	var idx int
	var visible string
	var err error
	switch {
	case req.GPU != "":
		if len(r.gpus) == 0 {
			return Target{}, 0, "", inputf("--gpu %s: this host has no GPUs", req.GPU)
		}
		idx, err = r.findGPU(req.GPU)
	case hasRank:
		idx, visible, err = r.rankGPU(rank)
	case len(r.gpus) > 0 || r.vis != nil:
		idx, visible, err = r.rankGPU(0)
	default:
		node, how, err := r.policyNode()
		if err != nil {
			return Target{}, 0, "", err
		}
		r.warn = append(r.warn, "no GPU, --node or --nic given and this host has no GPUs: binding to "+how)
		return Target{Kind: "policy"}, node, SourcePolicy, nil
	}
	if err != nil {
		return Target{}, 0, "", err
	}
	g := r.gpus[idx]
	tg := Target{Kind: "gpu", Index: &idx, Visible: visible}
	if g.info != nil {
		tg.UUID, tg.BDF = g.info.UUID, g.info.BDF
	}
	if g.dev != nil {
		tg.BDF, tg.Name = g.dev.BDF, g.dev.Name
		tg.MemoryNode = g.dev.MemoryNUMANode
	}
	// The chain: the driver (NVML) first.
	if g.info != nil && g.info.NUMANode != nil {
		node := *g.info.NUMANode
		n := r.t.NodeByID(node)
		if n != nil && n.CPUs.Size() > 0 {
			return tg, node, r.src.GPUs.Name(), nil
		}
		if n != nil {
			// Grace: NVML names the GPU memory's node; bind to the CPU node
			// nearest to it.
			if c := nearestCPUNode(r.t, node); c >= 0 {
				mn := node
				tg.MemoryNode = &mn
				return tg, c, r.src.GPUs.Name(), nil
			}
		}
	}
	if g.info != nil && g.info.CPUAffinity.Size() > 0 {
		if node := majorityNode(r.t, g.info.CPUAffinity); node >= 0 {
			return tg, node, r.src.GPUs.Name() + "-cpu-affinity", nil
		}
	}
	if g.dev == nil {
		node, how, err := r.policyNode()
		if err != nil {
			return Target{}, 0, "", err
		}
		r.warn = append(r.warn, fmt.Sprintf("GPU %d (%s) is not in sysfs: binding to %s", idx, tg.BDF, how))
		return tg, node, SourcePolicy, nil
	}
	node, src, err := r.devNode(g.dev)
	return tg, node, src, err
}

// devNode is the sysfs part of the chain for a PCI device, then the policy.
func (r *resolver) devNode(d *topo.PCIDevice) (int, string, error) {
	if d.NUMANode >= 0 && d.NUMASource != topo.NUMAUnknown {
		if n := r.t.NodeByID(d.NUMANode); n != nil && n.CPUs.Size() > 0 {
			return d.NUMANode, d.NUMASource, nil
		}
	}
	node, how, err := r.policyNode()
	if err != nil {
		return 0, "", err
	}
	r.warn = append(r.warn, fmt.Sprintf("%s (%s): numa_node is -1 and local_cpulist %q spans several nodes; binding to %s", d.Name, d.BDF, d.LocalCPUs.String(), how))
	return node, SourcePolicy, nil
}

func (r *resolver) policyNode() (int, string, error) {
	if r.src.Policy == nil {
		return 0, "", inputf("cannot tell which NUMA node to use (no GPU NUMA information and no current policy); use --node")
	}
	node, how, err := r.src.Policy.CurrentNode(r.t)
	if err != nil {
		return 0, "", fmt.Errorf("current memory policy: %w", err)
	}
	if n := r.t.NodeByID(node); n == nil || n.CPUs.Size() == 0 {
		return 0, "", inputf("current policy points at NUMA node %d, which has no CPUs; use --node", node)
	}
	return node, how, nil
}

func (r *resolver) findNIC(name string) *topo.PCIDevice {
	bdf := normalizeBDF(name)
	for i := range r.t.NICs {
		d := &r.t.NICs[i]
		if d.Name == name || (bdf != "" && d.BDF == bdf) {
			return d
		}
		for _, n := range append(append([]string{}, d.NetDevs...), d.IBDevs...) {
			if n == name {
				return d
			}
		}
	}
	return nil
}

// peers returns the local ranks whose target lies on node (sorted), when the
// local world size is known; nil otherwise.
func (r *resolver) peers(node int) []int {
	if r.req.LocalWorldSize <= 1 || r.req.LocalRank == nil {
		return nil
	}
	var out []int
	for k := 0; k < r.req.LocalWorldSize; k++ {
		if k == *r.req.LocalRank {
			// This rank's node is node: no second resolution, which could
			// answer differently through the live policy step.
			out = append(out, k)
			continue
		}
		sub := &resolver{t: r.t, req: r.req, src: r.src, gpus: r.gpus, vis: r.vis}
		if _, n, _, err := sub.target(k, true); err == nil && n == node {
			out = append(out, k)
		}
	}
	return out
}

// usable is the node's CPUs for the rank. When the host's isolation is
// the pipeline split of gpunode's inference-isolated profile, those are
// the node's pipeline CPUs (the profile isolates them for the ranks'
// pinned threads and steers IRQs to the housekeeping rest); otherwise the
// node's online CPUs minus isolated and nohz_full CPUs (unless
// --include-isolated) and --exclude-cpus.
func (r *resolver) usable(p *Plan, peers int) (cpuset.CPUSet, error) {
	n := r.t.NodeByID(p.NUMANode)
	if n == nil {
		return cpuset.New(), inputf("NUMA node %d does not exist", p.NUMANode)
	}
	node := n.CPUs.Intersection(r.t.OnlineCPUs.CPUSet)
	p.NodeCPUs = topo.NewCPUList(node)
	set := node
	none := topo.NewCPUList(cpuset.New())
	p.Excluded = Exclusions{Isolated: none, NohzFull: none, Housekeeping: none, User: topo.NewCPUList(node.Intersection(r.req.ExcludeCPUs))}
	isolated := node.Intersection(r.t.IsolatedCPUs.CPUSet.Union(r.t.NohzFullCPUs.CPUSet))
	if !isolated.IsEmpty() {
		set = r.isolation(p, node, isolated, peers)
	}
	set = set.Difference(r.req.ExcludeCPUs)
	if set.IsEmpty() {
		return set, inputf("empty CPU set: NUMA node %d has CPUs %s; minus isolated %s, nohz_full %s, housekeeping %s and --exclude-cpus %s nothing is left",
			p.NUMANode, orNone(node.String()), orNone(p.Excluded.Isolated.String()), orNone(p.Excluded.NohzFull.String()), orNone(p.Excluded.Housekeeping.String()), orNone(r.req.ExcludeCPUs.String()))
	}
	return set, nil
}

// isolation applies the host's isolation to the node's CPUs for the rank
// (isolated, the node's isolated and nohz_full CPUs, is not empty): the
// pipeline CPUs of gpunode's inference-isolated split, the whole node
// (--include-isolated, or too few pipeline cores for the node's peers
// local ranks), or the node without them. It fills p.Isolation and
// p.Excluded and returns the CPUs left.
func (r *resolver) isolation(p *Plan, node, isolated cpuset.CPUSet, peers int) cpuset.CPUSet {
	set := node
	pipe, ours := r.t.PipelineIsolation()
	nodePipe := node.Intersection(pipe)
	switch {
	case r.req.IncludeIsolated:
		p.Isolation = &Isolation{Mode: IsolationInclude, Reason: fmt.Sprintf("--include-isolated: the whole node, isolated CPUs %s included", isolated)}
	case ours && !r.req.SkipIsolated && !nodePipe.IsEmpty():
		ranks := max(1, peers)
		hk := node.Difference(pipe)
		if cores := len(r.t.CoreGroups(nodePipe.Difference(r.req.ExcludeCPUs))); cores < ranks {
			p.Isolation = &Isolation{Mode: IsolationWholeNode, Reason: fmt.Sprintf("the node's pipeline CPUs %s (gpunode's inference-isolated split) have %d cores for %d local ranks: the ranks share the whole node", nodePipe, cores, ranks)}
			r.warn = append(r.warn, fmt.Sprintf("NUMA node %d: its %d pipeline cores (%s, isolated by gpunode's inference-isolated profile) are too few for %d local ranks, so the ranks share the whole node, housekeeping CPUs %s (where IRQs are steered) included; use fewer ranks per node or a profile with fewer housekeeping cores",
				p.NUMANode, cores, nodePipe, ranks, hk))
			break
		}
		set = nodePipe
		p.Excluded.Housekeeping = topo.NewCPUList(hk)
		nohz := ""
		if r.t.NohzFullCPUs.Size() > 0 {
			nohz = ", nohz_full"
		}
		p.Isolation = &Isolation{Mode: IsolationPipeline, Reason: fmt.Sprintf(
			"the host's isolation (isolcpus%s) is the pipeline split of gpunode's inference-isolated profile: the rank runs on the node's pipeline CPUs %s, off the housekeeping CPUs %s that take IRQs and system threads; "+
				"the kernel does not spread threads over isolated CPUs, so each thread should pin itself (%s and %s are exported for OpenMP)",
			nohz, nodePipe, hk, EnvOMPBind+"="+ompBind, EnvOMPPlaces+"="+ompPlaces)}
	default:
		p.Excluded.Isolated = topo.NewCPUList(node.Intersection(r.t.IsolatedCPUs.CPUSet))
		p.Excluded.NohzFull = topo.NewCPUList(node.Intersection(r.t.NohzFullCPUs.CPUSet))
		set = set.Difference(isolated)
		why := "--skip-isolated"
		if !r.req.SkipIsolated {
			why = fmt.Sprintf("not the pipeline split of gpunode's inference-isolated profile (isolcpus %s, nohz_full %s; that profile sets both to %s)",
				orNone(r.t.IsolatedCPUs.String()), orNone(r.t.NohzFullCPUs.String()), orNone(pipe.String()))
		}
		p.Isolation = &Isolation{Mode: IsolationSkip, Reason: fmt.Sprintf("isolated and nohz_full CPUs %s skipped: %s", isolated, why)}
		if !r.req.SkipIsolated && 2*isolated.Size() > node.Size() {
			// Most of the node is isolated by something other than
			// gpunode's profile: skipping leaves ranks the housekeeping
			// CPUs, which is where irqaffinity steers every IRQ.
			r.warn = append(r.warn, fmt.Sprintf("NUMA node %d: %d of its %d CPUs are isolated (isolcpus/nohz_full %s) and skipped, so the rank gets the %d housekeeping CPUs that IRQs and system threads use; "+
				"this isolation is %s, so bind does not assume those CPUs are meant for ranks: pass --include-isolated to bind the rank there, or isolate with 'gpunode tune apply --profile inference-isolated --bootloader' and a reboot (isolcpus is a kernel parameter), whose pipeline CPUs bind uses by itself",
				p.NUMANode, isolated.Size(), node.Size(), isolated.String(), node.Difference(isolated).Size(), why))
		}
	}
	return set
}

// memPolicy fills p.Mem from the request.
func (r *resolver) memPolicy(p *Plan) error {
	p.Mem = MemPolicy{Mode: r.req.Mem, Nodes: []int{}}
	n := r.t.NodeByID(p.NUMANode)
	switch r.req.Mem {
	case MemNone:
	case MemInterleave:
		for _, x := range r.t.NUMANodes {
			if x.CPUs.Size() > 0 && x.MemTotalBytes > 0 {
				p.Mem.Nodes = append(p.Mem.Nodes, x.ID)
			}
		}
		if len(p.Mem.Nodes) == 0 {
			p.Mem.Nodes = []int{p.NUMANode}
		}
	default:
		if n != nil && n.MemTotalBytes == 0 && len(r.t.NUMANodes) > 0 {
			if r.req.Mem == MemBind {
				return inputf("--mem bind: NUMA node %d has no memory; use --mem preferred", p.NUMANode)
			}
			r.warn = append(r.warn, fmt.Sprintf("NUMA node %d has no memory: the preferred policy will fall back to other nodes", p.NUMANode))
		}
		p.Mem.Nodes = []int{p.NUMANode}
	}
	return nil
}

// line is the one stderr line.
func (p *Plan) line() string {
	var b strings.Builder
	if p.Rank != nil {
		fmt.Fprintf(&b, "rank %d -> ", *p.Rank)
	}
	switch p.Target.Kind {
	case "gpu":
		fmt.Fprintf(&b, "GPU %d (%s) -> ", *p.Target.Index, p.Target.BDF)
	case "nic":
		fmt.Fprintf(&b, "NIC %s (%s) -> ", p.Target.Name, p.Target.BDF)
	}
	fmt.Fprintf(&b, "NUMA %d -> CPUs %s mem=%s", p.NUMANode, p.CPUs.String(), p.Mem.Mode)
	if p.Sched != nil {
		fmt.Fprintf(&b, " sched=%s", p.Sched)
	}
	if p.Cgroup != nil {
		fmt.Fprintf(&b, " cgroup=%s", p.Cgroup.Name)
	}
	return b.String()
}

// shareCores gives rank position pos of n ranks its whole cores: perRank
// logical CPUs' worth each (rounded up to whole cores) when perRank > 0,
// else an even split (the first len%n ranks get one core more).
func shareCores(cores []cpuset.CPUSet, n, pos, perRank int) ([]cpuset.CPUSet, error) {
	if perRank > 0 {
		i := 0
		for k := 0; k <= pos; k++ {
			start, got := i, 0
			for got < perRank && i < len(cores) {
				got += cores[i].Size()
				i++
			}
			if got < perRank {
				return nil, fmt.Errorf("%d ranks x %d CPUs per rank need more whole cores than the %d usable here (rank position %d gets none)", n, perRank, len(cores), k)
			}
			if k == pos {
				return cores[start:i], nil
			}
		}
	}
	if len(cores) < n {
		return nil, fmt.Errorf("%d usable physical cores cannot give %d local ranks a disjoint whole core each", len(cores), n)
	}
	base, extra := len(cores)/n, len(cores)%n
	start := pos*base + min(pos, extra)
	size := base
	if pos < extra {
		size++
	}
	return cores[start : start+size], nil
}

// nearestCPUNode returns the node with CPUs closest to node (by distance),
// or -1.
func nearestCPUNode(t *topo.Topology, node int) int {
	n := t.NodeByID(node)
	best, bestD := -1, 1<<30
	for _, x := range t.NUMANodes {
		if x.CPUs.Size() == 0 {
			continue
		}
		d := 1 << 20
		if n != nil && x.ID < len(n.Distances) {
			d = n.Distances[x.ID]
		}
		if d < bestD {
			best, bestD = x.ID, d
		}
	}
	return best
}

// majorityNode returns the node holding most of set's CPUs, or -1.
func majorityNode(t *topo.Topology, set cpuset.CPUSet) int {
	best, bestN := -1, 0
	for _, x := range t.NUMANodes {
		if k := x.CPUs.Intersection(set).Size(); k > bestN {
			best, bestN = x.ID, k
		}
	}
	return best
}

func nodeIDs(t *topo.Topology) string {
	var s []string
	for _, n := range t.NUMANodes {
		s = append(s, strconv.Itoa(n.ID))
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ",")
}

func nicNames(t *topo.Topology) string {
	var s []string
	for _, d := range t.NICs {
		names := append([]string{d.Name}, d.NetDevs...)
		s = append(s, strings.Join(names, "/"))
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func validCgroupName(s string) error {
	if s == "" {
		return nil
	}
	if strings.HasPrefix(s, "/") || strings.Contains(s, "\x00") {
		return inputf("--cgroup %q: want a name relative to %s (e.g. gpu-workload)", s, DefaultCgFS)
	}
	for _, part := range strings.Split(s, "/") {
		if part == "" || part == "." || part == ".." {
			return inputf("--cgroup %q: empty, '.' or '..' path element", s)
		}
	}
	return nil
}
