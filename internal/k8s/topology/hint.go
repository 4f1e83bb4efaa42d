package topology

import (
	"sort"
)

// Hint is kubelet's TopologyHint: a NUMA affinity (nil = any NUMA node) and
// whether the hint is preferred.
type Hint struct {
	// Affinity is the set of NUMA nodes, or nil for "no NUMA preference".
	// A non-nil empty mask is a valid (unsatisfiable) affinity, as upstream.
	Affinity *Bitmask
	// Preferred marks hints that are as narrow as the request allows.
	Preferred bool
}

// NewHint returns a hint with affinity ids (a non-nil mask even when ids is
// empty). It panics on ids outside 0..63; use NewBitmask for user input.
func NewHint(preferred bool, ids ...int) Hint {
	return Hint{Affinity: MustBitmask(ids...).Ptr(), Preferred: preferred}
}

// AnyHint returns {nil, preferred}.
func AnyHint(preferred bool) Hint { return Hint{Preferred: preferred} }

// IsEqual reports whether h and o have the same affinity (both nil, or equal
// masks) and preference.
func (h Hint) IsEqual(o Hint) bool {
	if h.Preferred != o.Preferred || (h.Affinity == nil) != (o.Affinity == nil) {
		return false
	}
	return h.Affinity == nil || *h.Affinity == *o.Affinity
}

// String formats h like "{0-1 preferred}" or "{any non-preferred}".
func (h Hint) String() string {
	aff := "any"
	if h.Affinity != nil {
		aff = "[" + h.Affinity.String() + "]"
	}
	if h.Preferred {
		return "{" + aff + " preferred}"
	}
	return "{" + aff + " non-preferred}"
}

// ResourceHints is one flattened hint list: the hints of one resource of one
// provider, as the merge sees them.
type ResourceHints struct {
	Provider int    // index into the providers slice
	Resource string // resource name; "" for a provider with no hints at all
	Hints    []Hint
}

// Flatten turns providers' hints into the per-resource lists the merge
// combines, exactly as kubelet's filterProvidersHints:
//   - a provider with an empty map: [{nil, preferred}];
//   - a resource with a nil list: [{nil, preferred}] (don't care);
//   - a resource with an empty list: [{nil, non-preferred}] (cannot satisfy);
//   - otherwise the list itself.
//
// Resources of one provider come in name order (upstream iterates a map; the
// merge result does not depend on the order).
func Flatten(providersHints []map[string][]Hint) []ResourceHints {
	var out []ResourceHints
	for i, hints := range providersHints {
		if len(hints) == 0 {
			out = append(out, ResourceHints{Provider: i, Hints: []Hint{{nil, true}}})
			continue
		}
		names := make([]string, 0, len(hints))
		for r := range hints {
			names = append(names, r)
		}
		sort.Strings(names)
		for _, r := range names {
			switch hs := hints[r]; {
			case hs == nil:
				out = append(out, ResourceHints{i, r, []Hint{{nil, true}}})
			case len(hs) == 0:
				out = append(out, ResourceHints{i, r, []Hint{{nil, false}}})
			default:
				out = append(out, ResourceHints{i, r, hs})
			}
		}
	}
	return out
}

// filterSingleNUMAHints keeps, per list, the hints single-numa-node accepts:
// {nil, preferred} and preferred hints with exactly one NUMA node
// (upstream filterSingleNumaHints). A list may become empty.
func filterSingleNUMAHints(lists [][]Hint) [][]Hint {
	out := make([][]Hint, 0, len(lists))
	for _, l := range lists {
		var f []Hint
		for _, h := range l {
			if !h.Preferred {
				continue
			}
			if h.Affinity == nil || h.Affinity.Count() == 1 {
				f = append(f, h)
			}
		}
		out = append(out, f)
	}
	return out
}

func hintLists(rh []ResourceHints) [][]Hint {
	out := make([][]Hint, len(rh))
	for i := range rh {
		out[i] = rh[i].Hints
	}
	return out
}
