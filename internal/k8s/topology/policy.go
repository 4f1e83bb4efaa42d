package topology

import (
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"strconv"
)

// Topology Manager policy names (KubeletConfiguration.topologyManagerPolicy).
const (
	PolicyNone           = "none"
	PolicyBestEffort     = "best-effort"
	PolicyRestricted     = "restricted"
	PolicySingleNUMANode = "single-numa-node"
)

// Topology Manager scopes (KubeletConfiguration.topologyManagerScope).
const (
	ScopeContainer = "container"
	ScopePod       = "pod"
)

// Topology Manager policy options (topologyManagerPolicyOptions). Both are
// stable (GA) in v1.37, so no feature gate is needed.
const (
	OptionPreferClosestNUMANodes = "prefer-closest-numa-nodes"
	OptionMaxAllowableNUMANodes  = "max-allowable-numa-nodes"
)

// DefaultMaxAllowableNUMANodes is kubelet's default limit on NUMA nodes when a
// policy other than none is set.
const DefaultMaxAllowableNUMANodes = 8

// Policies lists the policy names kubelet accepts.
func Policies() []string {
	return []string{PolicyNone, PolicyBestEffort, PolicyRestricted, PolicySingleNUMANode}
}

// OptionLevel is the maturity of a policy option; it decides which feature
// gate must be on.
type OptionLevel string

// Option maturity levels.
const (
	Alpha  OptionLevel = "alpha"
	Beta   OptionLevel = "beta"
	Stable OptionLevel = "stable"
)

// OptionLevels maps every known Topology Manager policy option to its level
// in kubelet v1.37.
func OptionLevels() map[string]OptionLevel {
	return map[string]OptionLevel{
		OptionPreferClosestNUMANodes: Stable,
		OptionMaxAllowableNUMANodes:  Stable,
	}
}

// CheckOptionAvailable reports whether kubelet accepts option: it must be
// known, and an alpha or beta option needs its feature gate
// (TopologyManagerPolicyAlphaOptions, TopologyManagerPolicyBetaOptions) on in
// gates, which may be nil.
func CheckOptionAvailable(option string, gates map[string]bool) error {
	switch lvl, known := OptionLevels()[option]; {
	case !known:
		return fmt.Errorf(quoteUnknownOption, option)
	case lvl == Alpha && !gates["TopologyManagerPolicyAlphaOptions"]:
		return fmt.Errorf(quoteAlphaOptionsOff, option)
	case lvl == Beta && !gates["TopologyManagerPolicyBetaOptions"]:
		return fmt.Errorf(quoteBetaOptionsOff, option)
	}
	return nil
}

// Options are the parsed Topology Manager policy options.
type Options struct {
	PreferClosestNUMA     bool
	MaxAllowableNUMANodes int
}

// ParseOptions turns topologyManagerPolicyOptions into Options the way
// kubelet's NewPolicyOptions does, failing with kubelet's messages on an
// unavailable option or a bad value. It visits the options in name order
// (kubelet walks a map, so with several bad options it may name another).
// On failure the options parsed so far are returned with the error.
func ParseOptions(opts map[string]string) (Options, error) {
	parsed := Options{MaxAllowableNUMANodes: DefaultMaxAllowableNUMANodes}
	for _, name := range slices.Sorted(maps.Keys(opts)) {
		err := CheckOptionAvailable(name, nil)
		if err == nil {
			err = parsed.apply(name, opts[name])
		}
		if err != nil {
			return parsed, err
		}
	}
	return parsed, nil
}

// apply sets the option called name (one CheckOptionAvailable accepts) from
// its text.
func (o *Options) apply(name, text string) error {
	switch name {
	case OptionPreferClosestNUMANodes:
		switch on, err := strconv.ParseBool(text); {
		case err != nil:
			return fmt.Errorf(quoteBadBool, name, err)
		default:
			o.PreferClosestNUMA = on
		}
	case OptionMaxAllowableNUMANodes:
		switch limit, err := strconv.Atoi(text); {
		case err != nil:
			return fmt.Errorf(quoteNotInteger, name, err)
		case limit < DefaultMaxAllowableNUMANodes:
			return fmt.Errorf(quoteBelowMinimum, name, DefaultMaxAllowableNUMANodes)
		default:
			o.MaxAllowableNUMANodes = limit
		}
	}
	return nil
}

// Policy is a configured Topology Manager policy on a machine's NUMA nodes.
// It is immutable and safe for concurrent use.
type Policy struct {
	name    string
	nodes   []int
	def     Bitmask
	opts    Options
	dist    [MaxNUMANodes][]uint64 // dist[id1][id2], only with PreferClosestNUMA
	closest bool                   // compare with Closest rather than Narrowest
}

// NewPolicy builds policy name for the machine's NUMA node ids, with kubelet's
// option map (topologyManagerPolicyOptions) and the NUMA distance matrix
// (rows and columns in the order of numaNodes; needed only with
// prefer-closest-numa-nodes=true). It fails like kubelet's NewManager: on
// unknown policies or options, and on more NUMA nodes than
// max-allowable-numa-nodes.
func NewPolicy(name string, numaNodes []int, opts map[string]string, distances [][]uint64) (*Policy, error) {
	if name == PolicyNone {
		return newPolicy(name, numaNodes, Options{MaxAllowableNUMANodes: DefaultMaxAllowableNUMANodes}, distances)
	}
	o, err := ParseOptions(opts)
	if err != nil {
		return nil, err
	}
	return newPolicy(name, numaNodes, o, distances)
}

// NewPolicyWithOptions is NewPolicy with already parsed options.
func NewPolicyWithOptions(name string, numaNodes []int, opts Options, distances [][]uint64) (*Policy, error) {
	return newPolicy(name, numaNodes, opts, distances)
}

func newPolicy(name string, numaNodes []int, o Options, distances [][]uint64) (*Policy, error) {
	switch name {
	case PolicyNone, PolicyBestEffort, PolicyRestricted, PolicySingleNUMANode:
	default:
		return nil, fmt.Errorf(quoteUnknownPolicy, name)
	}
	p := &Policy{name: name, nodes: append([]int(nil), numaNodes...), opts: o}
	for i, id := range numaNodes {
		if id < 0 || id >= MaxNUMANodes {
			return nil, fmt.Errorf("numaNodes[%d]: NUMA id %d beyond %d", i, id, MaxNUMANodes-1)
		}
		if p.def.IsSet(id) {
			return nil, fmt.Errorf("numaNodes[%d]: duplicate NUMA id %d", i, id)
		}
		p.def |= 1 << uint(id)
	}
	if name == PolicyNone {
		return p, nil
	}
	if o.MaxAllowableNUMANodes == 0 {
		p.opts.MaxAllowableNUMANodes = DefaultMaxAllowableNUMANodes
	}
	if len(numaNodes) > p.opts.MaxAllowableNUMANodes {
		return nil, fmt.Errorf(quoteTooManyNUMANodes, p.opts.MaxAllowableNUMANodes)
	}
	if distances != nil {
		if len(distances) != len(numaNodes) {
			return nil, fmt.Errorf("distances: %d rows for %d NUMA nodes", len(distances), len(numaNodes))
		}
		for i, row := range distances {
			if len(row) != len(numaNodes) {
				return nil, fmt.Errorf("distances[%d]: %d columns for %d NUMA nodes", i, len(row), len(numaNodes))
			}
		}
	}
	if o.PreferClosestNUMA {
		if distances == nil {
			return nil, fmt.Errorf("the %q policy option needs the NUMA distances (kubelet: %s)", OptionPreferClosestNUMANodes, quoteNoDistances)
		}
		// Re-index by NUMA id, as kubelet's NUMADistances (map id -> row indexed by id).
		for i, id := range numaNodes {
			row := make([]uint64, MaxNUMANodes)
			for j, id2 := range numaNodes {
				row[id2] = distances[i][j]
			}
			p.dist[id] = row
		}
		p.closest = name != PolicySingleNUMANode
	}
	return p, nil
}

// Name is the policy name.
func (p *Policy) Name() string { return p.name }

// NUMANodes returns the machine's NUMA ids in the order given to NewPolicy.
func (p *Policy) NUMANodes() []int { return append([]int(nil), p.nodes...) }

// Options returns the parsed options.
func (p *Policy) Options() Options { return p.opts }

// DefaultAffinity is the mask of all the machine's NUMA nodes.
func (p *Policy) DefaultAffinity() Bitmask { return p.def }

// IsAlignmentGuaranteed mirrors kubelet: only single-numa-node guarantees
// that resources are aligned or the pod is rejected.
func (p *Policy) IsAlignmentGuaranteed() bool { return p.name == PolicySingleNUMANode }

// Merge merges the providers' hints and decides admission, with the result
// kubelet v1.37's Policy.Merge returns for the same input:
//   - none: {nil, non-preferred}, admit;
//   - best-effort: the best merged hint, always admit;
//   - restricted: the best merged hint, admit iff it is preferred;
//   - single-numa-node: merge of the single-NUMA preferred hints only, a result
//     equal to all NUMA nodes becomes {nil, preferred?}; admit iff preferred.
func (p *Policy) Merge(providersHints []map[string][]Hint) (Hint, bool) {
	switch p.name {
	case PolicyNone:
		return Hint{}, true
	case PolicySingleNUMANode:
		lists := filterSingleNUMAHints(hintLists(Flatten(providersHints)))
		best := p.mergeLists(lists)
		if *best.Affinity == p.def {
			best = Hint{nil, best.Preferred}
		}
		return best, best.Preferred
	case PolicyRestricted:
		best := p.mergeLists(hintLists(Flatten(providersHints)))
		return best, best.Preferred
	default: // best-effort
		return p.mergeLists(hintLists(Flatten(providersHints))), true
	}
}

// Merge is p.Merge(providersHints).
func Merge(p *Policy, providersHints []map[string][]Hint) (Hint, bool) {
	return p.Merge(providersHints)
}

// MergeLists merges already flattened hint lists (one per resource, see
// Flatten) with p's comparison, without the single-numa-node filtering or
// admission decision; it is the HintMerger.Merge step of kubelet. The
// affinity of the result is never nil.
func (p *Policy) MergeLists(lists [][]Hint) Hint { return p.mergeLists(lists) }

// meanDistance is the mean NUMA distance over the ordered pairs of m's nodes,
// a node with itself included (0 for an empty mask). The float64 sum runs in
// ascending id order, pairs (i, j) by i then j, as kubelet's
// NUMADistances.CalculateAverageFor, so equal means compare equal here
// exactly when they do there.
func (p *Policy) meanDistance(m Bitmask) float64 {
	n := m.Count()
	if n == 0 {
		return 0
	}
	var total float64
	for from := uint64(m); from != 0; from &= from - 1 {
		row := p.dist[bits.TrailingZeros64(from)]
		for to := uint64(m); to != 0; to &= to - 1 {
			total += float64(row[bits.TrailingZeros64(to)])
		}
	}
	return total / float64(n*n)
}

// fitter reports whether a is strictly fitter than b (a != b): kubelet's
// Narrowest, or Closest with prefer-closest-numa-nodes (not for
// single-numa-node).
func (p *Policy) fitter(a, b Bitmask) bool {
	ca, cb := a.Count(), b.Count()
	if ca != cb {
		return ca < cb
	}
	if p.closest {
		da, db := p.meanDistance(a), p.meanDistance(b)
		if da != db {
			return da < db
		}
	}
	return a < b
}
