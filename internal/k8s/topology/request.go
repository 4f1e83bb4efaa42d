package topology

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/gpunode/gpunode/internal/output"

	"github.com/gpunode/gpunode/internal/userfile"
	"github.com/gpunode/gpunode/internal/yamlpos"
)

// MergeRequest is the input of 'gpunode k8s merge':
//
//	{"policy": "best-effort|restricted|single-numa-node|none",
//	 "options": {"prefer-closest-numa-nodes": "true"},
//	 "numaNodes": [0, 1],
//	 "distances": [[10, 21], [21, 10]],
//	 "providers": [{"cpu": [{"affinity": [0], "preferred": true}], "nvidia.com/gpu": null}]}
//
// In a provider, a resource mapped to null means "don't care" and to []
// "cannot satisfy", as in kubelet. An affinity of null means any NUMA node.
type MergeRequest struct {
	Policy    string
	Options   map[string]string
	NUMANodes []int
	Distances [][]uint64
	Providers []map[string][]Hint
}

type rawRequest struct {
	Policy    string                       `json:"policy"`
	Options   map[string]string            `json:"options"`
	NUMANodes []int                        `json:"numaNodes"`
	Distances [][]uint64                   `json:"distances"`
	Providers []map[string]json.RawMessage `json:"providers"`
}

type rawHint struct {
	Affinity  *[]int `json:"affinity"`
	Preferred bool   `json:"preferred"`
}

// ReadMergeRequest reads and parses a merge request from r (stdin), at
// most limit bytes (--max-input-bytes; limit <= 0: userfile.DefaultMaxBytes);
// name prefixes errors.
func ReadMergeRequest(r io.Reader, name string, limit int64) (*MergeRequest, error) {
	b, err := userfile.ReadAll(r, name, limit)
	if err != nil {
		return nil, err
	}
	return DecodeMergeRequest(name, b)
}

// DecodeMergeRequest parses the merge request b (read from the file name,
// which prefixes errors).
func DecodeMergeRequest(name string, b []byte) (*MergeRequest, error) {
	req, err := ParseMergeRequest(b)
	if err != nil {
		return nil, yamlpos.Wrap(name, b, err) // "FILE:LINE: field: reason"
	}
	return req, nil
}

// wireRequest is the whole request decoded in one pass: a provider's
// resource maps to nil for JSON null ("don't care") and to a pointer to an
// empty slice for [] ("cannot satisfy").
type wireRequest struct {
	Policy    string                  `json:"policy"`
	Options   map[string]string       `json:"options"`
	NUMANodes []int                   `json:"numaNodes"`
	Distances [][]uint64              `json:"distances"`
	Providers []map[string]*[]rawHint `json:"providers"`
}

// ParseMergeRequest decodes and validates a merge request strictly (unknown
// fields are errors); errors name the field, e.g.
// "providers[1].gpu[0].affinity: NUMA id 70 beyond 63".
//
// The request is decoded once, strictly, into typed values. Only when that
// fails is it decoded again piece by piece, to name the provider, resource
// and hint the error is in (encoding/json reports neither array indexes
// nor the place of an unknown field).
func ParseMergeRequest(b []byte) (*MergeRequest, error) {
	var wire wireRequest
	if err := strictUnmarshal(b, &wire); err != nil {
		if _, located := parseMergeRequestLocated(b); located != nil {
			return nil, located
		}
		return nil, err
	}
	req, err := validateHeader(wire.Policy, wire.Options, wire.NUMANodes, wire.Distances)
	if err != nil {
		return nil, err
	}
	if len(wire.Providers) > 0 {
		req.Providers = make([]map[string][]Hint, 0, len(wire.Providers))
	}
	for i, prov := range wire.Providers {
		m := make(map[string][]Hint, len(prov))
		for _, r := range sortedKeys(prov) {
			if r == "" {
				return nil, fmt.Errorf("providers[%d]: empty resource name", i)
			}
			hints := prov[r]
			if hints == nil {
				m[r] = nil
				continue
			}
			out, err := convertHints(*hints, fmt.Sprintf("providers[%d].%s", i, r), req.NUMANodes)
			if err != nil {
				return nil, err
			}
			m[r] = out
		}
		req.Providers = append(req.Providers, m)
	}
	return req, nil
}

func sortedKeys[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for r := range m {
		names = append(names, r)
	}
	sort.Strings(names)
	return names
}

// convertHints turns decoded hints into Hints; field names the list in
// errors. An affinity naming a NUMA id that is not in numaNodes is an
// error (kubelet's hint providers only name the machine's nodes; merged
// anyway it gave affinities over nodes that do not exist).
func convertHints(raw []rawHint, field string, numaNodes []int) ([]Hint, error) {
	out := make([]Hint, len(raw))
	for j, h := range raw {
		out[j].Preferred = h.Preferred
		if h.Affinity == nil {
			continue
		}
		mask, err := NewBitmask(*h.Affinity...)
		if err != nil {
			return nil, fmt.Errorf("%s[%d].affinity: %w", field, j, err)
		}
		for _, id := range *h.Affinity {
			if !slices.Contains(numaNodes, id) {
				return nil, fmt.Errorf("%s[%d].affinity: NUMA id %d is not in numaNodes %v", field, j, id, numaNodes)
			}
		}
		out[j].Affinity = mask.Ptr()
	}
	return out, nil
}

// parseMergeRequestLocated is the piecewise decode: slower (a decoder per
// hint), but its errors carry the full path.
func parseMergeRequestLocated(b []byte) (*MergeRequest, error) {
	var raw rawRequest
	if err := strictUnmarshal(b, &raw); err != nil {
		return nil, err
	}
	req, err := validateHeader(raw.Policy, raw.Options, raw.NUMANodes, raw.Distances)
	if err != nil {
		return nil, err
	}
	for i, prov := range raw.Providers {
		m := make(map[string][]Hint, len(prov))
		for _, r := range sortedKeys(prov) {
			field := fmt.Sprintf("providers[%d].%s", i, r)
			if r == "" {
				return nil, fmt.Errorf("providers[%d]: empty resource name", i)
			}
			msg := bytes.TrimSpace(prov[r])
			if bytes.Equal(msg, []byte("null")) {
				m[r] = nil
				continue
			}
			var elems []json.RawMessage
			if err := strictUnmarshal(msg, &elems); err != nil {
				return nil, fmt.Errorf("%s: %w", field, err)
			}
			hints := make([]rawHint, len(elems))
			for j, e := range elems {
				if err := strictUnmarshal(e, &hints[j]); err != nil {
					return nil, fmt.Errorf("%s[%d]: %w", field, j, err)
				}
			}
			out, err := convertHints(hints, field, req.NUMANodes)
			if err != nil {
				return nil, err
			}
			m[r] = out
		}
		req.Providers = append(req.Providers, m)
	}
	return req, nil
}

// validateHeader checks everything but the providers and starts the
// request.
func validateHeader(policy string, options map[string]string, numaNodes []int, dist [][]uint64) (*MergeRequest, error) {
	switch policy {
	case PolicyNone, PolicyBestEffort, PolicyRestricted, PolicySingleNUMANode:
	case "":
		return nil, errors.New("policy: required (one of " + strings.Join(Policies(), ", ") + ")")
	default:
		return nil, fmt.Errorf("policy: unknown policy %q (want one of %s)", policy, strings.Join(Policies(), ", "))
	}
	if len(numaNodes) == 0 {
		return nil, errors.New("numaNodes: at least one NUMA node id is required")
	}
	seen := map[int]bool{}
	for i, id := range numaNodes {
		if id < 0 || id >= MaxNUMANodes {
			return nil, fmt.Errorf("numaNodes[%d]: NUMA id %d beyond %d", i, id, MaxNUMANodes-1)
		}
		if seen[id] {
			return nil, fmt.Errorf("numaNodes[%d]: duplicate NUMA id %d", i, id)
		}
		seen[id] = true
	}
	if dist != nil {
		if len(dist) != len(numaNodes) {
			return nil, fmt.Errorf("distances: %d rows for %d NUMA nodes", len(dist), len(numaNodes))
		}
		for i, row := range dist {
			if len(row) != len(numaNodes) {
				return nil, fmt.Errorf("distances[%d]: %d columns for %d NUMA nodes", i, len(row), len(numaNodes))
			}
		}
	}
	return &MergeRequest{Policy: policy, Options: options, NUMANodes: numaNodes, Distances: dist}, nil
}

// strictUnmarshal decodes one JSON value, rejecting unknown fields and
// trailing data, and names the field of a type error.
func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return fmt.Errorf("%s: cannot use JSON %s as %s", te.Field, te.Value, te.Type)
		}
		if errors.Is(err, io.EOF) {
			return errors.New("empty input")
		}
		return err
	}
	if dec.More() {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}

// NewPolicy builds the request's policy (kubelet's NewManager checks
// included).
func (r *MergeRequest) NewPolicy() (*Policy, error) {
	return NewPolicy(r.Policy, r.NUMANodes, r.Options, r.Distances)
}

// MergeResult is the output of 'gpunode k8s merge'.
type MergeResult struct {
	SchemaVersion string `json:"schemaVersion"`
	Policy        string `json:"policy"`
	// Affinity is the merged NUMA affinity; null means any NUMA node.
	Affinity  []int `json:"affinity"`
	Preferred bool  `json:"preferred"`
	Admit     bool  `json:"admit"`
}

// MergeResultSchema is MergeResult's schemaVersion.
const MergeResultSchema = "gpunode.k8s.merge/v1"

// RunMergeRequest builds the request's policy and merges its providers.
func RunMergeRequest(r *MergeRequest) (MergeResult, error) {
	p, err := r.NewPolicy()
	if err != nil {
		return MergeResult{}, err
	}
	h, admit := p.Merge(r.Providers)
	res := MergeResult{SchemaVersion: MergeResultSchema, Policy: p.Name(), Preferred: h.Preferred, Admit: admit}
	if h.Affinity != nil {
		res.Affinity = append(make([]int, 0, h.Affinity.Count()), h.Affinity.Bits()...)
	}
	return res, nil
}

// WriteTable prints the result for humans.
func (m MergeResult) WriteTable(w io.Writer, o output.Options) error {
	aff := "any (nil)"
	if m.Affinity != nil {
		mask, err := NewBitmask(m.Affinity...)
		if err != nil {
			return err
		}
		aff = "NUMA " + mask.String()
		if len(m.Affinity) == 0 {
			aff = "none (empty mask)"
		}
	}
	admit := "admit"
	if !m.Admit {
		admit = "reject (TopologyAffinityError)"
	}
	g := output.NewGrid("POLICY", "AFFINITY", "PREFERRED", "RESULT")
	g.AddRow(m.Policy, aff, fmt.Sprint(m.Preferred), admit)
	return output.Print(w, g, o)
}
