// Package admit simulates kubelet v1.37's resource admission on one node:
// the Topology Manager (policy and scope, k8s/topology) consults the Device,
// CPU and Memory managers (k8s/devicemanager, k8s/cpumanager,
// k8s/memorymanager) for NUMA hints, merges them, admits or rejects the pod
// and lets the managers allocate along the merged hint; a node-allocatable
// fit check follows as kubelet's predicate admit handler. Pods are admitted
// in order and the state carries from one pod to the next; a rejected pod
// leaves no trace.
//
// Each result explains, for rejected pods, which resource's hints could not
// align and what would make the pod fit.
package admit

import (
	"errors"
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/k8s/admit/podres"
	"github.com/gpunode/gpunode/internal/k8s/cpumanager"
	"github.com/gpunode/gpunode/internal/k8s/devicemanager"
	"github.com/gpunode/gpunode/internal/k8s/kubeletcfg"
	"github.com/gpunode/gpunode/internal/k8s/memorymanager"
	"github.com/gpunode/gpunode/internal/k8s/node"
	"github.com/gpunode/gpunode/internal/k8s/topology"
)

// Admission failure reasons, as kubelet reports them in pod status.
const (
	ReasonTopologyAffinity = "TopologyAffinityError"
	ReasonUnexpected       = "UnexpectedAdmissionError"
	ReasonSMTAlignment     = cpumanager.ErrorSMTAlignment
	ReasonOutOfCPU         = "OutOfcpu"
	ReasonOutOfMemory      = "OutOfmemory"
)

// TopologyAffinityMessage is kubelet's message for TopologyAffinityError.
const TopologyAffinityMessage = "Resources cannot be allocated with Topology locality"

// Simulator is a node with its kubelet configuration and the managers'
// state.
type Simulator struct {
	Node   *node.Node
	Config Settings

	policy *topology.Policy
	cpu    *cpumanager.Static
	mem    *memorymanager.Static
	dev    *devicemanager.Manager

	allocatable v1.ResourceList
	used        v1.ResourceList
}

// Settings are the resource-manager settings taken from the
// KubeletConfiguration (defaults applied).
type Settings struct {
	CPUManagerPolicy      string            `json:"cpuManagerPolicy"`
	CPUManagerOptions     map[string]string `json:"cpuManagerPolicyOptions,omitempty"`
	ReservedCPUs          string            `json:"reservedCPUs,omitempty"`
	MemoryManagerPolicy   string            `json:"memoryManagerPolicy"`
	TopologyManagerPolicy string            `json:"topologyManagerPolicy"`
	TopologyManagerScope  string            `json:"topologyManagerScope"`
	TopologyOptions       map[string]string `json:"topologyManagerPolicyOptions,omitempty"`
}

// Options tune the simulator.
type Options struct {
	// MaxMasks bounds the NUMA masks each hint provider enumerates per
	// resource (0 = node.DefaultMaxMasks).
	MaxMasks int
}

// New configures the simulator like kubelet's container manager start-up:
// the same configurations that make kubelet refuse to start make New fail,
// with kubelet's error text. kubelet's defaults are applied to a copy of raw
// (kubeletcfg.New), and the node-allocatable reservation is kubeletcfg's.
func New(n *node.Node, raw *kubeletcfg.KubeletConfiguration, o Options) (*Simulator, error) {
	s := &Simulator{Node: n}
	c := kubeletcfg.New("", *raw)
	kc := &c.KC
	cfg := Settings{
		CPUManagerPolicy:      kc.CPUManagerPolicy,
		CPUManagerOptions:     kc.CPUManagerPolicyOptions,
		MemoryManagerPolicy:   kc.MemoryManagerPolicy,
		TopologyManagerPolicy: kc.TopologyManagerPolicy,
		TopologyManagerScope:  kc.TopologyManagerScope,
		TopologyOptions:       kc.TopologyManagerPolicyOptions,
	}
	switch cfg.TopologyManagerScope {
	case topology.ScopeContainer, topology.ScopePod:
	default:
		return nil, fmt.Errorf("unknown scope: \"%s\"", cfg.TopologyManagerScope)
	}
	var dist [][]uint64
	if n.HasDistances() {
		for _, nn := range n.NUMANodes {
			row := make([]uint64, len(nn.Distances))
			for i, d := range nn.Distances {
				row[i] = uint64(d)
			}
			dist = append(dist, row)
		}
	}
	var err error
	s.policy, err = topology.NewPolicy(cfg.TopologyManagerPolicy, n.NUMAIDs(), cfg.TopologyOptions, dist)
	if err != nil {
		return nil, fmt.Errorf("topologyManager: %w", err)
	}

	reservation, err := kubeletcfg.Reservation(c, n)
	if err != nil {
		return nil, err
	}
	s.allocatable = v1.ResourceList{}
	s.allocatable[v1.ResourceCPU] = *resource.NewQuantity(int64(len(n.CPUs)), resource.DecimalSI)
	s.allocatable[v1.ResourceMemory] = *resource.NewQuantity(int64(n.MemoryBytes()), resource.BinarySI)
	for name, q := range reservation {
		if a, ok := s.allocatable[name]; ok {
			a.Sub(q)
			s.allocatable[name] = a
		}
	}
	s.used = v1.ResourceList{}

	switch cfg.CPUManagerPolicy {
	case "none":
	case "static":
		topo := cpumanager.FromNode(n)
		reserved := cpuset.New()
		if kc.ReservedSystemCPUs != "" {
			reserved, err = cpuset.Parse(kc.ReservedSystemCPUs)
			if err != nil {
				return nil, fmt.Errorf("reservedSystemCPUs: unable to parse reserved-cpus list: %w", err)
			}
			if !reserved.IsSubsetOf(topo.CPUDetails.CPUs()) {
				return nil, fmt.Errorf("reservedSystemCPUs: reserved-cpus: %s is not a subset of online-cpus: %s", reserved, topo.CPUDetails.CPUs())
			}
		}
		kr, sr := quantityOf(kc.KubeReserved, "cpu"), quantityOf(kc.SystemReserved, "cpu")
		num, err := cpumanager.NumReservedCPUs(reserved, kr, sr)
		if err != nil {
			return nil, err
		}
		opts, err := cpumanager.ParseOptions(kc.CPUManagerPolicyOptions, cpumanager.GatesFrom(kc.FeatureGates))
		if err != nil {
			return nil, fmt.Errorf("new static policy error: %w", err)
		}
		s.cpu, err = cpumanager.NewStatic(topo, num, reserved, opts, cfg.TopologyManagerPolicy)
		if err != nil {
			return nil, err
		}
		s.cpu.MaxMasks = o.MaxMasks
		cfg.ReservedCPUs = s.cpu.Reserved().String()
	default:
		return nil, fmt.Errorf("unknown policy: \"%s\"", cfg.CPUManagerPolicy)
	}

	switch cfg.MemoryManagerPolicy {
	case "None":
	case "Static":
		var res []memorymanager.MemoryReservation
		for _, r := range kc.ReservedMemory {
			res = append(res, memorymanager.MemoryReservation{NumaNode: r.NumaNode, Limits: r.Limits})
		}
		sys, err := memorymanager.SystemReserved(n, reservation, res)
		if err != nil {
			return nil, err
		}
		s.mem = memorymanager.NewStatic(n, sys)
		s.mem.MaxMasks = o.MaxMasks
	default:
		return nil, fmt.Errorf("unknown policy: \"%s\"", cfg.MemoryManagerPolicy)
	}
	s.dev = devicemanager.New(n)
	s.dev.MaxMasks = o.MaxMasks
	for _, r := range n.Devices {
		healthy := 0
		for _, d := range r.Devices {
			if d.Healthy {
				healthy++
			}
		}
		s.allocatable[v1.ResourceName(r.Name)] = *resource.NewQuantity(int64(healthy), resource.DecimalSI)
	}
	s.Config = cfg
	return s, nil
}

func def(v, d string) string {
	if v == "" {
		return d
	}
	return v
}

func quantityOf(m map[string]string, key string) *resource.Quantity {
	v, ok := m[key]
	if !ok {
		return nil
	}
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return nil
	}
	return &q
}

// txn holds copies of the managers' state while one pod is admitted; Admit
// keeps them only when the pod is admitted.
type txn struct {
	cpu *cpumanager.Static
	mem *memorymanager.Static
	dev *devicemanager.Manager
}

func (s *Simulator) begin() *txn {
	t := &txn{dev: s.dev.Clone()}
	if s.cpu != nil {
		t.cpu = s.cpu.Clone()
	}
	if s.mem != nil {
		t.mem = s.mem.Clone()
	}
	return t
}

// hints collects the providers' hints in kubelet's order (device, CPU,
// memory; nil for a manager that is off) for container c, or for the whole
// pod when c is nil (pod scope).
func (t *txn) hints(pod *v1.Pod, c *v1.Container) []map[string][]node.Hint {
	out := make([]map[string][]node.Hint, 3)
	if c == nil {
		out[0] = t.dev.PodHints(pod)
	} else {
		out[0] = t.dev.ContainerHints(pod, c)
	}
	switch {
	case t.cpu == nil:
	case c == nil:
		out[1] = t.cpu.PodHints(pod)
	default:
		out[1] = t.cpu.ContainerHints(pod, c)
	}
	switch {
	case t.mem == nil:
	case c == nil:
		out[2] = t.mem.PodHints(pod)
	default:
		out[2] = t.mem.ContainerHints(pod, c)
	}
	return out
}

// toTopology converts the providers' hints for the merge.
func toTopology(ph []map[string][]node.Hint) []map[string][]topology.Hint {
	out := make([]map[string][]topology.Hint, len(ph))
	for i, m := range ph {
		if m == nil {
			out[i] = map[string][]topology.Hint{}
			continue
		}
		tm := make(map[string][]topology.Hint, len(m))
		for r, hs := range m {
			if hs == nil {
				tm[r] = nil
				continue
			}
			l := make([]topology.Hint, len(hs))
			masks := make([]topology.Bitmask, len(hs))
			for j, h := range hs {
				l[j] = topology.Hint{Preferred: h.Preferred}
				if h.Affinity != nil {
					masks[j] = topology.Bitmask(*h.Affinity)
					l[j].Affinity = &masks[j]
				}
			}
			tm[r] = l
		}
		out[i] = tm
	}
	return out
}

func fromTopology(h topology.Hint) node.Hint {
	out := node.Hint{Preferred: h.Preferred}
	if h.Affinity != nil {
		m := node.Mask(*h.Affinity)
		out.Affinity = &m
	}
	return out
}

// admissionError is an error with a kubelet admission reason.
type admissionError struct {
	reason, message string
}

func (e *admissionError) Error() string { return e.message }

func allocErr(err error) *admissionError {
	var smt cpumanager.SMTAlignmentError
	if errors.As(err, &smt) {
		return &admissionError{ReasonSMTAlignment, smt.Error()}
	}
	return &admissionError{ReasonUnexpected, fmt.Sprintf("Allocate failed due to %v, which is unexpected", err)}
}

// allocate lets the providers allocate for one container along hint.
func (t *txn) allocate(pod *v1.Pod, c *v1.Container, hint node.Hint, cr *ContainerResult) *admissionError {
	devs, err := t.dev.Allocate(pod, c, hint.Affinity)
	if err != nil {
		return allocErr(err)
	}
	cr.Devices = devs
	if t.cpu != nil {
		cs, err := t.cpu.Allocate(pod, c, hint.Affinity)
		if err != nil {
			return allocErr(err)
		}
		if cs.Size() > 0 {
			cr.CPUs = cs.String()
		}
	}
	if t.mem != nil {
		blocks, err := t.mem.Allocate(pod, c, hint)
		if err != nil {
			return allocErr(err)
		}
		cr.Memory = memoryBlocks(blocks)
	}
	return nil
}

func containerKind(pod *v1.Pod, c *v1.Container, init bool) string {
	if !init {
		return "app"
	}
	if podres.IsRestartableInitContainer(c) {
		return "sidecar"
	}
	return "init"
}

// Admit runs kubelet's admission for pod on the current state and commits
// the allocations when the pod is admitted.
func (s *Simulator) Admit(pod *v1.Pod) PodResult {
	res := PodResult{Name: pod.Name, Namespace: pod.Namespace, QOSClass: string(podres.QOS(pod))}
	t := s.begin()
	type entry struct {
		c    *v1.Container
		init bool
	}
	var all []entry
	for i := range pod.Spec.InitContainers {
		all = append(all, entry{&pod.Spec.InitContainers[i], true})
	}
	for i := range pod.Spec.Containers {
		all = append(all, entry{&pod.Spec.Containers[i], false})
	}
	fail := func(e *admissionError, ph []map[string][]node.Hint, c *v1.Container) PodResult {
		res.Admitted = false
		res.Reason = e.reason
		res.Message = e.message
		res.Explanation = s.explain(t, pod, c, e, ph)
		// kubelet frees what the managers allocated for a rejected pod by
		// removing its containers. For CPUs and devices that restores the
		// state before the pod; the memory manager's release can leave the
		// free memory spread differently over a multi-NUMA group, so it is
		// replayed rather than rolled back.
		if t.mem != nil {
			for _, e := range all {
				t.mem.RemoveContainer(string(pod.UID), e.c.Name)
			}
			s.mem = t.mem
		}
		return res
	}
	policyNone := s.Config.TopologyManagerPolicy == topology.PolicyNone
	switch {
	case policyNone:
		for _, e := range all {
			cr := ContainerResult{Name: e.c.Name, Kind: containerKind(pod, e.c, e.init)}
			if err := t.allocate(pod, e.c, node.Hint{}, &cr); err != nil {
				res.Containers = append(res.Containers, cr)
				return fail(err, nil, e.c)
			}
			res.Containers = append(res.Containers, cr)
		}
	case s.Config.TopologyManagerScope == topology.ScopePod:
		ph := t.hints(pod, nil)
		th, ok := s.policy.Merge(toTopology(ph))
		hint := fromTopology(th)
		res.PodHint = hintOut(&hint)
		res.ProviderHints = summarize(ph)
		if !ok {
			return fail(&admissionError{ReasonTopologyAffinity, TopologyAffinityMessage}, ph, nil)
		}
		for _, e := range all {
			cr := ContainerResult{Name: e.c.Name, Kind: containerKind(pod, e.c, e.init), MergedHint: hintOut(&hint)}
			if err := t.allocate(pod, e.c, hint, &cr); err != nil {
				res.Containers = append(res.Containers, cr)
				return fail(err, ph, nil)
			}
			res.Containers = append(res.Containers, cr)
		}
	default:
		for _, e := range all {
			ph := t.hints(pod, e.c)
			th, ok := s.policy.Merge(toTopology(ph))
			hint := fromTopology(th)
			cr := ContainerResult{Name: e.c.Name, Kind: containerKind(pod, e.c, e.init), MergedHint: hintOut(&hint), ProviderHints: summarize(ph)}
			if !ok {
				res.Containers = append(res.Containers, cr)
				return fail(&admissionError{ReasonTopologyAffinity, TopologyAffinityMessage}, ph, e.c)
			}
			if err := t.allocate(pod, e.c, hint, &cr); err != nil {
				res.Containers = append(res.Containers, cr)
				return fail(err, ph, e.c)
			}
			res.Containers = append(res.Containers, cr)
		}
	}
	// Predicate admit handler: node allocatable.
	if e := s.fits(pod); e != nil {
		return fail(e, nil, nil)
	}
	res.Admitted = true
	// Report memory blocks as kubelet's state holds them once the pod is
	// admitted: later containers reusing an init container's memory shrink
	// that init container's blocks.
	if t.mem != nil {
		for i := range res.Containers {
			res.Containers[i].Memory = memoryBlocks(t.mem.Blocks(string(pod.UID), res.Containers[i].Name))
		}
	}
	for name, q := range podres.PodRequests(pod, false) {
		cur := s.used[name]
		cur.Add(q)
		s.used[name] = cur
	}
	s.cpu, s.mem, s.dev = t.cpu, t.mem, t.dev
	return res
}

func (s *Simulator) fits(pod *v1.Pod) *admissionError {
	reqs := podres.PodRequests(pod, false)
	names := make([]string, 0, len(reqs))
	for n := range reqs {
		names = append(names, string(n))
	}
	sort.Strings(names)
	for _, n := range names {
		name := v1.ResourceName(n)
		alloc, known := s.allocatable[name]
		if !known {
			continue // kubelet drops extended resources the node does not know
		}
		req := reqs[name]
		used := s.used[name]
		total := used.DeepCopy()
		total.Add(req)
		if total.Cmp(alloc) > 0 {
			reason := "OutOf" + n
			conv := func(q resource.Quantity) int64 { return q.Value() }
			if name == v1.ResourceCPU {
				conv = func(q resource.Quantity) int64 { return q.MilliValue() }
			}
			return &admissionError{reason, fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d", n, conv(req), conv(used), conv(alloc))}
		}
	}
	return nil
}

// Run admits pods in order, carrying the simulator state from one pod to
// the next (starting from the state New or earlier calls left), and builds
// the report.
func (s *Simulator) Run(pods []*v1.Pod) *Report {
	r := &Report{SchemaVersion: SchemaVersion, Settings: s.Config, Node: s.summary()}
	for _, p := range pods {
		res := s.Admit(p)
		if res.Admitted {
			r.Admitted++
		} else {
			r.Rejected++
		}
		r.Pods = append(r.Pods, res)
	}
	return r
}

// RunBound admits the bound pods first, as the node's state (a pod that
// fails validation is reported rejected with the reason "InvalidPod" and
// holds nothing), then pods as Run does.
func (s *Simulator) RunBound(bound, pods []*v1.Pod) *Report {
	var state []PodResult
	for _, p := range bound {
		if err := validatePod(p); err != nil {
			state = append(state, PodResult{Name: p.Name, Namespace: p.Namespace, Reason: "InvalidPod", Message: err.Error()})
			continue
		}
		state = append(state, s.Admit(p))
	}
	r := s.Run(pods)
	r.BoundPods = state
	return r
}

func (s *Simulator) summary() NodeSummary {
	ns := NodeSummary{Name: s.Node.Name}
	for _, nn := range s.Node.NUMANodes {
		sum := NUMASummary{ID: nn.ID, CPUs: nn.CPUs.String(), Memory: resource.NewQuantity(int64(nn.MemoryBytes), resource.BinarySI).String()}
		for _, r := range s.Node.Devices {
			for _, d := range r.Devices {
				for _, id := range d.NUMANodes {
					if id == nn.ID {
						if sum.Devices == nil {
							sum.Devices = map[string]int{}
						}
						sum.Devices[r.Name]++
					}
				}
			}
		}
		if sum.CPUs == "" {
			sum.CPUs = "-"
		}
		ns.NUMANodes = append(ns.NUMANodes, sum)
	}
	return ns
}

func memoryBlocks(blocks []memorymanager.Block) []MemoryBlock {
	var out []MemoryBlock
	for _, b := range blocks {
		out = append(out, MemoryBlock{NUMANodes: b.NUMAAffinity, Type: string(b.Type), Size: resource.NewQuantity(int64(b.Size), resource.BinarySI).String(), Bytes: b.Size})
	}
	return out
}
