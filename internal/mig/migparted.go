package mig

// This file reads NVIDIA mig-parted's v1 configuration format. The types,
// validation rules and error texts follow mig-parted's api/spec/v1 and
// pkg/types packages (Spec.UnmarshalJSON, MigConfigSpec.UnmarshalJSON,
// MigConfig.AssertValid, ParseMigProfile, NewDeviceIDFromString) so that a
// file gpunode accepts is one mig-parted accepts, with the same messages.
// One deliberate difference: mig-parted walks JSON maps in Go's random
// order, so with several problems its first error varies; gpunode walks keys
// in sorted order.

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// MigPartedVersion is the only spec version mig-parted knows.
const MigPartedVersion = "v1"

// MigPartedSpec is a mig-parted configuration file.
type MigPartedSpec struct {
	Version    string                        `json:"version"`
	MigConfigs map[string]MigConfigSpecSlice `json:"mig-configs,omitempty"`
}

// MigConfigSpec is one entry of a mig-config: the GPUs it selects and the
// MIG layout each of them gets.
type MigConfigSpec struct {
	// DeviceFilter is nil, a string or a []string of "0xDDDDVVVV" ids,
	// optionally ":0xSSSSVVVV" subsystem-qualified.
	DeviceFilter any `json:"device-filter,omitempty"`
	// Devices is "all" or a []int of GPU indexes.
	Devices    any       `json:"devices"`
	MigEnabled bool      `json:"mig-enabled"`
	MigDevices MigConfig `json:"mig-devices"`
}

// MigConfigSpecSlice is the list of entries of one mig-config label.
type MigConfigSpecSlice []MigConfigSpec

// MigConfig maps a MIG profile string to a count.
type MigConfig map[string]int

// ParseMigParted parses a mig-parted v1 file (YAML or JSON) the way
// mig-parted does (sigs.k8s.io/yaml into the v1 Spec).
func ParseMigParted(data []byte) (*MigPartedSpec, error) {
	var spec MigPartedSpec
	if err := yaml.Unmarshal(data, &spec); err != nil {
		return nil, fmt.Errorf("unmarshal error: %w", err)
	}
	return &spec, nil
}

// Config returns the entries of label, or an error wrapping ErrNoSuchConfig
// with mig-parted's text.
func (s *MigPartedSpec) Config(label string) (MigConfigSpecSlice, error) {
	cfg, ok := s.MigConfigs[label]
	if !ok {
		return nil, fmt.Errorf("%w: selected mig-config not present: %v (labels: %s)", ErrNoSuchConfig, label, strings.Join(sortedKeys(s.MigConfigs), ", "))
	}
	return cfg, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// UnmarshalJSON implements mig-parted's Spec rules.
func (s *MigPartedSpec) UnmarshalJSON(b []byte) error {
	raw := map[string]json.RawMessage{}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if _, ok := raw["version"]; !ok && len(raw) > 0 {
		return fmt.Errorf("unable to parse with missing 'version' field")
	}
	result := MigPartedSpec{}
	if v, ok := raw["version"]; ok {
		if err := json.Unmarshal(v, &result.Version); err != nil {
			return err
		}
	}
	if result.Version != MigPartedVersion {
		return fmt.Errorf("unknown version: %v", result.Version)
	}
	delete(raw, "version")
	for _, k := range sortedKeys(raw) {
		switch k {
		case "mig-configs":
			configs := map[string]MigConfigSpecSlice{}
			if err := json.Unmarshal(raw[k], &configs); err != nil {
				return err
			}
			if len(configs) == 0 {
				return fmt.Errorf("at least one entry in '%v' is required", k)
			}
			for _, c := range sortedKeys(configs) {
				if len(configs[c]) == 0 {
					return fmt.Errorf("at least one entry in '%v' is required", c)
				}
			}
			result.MigConfigs = configs
		default:
			return fmt.Errorf("unexpected field: %v", k)
		}
	}
	*s = result
	return nil
}

// UnmarshalJSON implements mig-parted's MigConfigSpec rules.
func (s *MigConfigSpec) UnmarshalJSON(b []byte) error {
	raw := map[string]json.RawMessage{}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	for _, r := range []string{"devices", "mig-enabled"} {
		if _, ok := raw[r]; !ok {
			return fmt.Errorf("missing required field: %v", r)
		}
	}
	result := MigConfigSpec{}
	for _, k := range sortedKeys(raw) {
		v := raw[k]
		switch k {
		case "device-filter":
			var str string
			err1 := json.Unmarshal(v, &str)
			if err1 == nil {
				result.DeviceFilter = str
				break
			}
			var list []string
			err2 := json.Unmarshal(v, &list)
			if err2 == nil {
				result.DeviceFilter = list
				break
			}
			return fmt.Errorf("(%v, %v)", err1, err2)
		case "devices":
			var str string
			err1 := json.Unmarshal(v, &str)
			if err1 == nil {
				if str != "all" {
					return fmt.Errorf("invalid string input for '%v': %v", k, str)
				}
				result.Devices = str
				break
			}
			var list []int
			err2 := json.Unmarshal(v, &list)
			if err2 == nil {
				result.Devices = list
				break
			}
			return fmt.Errorf("(%v, %v)", err1, err2)
		case "mig-enabled":
			var enabled bool
			if err := json.Unmarshal(v, &enabled); err != nil {
				return err
			}
			result.MigEnabled = enabled
		case "mig-devices":
			devices := MigConfig{}
			if err := json.Unmarshal(v, &devices); err != nil {
				return err
			}
			if err := devices.AssertValid(); err != nil {
				return fmt.Errorf("error validating values in '%v' field: %v", k, err)
			}
			result.MigDevices = devices
		default:
			return fmt.Errorf("unexpected field: %v", k)
		}
	}
	if result.MigEnabled && result.MigDevices == nil {
		return fmt.Errorf("missing required field 'mig-devices' when 'mig-enabled' is true")
	}
	if !result.MigEnabled && len(result.MigDevices) != 0 {
		return fmt.Errorf("MIG devices included when 'mig-enabled' is false")
	}
	*s = result
	return nil
}

// AssertValid checks every profile string and count like mig-parted's
// MigConfig.AssertValid (including its "invalid count" text, which prints
// a nil error).
func (m MigConfig) AssertValid() error {
	if len(m) == 0 {
		return nil
	}
	for _, k := range sortedKeys(m) {
		if _, err := ParseMigProfile(k); err != nil {
			return fmt.Errorf("invalid format for '%v': %v", k, err)
		}
		if v := m[k]; v < 0 {
			return fmt.Errorf("invalid count for '%v': %v", v, error(nil))
		}
	}
	for _, v := range m {
		if v > 0 {
			return nil
		}
	}
	return fmt.Errorf("all counts for all MigProfiles are 0")
}

// MigProfile is a parsed mig-parted profile string: "<g>g.<gb>gb" or
// "<c>c.<g>g.<gb>gb", optionally followed by "+me".
type MigProfile struct {
	C, G, GB        int
	MediaExtensions bool
}

// GI returns the GPU-instance part of the profile ("3g.40gb", "1g.10gb+me").
func (m MigProfile) GI() string {
	s := fmt.Sprintf("%dg.%dgb", m.G, m.GB)
	if m.MediaExtensions {
		s += "+me"
	}
	return s
}

// String renders the profile the way mig-parted does.
func (m MigProfile) String() string {
	if m.C == m.G {
		return m.GI()
	}
	return fmt.Sprintf("%dc.%s", m.C, m.GI())
}

// ParseMigProfile parses a profile string with mig-parted's rules and
// error texts.
func ParseMigProfile(profile string) (*MigProfile, error) {
	if len(profile) == 0 {
		return nil, fmt.Errorf("empty MigProfile string")
	}
	fields, attrs, hasAttrs := strings.Cut(profile, "+")
	var attr []string
	if hasAttrs {
		var err error
		if attr, err = parseMigProfileAttributes(attrs); err != nil {
			return nil, fmt.Errorf("error parsing attributes following '+' in MigProfile string: %v", err)
		}
	}
	c, g, gb, err := parseMigProfileFields(fields)
	if err != nil {
		return nil, fmt.Errorf("error parsing '.' separated fields in MigProfile string: %v", err)
	}
	valid := func(n int) bool { return n == 1 || n == 2 || n == 3 || n == 4 || n == 6 || n == 7 || n == 8 }
	if !valid(c) {
		return nil, fmt.Errorf("unknown Compute Instance slice size: %v", c)
	}
	if !valid(g) {
		return nil, fmt.Errorf("unknown GPU Instance slice size: %v", g)
	}
	m := &MigProfile{C: c, G: g, GB: gb}
	for _, a := range attr {
		if a != "me" {
			return nil, fmt.Errorf("unknown MigProfile attribute: %v", a)
		}
		m.MediaExtensions = true
	}
	return m, nil
}

func parseMigProfileField(s, field string) (int, error) {
	if strings.TrimSpace(s) != s {
		return -1, fmt.Errorf("leading or trailing spaces on '%%d%s'", field)
	}
	if !strings.HasSuffix(s, field) {
		return -1, fmt.Errorf("missing '%s' from '%%d%s'", field, field)
	}
	v, err := strconv.Atoi(strings.TrimSuffix(s, field))
	if err != nil {
		return -1, fmt.Errorf("malformed number in '%%d%s'", field)
	}
	return v, nil
}

func parseMigProfileFields(s string) (c, g, gb int, err error) {
	parts := strings.SplitN(s, ".", 3)
	switch len(parts) {
	case 3:
		if c, err = parseMigProfileField(parts[0], "c"); err != nil {
			return -1, -1, -1, err
		}
		if g, err = parseMigProfileField(parts[1], "g"); err != nil {
			return -1, -1, -1, err
		}
		if gb, err = parseMigProfileField(parts[2], "gb"); err != nil {
			return -1, -1, -1, err
		}
		return c, g, gb, nil
	case 2:
		if g, err = parseMigProfileField(parts[0], "g"); err != nil {
			return -1, -1, -1, err
		}
		if gb, err = parseMigProfileField(parts[1], "gb"); err != nil {
			return -1, -1, -1, err
		}
		return g, g, gb, nil
	}
	return -1, -1, -1, fmt.Errorf("parsed wrong number of fields, expected 2 or 3")
}

func parseMigProfileAttributes(s string) ([]string, error) {
	attr := strings.Split(s, ",")
	seen := map[string]bool{}
	for _, a := range attr {
		if seen[a] {
			return nil, fmt.Errorf("non unique attribute in list")
		}
		if a == "" {
			return nil, fmt.Errorf("empty attribute in list")
		}
		if strings.TrimSpace(a) != a {
			return nil, fmt.Errorf("leading or trailing spaces in attribute")
		}
		if a[0] >= '0' && a[0] <= '9' {
			return nil, fmt.Errorf("attribute begins with a number")
		}
		for _, r := range a {
			if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
				return nil, fmt.Errorf("non alpha-numeric character or digit in attribute")
			}
		}
		seen[a] = true
	}
	return attr, nil
}

// DeviceID is a PCI id as mig-parted's device filters spell it.
type DeviceID struct {
	Device, Vendor                   uint16
	SubsystemDevice, SubsystemVendor uint16
	HasSubsystem                     bool
}

// String renders "0xDDDDVVVV[:0xSSSSVVVV]".
func (d DeviceID) String() string {
	s := fmt.Sprintf("0x%04X%04X", d.Device, d.Vendor)
	if d.HasSubsystem {
		s += fmt.Sprintf(":0x%04X%04X", d.SubsystemDevice, d.SubsystemVendor)
	}
	return s
}

// ParseFilterDeviceID parses a device-filter item like mig-parted's
// NewDeviceIDFromString (strconv base 0, so "0x" means hex; the value is
// device<<16|vendor).
func ParseFilterDeviceID(str string) (DeviceID, error) {
	parts := strings.Split(str, ":")
	if len(parts) > 2 {
		return DeviceID{}, fmt.Errorf("invalid DeviceID format '%v': expected '<devicevendor>' or '<devicevendor>:<subdevicevendor>'", str)
	}
	raw, err := strconv.ParseUint(parts[0], 0, 32)
	if err != nil {
		return DeviceID{}, fmt.Errorf("unable to create DeviceID from string '%v': %v", str, err)
	}
	id := DeviceID{Device: uint16(raw >> 16), Vendor: uint16(raw & 0xffff)}
	if len(parts) == 2 {
		sub, err := strconv.ParseUint(parts[1], 0, 32)
		if err != nil {
			return DeviceID{}, fmt.Errorf("unable to create Subsystem from string '%v': %v", str, err)
		}
		id.SubsystemDevice, id.SubsystemVendor, id.HasSubsystem = uint16(sub>>16), uint16(sub&0xffff), true
	}
	return id, nil
}

// Matches reports whether the filter id selects hardware id hw: device and
// vendor must match; a subsystem-qualified filter must match it too.
func (d DeviceID) Matches(hw DeviceID) bool {
	if d.Device != hw.Device || d.Vendor != hw.Vendor {
		return false
	}
	if d.HasSubsystem {
		return hw.HasSubsystem && d.SubsystemDevice == hw.SubsystemDevice && d.SubsystemVendor == hw.SubsystemVendor
	}
	return true
}

// Filters returns the entry's device-filter items.
func (ms *MigConfigSpec) Filters() []string {
	switch df := ms.DeviceFilter.(type) {
	case string:
		if df != "" {
			return []string{df}
		}
	case []string:
		return df
	}
	return nil
}

// MatchesDeviceFilter reports whether the entry selects a GPU with id hw.
// Unparsable filter items match nothing (mig-parted ignores their error).
func (ms *MigConfigSpec) MatchesDeviceFilter(hw DeviceID) bool {
	f := ms.Filters()
	if len(f) == 0 {
		return true
	}
	for _, s := range f {
		id, err := ParseFilterDeviceID(s)
		if err == nil && id.Matches(hw) {
			return true
		}
	}
	return false
}

// MatchesAllDevices reports devices: all.
func (ms *MigConfigSpec) MatchesAllDevices() bool {
	s, ok := ms.Devices.(string)
	return ok && s == "all"
}

// MatchesDevices reports whether the entry selects GPU index i.
func (ms *MigConfigSpec) MatchesDevices(i int) bool {
	if list, ok := ms.Devices.([]int); ok {
		for _, d := range list {
			if d == i {
				return true
			}
		}
	}
	return ms.MatchesAllDevices()
}

// DevicesString renders the devices field ("all" or "[0,1]").
func (ms *MigConfigSpec) DevicesString() string {
	if list, ok := ms.Devices.([]int); ok {
		s := make([]string, len(list))
		for i, d := range list {
			s[i] = strconv.Itoa(d)
		}
		return "[" + strings.Join(s, ",") + "]"
	}
	if s, ok := ms.Devices.(string); ok {
		return s
	}
	return ""
}
