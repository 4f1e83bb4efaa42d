package mig

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	yamlnode "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// examples are mig-parted's own published configs (see SOURCES.md there).
func examples(t testing.TB) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob("testdata/mig-parted-examples/*.yaml")
	if err != nil || len(files) < 5 {
		t.Fatalf("examples: %v %v", files, err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = b
	}
	return out
}

// looseEntry is an entry decoded by a second, unrelated YAML library with
// no rules at all, to cross-check what ParseMigParted kept.
type looseEntry struct {
	Filter  any            `yaml:"device-filter"`
	Devices any            `yaml:"devices"`
	Enabled bool           `yaml:"mig-enabled"`
	Counts  map[string]int `yaml:"mig-devices"`
}

func TestPublishedExamplesParse(t *testing.T) {
	// validatesOK is the offline verdict on each published example. The
	// Hopper file asks for eight 1g.10gb and an 8g.80gb, which the
	// catalogue's H100 (7 compute slices) cannot hold; the default file
	// names products the catalogue lacks (RTX PRO 6000 Blackwell, GB200).
	validatesOK := map[string]bool{
		"examples-config.yaml":         true,
		"dgx-station-80gb-config.yaml": true,
		"systemd-config.yaml":          true,
		"systemd-config-hopper.yaml":   false,
		"systemd-config-default.yaml":  false,
	}
	for name, data := range examples(t) {
		t.Run(name, func(t *testing.T) {
			spec, err := ParseMigParted(data)
			if err != nil {
				t.Fatal(err)
			}
			var loose struct {
				Configs map[string][]looseEntry `yaml:"mig-configs"`
			}
			if err := yamlnode.Unmarshal(data, &loose); err != nil {
				t.Fatal(err)
			}
			if len(spec.MigConfigs) != len(loose.Configs) || len(spec.MigConfigs) == 0 {
				t.Fatalf("%d labels, the file has %d", len(spec.MigConfigs), len(loose.Configs))
			}
			for label, want := range loose.Configs {
				got := spec.MigConfigs[label]
				if len(got) != len(want) {
					t.Fatalf("%s: %d entries, want %d", label, len(got), len(want))
				}
				for i, w := range want {
					g := got[i]
					if g.MigEnabled != w.Enabled || !reflect.DeepEqual(map[string]int(g.MigDevices), w.Counts) && len(w.Counts)+len(g.MigDevices) > 0 {
						t.Errorf("%s[%d]: enabled %v devices %v, want %v %v", label, i, g.MigEnabled, g.MigDevices, w.Enabled, w.Counts)
					}
					switch d := w.Devices.(type) {
					case string:
						if !g.Devices.All || d != "all" {
							t.Errorf("%s[%d]: devices %v, file says %v", label, i, g.Devices, d)
						}
					case []any:
						if g.Devices.All || len(g.Devices.Indices) != len(d) {
							t.Errorf("%s[%d]: devices %v, file says %v", label, i, g.Devices, d)
						}
						for j := range d {
							if d[j] != g.Devices.Indices[j] {
								t.Errorf("%s[%d]: index %d is %v, file says %v", label, i, j, g.Devices.Indices[j], d[j])
							}
						}
					default:
						t.Errorf("%s[%d]: file devices %T", label, i, d)
					}
					switch f := w.Filter.(type) {
					case nil:
						if len(g.Filters()) != 0 {
							t.Errorf("%s[%d]: filter %v, file has none", label, i, g.Filters())
						}
					case string:
						if !g.DeviceFilter.Single || len(g.Filters()) != 1 || g.Filters()[0] != f {
							t.Errorf("%s[%d]: filter %+v, file says %q", label, i, g.DeviceFilter, f)
						}
					case []any:
						if g.DeviceFilter.Single || len(g.Filters()) != len(f) {
							t.Errorf("%s[%d]: filter %+v, file says %v", label, i, g.DeviceFilter, f)
						}
					}
					// Every published filter item is a real PCI id.
					for _, s := range g.Filters() {
						id, err := ParseFilterDeviceID(s)
						if err != nil || id.Vendor != 0x10DE || !strings.HasPrefix(s, "0x") || id.String() != "0x"+strings.ToUpper(s[2:]) {
							t.Errorf("%s[%d]: filter %q -> %v %v", label, i, s, id, err)
						}
					}
				}
			}
			if why := acceptedSpecProblem(spec); why != "" {
				t.Fatal(why)
			}
			// And each validates offline, one result per label.
			v, err := Builtin().Validate(context.Background(), spec, ValidateOptions{File: name})
			if err != nil || len(v.Configs) != len(spec.MigConfigs) {
				t.Fatalf("validate: %v", err)
			}
			if want, known := validatesOK[name]; known && v.OK != want {
				t.Errorf("validate OK = %v, want %v", v.OK, want)
			}
		})
	}
}

// The default config needs today's profile rules (attributes other than
// "me", dotted attributes and "-" attributes).
func TestDefaultConfigNeedsCurrentProfileRules(t *testing.T) {
	spec, err := ParseMigParted(examples(t)["systemd-config-default.yaml"])
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]MigProfile{
		"all-1g.24gb.gfx":    {C: 1, G: 1, GB: 24, Attributes: []string{"gfx"}},
		"all-1g.24gb.me.all": {C: 1, G: 1, GB: 24, Attributes: []string{"me.all"}},
		"all-1g.24gb-me":     {C: 1, G: 1, GB: 24, NegAttributes: []string{"me"}},
		"all-1g.10gb.me":     {C: 1, G: 1, GB: 10, Attributes: []string{"me"}},
		"all-7g.189gb":       {C: 7, G: 7, GB: 189},
	}
	for label, w := range want {
		entries := spec.MigConfigs[label]
		if len(entries) != 1 || len(entries[0].MigDevices) != 1 {
			t.Fatalf("%s: %+v", label, entries)
		}
		for name := range entries[0].MigDevices {
			p, err := ParseMigProfile(name)
			if err != nil || !reflect.DeepEqual(*p, w) || p.String() != name {
				t.Errorf("%s: %q -> %+v (%v), want %+v", label, name, p, err, w)
			}
		}
	}
}

func TestParseMigPartedRefusals(t *testing.T) {
	const head = "version: v1\nmig-configs:\n  a:\n"
	cases := []struct {
		name, yaml string
		line       int
		path, msg  string
	}{
		{"no version", "mig-configs:\n  a:\n  - devices: all\n    mig-enabled: false\n", 0, "", "unable to parse with missing 'version' field"},
		{"v2", "version: v2\n", 1, "version", "unknown version: v2"},
		{"empty mapping", "{}\n", 0, "version", "unknown version: "},
		{"version list", "version: [v1]\n", 1, "version", "want a string, got a list"},
		{"stray top key", "version: v1\nlabels: {}\n", 2, "labels", "unexpected field: labels"},
		{"top list", "- version: v1\n", 0, "", "want a mapping, got a list"},
		{"no labels", "version: v1\nmig-configs: {}\n", 2, "mig-configs", "at least one entry in 'mig-configs' is required"},
		{"null labels", "version: v1\nmig-configs:\n", 2, "mig-configs", "at least one entry in 'mig-configs' is required"},
		{"empty label", head + "  - devices: all\n    mig-enabled: false\n  b: []\n", 6, "mig-configs.b", "at least one entry in 'b' is required"},
		{"label not list", head + "    devices: all\n", 3, "mig-configs.a", "want a list of entries, got a mapping"},
		{"entry without devices", head + "  - mig-enabled: false\n", 4, "mig-configs.a[0]", "missing required field: devices"},
		{"entry without enabled", head + "  - devices: all\n", 4, "mig-configs.a[0]", "missing required field: mig-enabled"},
		{"null entry", head + "  - null\n", 4, "mig-configs.a[0]", "missing required field: devices"},
		{"devices word", head + "  - devices: some\n    mig-enabled: false\n", 4, "mig-configs.a[0].devices", "invalid string input for 'devices': some"},
		{"devices null", head + "  - devices: null\n    mig-enabled: false\n", 4, "mig-configs.a[0].devices", "invalid string input for 'devices': "},
		{"devices mapping", head + "  - devices: {x: 1}\n    mig-enabled: false\n", 4, "mig-configs.a[0].devices", `want "all" or a list of GPU indices, got a mapping`},
		{"devices fraction", head + "  - devices: [0, 1.5]\n    mig-enabled: false\n", 4, "mig-configs.a[0].devices", `got a list`},
		{"filter number", head + "  - device-filter: 7\n    devices: all\n    mig-enabled: false\n", 4, "mig-configs.a[0].device-filter", "want a PCI device id or a list of them, got the number 7"},
		{"enabled word", head + "  - devices: all\n    mig-enabled: \"true\"\n", 5, "mig-configs.a[0].mig-enabled", "want true or false, got a string"},
		{"stray entry key", head + "  - devices: all\n    mig-enabled: false\n    gpus: 2\n", 6, "mig-configs.a[0].gpus", "unexpected field: gpus"},
		{"enabled without list", head + "  - devices: all\n    mig-enabled: true\n", 4, "mig-configs.a[0]", "missing required field 'mig-devices' when 'mig-enabled' is true"},
		{"enabled with null list", head + "  - devices: all\n    mig-enabled: true\n    mig-devices: ~\n", 4, "mig-configs.a[0]", "missing required field 'mig-devices' when 'mig-enabled' is true"},
		{"disabled with list", head + "  - devices: all\n    mig-enabled: false\n    mig-devices: {1g.5gb: 1}\n", 6, "mig-configs.a[0].mig-devices", "MIG devices included when 'mig-enabled' is false"},
		{"all zero", head + "  - devices: all\n    mig-enabled: true\n    mig-devices:\n      1g.5gb: 0\n      2g.10gb: 0\n", 6, "mig-configs.a[0].mig-devices", "error validating values in 'mig-devices' field: all counts for all MigProfiles are 0"},
		{"negative", head + "  - devices: all\n    mig-enabled: true\n    mig-devices:\n      1g.5gb: 1\n      2g.10gb: -1\n", 8, `mig-configs.a[0].mig-devices["2g.10gb"]`, "error validating values in 'mig-devices' field: invalid count for '-1': <nil>"},
		{"fraction", head + "  - devices: all\n    mig-enabled: true\n    mig-devices:\n      1g.5gb: 1.5\n", 7, `mig-configs.a[0].mig-devices["1g.5gb"]`, "want a whole number of instances, got the number 1.5"},
		{"bad unit", head + "  - devices: all\n    mig-enabled: true\n    mig-devices:\n      1x.5gb: 1\n", 7, `mig-configs.a[0].mig-devices["1x.5gb"]`,
			"error validating values in 'mig-devices' field: invalid format for '1x.5gb': cannot parse fields of '1x.5gb': missing 'g' from '%dg'"},
		{"both signs", head + "  - devices: all\n    mig-enabled: true\n    mig-devices:\n      1g.5gb+me-x: 1\n", 7, `mig-configs.a[0].mig-devices["1g.5gb+me-x"]`,
			"invalid format for '1g.5gb+me-x': profile '1g.5gb+me-x' contains both '+/-' attributes"},
		{"list for counts", head + "  - devices: all\n    mig-enabled: true\n    mig-devices: [1g.5gb]\n", 6, "mig-configs.a[0].mig-devices", "want a mapping, got a list"},
		{"json", `{"version": "v1", "mig-configs": {"a": [{"devices": "all"}]}}`, 1, "mig-configs.a[0]", "missing required field: mig-enabled"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseMigParted([]byte(tc.yaml))
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v (%T), want a *SpecError", err, err)
			}
			if se.Line != tc.line || se.Path != tc.path || !strings.Contains(se.Msg, tc.msg) {
				t.Fatalf("got line %d path %q msg %q\nwant line %d path %q msg ~%q", se.Line, se.Path, se.Msg, tc.line, tc.path, tc.msg)
			}
		})
	}
	if _, err := ParseMigParted([]byte("version: v1\nmig-configs: [\n")); err == nil || !strings.Contains(err.Error(), "not YAML: yaml: line") {
		t.Errorf("syntax error: %v", err)
	}
}

func TestDecodeWithEncodingJSON(t *testing.T) {
	var spec MigPartedSpec
	err := json.Unmarshal([]byte(`{"version":"v1","mig-configs":{"a":[{"devices":[1],"mig-enabled":true,"mig-devices":{"1g.10gb":1}}]}}`), &spec)
	if err != nil || !spec.MigConfigs["a"][0].MatchesDevices(1) || spec.MigConfigs["a"][0].MigDevices["1g.10gb"] != 1 {
		t.Fatalf("%+v %v", spec, err)
	}
	err = yaml.Unmarshal([]byte("version: v1\nmig-configs:\n  a:\n  - devices: all\n"), &spec)
	var se *SpecError
	if !errors.As(err, &se) || se.Path != "mig-configs.a[0]" || se.Line != 0 || se.Msg != "missing required field: mig-enabled" {
		t.Fatalf("%v", err)
	}
}

func TestSpecErrorText(t *testing.T) {
	_, err := ParseMigParted([]byte("version: v1\nmig-configs:\n  a:\n  - mig-enabled: false\n"))
	if want := "line 4: mig-configs.a[0]: missing required field: devices"; err == nil || err.Error() != want {
		t.Fatalf("%v, want %q", err, want)
	}
	if got := (&SpecError{Msg: "x"}).Error(); got != "x" {
		t.Errorf("bare error %q", got)
	}
}

func TestParseMigPartedAccepts(t *testing.T) {
	cases := []struct {
		name, yaml string
		check      func(*MigPartedSpec) bool
	}{
		{"empty file", "", func(s *MigPartedSpec) bool { return s.Version == "" && s.MigConfigs == nil }},
		{"null document", "~\n", func(s *MigPartedSpec) bool { return s.Version == "" && s.MigConfigs == nil }},
		{"version only", "version: v1\n", func(s *MigPartedSpec) bool { return s.Version == "v1" && s.MigConfigs == nil }},
		{"yaml 1.1 booleans", "version: v1\nmig-configs:\n  a:\n  - devices: all\n    mig-enabled: yes\n    mig-devices: {}\n", func(s *MigPartedSpec) bool {
			e := s.MigConfigs["a"][0]
			return e.MigEnabled && e.MigDevices != nil && len(e.MigDevices) == 0
		}},
		{"null filter and counts", "version: v1\nmig-configs:\n  a:\n  - device-filter: null\n    devices: []\n    mig-enabled: true\n    mig-devices: {1g.5gb: null, 2g.10gb: 1}\n", func(s *MigPartedSpec) bool {
			e := s.MigConfigs["a"][0]
			c, there := e.MigDevices["1g.5gb"]
			return reflect.DeepEqual(e.DeviceFilter, DeviceFilter{}) && !e.Devices.All && len(e.Devices.Indices) == 0 && there && c == 0
		}},
		{"zero counts beside one", "version: v1\nmig-configs:\n  a:\n  - devices: [0, 3]\n    device-filter: [\"0x233010DE:0x16C110DE\", junk]\n    mig-enabled: true\n    mig-devices: {1g.10gb: 0, 0g.0gb+x1.y: 2}\n", func(s *MigPartedSpec) bool {
			e := s.MigConfigs["a"][0]
			return !e.DeviceFilter.Single && len(e.Filters()) == 2 && e.MatchesDevices(3) && !e.MatchesDevices(1) && e.MigDevices["0g.0gb+x1.y"] == 2
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseMigParted([]byte(tc.yaml))
			if err != nil || !tc.check(s) {
				t.Fatalf("%+v %v", s, err)
			}
		})
	}
	// An empty spec parses, but Validate has nothing to check.
	s, _ := ParseMigParted(nil)
	if _, err := Builtin().Validate(context.Background(), s, ValidateOptions{File: "e.yaml"}); !errors.Is(err, ErrNoSuchConfig) {
		t.Errorf("empty spec validated: %v", err)
	}
}

func TestMarshalSpelling(t *testing.T) {
	spec := &MigPartedSpec{Version: MigPartedVersion, MigConfigs: map[string]MigConfigSpecSlice{"x": {
		{DeviceFilter: DeviceFilter{IDs: []string{"0x233010DE"}, Single: true}, Devices: DeviceSelector{All: true}, MigEnabled: true, MigDevices: MigConfig{"1g.10gb": 7}},
		{DeviceFilter: DeviceFilter{IDs: []string{"0x20B010DE", "0x20B210DE"}}, Devices: DeviceSelector{Indices: []int{1, 2}}},
		{Devices: DeviceSelector{}, MigDevices: MigConfig{}},
	}}}
	b, err := yaml.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	want := `mig-configs:
  x:
  - device-filter: "0x233010DE"
    devices: all
    mig-devices:
      1g.10gb: 7
    mig-enabled: true
  - device-filter:
    - "0x20B010DE"
    - "0x20B210DE"
    devices:
    - 1
    - 2
    mig-devices: null
    mig-enabled: false
  - devices: []
    mig-devices: {}
    mig-enabled: false
version: v1
`
	if string(b) != want {
		t.Fatalf("got\n%s\nwant\n%s", b, want)
	}
}

func TestParseMigProfile(t *testing.T) {
	good := []struct {
		in    string
		want  MigProfile
		canon string
	}{
		{"1g.5gb", MigProfile{C: 1, G: 1, GB: 5}, "1g.5gb"},
		{"1c.3g.40gb", MigProfile{C: 1, G: 3, GB: 40}, "1c.3g.40gb"},
		{"3c.3g.20gb", MigProfile{C: 3, G: 3, GB: 20}, "3g.20gb"},
		{"07g.080gb", MigProfile{C: 7, G: 7, GB: 80}, "7g.80gb"},
		{"5g.5gb", MigProfile{C: 5, G: 5, GB: 5}, "5g.5gb"},
		{"0c.0g.0gb", MigProfile{}, "0g.0gb"},
		{"1g.10gb+me", MigProfile{C: 1, G: 1, GB: 10, Attributes: []string{"me"}}, "1g.10gb+me"},
		{"1g.24gb+me.all", MigProfile{C: 1, G: 1, GB: 24, Attributes: []string{"me.all"}}, "1g.24gb+me.all"},
		{"1g.5gb+gfx,me", MigProfile{C: 1, G: 1, GB: 5, Attributes: []string{"gfx", "me"}}, "1g.5gb+gfx,me"},
		{"2c.4g.96gb-me,gfx", MigProfile{C: 2, G: 4, GB: 96, NegAttributes: []string{"me", "gfx"}}, "2c.4g.96gb-me,gfx"},
		{"1g.5gb+A9.b", MigProfile{C: 1, G: 1, GB: 5, Attributes: []string{"A9.b"}}, "1g.5gb+A9.b"},
	}
	for _, tc := range good {
		p, err := ParseMigProfile(tc.in)
		if err != nil || !reflect.DeepEqual(*p, tc.want) || p.String() != tc.canon {
			t.Errorf("%q -> %+v %v; want %+v %q", tc.in, p, err, tc.want, tc.canon)
		}
	}
	bad := map[string]string{
		"":                          "profile is the empty string",
		"1g":                        "cannot parse fields of '1g': parsed wrong number of fields, expected 2 or 3",
		"-1g.5gb":                   "cannot parse fields of '-1g.5gb': parsed wrong number of fields, expected 2 or 3",
		"1g.5gb+me-":                "profile '1g.5gb+me-' contains both '+/-' attributes",
		" 1g.5gb":                   "cannot parse fields of ' 1g.5gb': leading or trailing spaces on '%dg'",
		"1g.5gb\u00a0":              "cannot parse fields of '1g.5gb\u00a0': leading or trailing spaces on '%dgb'",
		"1g.5":                      "cannot parse fields of '1g.5': missing 'gb' from '%dgb'",
		"1c.1g.5gb.x":               "cannot parse fields of '1c.1g.5gb.x': missing 'gb' from '%dgb'",
		"1c.1x.5gb":                 "cannot parse fields of '1c.1x.5gb': missing 'g' from '%dg'",
		"1x.yg.5":                   "cannot parse fields of '1x.yg.5': missing 'c' from '%dc'",
		"xg.5gb":                    "cannot parse fields of 'xg.5gb': malformed number in '%dg'",
		"1g.99999999999999999999gb": "cannot parse fields of '1g.99999999999999999999gb': malformed number in '%dgb'",
		"1g.5gb+":                   "cannot parse attributes of '1g.5gb+': empty attribute in list",
		"1g.5gb-":                   "cannot parse attributes of '1g.5gb-': empty attribute in list",
		"1g.5gb+gfx,gfx":            "cannot parse attributes of '1g.5gb+gfx,gfx': non unique attribute in list",
		"1g.5gb+me, x":              "cannot parse attributes of '1g.5gb+me, x': leading or trailing spaces in attribute",
		"1g.5gb+9gfx":               "cannot parse attributes of '1g.5gb+9gfx': attribute begins with a number",
		"1g.5gb+me.":                "cannot parse attributes of '1g.5gb+me.': attribute begins/ends with a dot",
		"1g.5gb+m_e":                "cannot parse attributes of '1g.5gb+m_e': non alpha-numeric character or digit in attribute",
		"1g.5gb+mé":                 "cannot parse attributes of '1g.5gb+mé': non alpha-numeric character or digit in attribute",
		"1g.5gb+me+x":               "cannot parse attributes of '1g.5gb+me+x': non alpha-numeric character or digit in attribute",
	}
	refusesWith(t, bad, func(s string) error { _, err := ParseMigProfile(s); return err })
}

// refusesWith checks that parse refuses every key of texts with exactly the
// text it maps to.
func refusesWith(t *testing.T, texts map[string]string, parse func(string) error) {
	t.Helper()
	for _, in := range sortedKeys(texts) {
		got := fmt.Sprint(parse(in))
		if got != texts[in] {
			t.Errorf("%q:\n   got %s\n  want %s", in, got, texts[in])
		}
	}
}

func TestFilterDeviceID(t *testing.T) {
	ok := map[string]DeviceID{
		"0x233010DE":            {Device: 0x2330, Vendor: 0x10DE},
		"0x233010de":            {Device: 0x2330, Vendor: 0x10DE},
		"590352606":             {Device: 0x2330, Vendor: 0x10DE},
		"0x2330_10DE":           {Device: 0x2330, Vendor: 0x10DE},
		"0x2330":                {Device: 0, Vendor: 0x2330},
		"0x233010DE:0x16C110DE": {Device: 0x2330, Vendor: 0x10DE, SubsystemDevice: 0x16C1, SubsystemVendor: 0x10DE, HasSubsystem: true},
		"-1":                    {Device: 0xFFFF, Vendor: 0xFFFF},
	}
	for in, want := range ok {
		if got, err := ParseFilterDeviceID(in); err != nil || got != want {
			t.Errorf("%q -> %+v %v, want %+v", in, got, err, want)
		}
	}
	bad := map[string]string{
		"1:2:3":        "invalid DeviceID format '1:2:3': expected '<devicevendor>' or '<devicevendor>:<subdevicevendor>'",
		"garbage":      `unable to create DeviceID from string 'garbage': strconv.ParseInt: parsing "garbage": invalid syntax`,
		"0x80000000":   `unable to create DeviceID from string '0x80000000': strconv.ParseInt: parsing "0x80000000": value out of range`,
		"0x233010DE:x": `unable to create Subsystem from string '0x233010DE:x': strconv.ParseInt: parsing "x": invalid syntax`,
		"":             `unable to create DeviceID from string '': strconv.ParseInt: parsing "": invalid syntax`,
	}
	refusesWith(t, bad, func(s string) error { _, err := ParseFilterDeviceID(s); return err })

	// Two boards of one GPU model that differ only in subsystem, and which
	// of them each filter selects.
	boards := map[byte]DeviceID{
		'A': {Device: 0x2330, Vendor: 0x10DE, SubsystemDevice: 0x16C1, SubsystemVendor: 0x10DE, HasSubsystem: true},
		'B': {Device: 0x2330, Vendor: 0x10DE, SubsystemDevice: 0x1839, SubsystemVendor: 0x10DE, HasSubsystem: true},
	}
	selects := map[string]string{
		"":                                 "AB",
		"0x233010DE":                       "AB",
		"0x233010DE:0x16C110DE":            "A",
		"0x20B010DE,0x233010DE:0x183910DE": "B",
		"not-an-id":                        "",
		"0x2330":                           "",
	}
	for filter, want := range selects {
		e := MigConfigSpec{Devices: DeviceSelector{All: true}}
		if filter != "" {
			e.DeviceFilter.IDs = strings.Split(filter, ",")
		}
		got := ""
		for _, name := range []byte("AB") {
			if e.MatchesDeviceFilter(boards[name]) {
				got += string(name)
			}
		}
		if got != want {
			t.Errorf("filter %q selects boards %q, want %q", filter, got, want)
		}
	}
	if s := boards['B'].String(); s != "0x233010DE:0x183910DE" {
		t.Errorf("String %q", s)
	}
	sel := DeviceSelector{Indices: []int{0, 2}}
	if !sel.Selects(2) || sel.Selects(1) || sel.String() != "[0,2]" || (DeviceSelector{All: true}).String() != "all" {
		t.Error("device selector")
	}
}

// acceptedSpecProblem returns what is wrong with a spec ParseMigParted
// accepted, "" when it keeps every promise: a version-less spec is empty,
// labels have entries, MIG on means a mig-devices map and off means an
// empty one, every map passes AssertValid, and writing the spec out gives a
// file that reads back to the same spec.
func acceptedSpecProblem(spec *MigPartedSpec) string {
	if spec.Version == "" {
		if spec.MigConfigs != nil {
			return "labels without a version"
		}
		return ""
	}
	if spec.Version != MigPartedVersion {
		return "version " + spec.Version
	}
	for label, entries := range spec.MigConfigs {
		if len(entries) == 0 {
			return "empty label " + label
		}
		for _, e := range entries {
			switch {
			case e.MigEnabled && e.MigDevices == nil:
				return label + ": MIG on without mig-devices"
			case !e.MigEnabled && len(e.MigDevices) != 0:
				return label + ": MIG off with mig-devices"
			case e.MigDevices.AssertValid() != nil:
				return label + ": " + e.MigDevices.AssertValid().Error()
			}
		}
	}
	written, err := yaml.Marshal(spec)
	if err != nil {
		return err.Error()
	}
	if again, err := ParseMigParted(written); err != nil || !reflect.DeepEqual(again, spec) {
		return fmt.Sprintf("does not read back (%v):\n%s", err, written)
	}
	return ""
}

func FuzzParseMigPartedConfig(f *testing.F) {
	seeds := []string{
		string(examples(f)["systemd-config.yaml"]),
		"version: v1\nmig-configs:\n  a:\n  - devices: [0, 1]\n    device-filter: \"0x233010DE\"\n    mig-enabled: true\n    mig-devices: {1c.3g.40gb-me: 1, 2g.20gb: 0}\n",
		`{"version":"v1","mig-configs":{"a":[{"devices":"all","mig-enabled":false,"mig-devices":null}]}}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, err := ParseMigParted(data)
		var refusal *SpecError
		switch {
		case err == nil:
			if why := acceptedSpecProblem(spec); why != "" {
				t.Fatal(why)
			}
		case errors.As(err, &refusal):
			if refusal.Msg == "" || refusal.Line < 0 {
				t.Fatalf("empty refusal %+v", refusal)
			}
		case !strings.HasPrefix(err.Error(), "not YAML: "):
			t.Fatalf("neither a refusal nor a YAML error: %T %v", err, err)
		}
	})
}

// FuzzParseMigProfile: an accepted name has sane parts, its canonical
// spelling reads back to the same parts, and its attributes are the text
// after the sign; a refused non-empty name is quoted in the error.
func FuzzParseMigProfile(f *testing.F) {
	for _, s := range []string{"1g.5gb", "1c.3g.40gb+me", "7g.80gb", "1g.24gb-me", "1g.24gb+me.all,gfx", "1g.5gb+me,x,", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseMigProfile(s)
		if err != nil {
			if s != "" && !strings.Contains(err.Error(), "'"+s+"'") {
				t.Fatalf("%q: error does not quote the profile: %v", s, err)
			}
			return
		}
		problems := map[string]bool{
			"negative size":            min(p.C, p.G, p.GB) < 0,
			"both signs":               p.Attributes != nil && p.NegAttributes != nil,
			"attributes without a '+'": (p.Attributes != nil) != strings.Contains(s, "+"),
			"attributes without a '-'": (p.NegAttributes != nil) != strings.Contains(s, "-"),
		}
		if _, tail, ok := strings.Cut(s, "+"); ok && strings.Join(p.Attributes, ",") != tail {
			problems["attributes differ from the text"] = true
		}
		if _, tail, ok := strings.Cut(s, "-"); ok && strings.Join(p.NegAttributes, ",") != tail {
			problems["negative attributes differ from the text"] = true
		}
		if q, err := ParseMigProfile(p.String()); err != nil || !reflect.DeepEqual(p, q) {
			problems["canonical name does not read back"] = true
		}
		for what, bad := range problems {
			if bad {
				t.Errorf("%q -> %+v (%q): %s", s, p, p.String(), what)
			}
		}
	})
}

// BenchmarkParseMigParted reads mig-parted's DGX Station example (9
// labels, 18 entries; the 2023 rules also accept it, for before/after).
func BenchmarkParseMigParted(b *testing.B) {
	data := examples(b)["dgx-station-80gb-config.yaml"]
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ParseMigParted(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseMigProfile(b *testing.B) {
	names := []string{"1g.5gb", "1c.3g.40gb", "1g.10gb+me", "2c.4g.40gb", "7g.80gb"}
	for b.Loop() {
		for _, n := range names {
			if _, err := ParseMigProfile(n); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// ParseMigPartedFile names the file and line first, as compilers do, then
// mig-parted's prefix and the field.
func TestParseMigPartedFileNamesLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"version: v1\nmig-configs:\n  all-1g.10gb:\n    - devices: banana\n      mig-enabled: false\n",
			`config.yaml:4: error parsing config file: mig-configs["all-1g.10gb"][0].devices: invalid string input for 'devices': banana`},
		{"version: v1\nmig-configs:\n  a:\n  - devices: all\n    mig-enabled: true\n    mig-devices: {\"1g.10gb\": [\n",
			"config.yaml:6: error parsing config file: not YAML: yaml: line 6: "},
	} {
		_, err := ParseMigPartedFile("config.yaml", []byte(tc.in))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("err = %v\nwant %s...", err, tc.want)
		}
	}
	_, err := ParseMigPartedFile("c.yaml", []byte("version: v1\nmig-configs:\n  a:\n  - mig-enabled: false\n"))
	var se *SpecError
	if !errors.As(err, &se) || se.Line != 4 {
		t.Errorf("the refusal does not wrap the *SpecError of line 4: %v", err)
	}
}
