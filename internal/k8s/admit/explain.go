package admit

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpunode/gpunode/internal/k8s/memorymanager"
	"github.com/gpunode/gpunode/internal/k8s/node"
	"github.com/gpunode/gpunode/internal/k8s/topology"
)

// need is one resource the failing unit (container or pod) asks for, with
// what each NUMA node has free for it.
type need struct {
	resource string
	unit     string // "CPUs", "devices", "" for bytes
	request  int64
	free     map[int]int64 // per NUMA node
	noTopo   int64         // devices without NUMA affinity
	hints    []node.Hint
	hinted   bool // the resource produced a hint list (nil = don't care)
}

func (n need) amount(v int64) string {
	switch n.unit {
	case "":
		return resource.NewQuantity(v, resource.BinarySI).String()
	case "devices":
		return fmt.Sprintf("%d %s", v, n.resource)
	default:
		return fmt.Sprintf("%d %s", v, n.unit)
	}
}

func (s *Simulator) needs(t *txn, pod *v1.Pod, c *v1.Container, ph []map[string][]node.Hint) []need {
	var out []need
	hintsOf := func(r string) ([]node.Hint, bool) {
		for _, m := range ph {
			if hs, ok := m[r]; ok {
				return hs, hs != nil
			}
		}
		return nil, false
	}
	ids := s.Node.NUMAIDs()
	// CPUs
	if t.cpu != nil {
		var req int
		if c != nil {
			req = t.cpu.GuaranteedCPUs(pod, c)
		} else {
			req = t.cpu.PodGuaranteedCPUs(pod)
		}
		if req > 0 {
			n := need{resource: "cpu", unit: "CPUs", request: int64(req), free: map[int]int64{}}
			for _, cpu := range t.cpu.Available().UnsortedList() {
				n.free[t.cpu.Topology().CPUDetails[cpu].NUMANodeID]++
			}
			n.hints, n.hinted = hintsOf("cpu")
			out = append(out, n)
		}
	}
	// Memory
	if t.mem != nil {
		var reqs map[v1.ResourceName]uint64
		if c != nil {
			reqs, _ = memorymanager.ContainerRequests(c)
		} else {
			reqs, _ = memorymanager.PodRequests(pod)
		}
		names := make([]string, 0, len(reqs))
		for r := range reqs {
			names = append(names, string(r))
		}
		sort.Strings(names)
		for _, r := range names {
			n := need{resource: r, request: int64(reqs[v1.ResourceName(r)]), free: map[int]int64{}}
			for _, id := range ids {
				if st := t.mem.State(id); st != nil {
					if tb := st.Memory[v1.ResourceName(r)]; tb != nil {
						n.free[id] = int64(tb.Free)
					}
				}
			}
			n.hints, n.hinted = hintsOf(r)
			out = append(out, n)
		}
	}
	// Devices
	var dreqs map[string]int
	if c != nil {
		dreqs = t.dev.ContainerRequests(c)
	} else {
		dreqs = t.dev.PodRequests(pod)
	}
	dnames := make([]string, 0, len(dreqs))
	for r := range dreqs {
		dnames = append(dnames, r)
	}
	sort.Strings(dnames)
	for _, r := range dnames {
		n := need{resource: r, unit: "devices", request: int64(dreqs[r]), free: map[int]int64{}}
		for _, id := range t.dev.Available(r) {
			d := t.dev.Device(r, id)
			if len(d.NUMANodes) == 0 {
				n.noTopo++
			}
			for _, numa := range d.NUMANodes {
				n.free[numa]++
			}
		}
		n.hints, n.hinted = hintsOf(r)
		out = append(out, n)
	}
	return out
}

func (n need) perNode(ids []int) string {
	var parts []string
	for _, id := range ids {
		parts = append(parts, fmt.Sprintf("node %d has %s", id, n.amount(n.free[id])))
	}
	if n.noTopo > 0 {
		parts = append(parts, fmt.Sprintf("%d without NUMA affinity", n.noTopo))
	}
	return strings.Join(parts, ", ")
}

func (n need) total() int64 {
	t := n.noTopo
	for _, v := range n.free {
		t += v
	}
	return t
}

// singleNodes returns the NUMA nodes that can hold the whole request alone.
func (n need) singleNodes(ids []int) []int {
	var out []int
	for _, id := range ids {
		if n.free[id] >= n.request {
			out = append(out, id)
		}
	}
	return out
}

func (n need) maxSingle(ids []int) int64 {
	var m int64
	for _, id := range ids {
		if n.free[id] > m {
			m = n.free[id]
		}
	}
	return m
}

func (s *Simulator) explain(t *txn, pod *v1.Pod, c *v1.Container, e *admissionError, ph []map[string][]node.Hint) []string {
	ids := s.Node.NUMAIDs()
	unit := "pod"
	if c != nil {
		unit = fmt.Sprintf("container %q", c.Name)
	}
	var out []string
	switch e.reason {
	case ReasonSMTAlignment:
		cpt := 1
		if t.cpu != nil {
			cpt = t.cpu.Topology().CPUsPerCore()
		}
		out = append(out, fmt.Sprintf("full-pcpus-only allocates whole physical cores of %d CPUs: request a multiple of %d CPUs for %s, or free whole cores", cpt, cpt, unit))
		return out
	case ReasonTopologyAffinity:
	default:
		if ph == nil && c == nil {
			out = append(out, "the node's allocatable capacity (capacity minus kubeReserved, systemReserved and hard eviction) is exhausted by the pods admitted before")
			return out
		}
	}
	needs := s.needs(t, pod, c, ph)
	if len(needs) == 0 {
		return out
	}
	policy := s.Config.TopologyManagerPolicy
	var shortOverall []string
	for _, n := range needs {
		if n.total() < n.request {
			shortOverall = append(shortOverall, n.resource)
			out = append(out, fmt.Sprintf("%s: %s needs %s but only %s are free on the whole node (%s)", n.resource, unit, n.amount(n.request), n.amount(n.total()), n.perNode(ids)))
		}
	}
	if len(shortOverall) > 0 {
		out = append(out, fmt.Sprintf("to fit: lower the %s request(s) or free them by removing pods admitted earlier", strings.Join(shortOverall, ", ")))
		return out
	}
	if e.reason != ReasonTopologyAffinity {
		return out
	}
	// Which resources fit on which single NUMA node.
	common := node.MaskOf(ids...)
	var noSingle []need
	for _, n := range needs {
		if !n.hinted {
			continue
		}
		single := n.singleNodes(ids)
		if len(single) == 0 {
			noSingle = append(noSingle, n)
			out = append(out, fmt.Sprintf("%s: no single NUMA node has %s free for %s; %s", n.resource, n.amount(n.request), unit, n.perNode(ids)))
		} else {
			if len(single) == 1 {
				out = append(out, fmt.Sprintf("%s: %s fit only on NUMA node %d", n.resource, n.amount(n.request), single[0]))
			} else {
				out = append(out, fmt.Sprintf("%s: %s fit on any one of NUMA nodes %s", n.resource, n.amount(n.request), intsString(single)))
			}
		}
		common &= node.MaskOf(single...)
	}
	switch {
	case len(noSingle) > 0:
		var fixes []string
		for _, n := range noSingle {
			fixes = append(fixes, fmt.Sprintf("at most %s", n.amount(n.maxSingle(ids))))
		}
		fix := "to fit on one NUMA node: request " + strings.Join(fixes, " and ")
		if policy == topology.PolicySingleNUMANode || policy == topology.PolicyRestricted {
			fix += ", or let the pod span NUMA nodes (topologyManagerPolicy best-effort, or split it into smaller pods)"
		}
		out = append(out, fix)
	case common == 0:
		out = append(out, "no NUMA node fits all resources at once: each fits somewhere, but on different nodes; free resources on one node (remove pods admitted earlier) or lower the requests")
	default:
		if policy == topology.PolicyRestricted {
			out = append(out, fmt.Sprintf("restricted admits only preferred (narrowest) merges; NUMA node(s) %s fit every resource but some provider's narrowest hint differs", intsString(common.Bits())))
		} else {
			out = append(out, fmt.Sprintf("NUMA node(s) %s fit every resource on its own; the merge still failed (hints: see above)", intsString(common.Bits())))
		}
	}
	return out
}
