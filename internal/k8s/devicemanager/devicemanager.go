// Package devicemanager is kubelet v1.37's Device Manager as far as NUMA
// alignment goes: topology hints per extended resource from the devices'
// TopologyInfo (devicemanager/topology_hints.go), and allocation that takes
// devices aligned with the merged hint first, then unaligned ones, then
// devices without topology (manager.go devicesToAllocate/filterByAffinity).
//
// Devices are taken in a deterministic order (kubelet iterates Go sets, so
// which of several equally good devices it picks is random); no device
// plugin GetPreferredAllocation is simulated.
package devicemanager

import (
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"

	"github.com/gpunode/gpunode/internal/k8s/admit/podres"
	"github.com/gpunode/gpunode/internal/k8s/node"
)

// Manager holds the devices of a node and which are allocated.
type Manager struct {
	// MaxMasks bounds hint enumeration (0 = node.DefaultMaxMasks).
	MaxMasks int

	numaIDs   []int
	resources map[string]*resourceState
	// reuse: devices of regular init containers, reusable by later containers
	// of the same pod.
	reuseFor string
	reuse    map[string]map[string]bool
	assigned map[string]map[string]map[string][]string // pod -> container -> resource -> ids
}

type resourceState struct {
	devices   []node.Device
	byID      map[string]*node.Device
	allocated map[string]bool
}

// New builds the manager from the node's devices.
func New(n *node.Node) *Manager {
	m := &Manager{numaIDs: n.NUMAIDs(), resources: map[string]*resourceState{}, assigned: map[string]map[string]map[string][]string{}}
	for _, r := range n.Devices {
		rs := &resourceState{devices: r.Devices, byID: map[string]*node.Device{}, allocated: map[string]bool{}}
		for i := range r.Devices {
			rs.byID[r.Devices[i].ID] = &rs.devices[i]
		}
		m.resources[r.Name] = rs
	}
	return m
}

// Clone returns an independent copy.
func (m *Manager) Clone() *Manager {
	c := *m
	c.resources = make(map[string]*resourceState, len(m.resources))
	for name, rs := range m.resources {
		n := *rs
		n.allocated = make(map[string]bool, len(rs.allocated))
		for k, v := range rs.allocated {
			n.allocated[k] = v
		}
		c.resources[name] = &n
	}
	c.reuse = map[string]map[string]bool{}
	for r, s := range m.reuse {
		c.reuse[r] = map[string]bool{}
		for k, v := range s {
			c.reuse[r][k] = v
		}
	}
	c.assigned = make(map[string]map[string]map[string][]string, len(m.assigned))
	for pod, cm := range m.assigned {
		c.assigned[pod] = map[string]map[string][]string{}
		for k, v := range cm {
			c.assigned[pod][k] = v
		}
	}
	return &c
}

// IsDeviceResource reports whether name is served by a device plugin on
// this node.
func (m *Manager) IsDeviceResource(name string) bool { return m.resources[name] != nil }

// Assigned returns the devices assigned to a container per resource.
func (m *Manager) Assigned(podUID, container string) map[string][]string {
	return m.assigned[podUID][container]
}

// Healthy returns the healthy devices of a resource.
func (m *Manager) healthy(rs *resourceState) []string {
	var out []string
	for _, d := range rs.devices {
		if d.Healthy {
			out = append(out, d.ID)
		}
	}
	return out
}

// Available returns the healthy unallocated devices of resource.
func (m *Manager) Available(resource string) []string {
	rs := m.resources[resource]
	if rs == nil {
		return nil
	}
	var out []string
	for _, id := range m.healthy(rs) {
		if !rs.allocated[id] {
			out = append(out, id)
		}
	}
	return out
}

// Device returns a device of resource by id.
func (m *Manager) Device(resource, id string) *node.Device {
	if rs := m.resources[resource]; rs != nil {
		return rs.byID[id]
	}
	return nil
}

func (m *Manager) hasTopology(rs *resourceState) bool {
	for _, d := range rs.devices {
		if len(d.NUMANodes) > 0 {
			return true
		}
	}
	return false
}

func (m *Manager) reusable(pod *v1.Pod, resource string) []string {
	if m.reuseFor != string(pod.UID) {
		return nil
	}
	var out []string
	for id := range m.reuse[resource] {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// ContainerRequests returns the container's device requests (limits).
func (m *Manager) ContainerRequests(c *v1.Container) map[string]int {
	out := map[string]int{}
	for name, q := range c.Resources.Limits {
		if m.IsDeviceResource(string(name)) {
			out[string(name)] = int(q.Value())
		}
	}
	return out
}

// PodRequests returns the pod's effective device requests.
func (m *Manager) PodRequests(pod *v1.Pod) map[string]int {
	out := map[string]int{}
	for name, q := range podres.PodRequests(pod, true) {
		if m.IsDeviceResource(string(name)) {
			out[string(name)] = int(q.Value())
		}
	}
	return out
}

// ContainerHints returns the container's hints per device resource, as
// kubelet's GetTopologyHints.
func (m *Manager) ContainerHints(pod *v1.Pod, c *v1.Container) map[string][]node.Hint {
	hints := map[string][]node.Hint{}
	for resource, requested := range m.ContainerRequests(c) {
		rs := m.resources[resource]
		if !m.hasTopology(rs) {
			hints[resource] = nil
			continue
		}
		if got := m.assigned[string(pod.UID)][c.Name][resource]; len(got) > 0 {
			if len(got) != requested {
				hints[resource] = []node.Hint{}
				continue
			}
			hints[resource] = m.GenerateHints(resource, got, nil, requested)
			continue
		}
		avail := m.Available(resource)
		reuse := m.reusable(pod, resource)
		if len(union(avail, reuse)) < requested {
			hints[resource] = []node.Hint{}
			continue
		}
		hints[resource] = m.GenerateHints(resource, avail, reuse, requested)
	}
	return hints
}

// PodHints returns the pod's hints per device resource, as kubelet's
// GetPodTopologyHints.
func (m *Manager) PodHints(pod *v1.Pod) map[string][]node.Hint {
	hints := map[string][]node.Hint{}
	for resource, requested := range m.PodRequests(pod) {
		rs := m.resources[resource]
		if !m.hasTopology(rs) {
			hints[resource] = nil
			continue
		}
		avail := m.Available(resource)
		if len(avail) < requested {
			hints[resource] = []node.Hint{}
			continue
		}
		hints[resource] = m.GenerateHints(resource, avail, nil, requested)
	}
	return hints
}

func union(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range append(append([]string(nil), a...), b...) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// DeviceNUMANodes returns the sorted NUMA ids hosting devices of resource.
func (m *Manager) DeviceNUMANodes(resource string) []int {
	known := map[int]bool{}
	for _, id := range m.numaIDs {
		known[id] = true
	}
	set := map[int]bool{}
	for _, d := range m.resources[resource].devices {
		for _, n := range d.NUMANodes {
			if known[n] {
				set[n] = true
			}
		}
	}
	out := make([]int, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Ints(out)
	return out
}

// GenerateHints is kubelet's generateDeviceTopologyHints: masks over the NUMA
// nodes hosting devices; preferred iff as small as the smallest mask whose
// devices (healthy or not) could satisfy the request.
func (m *Manager) GenerateHints(resource string, available, reusable []string, request int) []node.Hint {
	rs := m.resources[resource]
	ids := m.DeviceNUMANodes(resource)
	if len(ids) == 0 {
		ids = m.numaIDs
	}
	devMask := func(d *node.Device) node.Mask { return node.MaskOf(d.NUMANodes...) }
	minAffinitySize := len(ids)
	hints := []node.Hint{}
	full := node.IterateMasks(ids, m.MaxMasks, func(mask node.Mask) {
		inMask := 0
		for i := range rs.devices {
			if devMask(&rs.devices[i])&mask != 0 {
				inMask++
			}
		}
		if inMask >= request && mask.Count() < minAffinitySize {
			minAffinitySize = mask.Count()
		}
		matching := 0
		for _, id := range reusable {
			d := rs.byID[id]
			if d == nil || len(d.NUMANodes) == 0 {
				continue
			}
			if devMask(d)&mask == 0 {
				return
			}
			matching++
		}
		for _, id := range available {
			if d := rs.byID[id]; d != nil && devMask(d)&mask != 0 {
				matching++
			}
		}
		if matching < request {
			return
		}
		hints = append(hints, node.NewHint(mask, false))
	})
	if !full {
		// Greedy lower bound: nodes with the most devices first.
		per := map[int]int{}
		for _, d := range rs.devices {
			for _, n := range d.NUMANodes {
				per[n]++
			}
		}
		counts := make([]int, 0, len(per))
		for _, c := range per {
			counts = append(counts, c)
		}
		sort.Sort(sort.Reverse(sort.IntSlice(counts)))
		sum := 0
		for i, c := range counts {
			sum += c
			if sum >= request {
				if i+1 < minAffinitySize {
					minAffinitySize = i + 1
				}
				break
			}
		}
	}
	for i := range hints {
		if hints[i].Affinity.Count() == minAffinitySize {
			hints[i].Preferred = true
		}
	}
	return hints
}

// Allocate assigns devices to the container following the merged affinity,
// as kubelet's Allocate/devicesToAllocate. Errors carry kubelet's texts.
func (m *Manager) Allocate(pod *v1.Pod, c *v1.Container, affinity *node.Mask) (map[string][]string, error) {
	uid := string(pod.UID)
	if m.reuseFor != uid {
		m.reuseFor = uid
		m.reuse = map[string]map[string]bool{}
	}
	reqs := m.ContainerRequests(c)
	names := make([]string, 0, len(reqs))
	for n := range reqs {
		names = append(names, n)
	}
	sort.Strings(names)
	out := map[string][]string{}
	for _, resource := range names {
		got, err := m.devicesToAllocate(resource, reqs[resource], m.reusable(pod, resource), affinity)
		if err != nil {
			return nil, err
		}
		if len(got) > 0 {
			out[resource] = got
		}
	}
	if m.assigned[uid] == nil {
		m.assigned[uid] = map[string]map[string][]string{}
	}
	m.assigned[uid][c.Name] = out
	// Regular init containers hand their devices to later containers;
	// sidecars and app containers consume them.
	regularInit := false
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == c.Name {
			regularInit = !podres.IsRestartableInitContainer(&pod.Spec.InitContainers[i])
		}
	}
	for resource, ids := range out {
		if m.reuse[resource] == nil {
			m.reuse[resource] = map[string]bool{}
		}
		for _, id := range ids {
			if regularInit {
				m.reuse[resource][id] = true
			} else {
				delete(m.reuse[resource], id)
			}
		}
	}
	return out, nil
}

func (m *Manager) devicesToAllocate(resource string, required int, reusable []string, affinity *node.Mask) ([]string, error) {
	rs := m.resources[resource]
	if required == 0 {
		return nil, nil
	}
	healthy := m.healthy(rs)
	if len(healthy) == 0 {
		return nil, fmt.Errorf("no healthy devices present; cannot allocate unhealthy devices %s", resource)
	}
	needed := required
	var allocated []string
	taken := map[string]bool{}
	take := func(ids []string) bool {
		for _, id := range ids {
			if taken[id] {
				continue
			}
			rs.allocated[id] = true
			taken[id] = true
			allocated = append(allocated, id)
			needed--
			if needed == 0 {
				return true
			}
		}
		return false
	}
	if take(reusable) {
		return allocated, nil
	}
	var available []string
	for _, id := range healthy {
		if !rs.allocated[id] {
			available = append(available, id)
		}
	}
	if len(available) < needed {
		return nil, fmt.Errorf("requested number of devices unavailable for %s. Requested: %d, Available: %d", resource, needed, len(available))
	}
	aligned, unaligned, noAffinity := m.filterByAffinity(rs, available, affinity)
	if take(aligned) || take(unaligned) || take(noAffinity) {
		return allocated, nil
	}
	return nil, fmt.Errorf("unexpectedly allocated less resources than required. Requested: %d, Got: %d", required, required-needed)
}

func (m *Manager) filterByAffinity(rs *resourceState, available []string, affinity *node.Mask) (aligned, unaligned, noAffinity []string) {
	if !m.hasTopology(rs) || affinity == nil {
		return nil, nil, available
	}
	// Per-NUMA device counts decide the order, as kubelet: nodes in the
	// affinity first, then others, then devices without topology; within a
	// group, nodes with fewer available devices first.
	per := map[int]int{}
	for _, id := range available {
		for _, n := range rs.byID[id].NUMANodes {
			per[n]++
		}
	}
	nodes := make([]int, 0, len(per))
	for n := range per {
		nodes = append(nodes, n)
	}
	sort.Slice(nodes, func(i, j int) bool {
		a, b := nodes[i], nodes[j]
		ia, ib := affinity.IsSet(a), affinity.IsSet(b)
		if ia != ib {
			return ia
		}
		if per[a] != per[b] {
			return per[a] < per[b]
		}
		return a < b
	})
	rank := map[int]int{}
	for i, n := range nodes {
		rank[n] = i
	}
	type devRank struct {
		id   string
		rank int
	}
	var a, u []devRank
	for _, id := range available {
		d := rs.byID[id]
		if len(d.NUMANodes) == 0 {
			noAffinity = append(noAffinity, id)
			continue
		}
		best := -1
		for _, n := range d.NUMANodes {
			if r, ok := rank[n]; ok && (best < 0 || r < best) {
				best = r
			}
		}
		if affinity.IsSet(nodes[best]) {
			a = append(a, devRank{id, best})
		} else {
			u = append(u, devRank{id, best})
		}
	}
	sortRanks := func(x []devRank) []string {
		sort.SliceStable(x, func(i, j int) bool { return x[i].rank < x[j].rank })
		out := make([]string, len(x))
		for i := range x {
			out[i] = x[i].id
		}
		return out
	}
	return sortRanks(a), sortRanks(u), noAffinity
}
