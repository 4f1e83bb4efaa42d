package dra

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
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

// attrName is a fully qualified attribute name split once, where a
// constraint or an explanation names it: a device answers to the full name
// and, when the domain is the device's own driver, to the short name too
// (a driver may publish its attributes without its domain).
type attrName struct {
	full   resourceapi.QualifiedName
	domain string
	short  resourceapi.QualifiedName
}

func splitAttrName(n resourceapi.FullyQualifiedName) attrName {
	out := attrName{full: resourceapi.QualifiedName(n)}
	if domain, short, ok := strings.Cut(string(n), "/"); ok {
		out.domain, out.short = domain, resourceapi.QualifiedName(short)
	}
	return out
}

// of is d's value of the attribute (the zero value, no field set, when d
// has none).
func (n attrName) of(d *device) resourceapi.DeviceAttribute {
	attrs := d.dev.Attributes
	if a, ok := attrs[n.full]; ok {
		return a
	}
	if n.domain != "" && n.domain == d.id.driver {
		return attrs[n.short]
	}
	return resourceapi.DeviceAttribute{}
}

// attrKey is a comparable form of an attribute value ("" when it has none
// that constraints can compare).
func attrKey(a resourceapi.DeviceAttribute) string {
	switch {
	case a.StringValue != nil:
		return "s:" + *a.StringValue
	case a.IntValue != nil:
		return "i:" + strconv.FormatInt(*a.IntValue, 10)
	case a.BoolValue != nil:
		return "b:" + strconv.FormatBool(*a.BoolValue)
	case a.VersionValue != nil:
		return "v:" + *a.VersionValue
	}
	return ""
}

// nodeTarget is where a slice, or one device of a slice with per-device
// node selection, is available: one node by name, every node, or the nodes
// a selector picks. A target with none of the three is nowhere.
type nodeTarget struct {
	name string
	all  bool
	sel  *corev1.NodeSelector
}

func sliceTarget(s *resourceapi.ResourceSlice) nodeTarget {
	return nodeTarget{name: ptr.Deref(s.Spec.NodeName, ""), all: ptr.Deref(s.Spec.AllNodes, false), sel: s.Spec.NodeSelector}
}

func deviceTarget(d *resourceapi.Device) nodeTarget {
	return nodeTarget{name: ptr.Deref(d.NodeName, ""), all: ptr.Deref(d.AllNodes, false), sel: d.NodeSelector}
}

func (t nodeTarget) named() bool { return t.name != "" || t.all || t.sel != nil }

// includes: the name wins over all, all over the selector.
func (t nodeTarget) includes(node *corev1.Node) (bool, error) {
	if t.name != "" {
		return node != nil && node.Name == t.name, nil
	}
	if t.all || t.sel == nil {
		return t.all, nil
	}
	s, err := nodeaffinity.NewNodeSelector(t.sel)
	if err != nil {
		return false, err
	}
	return s.Match(node), nil
}

type poolKey struct{ driver, pool string }

// anyDevice: some device of the slices satisfies f.
func anyDevice(ss []*resourceapi.ResourceSlice, f func(*resourceapi.Device) bool) bool {
	for _, s := range ss {
		for i := range s.Spec.Devices {
			if f(&s.Spec.Devices[i]) {
				return true
			}
		}
	}
	return false
}

// consumesInGroups: a device draws counters under compatibility groups.
func consumesInGroups(d *resourceapi.Device) bool {
	return slices.ContainsFunc(d.ConsumesCounters, func(c resourceapi.DeviceCounterConsumption) bool { return len(c.CompatibilityGroups) > 0 })
}

// hasBindingConditions: the device is ready only after its conditions hold.
func hasBindingConditions(d *resourceapi.Device) bool { return d.BindingConditions != nil }

// gatherPools groups the slices that target node into pools, in the
// allocator's order, and decides which are complete. noPartitionable skips
// slices with counter sets or per-device node selection as targets (they
// still count for a pool's completeness).
func gatherPools(node *corev1.Node, all []*resourceapi.ResourceSlice, noPartitionable bool) (keys []poolKey, targeting map[poolKey][]*resourceapi.ResourceSlice, others map[poolKey][]*resourceapi.ResourceSlice, incomplete map[poolKey]bool, err error) {
	targeting = map[poolKey][]*resourceapi.ResourceSlice{}
	for _, s := range all {
		if noPartitionable && (s.Spec.PerDeviceNodeSelection != nil || len(s.Spec.SharedCounters) > 0) {
			continue
		}
		relevant := false
		if t := sliceTarget(s); t.named() {
			relevant, err = t.includes(node)
			if err != nil {
				return nil, nil, nil, nil, fmt.Errorf("ResourceSlice %q: spec.nodeSelector: %w", s.Name, err)
			}
		} else if ptr.Deref(s.Spec.PerDeviceNodeSelection, false) {
			for i := range s.Spec.Devices {
				d := &s.Spec.Devices[i]
				m, err := deviceTarget(d).includes(node)
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

// visibleSlices: without the compatibility-groups feature, slices that use
// groups are invisible (their pool then looks incomplete), as upstream
// treats them.
func visibleSlices(in *Input, f structured.Features) []*resourceapi.ResourceSlice {
	sl := in.sliceList()
	if f.CompatibilityGroups {
		return sl
	}
	var keep []*resourceapi.ResourceSlice
	for _, s := range sl {
		if !anyDevice([]*resourceapi.ResourceSlice{s}, consumesInGroups) {
			keep = append(keep, s)
		}
	}
	return keep
}

// bindingLast moves the pools with binding conditions after the others,
// keeping the order within each group, as upstream orders them.
func bindingLast(keys []poolKey, targeting map[poolKey][]*resourceapi.ResourceSlice) {
	late := make(map[poolKey]bool, len(keys))
	for _, k := range keys {
		late[k] = anyDevice(targeting[k], hasBindingConditions)
	}
	slices.SortStableFunc(keys, func(a, b poolKey) int {
		switch {
		case late[a] == late[b]:
			return 0
		case late[a]:
			return 1
		}
		return -1
	})
}

// buildProblem turns one node's inputs into a problem. Errors are the
// allocator's errors (the node does not fit; the error says why). Phases:
// the visible slices, their pools in the allocator's order, each complete
// pool's counters and devices, the limits that hold for the whole node,
// then the claims.
func buildProblem(ctx context.Context, in *Input, node *corev1.Node) (*problem, error) {
	p := &problem{node: node, features: in.features()}
	keys, targeting, others, incomplete, err := gatherPools(node, visibleSlices(in, p.features), !p.features.PartitionableDevices)
	if err != nil {
		return nil, err
	}
	bindingLast(keys, targeting)
	allocated := in.allocatedSet()
	for _, k := range keys {
		p.pools = append(p.pools, poolInfo{driver: k.driver, name: k.pool, incomplete: incomplete[k]})
		if incomplete[k] {
			continue
		}
		if err := p.addPool(len(p.pools)-1, targeting[k], others[k], allocated); err != nil {
			return nil, err
		}
	}
	p.markLimits(in)
	for _, c := range in.Claims {
		info, err := p.buildClaim(ctx, in, c)
		if err != nil {
			return nil, err
		}
		p.claims = append(p.claims, info)
	}
	return p, nil
}

// poolSlices is one complete pool's slices sorted out: the device slices
// that target the node, the pool's other device slices (their allocated
// devices still draw counters) and the counter sets by name.
type poolSlices struct {
	devices, notTarget []*resourceapi.ResourceSlice
	sets               map[string]resourceapi.CounterSet
	// counter is the index into problem.counters of set\x00counter.
	counter map[string]int
}

// addPool adds pool pi's counters and the devices of its slices that are
// available on the node; what makes the pool invalid is recorded on it
// (the last reason found wins).
func (p *problem) addPool(pi int, targeting, others []*resourceapi.ResourceSlice, allocated map[deviceID]bool) error {
	ps := p.sortPool(pi, targeting, others)
	p.checkDeviceNames(pi, ps.devices)
	p.addCounters(ps)
	pool := &p.pools[pi]
	for _, group := range [][]*resourceapi.ResourceSlice{ps.devices, ps.notTarget} {
		for _, s := range group {
			for i := range s.Spec.Devices {
				d := &s.Spec.Devices[i]
				u, err := p.counterUses(ps, d)
				if err != nil {
					pool.invalid = err.Error()
					continue
				}
				if allocated[deviceID{pool.driver, pool.name, d.Name}] {
					for _, cu := range u {
						p.counters[cu.counter] -= cu.milli
					}
				}
			}
		}
	}
	for _, s := range ps.devices {
		perDevice := ptr.Deref(s.Spec.PerDeviceNodeSelection, false)
		for i := range s.Spec.Devices {
			d := &s.Spec.Devices[i]
			if perDevice {
				m, err := deviceTarget(d).includes(p.node)
				if err != nil {
					return err
				}
				if !m {
					continue
				}
			}
			u, _ := p.counterUses(ps, d)
			id := deviceID{pool.driver, pool.name, d.Name}
			p.devices = append(p.devices, device{id: id, dev: d, pool: pi, consume: u, multi: ptr.Deref(d.AllowMultipleAllocations, false)})
			p.inUse = append(p.inUse, allocated[id])
		}
	}
	return nil
}

// sortPool splits a pool's slices (the targeting ones by name first) into
// device slices and counter sets; a counter set name given twice makes the
// pool invalid.
func (p *problem) sortPool(pi int, targeting, others []*resourceapi.ResourceSlice) poolSlices {
	ps := poolSlices{sets: map[string]resourceapi.CounterSet{}, counter: map[string]int{}}
	part := p.features.PartitionableDevices
	sorted := slices.Clone(targeting)
	slices.SortFunc(sorted, func(a, b *resourceapi.ResourceSlice) int { return cmp.Compare(a.Name, b.Name) })
	for i, group := range [][]*resourceapi.ResourceSlice{sorted, others} {
		for _, s := range group {
			if !part || len(s.Spec.SharedCounters) == 0 {
				if i == 0 {
					ps.devices = append(ps.devices, s)
				} else {
					ps.notTarget = append(ps.notTarget, s)
				}
				continue
			}
			for _, cs := range s.Spec.SharedCounters {
				if _, dup := ps.sets[cs.Name]; dup {
					p.pools[pi].invalid = "duplicate counter set name " + cs.Name
				}
				ps.sets[cs.Name] = cs
			}
		}
	}
	return ps
}

// checkDeviceNames: a device name given twice in the node's slices of a
// pool makes the pool invalid.
func (p *problem) checkDeviceNames(pi int, devSlices []*resourceapi.ResourceSlice) {
	seen := map[string]bool{}
	for _, s := range devSlices {
		for i := range s.Spec.Devices {
			n := s.Spec.Devices[i].Name
			if seen[n] {
				p.pools[pi].invalid = "duplicate device name " + n
			}
			seen[n] = true
		}
	}
}

// addCounters appends the pool's counters, sets and counters by name.
func (p *problem) addCounters(ps poolSlices) {
	for _, sn := range slices.Sorted(maps.Keys(ps.sets)) {
		cs := ps.sets[sn]
		for _, n := range slices.Sorted(maps.Keys(cs.Counters)) {
			q := cs.Counters[n].Value
			ps.counter[sn+"\x00"+n] = len(p.counters)
			p.counters = append(p.counters, q.MilliValue())
		}
	}
}

// counterUses is what device d draws from the pool's counters, by counter
// index (none without the partitionable-devices feature).
func (p *problem) counterUses(ps poolSlices, d *resourceapi.Device) ([]counterUse, error) {
	if !p.features.PartitionableDevices {
		return nil, nil
	}
	var out []counterUse
	for _, cc := range d.ConsumesCounters {
		if _, ok := ps.sets[cc.CounterSet]; !ok {
			return nil, fmt.Errorf("counter set %s not found", cc.CounterSet)
		}
		for n, c := range cc.Counters {
			i, ok := ps.counter[cc.CounterSet+"\x00"+n]
			if !ok {
				return nil, fmt.Errorf("counter %s not found in counter set %s", n, cc.CounterSet)
			}
			out = append(out, counterUse{counter: i, milli: c.Value.MilliValue()})
		}
	}
	slices.SortFunc(out, func(a, b counterUse) int { return cmp.Compare(a.counter, b.counter) })
	return out, nil
}

// markLimits records what holds for the whole node: pools with a counter
// below zero (they refuse every counter-consuming device) and what the
// search does not model.
func (p *problem) markLimits(in *Input) {
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
