package dra

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
)

// Input is everything one `dra allocate` run decides on.
type Input struct {
	Slices  []*resourceapi.ResourceSlice
	Classes []*resourceapi.DeviceClass
	// Claims are allocated together, in order, as for one pod.
	Claims []*resourceapi.ResourceClaim
	// Allocated are claims with status.allocation: their devices are in use.
	Allocated []*resourceapi.ResourceClaim
	// Nodes are the node names to try (empty: every node a slice names).
	Nodes []string
	// State, when set, is the allocated state itself (instead of
	// Allocated), as the scheduler hands it to the allocator.
	State *structured.AllocatedState
	// NodeObjects, when set, are the nodes themselves (labels included),
	// instead of Nodes.
	NodeObjects []*corev1.Node
	// FeatureSet, when set, replaces the v1.37 default allocator features
	// for the upstream allocator (gpunode's search models the defaults).
	FeatureSet *structured.Features

	// cel is built on first use (celCache): the CEL environment is the
	// dearest part of an easy run, and eqSelector often makes it needless.
	cel     *cel.Cache
	classes map[string]*resourceapi.DeviceClass
	memo    map[matchMemo]bool
	// eq holds each selector expression's parse as an eqSelector (nil:
	// not that shape).
	eq map[string]eqSelector
}

type matchMemo struct {
	dev  *resourceapi.Device
	expr string
}

func (in *Input) init() {
	if in.classes == nil {
		in.classes = make(map[string]*resourceapi.DeviceClass, len(in.Classes))
		for _, c := range in.Classes {
			in.classes[c.Name] = c
		}
	}
	if in.memo == nil {
		in.memo = map[matchMemo]bool{}
	}
	if in.eq == nil {
		in.eq = map[string]eqSelector{}
	}
}

// celCache is the CEL cache, built on first use.
func (in *Input) celCache() *cel.Cache {
	if in.cel == nil {
		in.cel = NewCELCache()
	}
	return in.cel
}

// eqSelector is expr parsed as an eqSelector (nil, false: another shape).
func (in *Input) eqSelector(expr string) (eqSelector, bool) {
	sel, ok := in.eq[expr]
	if !ok {
		sel, _ = parseEqSelector(expr)
		in.eq[expr] = sel
	}
	return sel, sel != nil
}

func (in *Input) features() structured.Features {
	if in.FeatureSet != nil {
		return *in.FeatureSet
	}
	return defaultFeatures
}

// Unmodelled says what of in gpunode's search leaves to the upstream
// allocator on node (consumable capacity, features other than the v1.37
// defaults), "" when nothing.
func (in *Input) Unmodelled(ctx context.Context, node *corev1.Node) string {
	in.init()
	f := in.features()
	if f.DerivedAttributes || f.ListTypeAttributes || f.CompatibilityGroups || f.OptionalNodeOperations {
		return "features beyond the v1.37 defaults"
	}
	for _, c := range in.Claims {
		DefaultClaimSpec(&c.Spec)
	}
	p, err := buildProblem(ctx, in, node)
	if err != nil {
		return ""
	}
	return p.unsupported
}

func (in *Input) class(name string) *resourceapi.DeviceClass { return in.classes[name] }

func (in *Input) sliceList() []*resourceapi.ResourceSlice { return in.Slices }

// allocatedSet is the devices in use: every result of an allocated claim
// except admin-access and shared (shareID) results.
func (in *Input) allocatedSet() map[deviceID]bool {
	out := map[deviceID]bool{}
	if in.State != nil {
		for id := range in.State.AllocatedDevices {
			out[deviceID{id.Driver.String(), id.Pool.String(), id.Device.String()}] = true
		}
		return out
	}
	for _, c := range in.Allocated {
		if c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.AdminAccess != nil && *r.AdminAccess {
				continue
			}
			if r.ShareID != nil {
				continue
			}
			out[deviceID{r.Driver, r.Pool, r.Device}] = true
		}
	}
	return out
}

func (in *Input) sharedInUse() bool {
	if in.State != nil {
		return len(in.State.AllocatedSharedDeviceIDs) > 0 || len(in.State.AggregatedCapacity) > 0
	}
	for _, c := range in.Allocated {
		if c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.ShareID != nil && (r.AdminAccess == nil || !*r.AdminAccess) {
				return true
			}
		}
	}
	return false
}

// NodeNames are the nodes Run tries: Nodes, else every spec.nodeName of the
// slices (sorted), else one node "node" when slices only use selectors.
func (in *Input) NodeNames() []string {
	if len(in.Nodes) > 0 {
		return in.Nodes
	}
	seen := map[string]bool{}
	var out []string
	for _, s := range in.Slices {
		if s.Spec.NodeName != nil && *s.Spec.NodeName != "" && !seen[*s.Spec.NodeName] {
			seen[*s.Spec.NodeName] = true
			out = append(out, *s.Spec.NodeName)
		}
		for _, d := range s.Spec.Devices {
			if d.NodeName != nil && *d.NodeName != "" && !seen[*d.NodeName] {
				seen[*d.NodeName] = true
				out = append(out, *d.NodeName)
			}
		}
	}
	slices.Sort(out)
	if len(out) == 0 {
		out = []string{"node"}
	}
	return out
}

// NodeObject is the Node a name stands for: the name and its hostname label.
func NodeObject(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
}

// matches evaluates selectors on d: natively where eqSelector decides,
// else with upstream's CEL (cached per device and expression).
func (in *Input) matches(ctx context.Context, d *device, sels []resourceapi.DeviceSelector, what string) (bool, error) {
	for i, s := range sels {
		if s.CEL == nil {
			return false, fmt.Errorf("%s: selector #%d: CEL expression empty (unsupported selector type?)", what, i)
		}
		key := matchMemo{d.dev, s.CEL.Expression}
		if v, ok := in.memo[key]; ok {
			if !v {
				return false, nil
			}
			continue
		}
		if sel, ok := in.eqSelector(s.CEL.Expression); ok {
			if v, decided := sel.eval(d.id.driver, d.dev); decided {
				in.memo[key] = v
				if !v {
					return false, nil
				}
				continue
			}
		}
		expr := in.celCache().GetOrCompile(s.CEL.Expression)
		if expr.Error != nil {
			return false, fmt.Errorf("%s: selector #%d: CEL compile error: %w", what, i, expr.Error)
		}
		ok, _, err := expr.DeviceMatches(ctx, cel.Device{Driver: d.id.driver, AllowMultipleAllocations: d.dev.AllowMultipleAllocations,
			Attributes: d.dev.Attributes, Capacity: d.dev.Capacity})
		if err != nil {
			return false, fmt.Errorf("%s: selector #%d on device %s: CEL runtime error: %w", what, i, d.id, cel.EnhanceRuntimeError(err))
		}
		in.memo[key] = ok
		if !ok {
			return false, nil
		}
	}
	return true, nil
}
