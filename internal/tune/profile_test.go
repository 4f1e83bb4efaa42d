package tune

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBuiltinProfiles(t *testing.T) {
	cat := NewCatalogue()
	l := &Loader{Cat: cat}
	tests := []struct {
		name string
		want map[string]string
		none []string
	}{
		{ProfileBase, map[string]string{"vm.swappiness": "0", "kernel.numa_balancing": "0", "limits.memlock": "unlimited"}, []string{"mm.thp.enabled", "swap"}},
		{ProfileTraining, map[string]string{"mm.thp.enabled": "always", "swap": "off", "cpu.governor": "performance", "vm.dirty": "auto"}, []string{"boot.isolcpus", "cpu.idle.max-latency-us"}},
		{ProfileInference, map[string]string{"mm.thp.enabled": "never", "mm.thp.defrag": "never", "cpu.idle.max-latency-us": "2", "boot.processor.max_cstate": "1"}, []string{"boot.isolcpus"}},
		{ProfileInferenceIsolated, map[string]string{"mm.thp.enabled": "never", "boot.isolcpus": "auto", "boot.irqaffinity": "auto"}, nil},
	}
	for _, tt := range tests {
		p, err := l.Load(tt.name)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range tt.want {
			if p.Settings[k] != v {
				t.Errorf("%s: %s = %q, want %q", tt.name, k, p.Settings[k], v)
			}
		}
		for _, k := range tt.none {
			if _, ok := p.Settings[k]; ok {
				t.Errorf("%s: %s is set", tt.name, k)
			}
		}
		for k, v := range p.Settings {
			if err := cat.validate(k, v); err != nil {
				t.Errorf("%s: %s: %v", tt.name, k, err)
			}
		}
	}
	if p, _ := l.Load(ProfileTraining); p.Origin["vm.swappiness"] != ProfileBase || p.Origin["mm.thp.enabled"] != ProfileTraining {
		t.Errorf("origins = %v", p.Origin)
	}
}

// Every catalogue entry is complete, and every built-in value is valid.
func TestCatalogueComplete(t *testing.T) {
	cat := NewCatalogue()
	seen := map[string]bool{}
	for _, s := range cat.Settings() {
		if seen[s.ID] {
			t.Errorf("duplicate id %s", s.ID)
		}
		seen[s.ID] = true
		if s.Why == "" || s.Title == "" || s.Layer == "" || s.knob == nil {
			t.Errorf("%s: incomplete entry", s.ID)
		}
		if !strings.Contains(s.Why, "seed") && !strings.Contains(s.Why, "reference") && !strings.Contains(s.Why, "topology") && !strings.Contains(s.Why, "system_tuning.sh") {
			t.Errorf("%s: why has no seed/reference pointer", s.ID)
		}
		m := s.Mechanism()
		if m.Read == "" || m.Runtime == "" || m.Persistent == "" || m.Revert == "" {
			t.Errorf("%s: mechanism incomplete: %+v", s.ID, m)
		}
		for prof, v := range s.Desired {
			if !isBuiltin(prof) {
				t.Errorf("%s: desired for unknown profile %q", s.ID, prof)
			}
			if v != valueOff {
				if err := cat.validate(s.ID, v); err != nil {
					t.Errorf("%s/%s: %v", s.ID, prof, err)
				}
			}
		}
	}
	// The list of knobs.
	for _, id := range []string{"cpu.governor", "cpu.epp", "cpu.idle.max-latency-us", "boot.processor.max_cstate", "boot.intel_idle.max_cstate", "boot.idle",
		"mm.thp.enabled", "mm.thp.defrag", "vm.nr_hugepages", "mm.hugepages.per-node", "swap", "vm.swappiness", "vm.dirty", "vm.dirty-background",
		"kernel.numa_balancing", "vm.zone_reclaim_mode", "limits.memlock", "limits.nofile", "systemd.DefaultLimitMEMLOCK", "net.core.rmem_max",
		"net.core.wmem_max", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "boot.isolcpus", "boot.nohz_full", "boot.rcu_nocbs", "boot.irqaffinity",
		"boot.iommu", "pcie.acs", "irqbalance", "shm.size", "cpu.smt", "pcie.link"} {
		if cat.Get(id) == nil {
			t.Errorf("catalogue lacks %s", id)
		}
	}
}

func TestUserProfiles(t *testing.T) {
	cat := NewCatalogue()
	l := &Loader{Cat: cat}
	p, err := l.Load("testdata/profiles/child.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"vm.swappiness": "1", "mm.hugepages.per-node": "1024", "mm.thp.defrag": "never", "mm.thp.enabled": "always", "swap": "off"}
	for k, v := range want {
		if p.Settings[k] != v {
			t.Errorf("%s = %q, want %q", k, p.Settings[k], v)
		}
	}
	for _, k := range []string{"cpu.epp", "net.core.rmem_max", "net.core.wmem_max"} {
		if _, ok := p.Settings[k]; ok {
			t.Errorf("%s should be disabled", k)
		}
	}
	if p.Origin["mm.thp.defrag"] != "child" || p.Origin["vm.swappiness"] != "my-training" || p.Origin["kernel.numa_balancing"] != ProfileBase {
		t.Errorf("origins = %v", p.Origin)
	}
	if _, err := l.Load("testdata/profiles/cycle-a.yaml"); !errors.Is(err, ErrProfile) || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("cycle: %v", err)
	}
	if _, err := l.Load("nope"); !errors.Is(err, ErrProfile) || !strings.Contains(err.Error(), "unknown profile") {
		t.Errorf("unknown name: %v", err)
	}
}

func TestProfileErrors(t *testing.T) {
	cat := NewCatalogue()
	tests := []struct {
		name, yaml, want string
	}{
		{"syntax", "name: x\nsettings: [\n", "bad.yaml: yaml"},
		{"not a mapping", "- a\n- b\n", "bad.yaml:1: want a mapping"},
		{"unknown key", "name: x\nsetings: {}\n", "bad.yaml:2: setings: unknown key"},
		{"unknown setting", "name: x\nsettings:\n  vm.swapiness: 1\n", "bad.yaml:3: settings.vm.swapiness: unknown setting or check id \"vm.swapiness\""},
		{"bad value", "name: x\nsettings:\n  mm.thp.enabled: sometimes\n", `bad.yaml:3: settings.mm.thp.enabled: "sometimes" is not one of always, madvise, never`},
		{"out of range", "name: x\nsettings:\n  vm.swappiness: 500\n", "bad.yaml:3: settings.vm.swappiness: 500 is outside 0..200"},
		{"bad dirty", "name: x\nsettings:\n  vm.dirty: lots\n", "settings.vm.dirty:"},
		{"tiny dirty bytes", "name: x\nsettings:\n  vm.dirty: 4096\n", "under two pages"},
		{"bad cpulist", "name: x\nsettings:\n  boot.isolcpus: 3-1\n", "settings.boot.isolcpus"},
		{"map value", "name: x\nsettings:\n  vm.swappiness: {a: 1}\n", "bad.yaml:3: settings.vm.swappiness: want a scalar"},
		{"duplicate setting", "name: x\nsettings:\n  vm.swappiness: 1\n  vm.swappiness: 2\n", "bad.yaml:4: settings.vm.swappiness: duplicate"},
		{"missing name", "settings:\n  vm.swappiness: 1\n", "name: missing"},
		{"builtin name", "name: training\n", "is a built-in profile"},
		{"bad disable", "name: x\ndisable: [vm.nope]\n", `bad.yaml:2: disable: unknown setting or check id "vm.nope"`},
		{"bad include", "name: x\ninclude: {a: b}\n", "bad.yaml:2: include: want a profile name"},
		{"bad apiVersion", "apiVersion: v2\nname: x\n", "bad.yaml:1: apiVersion"},
		{"check value", "name: x\nsettings:\n  pcie.acs: fix\n", `"fix" is not one of check`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseProfile("bad.yaml", []byte(tt.yaml), cat, cat.Describe())
			if !errors.Is(err, ErrProfile) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrProfile containing %q", err, tt.want)
			}
		})
	}
	// An include that fails names both files.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("name: a\ninclude: b.yaml\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "b.yaml"), []byte("name: b\nsettings:\n  nope: 1\n"), 0o644)
	_, err := (&Loader{Cat: cat}).Load(filepath.Join(dir, "a.yaml"))
	if err == nil || !strings.Contains(err.Error(), "a.yaml: include") || !strings.Contains(err.Error(), "b.yaml:3: settings.nope") {
		t.Errorf("nested include error = %v", err)
	}
}

func FuzzParseProfile(f *testing.F) {
	for _, name := range []string{"my-training.yaml", "child.yaml", "cycle-a.yaml"} {
		b, err := os.ReadFile(filepath.Join("testdata/profiles", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("name: x\nsettings:\n  vm.dirty: 32G\n  boot.isolcpus: 2-7\n"))
	f.Add([]byte("name: [\n"))
	cat := NewCatalogue()
	f.Fuzz(func(t *testing.T, b []byte) {
		raw, err := parseProfile("fuzz.yaml", b, cat, cat.Describe())
		if err != nil {
			if !errors.Is(err, ErrProfile) || !strings.Contains(err.Error(), "fuzz.yaml") {
				t.Fatalf("error %v is not an ErrProfile naming the file", err)
			}
			return
		}
		// Whatever parses names known settings with valid values.
		for _, e := range raw.set {
			if err := cat.validate(e.id, e.value); err != nil {
				t.Fatalf("accepted %s=%q: %v", e.id, e.value, err)
			}
		}
		if raw.name == "" {
			t.Fatal("accepted a profile without a name")
		}
	})
}
