package kubeletcfg

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/cpuset"
	"sigs.k8s.io/yaml"

	"github.com/gpunode/gpunode/internal/k8s/cpumanager"
	"github.com/gpunode/gpunode/internal/k8s/node"
	"github.com/gpunode/gpunode/internal/k8s/topology"
	"github.com/gpunode/gpunode/internal/output"
)

// Profiles accepted by Recommend.
const (
	ProfileTraining  = "training"
	ProfileInference = "inference"
)

const mi = 1 << 20

// Recommendation is a KubeletConfiguration for a node and profile, with
// the reasons for each choice.
type Recommendation struct {
	Profile string
	Node    string
	Config  RecommendedConfig
	// Notes explain the choices; they become YAML comments.
	Notes []string
}

// RecommendedConfig holds the KubeletConfiguration fields Recommend sets
// (only those, so the output merges into an existing config by hand).
type RecommendedConfig struct {
	APIVersion                   string              `json:"apiVersion"`
	Kind                         string              `json:"kind"`
	CPUManagerPolicy             string              `json:"cpuManagerPolicy"`
	CPUManagerPolicyOptions      map[string]string   `json:"cpuManagerPolicyOptions,omitempty"`
	ReservedSystemCPUs           string              `json:"reservedSystemCPUs"`
	MemoryManagerPolicy          string              `json:"memoryManagerPolicy"`
	ReservedMemory               []MemoryReservation `json:"reservedMemory"`
	KubeReserved                 map[string]string   `json:"kubeReserved"`
	SystemReserved               map[string]string   `json:"systemReserved"`
	EvictionHard                 map[string]string   `json:"evictionHard"`
	TopologyManagerPolicy        string              `json:"topologyManagerPolicy"`
	TopologyManagerScope         string              `json:"topologyManagerScope"`
	TopologyManagerPolicyOptions map[string]string   `json:"topologyManagerPolicyOptions,omitempty"`
}

// Recommend builds a configuration for n. Profile training: topology policy
// restricted with pod scope; inference: single-numa-node with pod scope (see
// the notes in the result for why).
func Recommend(n *node.Node, profile string) (*Recommendation, error) {
	if n == nil || len(n.NUMANodes) == 0 {
		return nil, fmt.Errorf("recommend: a node model with NUMA nodes is required")
	}
	r := &Recommendation{Profile: profile, Node: n.Name}
	c := &r.Config
	c.APIVersion, c.Kind = APIVersion, Kind
	switch profile {
	case ProfileTraining:
		c.TopologyManagerPolicy = topology.PolicyRestricted
		r.Notes = append(r.Notes,
			"topologyManagerPolicy restricted: training pods often take more GPUs than one NUMA node holds (e.g. all 8);",
			"  single-numa-node would reject them, restricted admits them when CPUs, memory and GPUs are as narrow as",
			"  possible and rejects only misaligned placements (TopologyAffinityError) instead of running them slowly.",
			"  Caveat (kubelet's merge): a pod whose GPUs span N NUMA nodes must also request CPUs and memory that need",
			"  N nodes (e.g. more CPUs than one node has), else no hint combination is preferred and restricted rejects it;",
			"  size whole-node pods to the whole node, or use best-effort if pods cannot be sized that way.")
	case ProfileInference:
		c.TopologyManagerPolicy = topology.PolicySingleNUMANode
		r.Notes = append(r.Notes,
			"topologyManagerPolicy single-numa-node: inference pods are small (1-2 GPUs); keeping CPUs, memory and GPUs",
			"  on one NUMA node avoids cross-socket traffic on every request, and pods that cannot fit are rejected.")
	default:
		return nil, fmt.Errorf("recommend: unknown profile %q (want %s or %s)", profile, ProfileTraining, ProfileInference)
	}
	c.TopologyManagerScope = topology.ScopePod
	r.Notes = append(r.Notes,
		"topologyManagerScope pod: one merge for the whole pod, so all its containers (workers, data loaders,",
		"  sidecars) share the pod's NUMA nodes instead of being aligned one container at a time.")

	// CPUs: whole cores per NUMA node with CPUs.
	c.CPUManagerPolicy = CPUPolicyStatic
	reserved, smt, cpuNodes := reserveCores(n)
	if reserved.Size() == 0 {
		return nil, fmt.Errorf("recommend: node %s has no CPUs", n.Name)
	}
	c.ReservedSystemCPUs = reserved.String()
	r.Notes = append(r.Notes, fmt.Sprintf(
		"reservedSystemCPUs %s: whole cores (SMT siblings together), the lowest cores of each of the %d NUMA node(s) with CPUs,",
		c.ReservedSystemCPUs, len(cpuNodes)),
		"  so system daemons and IRQs run next to every socket; it overrides kubeReserved/systemReserved cpu.")
	if smt {
		c.CPUManagerPolicyOptions = map[string]string{cpumanager.FullPCPUsOnlyOption: "true"}
		r.Notes = append(r.Notes, "cpuManagerPolicyOptions full-pcpus-only: exclusive CPUs come as whole cores (no SMT sibling shared with another pod).")
	}

	// Memory: Static manager, reservation spread over the CPU nodes.
	sysMi := clamp(roundUp(n.MemoryBytes()/50, 1024*mi)/mi, 1024, 8192) // 2% of memory, 1-8 GiB, whole GiB
	kubeMi := uint64(2048)
	evictMi := uint64(500)
	c.SystemReserved = map[string]string{"memory": fmt.Sprintf("%dMi", sysMi)}
	c.KubeReserved = map[string]string{"memory": fmt.Sprintf("%dMi", kubeMi)}
	c.EvictionHard = defaultEvictionHard()
	c.EvictionHard["memory.available"] = fmt.Sprintf("%dMi", evictMi)
	c.MemoryManagerPolicy = MemoryPolicyStatic
	sumMi := sysMi + kubeMi + evictMi
	per := sumMi / uint64(len(cpuNodes))
	rest := sumMi - per*uint64(len(cpuNodes))
	for i, id := range cpuNodes {
		v := per
		if i == 0 {
			v += rest
		}
		if nn := n.NUMA(id); v*mi >= nn.MemoryBytes {
			return nil, fmt.Errorf("recommend: NUMA node %d has %d bytes of memory, too little for a %dMi reservation", id, nn.MemoryBytes, v)
		}
		c.ReservedMemory = append(c.ReservedMemory, MemoryReservation{
			NumaNode: int32(id),
			Limits:   v1.ResourceList{v1.ResourceMemory: resource.MustParse(fmt.Sprintf("%dMi", v))},
		})
	}
	r.Notes = append(r.Notes,
		fmt.Sprintf("memoryManagerPolicy Static: reservedMemory sums to %dMi = systemReserved %dMi + kubeReserved %dMi + evictionHard memory.available %dMi,",
			sumMi, sysMi, kubeMi, evictMi),
		"  as kubelet requires, split over the NUMA nodes with CPUs; evictionHard lists kubelet's other defaults explicitly",
		"  because setting evictionHard replaces them.")

	nNUMA := len(n.NUMANodes)
	if nNUMA > topology.DefaultMaxAllowableNUMANodes {
		c.TopologyManagerPolicyOptions = map[string]string{topology.OptionMaxAllowableNUMANodes: strconv.Itoa(nNUMA)}
		r.Notes = append(r.Notes, fmt.Sprintf("topologyManagerPolicyOptions max-allowable-numa-nodes %d: kubelet refuses to start on more than 8 NUMA nodes without it.", nNUMA))
	}
	if profile == ProfileTraining && nNUMA > 2 && n.HasDistances() {
		if c.TopologyManagerPolicyOptions == nil {
			c.TopologyManagerPolicyOptions = map[string]string{}
		}
		c.TopologyManagerPolicyOptions[topology.OptionPreferClosestNUMANodes] = "true"
		r.Notes = append(r.Notes, "topologyManagerPolicyOptions prefer-closest-numa-nodes: multi-NUMA pods get the closest set of nodes by distance.")
	}
	return r, nil
}

func clamp(v, lo, hi uint64) uint64 { return min(max(v, lo), hi) }

func roundUp(v, unit uint64) uint64 { return (v + unit - 1) / unit * unit }

// reserveCores picks, on every NUMA node with CPUs, its lowest max(1,
// cores/32) cores with all their SMT siblings.
func reserveCores(n *node.Node) (cpuset.CPUSet, bool, []int) {
	coresByNode := map[int]map[int][]int{} // numa -> core -> cpus
	smt := false
	for _, c := range n.CPUs {
		if coresByNode[c.NUMANode] == nil {
			coresByNode[c.NUMANode] = map[int][]int{}
		}
		coresByNode[c.NUMANode][c.Core] = append(coresByNode[c.NUMANode][c.Core], c.ID)
		if len(coresByNode[c.NUMANode][c.Core]) > 1 {
			smt = true
		}
	}
	var ids, nodes []int
	for _, nn := range n.NUMANodes {
		cores := coresByNode[nn.ID]
		if len(cores) == 0 {
			continue
		}
		nodes = append(nodes, nn.ID)
		coreIDs := make([]int, 0, len(cores))
		for id := range cores {
			coreIDs = append(coreIDs, id)
		}
		sort.Ints(coreIDs)
		take := max(1, len(coreIDs)/32)
		for _, id := range coreIDs[:take] {
			ids = append(ids, cores[id]...)
		}
	}
	return cpuset.New(ids...), smt, nodes
}

// KubeletConfiguration returns the recommendation as a decoded Config (what
// Load would return for its YAML).
func (r *Recommendation) KubeletConfiguration() (*Config, error) {
	b, err := r.YAML()
	if err != nil {
		return nil, err
	}
	return Parse(b, "recommended")
}

// YAML renders the configuration with the notes as comments.
func (r *Recommendation) YAML() ([]byte, error) {
	body, err := yaml.Marshal(r.Config)
	if err != nil {
		return nil, fmt.Errorf("encode kubelet config: %w", err)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# KubeletConfiguration recommended by gpunode for node %q, profile %s.\n", r.Node, r.Profile)
	fmt.Fprintf(&b, "# Merge these fields into the node's kubelet config; 'gpunode k8s kubelet lint' accepts it.\n")
	fmt.Fprintf(&b, "# Changing cpuManagerPolicy or memoryManagerPolicy needs the state files removed:\n")
	fmt.Fprintf(&b, "#   drain the node, stop kubelet, rm /var/lib/kubelet/{cpu,memory}_manager_state, start kubelet.\n")
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "# %s\n", strings.TrimRight(n, " "))
	}
	b.Write(body)
	return b.Bytes(), nil
}

// MarshalJSON renders the configuration itself (for -o json / -o yaml).
func (r Recommendation) MarshalJSON() ([]byte, error) {
	b, err := yaml.Marshal(r.Config)
	if err != nil {
		return nil, err
	}
	return yaml.YAMLToJSON(b)
}

// WriteTable prints the commented YAML.
func (r Recommendation) WriteTable(w io.Writer, _ output.Options) error {
	b, err := r.YAML()
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}
