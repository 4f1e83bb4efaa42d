package mig

// Reading NVIDIA mig-parted's v1 configuration files.
//
// gpunode accepts exactly the files current mig-parted accepts and refuses
// the rest; a refusal names the field (mig-configs.NAME[i].FIELD) and, when
// it can be found, the YAML line, followed by mig-parted's or go-nvlib's
// own words where they have some (migparted_quotes.go).
//
// The rules, and where each comes from:
//
//	rule                                                       source
//	---------------------------------------------------------  ------------------------------------------
//	YAML is read as mig-parted reads it: YAML 1.1 through      cmd/nvidia-mig-parted/assert ParseConfigFile
//	  sigs.k8s.io/yaml into JSON (so "yes" is true); an           (sigs.k8s.io/yaml.Unmarshal into v1.Spec)
//	  empty or null document is an empty spec
//	a non-empty document needs "version"; it must be "v1"       api/spec/v1 spec.go, Spec decoding
//	top-level keys: version, mig-configs only                   api/spec/v1 spec.go
//	mig-configs, when present, has a label, and every label     api/spec/v1 spec.go
//	  a non-empty list of entries
//	entry keys: device-filter, devices, mig-enabled,            api/spec/v1 spec.go, MigConfigSpec decoding
//	  mig-devices; devices and mig-enabled are required
//	devices: the string "all" or a list of integers             api/spec/v1 spec.go
//	device-filter: a string or a list of strings; the items     api/spec/v1 spec.go; helpers.go
//	  are not checked when reading (one that does not parse       MatchesDeviceFilter
//	  selects no GPU)
//	mig-enabled: a boolean; true needs mig-devices (null        api/spec/v1 spec.go
//	  counts as absent), false allows only an empty one
//	mig-devices: profile -> integer count; every profile        pkg/types mig_config.go AssertValid
//	  well-formed, no count negative, and unless the map is
//	  empty not every count 0
//	profile spelling: "[<c>c.]<g>g.<gb>gb" then "+a,b" or       go-nvlib v0.13.0 pkg/nvlib/device
//	  "-a,b"; any non-negative sizes; attributes start with a     mig_profile.go (AssertValidMigProfileFormat),
//	  letter, hold ASCII letters, digits and inner dots, no      which current mig-parted calls through
//	  repeats                                                     pkg/types ParseMigProfile
//	device-filter item: "<devicevendor>[:<subdevicevendor>]",   pkg/types device.go NewDeviceIDFromString
//	  each a signed 32-bit Go integer (0x233010DE)                and DeviceID.Matches (2026)
//	a filter with a subsystem matches only that subsystem       pkg/types device.go DeviceID.Matches
//
// Current rules, not the early-2023 ones. An earlier version of this file
// followed mig-parted's 2023 profile parser, which refused slice counts
// other than 1, 2, 3, 4, 6, 7 and 8 ("unknown ... slice size"), every
// attribute but "me" ("unknown MigProfile attribute"), dots in attributes
// and "-" attributes, and spoke of "MigProfile string" in its errors.
// Current mig-parted checks profiles with go-nvlib, which does none of that:
// mig-parted's own default config (deployments/systemd/config-default.yaml)
// now uses "1g.24gb+gfx", "1g.24gb+me.all" and "1g.24gb-me". gpunode
// follows go-nvlib; conformance/nvlib compares the two on a corpus and
// random strings.
//
// Three deliberate differences from mig-parted:
//   - mig-parted's pkg/types ParseMigProfile also looks every profile up
//     among the profiles the node's GPUs report through NVML (go-nvlib's
//     ParseMigProfile, which needs NVML and says "unable to parse profile
//     string into a valid profile" for any miss). gpunode checks only the
//     spelling here, with go-nvlib's more precise format texts; Validate
//     and miglive look profiles up in the catalogue or the live GPU.
//   - With several problems mig-parted reports whichever its random map
//     walk meets first; gpunode walks keys in sorted order.
//   - A value of the wrong YAML type (a list where a string belongs...) gets
//     gpunode's wording rather than encoding/json's Go type names.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gpunode/gpunode/internal/yamljson"
	"github.com/gpunode/gpunode/internal/yamlpos"
)

// MigPartedVersion is the only spec version mig-parted knows.
const MigPartedVersion = "v1"

// MigPartedSpec is a mig-parted configuration file: named configurations
// ("labels"), each a list of entries.
type MigPartedSpec struct {
	Version    string                        `json:"version"`
	MigConfigs map[string]MigConfigSpecSlice `json:"mig-configs,omitempty"`
}

// MigConfigSpec is one entry of a configuration: which GPUs it selects and
// what they get.
type MigConfigSpec struct {
	DeviceFilter DeviceFilter
	Devices      DeviceSelector
	MigEnabled   bool
	// MigDevices maps profile names to counts; nil when the file has none.
	MigDevices MigConfig
}

// MigConfigSpecSlice is the list of entries of one label.
type MigConfigSpecSlice []MigConfigSpec

// MigConfig maps a MIG profile name to a count.
type MigConfig map[string]int

// MarshalJSON writes the entry in mig-parted's spelling.
func (ms MigConfigSpec) MarshalJSON() ([]byte, error) {
	var filter, devices any
	switch f := ms.DeviceFilter; {
	case f.Single && len(f.IDs) == 1:
		filter = f.IDs[0]
	case len(f.IDs) > 0:
		filter = f.IDs
	}
	if ms.Devices.All {
		devices = "all"
	} else {
		devices = append([]int{}, ms.Devices.Indices...)
	}
	return json.Marshal(struct {
		DeviceFilter any       `json:"device-filter,omitempty"`
		Devices      any       `json:"devices"`
		MigEnabled   bool      `json:"mig-enabled"`
		MigDevices   MigConfig `json:"mig-devices"`
	}{filter, devices, ms.MigEnabled, ms.MigDevices})
}

// Config returns the entries of label, or an error wrapping ErrNoSuchConfig
// in mig-parted's words plus the labels the file has.
func (s *MigPartedSpec) Config(label string) (MigConfigSpecSlice, error) {
	if entries, found := s.MigConfigs[label]; found {
		return entries, nil
	}
	return nil, absentLabel{label, sortedKeys(s.MigConfigs)}
}

// absentLabel is the error for a -c label the file lacks.
type absentLabel struct {
	label string
	have  []string
}

func (a absentLabel) Unwrap() error { return ErrNoSuchConfig }

func (a absentLabel) Error() string {
	return ErrNoSuchConfig.Error() + ": " + fmt.Sprintf(quoteLabelMissing, a.label) + " (labels: " + strings.Join(a.have, ", ") + ")"
}

// sortedKeys lists a map's keys in order (maps.Keys alone is random).
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// SpecError is a problem in a mig-parted file.
type SpecError struct {
	// Path names the field: "mig-configs.balanced[1].mig-devices["1g.5gb"]";
	// "" for the document itself.
	Path string
	// Line is the 1-based YAML line of that field, 0 when not known.
	Line int
	// Msg says what is wrong.
	Msg string
}

func (e *SpecError) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ParseMigParted reads a mig-parted v1 file (YAML or JSON) and checks it
// with mig-parted's rules. A refusal is a *SpecError, or a YAML syntax
// error.
func ParseMigParted(data []byte) (*MigPartedSpec, error) {
	doc, err := yamljson.YAMLToJSON(data)
	if err == nil {
		return (&specReader{src: data}).document(doc)
	}
	return nil, fmt.Errorf("not YAML: %w", err)
}

// ParseMigPartedFile is ParseMigParted for a file called name, with errors
// as 'gpunode mig validate' prints them: "NAME:LINE: error parsing config
// file: FIELD: REASON" (mig-parted's prefix; the line when known, for a
// YAML syntax error too). A refusal still wraps the *SpecError.
func ParseMigPartedFile(name string, data []byte) (*MigPartedSpec, error) {
	spec, err := ParseMigParted(data)
	if err == nil {
		return spec, nil
	}
	var se *SpecError
	if errors.As(err, &se) && se.Line > 0 {
		return nil, fmt.Errorf("%s:%d: %s: %w", name, se.Line, quoteParseConfigFile, &lineless{se})
	}
	if l := yamlpos.SyntaxLine(err.Error()); l > 0 {
		return nil, fmt.Errorf("%s:%d: %s: %w", name, l, quoteParseConfigFile, err)
	}
	return nil, fmt.Errorf("%s: %s: %w", name, quoteParseConfigFile, err)
}

// lineless prints a SpecError without its line (the file name has it).
type lineless struct{ e *SpecError }

func (l *lineless) Error() string { c := *l.e; c.Line = 0; return c.Error() }
func (l *lineless) Unwrap() error { return l.e }

// UnmarshalJSON applies the same rules when a spec is decoded with
// encoding/json or sigs.k8s.io/yaml directly (errors then carry no line).
func (s *MigPartedSpec) UnmarshalJSON(b []byte) error {
	spec, err := (&specReader{}).document(b)
	if err == nil {
		*s = *spec
	}
	return err
}

// fieldPath is a field's path: map keys, and list indexes (a step with
// Index >= 0).
type fieldPath []yamlpos.Step

func (p fieldPath) key(k string) fieldPath {
	return append(p[:len(p):len(p)], yamlpos.Step{Key: k, Index: -1})
}
func (p fieldPath) at(i int) fieldPath { return append(p[:len(p):len(p)], yamlpos.Step{Index: i}) }

func (p fieldPath) String() string {
	var b strings.Builder
	for _, s := range p {
		switch {
		case s.Index >= 0:
			fmt.Fprintf(&b, "[%d]", s.Index)
		case plainKey(s.Key):
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.Key)
		default:
			b.WriteString("[" + strconv.Quote(s.Key) + "]")
		}
	}
	return b.String()
}

// plainKey reports a key that reads unambiguously after a dot.
func plainKey(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if !(r == '-' || r == '_' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9')) {
			return false
		}
	}
	return true
}

// specReader walks the JSON form of a file. JSON is what internal/yamljson
// makes of the YAML, the conversion mig-parted reads through
// sigs.k8s.io/yaml (conformance/yaml compares the two); scalar values
// are decoded with encoding/json as mig-parted's are (null into a string is
// "", into a bool false, into a count 0). src is kept to find line numbers
// when something is wrong.
type specReader struct {
	src []byte
}

func (r *specReader) fail(p fieldPath, format string, args ...any) error {
	return &SpecError{Path: p.String(), Line: r.line(p), Msg: fmt.Sprintf(format, args...)}
}

// jsonKind names a JSON value's type the way a YAML author thinks of it.
func jsonKind(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '{':
		return "a mapping"
	case '[':
		return "a list"
	case '"':
		return "a string"
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	}
	return "the number " + string(v)
}

func isNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }

// mapping decodes v as an object; null is an empty one.
func (r *specReader) mapping(v json.RawMessage, p fieldPath) (fields map[string]json.RawMessage, err error) {
	if json.Unmarshal(v, &fields) != nil {
		err = r.fail(p, "want a mapping, got %s", jsonKind(v))
	}
	return fields, err
}

func (r *specReader) document(v json.RawMessage) (*MigPartedSpec, error) {
	spec := &MigPartedSpec{}
	if isNull(v) {
		return spec, nil
	}
	top, err := r.mapping(v, nil)
	if err != nil {
		return nil, err
	}
	version, hasVersion := top["version"]
	if !hasVersion && len(top) > 0 {
		return nil, r.fail(nil, quoteNoVersion)
	}
	if hasVersion && json.Unmarshal(version, &spec.Version) != nil {
		return nil, r.fail(fieldPath{}.key("version"), "want a string, got %s", jsonKind(version))
	}
	if spec.Version != MigPartedVersion {
		return nil, r.fail(fieldPath{}.key("version"), quoteBadVersion, spec.Version)
	}
	for _, k := range sortedKeys(top) {
		switch k {
		case "version":
		case "mig-configs":
			if spec.MigConfigs, err = r.labels(top[k], fieldPath{}.key(k)); err != nil {
				return nil, err
			}
		default:
			return nil, r.fail(fieldPath{}.key(k), quoteUnexpectedField, k)
		}
	}
	return spec, nil
}

// labels reads mig-configs. Like mig-parted it reads every entry before it
// looks for empty labels.
func (r *specReader) labels(v json.RawMessage, p fieldPath) (map[string]MigConfigSpecSlice, error) {
	raw, err := r.mapping(v, p)
	if err != nil {
		return nil, err
	}
	out := make(map[string]MigConfigSpecSlice, len(raw))
	names := sortedKeys(raw)
	for _, name := range names {
		lp := p.key(name)
		var items []json.RawMessage
		if json.Unmarshal(raw[name], &items) != nil {
			return nil, r.fail(lp, "want a list of entries, got %s", jsonKind(raw[name]))
		}
		entries := make(MigConfigSpecSlice, len(items))
		for i, item := range items {
			if entries[i], err = r.entry(item, lp.at(i)); err != nil {
				return nil, err
			}
		}
		out[name] = entries
	}
	if len(out) == 0 {
		return nil, r.fail(p, quoteNeedsEntries, "mig-configs")
	}
	for _, name := range names {
		if len(out[name]) == 0 {
			return nil, r.fail(p.key(name), quoteNeedsEntries, name)
		}
	}
	return out, nil
}

func (r *specReader) entry(v json.RawMessage, p fieldPath) (MigConfigSpec, error) {
	var e MigConfigSpec
	fields, err := r.mapping(v, p)
	if err != nil {
		return e, err
	}
	for _, need := range [...]string{"devices", "mig-enabled"} {
		if _, ok := fields[need]; !ok {
			return e, r.fail(p, quoteMissingField, need)
		}
	}
	for _, k := range sortedKeys(fields) {
		fv, fp := fields[k], p.key(k)
		switch k {
		case "device-filter":
			e.DeviceFilter, err = r.filter(fv, fp)
		case "devices":
			e.Devices, err = r.devices(fv, fp)
		case "mig-enabled":
			if json.Unmarshal(fv, &e.MigEnabled) != nil {
				err = r.fail(fp, "want true or false, got %s", jsonKind(fv))
			}
		case "mig-devices":
			e.MigDevices, err = r.counts(fv, fp)
		default:
			err = r.fail(fp, quoteUnexpectedField, k)
		}
		if err != nil {
			return e, err
		}
	}
	switch {
	case e.MigEnabled && e.MigDevices == nil:
		return e, r.fail(p, quoteEnabledWithoutList)
	case !e.MigEnabled && len(e.MigDevices) > 0:
		return e, r.fail(p.key("mig-devices"), quoteDisabledWithList)
	}
	return e, nil
}

// filter reads device-filter: one string (null and "" mean no filter, the
// same as leaving it out) or a list of strings.
func (r *specReader) filter(v json.RawMessage, p fieldPath) (DeviceFilter, error) {
	var one string
	if json.Unmarshal(v, &one) == nil {
		if one == "" {
			return DeviceFilter{}, nil
		}
		return DeviceFilter{IDs: []string{one}, Single: true}, nil
	}
	var list []string
	if json.Unmarshal(v, &list) == nil {
		return DeviceFilter{IDs: list}, nil
	}
	return DeviceFilter{}, r.fail(p, "want a PCI device id or a list of them, got %s", jsonKind(v))
}

// devices reads devices: "all" or a list of GPU indices. A string is tried
// first, so null is the empty string and refused as not "all".
func (r *specReader) devices(v json.RawMessage, p fieldPath) (DeviceSelector, error) {
	var word string
	if json.Unmarshal(v, &word) == nil {
		if word != "all" {
			return DeviceSelector{}, r.fail(p, quoteDevicesNotAll, "devices", word)
		}
		return DeviceSelector{All: true}, nil
	}
	var idx []int
	if json.Unmarshal(v, &idx) == nil {
		if idx == nil {
			idx = []int{}
		}
		return DeviceSelector{Indices: idx}, nil
	}
	return DeviceSelector{}, r.fail(p, `want "all" or a list of GPU indices, got %s`, jsonKind(v))
}

// counts reads mig-devices and checks it like mig-parted's AssertValid.
// null gives nil (as if absent); {} gives an empty, non-nil map.
func (r *specReader) counts(v json.RawMessage, p fieldPath) (MigConfig, error) {
	if isNull(v) {
		return nil, nil
	}
	raw, err := r.mapping(v, p)
	if err != nil {
		return nil, err
	}
	out := make(MigConfig, len(raw))
	for _, name := range sortedKeys(raw) {
		var n int
		if json.Unmarshal(raw[name], &n) != nil {
			return nil, r.fail(p.key(name), "want a whole number of instances, got %s", jsonKind(raw[name]))
		}
		out[name] = n
	}
	if key, err := out.check(); err != nil {
		at := p
		if key != "" {
			at = p.key(key)
		}
		return nil, r.fail(at, quoteMigDevicesInvalid, "mig-devices", err)
	}
	return out, nil
}

// check applies mig-parted's rules to a profile -> count map and returns
// the offending profile ("" when the map as a whole is wrong).
func (m MigConfig) check() (string, error) {
	instances := 0
	for _, name := range sortedKeys(m) {
		_, bad := ParseMigProfile(name)
		switch n := m[name]; {
		case bad != nil:
			return name, fmt.Errorf(quoteProfileFormat, name, bad)
		case n < 0:
			// mig-parted prints the count and its (nil) error here.
			return name, fmt.Errorf(quoteNegativeCount, n, error(nil))
		default:
			instances += min(n, 1)
		}
	}
	if len(m) > 0 && instances == 0 {
		return "", errors.New(quoteAllCountsZero)
	}
	return "", nil
}

// AssertValid checks a profile -> count map with mig-parted's rules: every
// profile well-formed, no negative count, not all counts zero (an empty map
// is fine).
func (m MigConfig) AssertValid() error {
	_, err := m.check()
	return err
}

// line finds the YAML line of the field at p, or of the nearest enclosing
// field found. The YAML is parsed again for this (yaml.v3 keeps positions);
// when it does not parse or the path leads through merge keys the answer is
// the last line found, possibly 0.
func (r *specReader) line(p fieldPath) int { return yamlpos.LineIn(r.src, p) }
