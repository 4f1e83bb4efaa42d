package dra

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"
)

// NewCELCache returns the CEL cache (upstream's compiler and environment,
// with the v1.37 default features) that `k8s dra` and `k8s lint` share.
func NewCELCache() *cel.Cache {
	return cel.NewCache(1024, cel.Features{EnableConsumableCapacity: true})
}

// CompileSelector compiles one selector expression with the shared
// environment; the error is the compiler's.
func CompileSelector(c *cel.Cache, expr string) error {
	r := c.GetOrCompile(expr)
	if r.Error != nil {
		return r.Error
	}
	return nil
}

// device is one device the search may pick, in the allocator's order.
type device struct {
	id      deviceID
	dev     *resourceapi.Device
	pool    int // index into problem.pools
	consume []counterUse
	// multi marks allowMultipleAllocations (consumable capacity).
	multi bool
}

type deviceID struct{ driver, pool, name string }

func (d deviceID) String() string { return d.driver + "/" + d.pool + "/" + d.name }

type counterUse struct {
	counter int // index into problem.counters
	milli   int64
}

type poolInfo struct {
	driver, name string
	incomplete   bool
	invalid      string
	// overdrawn: some counter of the pool is already below zero.
	overdrawn bool
}

// alt is one way to satisfy a request: the request itself or one of its
// firstAvailable subrequests.
type alt struct {
	name     string // "req" or "req/sub"
	base     string
	sub      string
	all      bool
	count    int
	admin    bool
	capacity bool // has capacity requests (consumable capacity)
	cands    []int
	// matched counts devices matching class and selectors before taints,
	// for explanations.
	matched int
	tainted int
	class   string
	// allBlocked: an All request that cannot be satisfied at all (a pool is
	// incomplete or invalid).
	allBlocked bool
}

type request struct {
	name string
	alts []alt
}

type constraintKind int

const (
	matchConstraint constraintKind = iota
	distinctConstraint
)

type constraint struct {
	kind  constraintKind
	attr  resourceapi.FullyQualifiedName
	names map[string]bool // empty: all requests
}

func (c *constraint) covers(a *alt) bool {
	if len(c.names) == 0 {
		return true
	}
	if a.sub == "" {
		return c.names[a.base]
	}
	return c.names[a.base] || c.names[a.name]
}

type claimInfo struct {
	key         string // ns/name
	requests    []request
	constraints []constraint
}

// problem is one node's allocation problem with every static check done.
type problem struct {
	node     *corev1.Node
	devices  []device
	pools    []poolInfo
	counters []int64 // available (milli), after allocated devices
	claims   []claimInfo
	inUse    []bool // allocated before this pod
	// unsupported names what gpunode's own search does not model (it then
	// leaves the answer to the upstream allocator).
	unsupported string
	features    structured.Features
}

// lookupAttr finds an attribute by its fully qualified name, as the
// allocator does (a name in the driver's domain also matches the short name).
func lookupAttr(d *device, name resourceapi.FullyQualifiedName) *resourceapi.DeviceAttribute {
	if a, ok := d.dev.Attributes[resourceapi.QualifiedName(name)]; ok {
		return &a
	}
	i := strings.Index(string(name), "/")
	if i < 0 || string(name[:i]) != d.id.driver {
		return nil
	}
	if a, ok := d.dev.Attributes[resourceapi.QualifiedName(name[i+1:])]; ok {
		return &a
	}
	return nil
}

// attrKey is a comparable form of an attribute value ("" when it has none
// that constraints can compare).
func attrKey(a *resourceapi.DeviceAttribute) string {
	switch {
	case a == nil:
		return ""
	case a.StringValue != nil:
		return "s:" + *a.StringValue
	case a.IntValue != nil:
		return fmt.Sprintf("i:%d", *a.IntValue)
	case a.BoolValue != nil:
		return fmt.Sprintf("b:%t", *a.BoolValue)
	case a.VersionValue != nil:
		return "v:" + *a.VersionValue
	}
	return ""
}

func nodeMatches(node *corev1.Node, name string, all bool, sel *corev1.NodeSelector) (bool, error) {
	switch {
	case name != "":
		return node != nil && node.Name == name, nil
	case all:
		return true, nil
	case sel != nil:
		s, err := nodeaffinity.NewNodeSelector(sel)
		if err != nil {
			return false, err
		}
		return s.Match(node), nil
	}
	return false, nil
}

type poolKey struct{ driver, pool string }

// gatherPools groups the slices that target node into pools, in the
// allocator's order, and decides which are complete.
func usesCompatibilityGroups(s *resourceapi.ResourceSlice) bool {
	for _, d := range s.Spec.Devices {
		for _, c := range d.ConsumesCounters {
			if len(c.CompatibilityGroups) > 0 {
				return true
			}
		}
	}
	return false
}

// gatherPools: noPartitionable skips slices with counter sets or per-device
// node selection as targets (they still count for a pool's completeness).
func gatherPools(node *corev1.Node, all []*resourceapi.ResourceSlice, noPartitionable bool) (keys []poolKey, targeting map[poolKey][]*resourceapi.ResourceSlice, others map[poolKey][]*resourceapi.ResourceSlice, incomplete map[poolKey]bool, err error) {
	targeting = map[poolKey][]*resourceapi.ResourceSlice{}
	for _, s := range all {
		if noPartitionable && (s.Spec.PerDeviceNodeSelection != nil || len(s.Spec.SharedCounters) > 0) {
			continue
		}
		relevant := false
		if name, an := ptr.Deref(s.Spec.NodeName, ""), ptr.Deref(s.Spec.AllNodes, false); name != "" || an || s.Spec.NodeSelector != nil {
			relevant, err = nodeMatches(node, name, an, s.Spec.NodeSelector)
			if err != nil {
				return nil, nil, nil, nil, fmt.Errorf("ResourceSlice %q: spec.nodeSelector: %w", s.Name, err)
			}
		} else if ptr.Deref(s.Spec.PerDeviceNodeSelection, false) {
			for _, d := range s.Spec.Devices {
				m, err := nodeMatches(node, ptr.Deref(d.NodeName, ""), ptr.Deref(d.AllNodes, false), d.NodeSelector)
				if err != nil {
					return nil, nil, nil, nil, fmt.Errorf("ResourceSlice %q: device %s: nodeSelector: %w", s.Name, d.Name, err)
				}
				if m {
					relevant = true
					break
				}
			}
		}
		if !relevant {
			continue
		}
		k := poolKey{s.Spec.Driver, s.Spec.Pool.Name}
		cur := targeting[k]
		switch {
		case len(cur) == 0 || s.Spec.Pool.Generation > cur[0].Spec.Pool.Generation:
			targeting[k] = []*resourceapi.ResourceSlice{s}
		case s.Spec.Pool.Generation == cur[0].Spec.Pool.Generation:
			targeting[k] = append(cur, s)
		}
	}
	others = map[poolKey][]*resourceapi.ResourceSlice{}
	incomplete = map[poolKey]bool{}
	for k, ss := range targeting {
		gen, want := ss[0].Spec.Pool.Generation, ss[0].Spec.Pool.ResourceSliceCount
		if int64(len(ss)) == want {
			keys = append(keys, k)
			continue
		}
		obsolete := false
		var same []*resourceapi.ResourceSlice
		for _, s := range all {
			if s.Spec.Driver != k.driver || s.Spec.Pool.Name != k.pool {
				continue
			}
			if s.Spec.Pool.Generation > gen {
				obsolete = true
				break
			}
			if s.Spec.Pool.Generation == gen {
				same = append(same, s)
			}
		}
		if obsolete {
			delete(targeting, k)
			continue
		}
		keys = append(keys, k)
		if int64(len(same)) != want {
			incomplete[k] = true
			continue
		}
		for _, s := range same {
			if !slices.Contains(ss, s) {
				others[k] = append(others[k], s)
			}
		}
	}
	slices.SortFunc(keys, func(a, b poolKey) int {
		return cmp.Or(cmp.Compare(a.driver, b.driver), cmp.Compare(a.pool, b.pool))
	})
	return keys, targeting, others, incomplete, nil
}

func hasBindingConditions(ss []*resourceapi.ResourceSlice) bool {
	for _, s := range ss {
		for _, d := range s.Spec.Devices {
			if d.BindingConditions != nil {
				return true
			}
		}
	}
	return false
}

// buildProblem turns one node's inputs into a problem. Errors are the
// allocator's errors (the node does not fit; the error says why).
func buildProblem(ctx context.Context, in *Input, node *corev1.Node) (*problem, error) {
	p := &problem{node: node, features: in.features()}
	sl := in.sliceList()
	if !p.features.CompatibilityGroups {
		// Slices with compatibility groups are invisible (their pool then
		// looks incomplete), as upstream treats them without the feature.
		var keep []*resourceapi.ResourceSlice
		for _, s := range sl {
			if !usesCompatibilityGroups(s) {
				keep = append(keep, s)
			}
		}
		sl = keep
	}
	keys, targeting, others, incomplete, err := gatherPools(node, sl, !p.features.PartitionableDevices)
	if err != nil {
		return nil, err
	}
	// Pools with binding conditions go last, as upstream orders them.
	slices.SortStableFunc(keys, func(a, b poolKey) int {
		ab, bb := hasBindingConditions(targeting[a]), hasBindingConditions(targeting[b])
		switch {
		case ab == bb:
			return 0
		case bb:
			return -1
		}
		return 1
	})
	allocated := in.allocatedSet()
	counterIndex := map[string]int{} // pool\x00set\x00counter
	for _, k := range keys {
		pi := len(p.pools)
		info := poolInfo{driver: k.driver, name: k.pool, incomplete: incomplete[k]}
		p.pools = append(p.pools, info)
		if info.incomplete {
			continue
		}
		ss := slices.Clone(targeting[k])
		slices.SortFunc(ss, func(a, b *resourceapi.ResourceSlice) int { return cmp.Compare(a.Name, b.Name) })
		var devSlices, notTarget []*resourceapi.ResourceSlice
		sets := map[string]resourceapi.CounterSet{}
		addSets := func(s *resourceapi.ResourceSlice) {
			for _, cs := range s.Spec.SharedCounters {
				if _, dup := sets[cs.Name]; dup {
					p.pools[pi].invalid = "duplicate counter set name " + cs.Name
				}
				sets[cs.Name] = cs
			}
		}
		part := p.features.PartitionableDevices
		for _, s := range ss {
			if part && len(s.Spec.SharedCounters) > 0 {
				addSets(s)
			} else {
				devSlices = append(devSlices, s)
			}
		}
		for _, s := range others[k] {
			if part && len(s.Spec.SharedCounters) > 0 {
				addSets(s)
			} else {
				notTarget = append(notTarget, s)
			}
		}
		names := map[string]bool{}
		for _, s := range devSlices {
			for _, d := range s.Spec.Devices {
				if names[d.Name] {
					p.pools[pi].invalid = "duplicate device name " + d.Name
				}
				names[d.Name] = true
			}
		}
		setNames := make([]string, 0, len(sets))
		for n := range sets {
			setNames = append(setNames, n)
		}
		slices.Sort(setNames)
		for _, sn := range setNames {
			cs := sets[sn]
			cn := make([]string, 0, len(cs.Counters))
			for n := range cs.Counters {
				cn = append(cn, n)
			}
			slices.Sort(cn)
			for _, n := range cn {
				q := cs.Counters[n].Value
				counterIndex[k.driver+"\x00"+k.pool+"\x00"+sn+"\x00"+n] = len(p.counters)
				p.counters = append(p.counters, q.MilliValue())
			}
		}
		uses := func(d *resourceapi.Device) ([]counterUse, error) {
			var out []counterUse
			if !part {
				return nil, nil
			}
			for _, cc := range d.ConsumesCounters {
				if _, ok := sets[cc.CounterSet]; !ok {
					return nil, fmt.Errorf("counter set %s not found", cc.CounterSet)
				}
				for n, c := range cc.Counters {
					i, ok := counterIndex[k.driver+"\x00"+k.pool+"\x00"+cc.CounterSet+"\x00"+n]
					if !ok {
						return nil, fmt.Errorf("counter %s not found in counter set %s", n, cc.CounterSet)
					}
					out = append(out, counterUse{counter: i, milli: c.Value.MilliValue()})
				}
			}
			slices.SortFunc(out, func(a, b counterUse) int { return cmp.Compare(a.counter, b.counter) })
			return out, nil
		}
		// Allocated devices of the pool (targeting or not) consume counters.
		for _, group := range [][]*resourceapi.ResourceSlice{devSlices, notTarget} {
			for _, s := range group {
				for i := range s.Spec.Devices {
					d := &s.Spec.Devices[i]
					u, err := uses(d)
					if err != nil {
						p.pools[pi].invalid = err.Error()
						continue
					}
					if allocated[deviceID{k.driver, k.pool, d.Name}] {
						for _, cu := range u {
							p.counters[cu.counter] -= cu.milli
						}
					}
				}
			}
		}
		for _, s := range devSlices {
			perDevice := ptr.Deref(s.Spec.PerDeviceNodeSelection, false)
			for i := range s.Spec.Devices {
				d := &s.Spec.Devices[i]
				if perDevice {
					m, err := nodeMatches(node, ptr.Deref(d.NodeName, ""), ptr.Deref(d.AllNodes, false), d.NodeSelector)
					if err != nil {
						return nil, err
					}
					if !m {
						continue
					}
				}
				u, _ := uses(d)
				id := deviceID{k.driver, k.pool, d.Name}
				p.devices = append(p.devices, device{id: id, dev: d, pool: pi, consume: u, multi: ptr.Deref(d.AllowMultipleAllocations, false)})
				p.inUse = append(p.inUse, allocated[id])
			}
		}
	}
	// A pool with a counter below zero refuses every counter-consuming device.
	for i := range p.devices {
		for _, cu := range p.devices[i].consume {
			if p.counters[cu.counter] < 0 {
				p.pools[p.devices[i].pool].overdrawn = true
			}
		}
	}
	for _, d := range p.devices {
		if d.multi && p.features.ConsumableCapacity {
			p.unsupported = "devices with allowMultipleAllocations (consumable capacity)"
		}
	}
	if in.sharedInUse() {
		p.unsupported = "shared (consumable-capacity) allocations in --allocated"
	}
	for _, c := range in.Claims {
		info, err := p.buildClaim(ctx, in, c)
		if err != nil {
			return nil, err
		}
		p.claims = append(p.claims, info)
	}
	return p, nil
}

func (p *problem) buildClaim(ctx context.Context, in *Input, c *resourceapi.ResourceClaim) (claimInfo, error) {
	info := claimInfo{key: c.Namespace + "/" + c.Name}
	for _, r := range c.Spec.Devices.Requests {
		req := request{name: r.Name}
		if len(r.FirstAvailable) > 0 && !p.features.PrioritizedList {
			return info, fmt.Errorf(quotePrioritizedListDisabled, info.key, r.Name)
		}
		if len(r.FirstAvailable) > 0 {
			for _, s := range r.FirstAvailable {
				a, err := p.buildAlt(ctx, in, c, r.Name, s.Name, s.DeviceClassName, s.Selectors, s.AllocationMode, s.Count, false, s.Tolerations, s.Capacity != nil)
				if err != nil {
					return info, err
				}
				req.alts = append(req.alts, a)
			}
		} else if r.Exactly != nil {
			e := r.Exactly
			a, err := p.buildAlt(ctx, in, c, r.Name, "", e.DeviceClassName, e.Selectors, e.AllocationMode, e.Count, ptr.Deref(e.AdminAccess, false), e.Tolerations, e.Capacity != nil)
			if err != nil {
				return info, err
			}
			req.alts = append(req.alts, a)
		} else {
			return info, fmt.Errorf("claim %s, request %s: neither exactly nor firstAvailable", info.key, r.Name)
		}
		info.requests = append(info.requests, req)
	}
	for _, k := range c.Spec.Devices.Constraints {
		con := constraint{names: map[string]bool{}}
		for _, n := range k.Requests {
			con.names[n] = true
		}
		switch {
		case k.MatchAttribute != nil:
			con.kind, con.attr = matchConstraint, *k.MatchAttribute
		case k.DistinctAttribute != nil:
			con.kind, con.attr = distinctConstraint, *k.DistinctAttribute
		default:
			continue
		}
		info.constraints = append(info.constraints, con)
	}
	return info, nil
}

func (p *problem) buildAlt(ctx context.Context, in *Input, c *resourceapi.ResourceClaim, base, sub, className string, sels []resourceapi.DeviceSelector,
	mode resourceapi.DeviceAllocationMode, count int64, admin bool, tols []resourceapi.DeviceToleration, capacity bool) (alt, error) {
	a := alt{base: base, sub: sub, name: base, admin: admin, capacity: capacity, class: className}
	if sub != "" {
		a.name = base + "/" + sub
	}
	key := c.Namespace + "/" + c.Name
	class := in.class(className)
	if class == nil {
		return a, fmt.Errorf(quoteNoClass, key, a.name, className)
	}
	switch mode {
	case resourceapi.DeviceAllocationModeAll:
		a.all = true
	case resourceapi.DeviceAllocationModeExactCount, "":
		if count == 0 {
			count = 1
		}
		a.count = int(count)
	default:
		return a, fmt.Errorf(quoteUnsupportedCountMode, key, a.name, mode)
	}
	if admin && !p.features.AdminAccess {
		return a, fmt.Errorf(quoteAdminAccessDisabled, key, a.name)
	}
	if capacity && !p.features.ConsumableCapacity {
		return a, fmt.Errorf(quoteConsumableCapacityDisable, key, a.name)
	}
	if capacity {
		p.unsupported = "capacity requests (consumable capacity)"
	}
	for i := range p.devices {
		d := &p.devices[i]
		if p.pools[d.pool].invalid != "" {
			continue
		}
		ok, err := in.matches(ctx, d, class.Spec.Selectors, "class "+class.Name)
		if err != nil {
			return a, fmt.Errorf("claim %s, request %s: %w", key, a.name, err)
		}
		if !ok {
			continue
		}
		ok, err = in.matches(ctx, d, sels, "request "+a.name)
		if err != nil {
			return a, fmt.Errorf("claim %s: %w", key, err)
		}
		if !ok {
			continue
		}
		if !p.features.DeviceBindingAndStatus && len(d.dev.BindingConditions) > 0 {
			continue
		}
		if !p.features.PartitionableDevices && len(d.dev.ConsumesCounters) > 0 {
			continue
		}
		a.matched++
		if p.features.DeviceTaints && taintPrevents(d.dev, tols) {
			a.tainted++
			if !a.all {
				continue
			}
		}
		a.cands = append(a.cands, i)
	}
	if a.all {
		// All: every selectable device, tainted ones included (they make
		// the request fail), none when a pool is incomplete or invalid.
		a.count = len(a.cands)
		for _, pl := range p.pools {
			if pl.incomplete || pl.invalid != "" {
				a.allBlocked = true
			}
		}
	}
	return a, nil
}

func taintPrevents(d *resourceapi.Device, tols []resourceapi.DeviceToleration) bool {
	for _, t := range d.Taints {
		if t.Effect != resourceapi.DeviceTaintEffectNoSchedule && t.Effect != resourceapi.DeviceTaintEffectNoExecute {
			continue
		}
		ok := false
		for _, tol := range tols {
			if resourceclaim.ToleratesTaint(tol, t) {
				ok = true
				break
			}
		}
		if !ok {
			return true
		}
	}
	return false
}
