package topology

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/gpunode/gpunode/internal/output"
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

// maxRequestBytes bounds the input read by ParseMergeRequest.
const maxRequestBytes = 256 << 20

// ReadMergeRequest reads and parses a merge request from r; name (a file name
// or "-") prefixes errors.
func ReadMergeRequest(r io.Reader, name string) (*MergeRequest, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxRequestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(b) > maxRequestBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, maxRequestBytes)
	}
	req, err := ParseMergeRequest(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return req, nil
}

// ParseMergeRequest decodes and validates a merge request strictly (unknown
// fields are errors); errors name the field, e.g.
// "providers[1].gpu[0].affinity: NUMA id 70 beyond 63".
func ParseMergeRequest(b []byte) (*MergeRequest, error) {
	var raw rawRequest
	if err := strictUnmarshal(b, &raw); err != nil {
		return nil, err
	}
	req := &MergeRequest{Policy: raw.Policy, Options: raw.Options, NUMANodes: raw.NUMANodes, Distances: raw.Distances}
	switch raw.Policy {
	case PolicyNone, PolicyBestEffort, PolicyRestricted, PolicySingleNUMANode:
	case "":
		return nil, errors.New("policy: required (one of " + strings.Join(Policies(), ", ") + ")")
	default:
		return nil, fmt.Errorf("policy: unknown policy %q (want one of %s)", raw.Policy, strings.Join(Policies(), ", "))
	}
	if len(raw.NUMANodes) == 0 {
		return nil, errors.New("numaNodes: at least one NUMA node id is required")
	}
	seen := map[int]bool{}
	for i, id := range raw.NUMANodes {
		if id < 0 || id >= MaxNUMANodes {
			return nil, fmt.Errorf("numaNodes[%d]: NUMA id %d beyond %d", i, id, MaxNUMANodes-1)
		}
		if seen[id] {
			return nil, fmt.Errorf("numaNodes[%d]: duplicate NUMA id %d", i, id)
		}
		seen[id] = true
	}
	if raw.Distances != nil {
		if len(raw.Distances) != len(raw.NUMANodes) {
			return nil, fmt.Errorf("distances: %d rows for %d NUMA nodes", len(raw.Distances), len(raw.NUMANodes))
		}
		for i, row := range raw.Distances {
			if len(row) != len(raw.NUMANodes) {
				return nil, fmt.Errorf("distances[%d]: %d columns for %d NUMA nodes", i, len(row), len(raw.NUMANodes))
			}
		}
	}
	for i, prov := range raw.Providers {
		names := make([]string, 0, len(prov))
		for r := range prov {
			names = append(names, r)
		}
		sort.Strings(names)
		m := make(map[string][]Hint, len(prov))
		for _, r := range names {
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
			out := make([]Hint, len(elems))
			for j, e := range elems {
				var h rawHint
				if err := strictUnmarshal(e, &h); err != nil {
					return nil, fmt.Errorf("%s[%d]: %w", field, j, err)
				}
				out[j].Preferred = h.Preferred
				if h.Affinity == nil {
					continue
				}
				mask, err := NewBitmask(*h.Affinity...)
				if err != nil {
					return nil, fmt.Errorf("%s[%d].affinity: %w", field, j, err)
				}
				out[j].Affinity = mask.Ptr()
			}
			m[r] = out
		}
		req.Providers = append(req.Providers, m)
	}
	return req, nil
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
func (m MergeResult) WriteTable(w io.Writer, _ output.Options) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
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
	fmt.Fprintf(tw, "POLICY\tAFFINITY\tPREFERRED\tRESULT\n")
	fmt.Fprintf(tw, "%s\t%s\t%v\t%s\n", m.Policy, aff, m.Preferred, admit)
	return tw.Flush()
}
