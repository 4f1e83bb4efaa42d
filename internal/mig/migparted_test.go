package mig

import (
	"context"
	"strings"
	"testing"
)

func TestParseMigPartedErrors(t *testing.T) {
	cases := []struct {
		name, in, err string
	}{
		{"no version", "mig-configs:\n  a:\n    - devices: all\n      mig-enabled: false\n", "unable to parse with missing 'version' field"},
		{"bad version", "version: v2\n", "unknown version: v2"},
		{"empty configs", "version: v1\nmig-configs: {}\n", "at least one entry in 'mig-configs' is required"},
		{"empty label", "version: v1\nmig-configs:\n  a: []\n", "at least one entry in 'a' is required"},
		{"unexpected top", "version: v1\nfoo: 1\n", "unexpected field: foo"},
		{"missing devices", "version: v1\nmig-configs:\n  a:\n    - mig-enabled: false\n", "missing required field: devices"},
		{"missing enabled", "version: v1\nmig-configs:\n  a:\n    - devices: all\n", "missing required field: mig-enabled"},
		{"devices string", "version: v1\nmig-configs:\n  a:\n    - devices: some\n      mig-enabled: false\n", "invalid string input for 'devices': some"},
		{"devices type", "version: v1\nmig-configs:\n  a:\n    - devices: {x: 1}\n      mig-enabled: false\n", "(json: cannot unmarshal object into Go value of type string, json: cannot unmarshal object into Go value of type []int)"},
		{"filter type", "version: v1\nmig-configs:\n  a:\n    - device-filter: 7\n      devices: all\n      mig-enabled: false\n", "(json: cannot unmarshal number into Go value of type string, json: cannot unmarshal number into Go value of type []string)"},
		{"unexpected entry field", "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: false\n      extra: 1\n", "unexpected field: extra"},
		{"enabled no devices", "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n", "missing required field 'mig-devices' when 'mig-enabled' is true"},
		{"disabled with devices", "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: false\n      mig-devices: {\"1g.5gb\": 1}\n", "MIG devices included when 'mig-enabled' is false"},
		{"all zero", "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {\"1g.5gb\": 0}\n", "error validating values in 'mig-devices' field: all counts for all MigProfiles are 0"},
		{"negative", "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {\"1g.5gb\": -1}\n", "error validating values in 'mig-devices' field: invalid count for '-1': <nil>"},
		{"bad profile", "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {\"1x.5gb\": 1}\n", "error validating values in 'mig-devices' field: invalid format for '1x.5gb': error parsing '.' separated fields in MigProfile string: missing 'g' from '%dg'"},
		{"bad attr", "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {\"1g.5gb+gfx\": 1}\n", "invalid format for '1g.5gb+gfx': unknown MigProfile attribute: gfx"},
		{"slice size", "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {\"5g.5gb\": 1}\n", "unknown Compute Instance slice size: 5"},
		{"float count", "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {\"1g.5gb\": 1.5}\n", "cannot unmarshal number 1.5"},
		{"yaml syntax", "version: v1\nmig-configs: [\n", "error converting YAML to JSON"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseMigParted([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err = %v, want %q", err, tc.err)
			}
			if !strings.HasPrefix(err.Error(), "unmarshal error: ") {
				t.Fatalf("err %q lacks mig-parted's prefix", err)
			}
		})
	}
	// An empty document is accepted (as by mig-parted) but Validate
	// refuses it.
	spec, err := ParseMigParted(nil)
	if err != nil || len(spec.MigConfigs) != 0 {
		t.Fatalf("empty file: %v %v", spec, err)
	}
	if _, err := Builtin().Validate(context.Background(), spec, ValidateOptions{File: "e.yaml"}); err == nil || !strings.Contains(err.Error(), "no mig-configs") {
		t.Fatalf("empty spec validated: %v", err)
	}
	// The full text, as mig-parted prints it after "error parsing config file: ".
	_, err = ParseMigParted([]byte("version: v1\nmig-configs:\n  a:\n    - mig-enabled: false\n"))
	if want := "unmarshal error: error unmarshaling JSON: while decoding JSON: missing required field: devices"; err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
}

func TestParseMigProfile(t *testing.T) {
	ok := map[string]string{"1g.5gb": "1g.5gb", "1c.3g.40gb": "1c.3g.40gb", "1g.10gb+me": "1g.10gb+me", "3c.3g.20gb": "3g.20gb", "8g.96gb": "8g.96gb"}
	for in, want := range ok {
		m, err := ParseMigProfile(in)
		if err != nil || m.String() != want {
			t.Errorf("ParseMigProfile(%q) = %v, %v; want %s", in, m, err, want)
		}
	}
	bad := map[string]string{
		"":             "empty MigProfile string",
		"1g":           "parsed wrong number of fields, expected 2 or 3",
		" 1g.5gb":      "leading or trailing spaces on '%dg'",
		"1g.5":         "missing 'gb' from '%dgb'",
		"xg.5gb":       "malformed number in '%dg'",
		"1g.5gb+":      "empty attribute in list",
		"1g.5gb+me,me": "non unique attribute in list",
		"1g.5gb+1me":   "attribute begins with a number",
		"1g.5gb+m-e":   "non alpha-numeric character or digit in attribute",
		"1g.5gb+ me":   "leading or trailing spaces in attribute",
		"5c.1g.5gb":    "unknown Compute Instance slice size: 5",
		"1c.5g.5gb":    "unknown GPU Instance slice size: 5",
	}
	for in, want := range bad {
		if _, err := ParseMigProfile(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseMigProfile(%q) err = %v, want %q", in, err, want)
		}
	}
}

func TestDeviceFilter(t *testing.T) {
	hw := DeviceID{Device: 0x2330, Vendor: 0x10de, SubsystemDevice: 0x16c1, SubsystemVendor: 0x10de, HasSubsystem: true}
	cases := []struct {
		filter any
		want   bool
	}{
		{nil, true}, {"", true}, {"0x233010DE", true}, {"0x233010de", true}, {[]string{"0x20B010DE", "0x233010DE"}, true},
		{"0x233010DE:0x16C110DE", true}, {"0x233010DE:0x16C210DE", false}, {"0x2330", false}, {"garbage", false},
		{"0x233110DE", false}, {"1:2:3", false},
	}
	for _, tc := range cases {
		e := MigConfigSpec{DeviceFilter: tc.filter, Devices: "all"}
		if got := e.MatchesDeviceFilter(hw); got != tc.want {
			t.Errorf("filter %v: %v, want %v", tc.filter, got, tc.want)
		}
	}
	if _, err := ParseFilterDeviceID("1:2:3"); err == nil || !strings.Contains(err.Error(), "invalid DeviceID format '1:2:3'") {
		t.Errorf("err %v", err)
	}
	e := MigConfigSpec{Devices: []int{0, 2}}
	if !e.MatchesDevices(2) || e.MatchesDevices(1) || e.MatchesAllDevices() {
		t.Error("devices list matching")
	}
}

const sampleConfig = `version: v1
mig-configs:
  all-disabled:
    - devices: all
      mig-enabled: false
  balanced:
    - device-filter: ["0x233010DE", "0x233110DE"]
      devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 2
        "2g.20gb": 1
        "3g.40gb": 1
    - device-filter: "0x20B010DE"
      devices: all
      mig-enabled: true
      mig-devices:
        "1g.5gb": 2
        "2g.10gb": 1
        "3g.20gb": 1
  too-much:
    - devices: [0]
      mig-enabled: true
      mig-devices:
        "3g.40gb": 2
        "1g.10gb": 1
    - devices: [1]
      mig-enabled: false
  wrong-model:
    - device-filter: "0x233010DE"
      devices: all
      mig-enabled: true
      mig-devices:
        "3g.20gb": 2
`

func TestValidate(t *testing.T) {
	spec, err := ParseMigParted([]byte(sampleConfig))
	if err != nil {
		t.Fatal(err)
	}
	c := Builtin()
	ctx := context.Background()
	node := NodeGPUs([]uint16{0x2330, 0x2330})
	v, err := c.Validate(ctx, spec, ValidateOptions{File: "x.yaml", GPUs: node})
	if err != nil {
		t.Fatal(err)
	}
	okBy := map[string]bool{}
	for _, cr := range v.Configs {
		okBy[cr.Label] = cr.OK
	}
	want := map[string]bool{"all-disabled": true, "balanced": true, "too-much": false, "wrong-model": false}
	for l, w := range want {
		if okBy[l] != w {
			t.Errorf("%s: ok=%v, want %v", l, okBy[l], w)
		}
	}
	if v.OK {
		t.Error("validation OK despite failing configs")
	}
	// balanced: entry 0 selects both H100s, entry 1 selects none.
	bal := v.Configs[1]
	if bal.Label != "balanced" || len(bal.Entries[0].Checks) != 1 || len(bal.Entries[0].Checks[0].GPUs) != 2 || bal.Entries[0].Checks[0].Layout == nil {
		t.Errorf("balanced entry 0: %+v", bal.Entries[0])
	}
	if len(bal.Entries[1].Checks) != 0 || len(bal.Entries[1].Warnings) == 0 {
		t.Errorf("balanced entry 1 should select nothing: %+v", bal.Entries[1])
	}
	tm := v.Configs[2].Entries[0].Checks[0]
	if tm.OK || !strings.Contains(strings.Join(tm.Problems, ";"), "3g.40gb x2 uses all 8 memory slices; 1g.10gb needs 1 more") {
		t.Errorf("too-much: %+v", tm)
	}
	wm := v.Configs[3].Entries[0].Checks[0]
	if wm.OK || !strings.Contains(strings.Join(wm.Problems, ";"), `belongs to A100-40GB, not H100-80GB`) {
		t.Errorf("wrong-model: %+v", wm)
	}

	// Without a node: each entry on the products its filter selects.
	v, err = c.Validate(ctx, spec, ValidateOptions{Label: "balanced"})
	if err != nil {
		t.Fatal(err)
	}
	if !v.OK || len(v.Configs) != 1 || len(v.Configs[0].Entries[0].Checks) != 1 || v.Configs[0].Entries[1].Checks[0].Model != "A100-40GB" {
		t.Errorf("balanced without node: %+v", v.Configs)
	}
	// too-much has no filter: checked on every product having its profiles.
	v, _ = c.Validate(ctx, spec, ValidateOptions{Label: "too-much"})
	if v.OK || len(v.Configs[0].Entries[0].Checks) != 2 { // A100-80GB and H100-80GB
		t.Errorf("too-much without node: %+v", v.Configs[0].Entries[0].Checks)
	}
	if _, err := c.Validate(ctx, spec, ValidateOptions{Label: "nope"}); err == nil || !strings.Contains(err.Error(), "selected mig-config not present: nope") {
		t.Errorf("missing label err %v", err)
	}
	// Non-MIG GPU with MIG enabled.
	v, _ = c.Validate(ctx, spec, ValidateOptions{Label: "too-much", GPUs: NodeGPUs([]uint16{0x1db6})})
	if v.OK {
		t.Error("MIG on a V100 accepted")
	}
}

func FuzzParseMigParted(f *testing.F) {
	f.Add([]byte(sampleConfig))
	f.Add([]byte("version: v1\n"))
	f.Add([]byte(`{"version":"v1","mig-configs":{"a":[{"devices":[0,1],"mig-enabled":true,"mig-devices":{"1c.3g.40gb+me":1}}]}}`))
	c := Builtin()
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, err := ParseMigParted(data)
		if err != nil {
			return
		}
		// Like mig-parted, an empty (null) document parses to an empty
		// spec; anything else must be v1.
		if spec.Version != "v1" && (spec.Version != "" || len(spec.MigConfigs) != 0) {
			t.Fatalf("accepted version %q", spec.Version)
		}
		for label, entries := range spec.MigConfigs {
			if len(entries) == 0 {
				t.Fatalf("accepted empty label %q", label)
			}
			for _, e := range entries {
				if e.MigEnabled && e.MigDevices == nil {
					t.Fatal("enabled entry without mig-devices accepted")
				}
				if err := e.MigDevices.AssertValid(); err != nil {
					t.Fatalf("accepted invalid mig-devices: %v", err)
				}
			}
		}
		if _, err := c.Validate(context.Background(), spec, ValidateOptions{GPUs: NodeGPUs([]uint16{0x2330, 0x20b7})}); err != nil && len(spec.MigConfigs) > 0 {
			t.Fatalf("validate: %v", err)
		}
	})
}

func FuzzParseMigProfile(f *testing.F) {
	for _, s := range []string{"1g.5gb", "1c.3g.40gb+me", "7g.80gb", "1g.5gb+me,x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMigProfile(s)
		if err != nil {
			return
		}
		// A parsed profile re-parses to itself.
		m2, err := ParseMigProfile(m.String())
		if err != nil || *m2 != *m {
			t.Fatalf("%q -> %q -> %v, %v", s, m.String(), m2, err)
		}
	})
}
