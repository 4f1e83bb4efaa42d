package kubelet_test

// Differential test (k8sadmit): gpunode's Device Manager hints and
// allocation order against kubelet v1.37.2's. kubelet's ManagerImpl cannot
// be built outside its package without a device plugin socket and a
// checkpoint directory under /var/lib/kubelet, so upstreamDevices below
// carries verbatim copies of the methods that decide NUMA alignment
// (generateDeviceTopologyHints, deviceHasTopologyAlignment, deviceNUMANodes,
// getNUMANodeIds and filterByAffinity from pkg/kubelet/cm/devicemanager,
// Apache License 2.0, The Kubernetes Authors) over the same fields, with the
// upstream bitmask and TopologyHint types.

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	uptm "k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager/bitmask"

	"github.com/gpunode/gpunode/internal/k8s/devicemanager"
	"github.com/gpunode/gpunode/internal/k8s/node"
)

const nodeWithoutTopology = -1

type upstreamDevices struct {
	allDevices     map[string]map[string]*pluginapi.Device
	healthyDevices map[string]sets.Set[string]
	numaNodes      []int
	hint           uptm.TopologyHint
}

// --- verbatim from devicemanager/topology_hints.go (receiver renamed) ---

func (m *upstreamDevices) deviceHasTopologyAlignment(resource string) bool {
	for _, device := range m.allDevices[resource] {
		if device.Topology != nil && len(device.Topology.Nodes) > 0 {
			return true
		}
	}
	return false
}

func (m *upstreamDevices) generateDeviceTopologyHints(logger klog.Logger, resource string, available sets.Set[string], reusable sets.Set[string], request int) []uptm.TopologyHint {
	numaNodes := m.deviceNUMANodes(logger, resource)
	if len(numaNodes) == 0 {
		numaNodes = m.numaNodes
	}
	minAffinitySize := len(numaNodes)
	hints := []uptm.TopologyHint{}
	bitmask.IterateBitMasks(numaNodes, func(mask bitmask.BitMask) {
		devicesInMask := 0
		for _, device := range m.allDevices[resource] {
			if mask.AnySet(m.getNUMANodeIds(device.Topology)) {
				devicesInMask++
			}
		}
		if devicesInMask >= request && mask.Count() < minAffinitySize {
			minAffinitySize = mask.Count()
		}
		numMatching := 0
		for d := range reusable {
			if m.allDevices[resource][d].Topology == nil {
				continue
			}
			if !mask.AnySet(m.getNUMANodeIds(m.allDevices[resource][d].Topology)) {
				return
			}
			numMatching++
		}
		for d := range available {
			if mask.AnySet(m.getNUMANodeIds(m.allDevices[resource][d].Topology)) {
				numMatching++
			}
		}
		if numMatching < request {
			return
		}
		hints = append(hints, uptm.TopologyHint{
			NUMANodeAffinity: mask,
			Preferred:        false,
		})
	})
	for i := range hints {
		if hints[i].NUMANodeAffinity.Count() == minAffinitySize {
			hints[i].Preferred = true
		}
	}
	return hints
}

func (m *upstreamDevices) deviceNUMANodes(logger klog.Logger, resource string) []int {
	nodesWithDevices := sets.New[int]()
	for _, device := range m.allDevices[resource] {
		nodesWithDevices.Insert(m.getNUMANodeIds(device.Topology)...)
	}
	knownNodes := sets.New[int](m.numaNodes...)
	unknown := nodesWithDevices.Difference(knownNodes)
	if unknown.Len() > 0 {
		nodesWithDevices = nodesWithDevices.Intersection(knownNodes)
	}
	return sets.List(nodesWithDevices)
}

func (m *upstreamDevices) getNUMANodeIds(topology *pluginapi.TopologyInfo) []int {
	if topology == nil {
		return nil
	}
	var ids []int
	for _, n := range topology.Nodes {
		ids = append(ids, int(n.ID))
	}
	return ids
}

// --- verbatim from devicemanager/manager.go filterByAffinity (hint passed in) ---

func (m *upstreamDevices) filterByAffinity(resource string, available sets.Set[string]) (sets.Set[string], sets.Set[string], sets.Set[string]) {
	hint := m.hint
	if !m.deviceHasTopologyAlignment(resource) || hint.NUMANodeAffinity == nil {
		return sets.New[string](), sets.New[string](), available
	}
	perNodeDevices := make(map[int]sets.Set[string])
	for d := range available {
		if m.allDevices[resource][d].Topology == nil || len(m.allDevices[resource][d].Topology.Nodes) == 0 {
			if _, ok := perNodeDevices[nodeWithoutTopology]; !ok {
				perNodeDevices[nodeWithoutTopology] = sets.New[string]()
			}
			perNodeDevices[nodeWithoutTopology].Insert(d)
			continue
		}
		for _, node := range m.allDevices[resource][d].Topology.Nodes {
			if _, ok := perNodeDevices[int(node.ID)]; !ok {
				perNodeDevices[int(node.ID)] = sets.New[string]()
			}
			perNodeDevices[int(node.ID)].Insert(d)
		}
	}
	var nodes []int
	for node := range perNodeDevices {
		nodes = append(nodes, node)
	}
	sort.Slice(nodes, func(i, j int) bool {
		if hint.NUMANodeAffinity.IsSet(nodes[i]) && hint.NUMANodeAffinity.IsSet(nodes[j]) {
			return perNodeDevices[nodes[i]].Len() < perNodeDevices[nodes[j]].Len()
		}
		if hint.NUMANodeAffinity.IsSet(nodes[i]) {
			return true
		}
		if hint.NUMANodeAffinity.IsSet(nodes[j]) {
			return false
		}
		if nodes[i] == nodeWithoutTopology {
			return false
		}
		if nodes[j] == nodeWithoutTopology {
			return true
		}
		return perNodeDevices[nodes[i]].Len() < perNodeDevices[nodes[j]].Len()
	})
	var fromAffinity []string
	var notFromAffinity []string
	var withoutTopology []string
	for d := range available {
		for _, n := range nodes {
			if perNodeDevices[n].Has(d) {
				if n == nodeWithoutTopology {
					withoutTopology = append(withoutTopology, d)
				} else if hint.NUMANodeAffinity.IsSet(n) {
					fromAffinity = append(fromAffinity, d)
				} else {
					notFromAffinity = append(notFromAffinity, d)
				}
				break
			}
		}
	}
	return sets.New[string](fromAffinity...), sets.New[string](notFromAffinity...), sets.New[string](withoutTopology...)
}

// --- end of upstream copies ---

func TestAdmitDeviceManagerDifferential(t *testing.T) {
	logger := logr.Discard()
	n := admitCases(t, 10000)
	for i := 0; i < n; i++ {
		seed := uint64(i)
		r := rand.New(rand.NewPCG(seed, 0xde7))
		numa := 1 + r.IntN(8)
		nDev := 1 + r.IntN(10)
		var b []byte
		b = fmt.Appendf(b, "apiVersion: gpunode.io/v1\nkind: Node\nnumaNodes:\n")
		for k := 0; k < numa; k++ {
			b = fmt.Appendf(b, "- {id: %d, memory: 1Gi}\n", k)
		}
		b = fmt.Appendf(b, "devices:\n  nvidia.com/gpu:\n")
		up := &upstreamDevices{allDevices: map[string]map[string]*pluginapi.Device{"nvidia.com/gpu": {}}, healthyDevices: map[string]sets.Set[string]{"nvidia.com/gpu": sets.New[string]()}}
		for k := 0; k < numa; k++ {
			up.numaNodes = append(up.numaNodes, k)
		}
		for d := 0; d < nDev; d++ {
			id := fmt.Sprintf("gpu%d", d)
			dev := &pluginapi.Device{ID: id, Health: pluginapi.Healthy}
			health := ""
			if r.IntN(6) == 0 {
				dev.Health = pluginapi.Unhealthy
				health = ", health: Unhealthy"
			} else {
				up.healthyDevices["nvidia.com/gpu"].Insert(id)
			}
			switch x := r.IntN(8); {
			case x == 0: // no topology
				b = fmt.Appendf(b, "  - {id: %s%s}\n", id, health)
			case x == 1 && numa > 1: // two NUMA nodes
				a, c := r.IntN(numa), r.IntN(numa)
				if a == c {
					c = (a + 1) % numa
				}
				dev.Topology = &pluginapi.TopologyInfo{Nodes: []*pluginapi.NUMANode{{ID: int64(a)}, {ID: int64(c)}}}
				b = fmt.Appendf(b, "  - {id: %s, numaNodes: [%d, %d]%s}\n", id, a, c, health)
			default:
				a := r.IntN(numa)
				dev.Topology = &pluginapi.TopologyInfo{Nodes: []*pluginapi.NUMANode{{ID: int64(a)}}}
				b = fmt.Appendf(b, "  - {id: %s, numaNode: %d%s}\n", id, a, health)
			}
			up.allDevices["nvidia.com/gpu"][id] = dev
		}
		nd := mustNode(t, string(b))
		mine := devicemanager.New(nd)
		name := fmt.Sprintf("case %d (seed %d)\n%s", i, seed, b)
		allocated := sets.New[string]()
		for p := 0; p < 1+r.IntN(4); p++ {
			request := 1 + r.IntN(nDev)
			pod := &v1.Pod{}
			pod.Name, pod.UID = fmt.Sprintf("pod%d", p), types.UID(fmt.Sprintf("pod%d", p))
			rl := v1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(int64(request), resource.DecimalSI)}
			pod.Spec.Containers = []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: rl, Limits: rl}}}
			c := &pod.Spec.Containers[0]

			available := up.healthyDevices["nvidia.com/gpu"].Difference(allocated)
			var upHints []uptm.TopologyHint
			switch {
			case !up.deviceHasTopologyAlignment("nvidia.com/gpu"):
				upHints = nil
			case available.Len() < request:
				upHints = []uptm.TopologyHint{}
			default:
				upHints = up.generateDeviceTopologyHints(logger, "nvidia.com/gpu", available, sets.New[string](), request)
			}
			myHints := mine.ContainerHints(pod, c)["nvidia.com/gpu"]
			if hintSetUp(upHints) != hintSetMine(myHints) {
				t.Fatalf("%s: request %d: hints upstream %s, gpunode %s", name, request, hintSetUp(upHints), hintSetMine(myHints))
			}
			// Allocate along a random hint (or none) and check that gpunode's
			// choice is one kubelet could make: aligned devices first, then
			// unaligned, then devices without topology.
			var chosen node.Hint
			if len(myHints) > 0 && r.IntN(4) != 0 {
				chosen = myHints[r.IntN(len(myHints))]
			}
			up.hint = upHint(chosen)
			got, err := mine.Allocate(pod, c, chosen.Affinity)
			if available.Len() < request {
				want := fmt.Sprintf("requested number of devices unavailable for nvidia.com/gpu. Requested: %d, Available: %d", request, available.Len())
				if up.healthyDevices["nvidia.com/gpu"].Len() == 0 {
					want = "no healthy devices present; cannot allocate unhealthy devices nvidia.com/gpu"
				}
				if err == nil || err.Error() != want {
					t.Fatalf("%s: allocate %d: err %v, want %q", name, request, err, want)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s: allocate %d: %v", name, request, err)
			}
			aligned, unaligned, noAff := up.filterByAffinity("nvidia.com/gpu", available)
			ids := sets.New[string](got["nvidia.com/gpu"]...)
			if ids.Len() != request || !ids.IsSuperset(ids.Intersection(available)) || ids.Difference(available).Len() != 0 {
				t.Fatalf("%s: allocated %v from available %v", name, sets.List(ids), sets.List(available))
			}
			needed := request
			for _, group := range []sets.Set[string]{aligned, unaligned, noAff} {
				take := min(needed, group.Len())
				if ids.Intersection(group).Len() != take {
					t.Fatalf("%s: hint %v: allocated %v; kubelet takes %d from %v first (aligned %v, unaligned %v, no topology %v)", name, chosen, sets.List(ids), take, sets.List(group), sets.List(aligned), sets.List(unaligned), sets.List(noAff))
				}
				needed -= take
			}
			allocated = allocated.Union(ids)
		}
	}
}
