package podresources

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	api "k8s.io/kubelet/pkg/apis/podresources/v1"
	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/k8s/kubeletcfg"
	"github.com/gpunode/gpunode/internal/k8s/node"
	"github.com/gpunode/gpunode/internal/sysfmt"
	"github.com/gpunode/gpunode/internal/topo"
)

// SchemaVersion is the schema of Report ('gpunode k8s pods -o json').
const SchemaVersion = "gpunode.pods/v1"

// CheckNUMA is the check id: one per container that holds GPUs, and one
// node-wide check when the API cannot be read.
const CheckNUMA = "k8s.pod.numa"

// Layer is the checks' layer.
const Layer = "k8s"

// Report states.
const (
	StateRead        = "read"        // the API answered
	StateNotMounted  = "not-mounted" // no socket: an info check
	StateCaptured    = "captured"    // a captured tree, socket not dialled: an info check
	StateUnreachable = "unreachable" // a socket that refused or did not answer: an error check
	StateFailed      = "failed"      // the API answered but the node could not be read (topology): an error check
)

// Sources of a container's CPUs and memory nodes, and of a GPU's NUMA node.
const (
	SourceAPI        = "pod-resources" // the PodResources API (static CPU / Static memory manager)
	SourcePodAPI     = "pod-resources (pod)"
	SourceCgroup     = "cgroup"      // the container's cgroup, found by name
	SourceSharedPool = "shared-pool" // the one cpuset every non-exclusive container has
	SourceHost       = "host"        // this node's topology (sysfs, the GPU backend)
	SourceKubelet    = "kubelet"     // the device plugin's topology, as kubelet reports it
	SourceSingleNode = "single-node" // a one-NUMA-node machine
	SourceUnknown    = "unknown"
)

// MemoryTypeMemory is the API's memory type of ordinary memory (the others
// are hugepages-<size>).
const MemoryTypeMemory = "memory"

// Report is one node's pods and how their GPUs, CPUs and memory lie on its
// NUMA nodes.
type Report struct {
	SchemaVersion string `json:"schemaVersion"`
	Socket        string `json:"socket"`
	State         string `json:"state"`
	// Error is why the API could not be read (states not-mounted and
	// unreachable).
	Error       string        `json:"error,omitempty"`
	Allocatable *Allocatable  `json:"allocatable,omitempty"`
	Pods        []Pod         `json:"pods"`
	Checks      []check.Check `json:"checks"`
	Summary     check.Summary `json:"summary"`
	Warnings    []string      `json:"warnings,omitempty"`
}

// Allocatable is what kubelet can hand out (GetAllocatableResources).
type Allocatable struct {
	CPUs string `json:"cpus"`
	GPUs []GPU  `json:"gpus"`
}

// Pod is one pod of List.
type Pod struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// CPUs are the pod-level exclusive CPUs (pod-level resources), when
	// kubelet reports them.
	CPUs       string      `json:"cpus,omitempty"`
	Containers []Container `json:"containers"`
}

// Container is one container and where its resources lie.
type Container struct {
	Name string `json:"name"`
	GPUs []GPU  `json:"gpus"`
	// GPUNUMANodes is the union of its GPUs' NUMA nodes.
	GPUNUMANodes []int `json:"gpuNumaNodes"`
	// CPUs is a cpulist; CPUsExclusive is set when they are the CPU
	// manager's exclusive CPUs, CPUSource says where they were read.
	CPUs          string `json:"cpus,omitempty"`
	CPUsExclusive bool   `json:"cpusExclusive"`
	CPUSource     string `json:"cpuSource"`
	CPUNUMANodes  []int  `json:"cpuNumaNodes"`
	// Memory are the Memory Manager's blocks (Static policy).
	Memory          []Memory `json:"memory,omitempty"`
	MemoryNUMANodes []int    `json:"memoryNumaNodes"`
	MemorySource    string   `json:"memorySource"`
	// Cgroup is the host path of the cgroup read, when one was.
	Cgroup string `json:"cgroup,omitempty"`
	// Aligned is the k8s.pod.numa verdict (nil: no GPUs, or undecided).
	Aligned *bool `json:"aligned,omitempty"`
}

// GPU is one GPU device (or MIG device, or time-sliced replica) a
// container holds.
type GPU struct {
	Resource string `json:"resource"`
	DeviceID string `json:"deviceId"`
	// Index, BDF and UUID name the physical GPU when the id matched one.
	Index *int   `json:"index,omitempty"`
	BDF   string `json:"bdf,omitempty"`
	UUID  string `json:"uuid,omitempty"`
	MIG   bool   `json:"mig,omitempty"`
	// Replica is the time-slicing replica of a shared GPU.
	Replica    *int   `json:"replica,omitempty"`
	NUMANodes  []int  `json:"numaNodes"`
	NUMASource string `json:"numaSource"`
}

// Memory is one Memory Manager block.
type Memory struct {
	Type      string `json:"type"`
	SizeBytes uint64 `json:"sizeBytes"`
	NUMANodes []int  `json:"numaNodes"`
}

// Options is what Analyze joins the API's answer with.
type Options struct {
	// Topo maps CPUs to NUMA nodes (required for a verdict).
	Topo *topo.Topology
	// GPUs are this node's GPUs (HostGPUs).
	GPUs []HostGPU
	// Host is read for the cgroup fallback; nil: no fallback.
	Host *hostfs.FS
	// Node is the node model the fix's recommendation is made for; nil:
	// built from Topo.
	Node *node.Node
}

// FromError is the report for pods that could not be checked: an info
// check when the socket is not there (ErrNoSocket), an error check
// otherwise (state unreachable for ErrUnreachable, failed for anything
// else).
func FromError(socket string, err error) *Report {
	if socket == "" {
		socket = DefaultSocket
	}
	r := &Report{SchemaVersion: SchemaVersion, Socket: socket, Error: err.Error(), Pods: []Pod{}}
	c := check.Check{ID: CheckNUMA, Layer: Layer, Section: section, Reason: reason}
	if errors.Is(err, ErrNoSocket) {
		r.State = StateNotMounted
		c.Status = check.Info
		c.Current = ErrNoSocket.Error()
		c.Detail = "no pod is checked: mount the kubelet's /var/lib/kubelet/pod-resources directory read-only under the root (" + socket + ")"
	} else if errors.Is(err, ErrCapturedRoot) {
		r.State = StateCaptured
		c.Status = check.Info
		c.Current = ErrCapturedRoot.Error()
		c.Detail = "no pod is checked: --root is a captured tree; give --live-root when it is this running host mounted elsewhere (a DaemonSet's /host), or name the socket with --pod-resources-socket"
	} else if errors.Is(err, ErrUnreachable) {
		r.State = StateUnreachable
		c.Status = check.Error
		c.Current = ErrUnreachable.Error()
		c.Detail = err.Error()
		c.Fix = []string{"# is kubelet running? systemctl status kubelet; the socket is " + socket}
	} else {
		r.State = StateFailed
		c.Status = check.Error
		c.Current = "pods not checked"
		c.Detail = err.Error()
	}
	r.Checks = []check.Check{c}
	r.Summary = check.Summarize(r.Checks)
	return r
}

const (
	section = "5.4"
	reason  = "a container whose GPUs are on one NUMA node and whose CPUs or memory are on another moves every host-device copy across the socket link; kubelet's Topology Manager aligns them only at admission, and only with the static CPU and Static memory managers (seed 5.4)."
)

// Analyze joins the API's answer with the node's topology and GPUs, reads
// the cgroups of containers without exclusive CPUs or memory, and judges
// every container that holds GPUs.
func Analyze(res *Resources, o Options) *Report {
	r := &Report{SchemaVersion: SchemaVersion, Socket: res.Socket, State: StateRead, Pods: []Pod{}}
	if res.AllocatableErr != "" {
		r.Warnings = append(r.Warnings, res.AllocatableErr)
	}
	cpuNode := map[int]int{}
	singleNode := -1
	if o.Topo != nil {
		for _, c := range o.Topo.CPUs {
			cpuNode[c.ID] = c.NUMANode
		}
		if len(o.Topo.NUMANodes) == 1 {
			singleNode = o.Topo.NUMANodes[0].ID
		}
	}
	a := analyzer{o: o, cpuNode: cpuNode, singleNode: singleNode, allocNUMA: map[string][]int{}}
	if al := res.Allocatable; al != nil {
		r.Allocatable = &Allocatable{CPUs: cpuList(al.GetCpuIds()), GPUs: []GPU{}}
		for _, d := range al.GetDevices() {
			nodes := topoNodes(d.GetTopology())
			for _, id := range d.GetDeviceIds() {
				a.allocNUMA[d.GetResourceName()+"\x00"+id] = nodes
			}
			if IsGPUResource(d.GetResourceName(), d.GetDeviceIds()) {
				for _, id := range d.GetDeviceIds() {
					r.Allocatable.GPUs = append(r.Allocatable.GPUs, a.gpu(d.GetResourceName(), id, nodes))
				}
			}
		}
	}
	// Exclusive CPU and pinned memory sets: the cpusets the shared-pool
	// rule leaves out.
	exclusive, pinned := map[string]bool{}, map[string]bool{}
	for _, p := range res.Pods {
		if ids := p.GetCpuIds(); len(ids) > 0 {
			exclusive[cpuList(ids)] = true
		}
		for _, c := range p.GetContainers() {
			if ids := c.GetCpuIds(); len(ids) > 0 {
				exclusive[cpuList(ids)] = true
			}
			if ns := memNodes(c.GetMemory()); len(ns) > 0 {
				pinned[cpuset.New(ns...).String()] = true
			}
		}
	}
	for _, p := range res.Pods {
		pod := Pod{Namespace: p.GetNamespace(), Name: p.GetName(), Containers: []Container{}}
		if ids := p.GetCpuIds(); len(ids) > 0 {
			pod.CPUs = cpuList(ids)
		}
		for _, c := range p.GetContainers() {
			ctr := a.container(p, c, exclusive, pinned)
			if ck, ok := a.verdict(&ctr, pod.Namespace, pod.Name); ok {
				r.Checks = append(r.Checks, ck)
			}
			pod.Containers = append(pod.Containers, ctr)
		}
		r.Pods = append(r.Pods, pod)
	}
	sort.SliceStable(r.Pods, func(i, j int) bool {
		if r.Pods[i].Namespace != r.Pods[j].Namespace {
			return r.Pods[i].Namespace < r.Pods[j].Namespace
		}
		return r.Pods[i].Name < r.Pods[j].Name
	})
	sort.SliceStable(r.Checks, func(i, j int) bool { return r.Checks[i].Subject < r.Checks[j].Subject })
	if a.cg != nil && a.cg.truncated {
		r.Warnings = append(r.Warnings, fmt.Sprintf("more than %d container cgroups under %s: the rest were not read", maxCgroups, a.cg.root))
	}
	if r.Checks == nil {
		r.Checks = []check.Check{}
	}
	r.Summary = check.Summarize(r.Checks)
	return r
}

type analyzer struct {
	o          Options
	cpuNode    map[int]int
	singleNode int
	allocNUMA  map[string][]int
	cg         *cgroupIndex // scanned on first need
	rec        map[string]*kubeletcfg.Recommendation
}

func (a *analyzer) cgroups() *cgroupIndex {
	if a.cg == nil {
		if a.o.Host == nil {
			a.cg = &cgroupIndex{byID: map[string]int{}}
		} else {
			a.cg = scanCgroups(a.o.Host)
		}
	}
	return a.cg
}

// gpu places one device id: on the host GPU it names (its NUMA node from
// the topology), else on the NUMA nodes kubelet reports for it.
func (a *analyzer) gpu(resource, id string, kubeletNodes []int) GPU {
	d := ParseDeviceID(id)
	g := GPU{Resource: resource, DeviceID: id, MIG: d.Kind == IDMIG || strings.HasPrefix(resource, "nvidia.com/mig-"), NUMANodes: []int{}, NUMASource: SourceUnknown}
	if d.Replica >= 0 {
		rep := d.Replica
		g.Replica = &rep
	}
	if i := d.Match(a.o.GPUs); i >= 0 {
		h := a.o.GPUs[i]
		idx := h.Index
		g.Index, g.BDF, g.UUID = &idx, h.BDF, h.UUID
		if h.NUMANode != nil {
			g.NUMANodes, g.NUMASource = []int{*h.NUMANode}, SourceHost
			return g
		}
	}
	if len(kubeletNodes) == 0 {
		kubeletNodes = a.allocNUMA[resource+"\x00"+id]
	}
	switch {
	case len(kubeletNodes) > 0:
		g.NUMANodes, g.NUMASource = kubeletNodes, SourceKubelet
	case a.singleNode >= 0:
		g.NUMANodes, g.NUMASource = []int{a.singleNode}, SourceSingleNode
	}
	return g
}

func (a *analyzer) container(p *api.PodResources, c *api.ContainerResources, exclusive, pinned map[string]bool) Container {
	ctr := Container{Name: c.GetName(), GPUs: []GPU{}, GPUNUMANodes: []int{}, CPUNUMANodes: []int{}, MemoryNUMANodes: []int{},
		CPUSource: SourceUnknown, MemorySource: SourceUnknown}
	for _, d := range c.GetDevices() {
		if !IsGPUResource(d.GetResourceName(), d.GetDeviceIds()) {
			continue
		}
		nodes := topoNodes(d.GetTopology())
		for _, id := range d.GetDeviceIds() {
			ctr.GPUs = append(ctr.GPUs, a.gpu(d.GetResourceName(), id, nodes))
		}
	}
	var gn []int
	for _, g := range ctr.GPUs {
		gn = append(gn, g.NUMANodes...)
	}
	ctr.GPUNUMANodes = uniq(gn)

	switch {
	case len(c.GetCpuIds()) > 0:
		ctr.CPUs, ctr.CPUsExclusive, ctr.CPUSource = cpuList(c.GetCpuIds()), true, SourceAPI
	case len(p.GetCpuIds()) > 0:
		ctr.CPUs, ctr.CPUsExclusive, ctr.CPUSource = cpuList(p.GetCpuIds()), true, SourcePodAPI
	}
	for _, m := range c.GetMemory() {
		ctr.Memory = append(ctr.Memory, Memory{Type: m.GetMemoryType(), SizeBytes: m.GetSize(), NUMANodes: topoNodes(m.GetTopology())})
	}
	if ns := memNodes(c.GetMemory()); len(ns) > 0 {
		ctr.MemoryNUMANodes, ctr.MemorySource = ns, SourceAPI
	} else if ns := memNodes(p.GetMemory()); len(ns) > 0 {
		ctr.MemoryNUMANodes, ctr.MemorySource = ns, SourcePodAPI
	}
	// Only containers that hold GPUs are judged, so only they pay for the
	// cgroup fallback.
	if len(ctr.GPUs) > 0 && (ctr.CPUSource == SourceUnknown || ctr.MemorySource == SourceUnknown) {
		cg := a.cgroups()
		e, _, found := cg.lookup(p.GetNamespace(), p.GetName(), c.GetName())
		if found {
			ctr.Cgroup = e.Path
			if ctr.CPUSource == SourceUnknown {
				ctr.CPUs, ctr.CPUSource = e.CPUs, SourceCgroup
			}
			if ctr.MemorySource == SourceUnknown {
				if ns, err := listNodes(e.Mems); err == nil {
					ctr.MemoryNUMANodes, ctr.MemorySource = ns, SourceCgroup
				}
			}
		}
		if ctr.CPUSource == SourceUnknown {
			if v, ok := cg.shared(func(e cgroupEntry) string { return e.CPUs }, exclusive); ok {
				ctr.CPUs, ctr.CPUSource = v, SourceSharedPool
			}
		}
		if ctr.MemorySource == SourceUnknown {
			if v, ok := cg.shared(func(e cgroupEntry) string { return e.Mems }, pinned); ok {
				if ns, err := listNodes(v); err == nil {
					ctr.MemoryNUMANodes, ctr.MemorySource = ns, SourceSharedPool
				}
			}
		}
	}
	if ctr.CPUs != "" {
		if set, err := sysfmt.ParseCPUList(ctr.CPUs); err == nil {
			var ns []int
			for _, id := range set.List() {
				if n, ok := a.cpuNode[id]; ok {
					ns = append(ns, n)
				}
			}
			ctr.CPUNUMANodes = uniq(ns)
		}
	}
	return ctr
}

// verdict is the k8s.pod.numa check of a container that holds GPUs.
func (a *analyzer) verdict(ctr *Container, ns, pod string) (check.Check, bool) {
	if len(ctr.GPUs) == 0 {
		return check.Check{}, false
	}
	c := check.Check{ID: CheckNUMA, Layer: Layer, Subject: ns + "/" + pod + "/" + ctr.Name, Section: section, Reason: reason}
	var unplaced []string
	for _, g := range ctr.GPUs {
		if len(g.NUMANodes) == 0 {
			unplaced = append(unplaced, g.DeviceID)
		}
	}
	c.Current = describe(ctr)
	switch {
	case len(unplaced) > 0:
		c.Status = check.Error
		c.Detail = fmt.Sprintf("NUMA node of %s unknown: no GPU of this node has that id and kubelet reports no topology for it", strings.Join(unplaced, ", "))
		return c, true
	case ctr.CPUSource == SourceUnknown || len(ctr.CPUNUMANodes) == 0:
		c.Status = check.Error
		c.Detail = "its CPUs are unknown: no exclusive CPUs in the pod-resources API (CPU manager none, or not a Guaranteed pod) and its cgroup was not found: " + a.cgroupHint()
		return c, true
	case ctr.MemorySource == SourceUnknown:
		c.Status = check.Error
		c.Detail = "its memory's NUMA nodes are unknown: no Memory Manager blocks in the pod-resources API and its cgroup was not found: " + a.cgroupHint()
		return c, true
	}
	ok := subset(ctr.GPUNUMANodes, ctr.CPUNUMANodes) && subset(ctr.GPUNUMANodes, ctr.MemoryNUMANodes)
	ctr.Aligned = &ok
	var notes []string
	if !ctr.CPUsExclusive {
		notes = append(notes, "CPUs are the shared pool ("+ctr.CPUSource+"): no exclusive CPUs, the scheduler may move it to any of them")
	}
	if ok {
		c.Status = check.OK
		c.Detail = strings.Join(notes, "; ")
		return c, true
	}
	c.Status = check.Drift
	c.Expected = "CPUs and memory on NUMA " + joinInts(ctr.GPUNUMANodes)
	c.Detail = strings.Join(notes, "; ")
	c.Fix = a.fix(ctr, ns, pod)
	return c, true
}

func (a *analyzer) cgroupHint() string {
	cg := a.cgroups()
	if cg.root == "" {
		return "no kubepods cgroup under the root (/sys/fs/cgroup/kubepods.slice or kubepods)"
	}
	return "the pod-resources API names no pod UID or container id; gpunode joins them through the names in /var/log/containers and /var/log/pods (mount them read-only under the root), and the containers under " + cg.root + " have different cpusets"
}

// fix is the kubelet configuration that would have aligned the container,
// as 'gpunode k8s kubelet recommend' prints it: single-numa-node
// (profile inference) when its GPUs are on one NUMA node, restricted
// (training) when they span several.
func (a *analyzer) fix(ctr *Container, ns, pod string) []string {
	profile := kubeletcfg.ProfileInference
	if len(ctr.GPUNUMANodes) > 1 {
		profile = kubeletcfg.ProfileTraining
	}
	var fix []string
	if rec := a.recommend(profile); rec != nil {
		c := rec.Config
		cpu := c.CPUManagerPolicy
		if len(c.CPUManagerPolicyOptions) > 0 {
			var opts []string
			for k, v := range c.CPUManagerPolicyOptions {
				opts = append(opts, k+"="+v)
			}
			sort.Strings(opts)
			cpu += " (" + strings.Join(opts, ",") + ")"
		}
		fix = append(fix, fmt.Sprintf("# kubelet: topologyManagerPolicy %s, topologyManagerScope %s, cpuManagerPolicy %s, memoryManagerPolicy %s",
			c.TopologyManagerPolicy, c.TopologyManagerScope, cpu, c.MemoryManagerPolicy))
	}
	fix = append(fix,
		"gpunode k8s kubelet recommend --profile "+profile+" > kubelet-numa.yaml",
		"# merge kubelet-numa.yaml into the kubelet config; drain the node, stop kubelet, rm /var/lib/kubelet/{cpu,memory}_manager_state, start kubelet",
		"# kubelet aligns only at admission: recreate the pod as Guaranteed QoS (integer CPU requests equal to limits, memory requests equal to limits)",
		"kubectl delete pod -n "+ns+" "+pod)
	return fix
}

func (a *analyzer) recommend(profile string) *kubeletcfg.Recommendation {
	if r, ok := a.rec[profile]; ok {
		return r
	}
	if a.rec == nil {
		a.rec = map[string]*kubeletcfg.Recommendation{}
	}
	n := a.o.Node
	if n == nil && a.o.Topo != nil {
		n, _ = node.FromTopology(a.o.Topo)
	}
	var r *kubeletcfg.Recommendation
	if n != nil {
		r, _ = kubeletcfg.Recommend(n, profile)
	}
	a.rec[profile] = r
	return r
}

// describe is the check's current value: "GPUs 0,1 on NUMA 0; CPUs 64-95
// on NUMA 1; memory on NUMA 1".
func describe(ctr *Container) string {
	names := make([]string, 0, len(ctr.GPUs))
	for _, g := range ctr.GPUs {
		names = append(names, g.label())
	}
	word := "GPUs"
	if len(names) == 1 {
		word = "GPU"
	}
	s := fmt.Sprintf("%s %s on NUMA %s", word, strings.Join(names, ","), orUnknown(joinInts(ctr.GPUNUMANodes)))
	if ctr.CPUs != "" {
		s += fmt.Sprintf("; CPUs %s on NUMA %s", ctr.CPUs, orUnknown(joinInts(ctr.CPUNUMANodes)))
	} else {
		s += "; CPUs unknown"
	}
	if ctr.MemorySource != SourceUnknown {
		s += "; memory on NUMA " + orUnknown(joinInts(ctr.MemoryNUMANodes))
	} else {
		s += "; memory unknown"
	}
	return s
}

// label names a GPU in a check: its index ("0"), a MIG device or replica
// of it ("0/MIG-...", "0#2"), else its device id.
func (g GPU) label() string {
	if g.Index == nil {
		return g.DeviceID
	}
	s := strconv.Itoa(*g.Index)
	if g.MIG {
		v := g.DeviceID
		if g.Replica != nil {
			v, _, _ = strings.Cut(v, "::")
		}
		s += "/" + v
	}
	if g.Replica != nil {
		s += "#" + strconv.Itoa(*g.Replica)
	}
	return s
}

func orUnknown(s string) string {
	if s == "" {
		return "?"
	}
	return s
}

func topoNodes(t *api.TopologyInfo) []int {
	var ns []int
	for _, n := range t.GetNodes() {
		if id := n.GetID(); id >= 0 && id < sysfmt.MaxCPUID {
			ns = append(ns, int(id))
		}
	}
	return uniq(ns)
}

func memNodes(ms []*api.ContainerMemory) []int {
	var ns []int
	for _, m := range ms {
		ns = append(ns, topoNodes(m.GetTopology())...)
	}
	return uniq(ns)
}

// cpuList renders the API's CPU ids as a cpulist; ids out of range are
// dropped.
func cpuList(ids []int64) string {
	v := make([]int, 0, len(ids))
	for _, id := range ids {
		if id >= 0 && id < sysfmt.MaxCPUID {
			v = append(v, int(id))
		}
	}
	return cpuset.New(v...).String()
}

func listNodes(s string) ([]int, error) {
	set, err := sysfmt.ParseCPUList(s)
	if err != nil {
		return nil, err
	}
	return set.List(), nil
}

func uniq(v []int) []int {
	out := slices.Clone(v)
	slices.Sort(out)
	out = slices.Compact(out)
	if out == nil {
		out = []int{}
	}
	return out
}

func subset(a, b []int) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
