package kubeletcfg

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"empty", "", "empty KubeletConfiguration"},
		{"no apiVersion", "kind: KubeletConfiguration\n", "apiVersion: required"},
		{"wrong apiVersion", "apiVersion: kubelet.config.k8s.io/v1\nkind: KubeletConfiguration\n", `kc.yaml:1: apiVersion: "kubelet.config.k8s.io/v1" is not supported`},
		{"wrong kind", "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: Pod\n", `kc.yaml:2: kind: this is a kubelet.config.k8s.io/v1beta1 Pod, not a kubelet.config.k8s.io/v1beta1 KubeletConfiguration`},
		{"unknown field", "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicyy: static\n", `kc.yaml:3: unknown field "cpuManagerPolicyy"`},
		{"wrong type", "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nreservedMemory: {numaNode: 0}\n", "reservedMemory"},
		{"bad quantity", "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nreservedMemory: [{numaNode: 0, limits: {memory: 1Gx}}]\n", "quantities must match"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.in), "kc.yaml")
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "kc.yaml:") {
				t.Fatalf("err = %v, want kc.yaml: ...%s...", err, tt.want)
			}
		})
	}
}

func TestParseDefaults(t *testing.T) {
	c, err := Parse([]byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"), "kc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	kc := c.KC
	if kc.CPUManagerPolicy != "none" || kc.MemoryManagerPolicy != "None" || kc.TopologyManagerPolicy != "none" || kc.TopologyManagerScope != "container" {
		t.Errorf("defaults: %q %q %q %q", kc.CPUManagerPolicy, kc.MemoryManagerPolicy, kc.TopologyManagerPolicy, kc.TopologyManagerScope)
	}
	if !c.EvictionHardDefaulted || kc.EvictionHard["memory.available"] != "100Mi" {
		t.Errorf("evictionHard = %v", kc.EvictionHard)
	}
	c, err = Parse([]byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nevictionHard: {nodefs.available: 5%}\nmergeDefaultEvictionSettings: true\n"), "kc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.KC.EvictionHard["memory.available"] != "100Mi" || c.KC.EvictionHard["nodefs.available"] != "5%" {
		t.Errorf("merged evictionHard = %v", c.KC.EvictionHard)
	}
}

func TestNewLeavesRawMapsAlone(t *testing.T) {
	merge := true
	raw := KubeletConfiguration{EvictionHard: map[string]string{"nodefs.available": "5%"}, MergeDefaultEvictionSettings: &merge}
	c := New("kc", raw)
	if c.KC.EvictionHard["memory.available"] != "100Mi" || c.KC.CPUManagerPolicy != CPUPolicyNone {
		t.Errorf("defaults not applied: %+v", c.KC)
	}
	if len(raw.EvictionHard) != 1 {
		t.Errorf("New changed the caller's evictionHard: %v", raw.EvictionHard)
	}
}

func TestReservationError(t *testing.T) {
	c, err := Parse([]byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nkubeReserved: {cpu: lots}\n"), "kc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Reservation(c, nil); err == nil || !strings.Contains(err.Error(), "kubeReserved: --kube-reserved value failed to parse") {
		t.Errorf("err = %v", err)
	}
	c, err = Parse([]byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nevictionHard: {memory.available: 5%}\n"), "kc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Reservation(c, nil); err == nil || !strings.Contains(err.Error(), "a node is needed") {
		t.Errorf("percentage without node: err = %v", err)
	}
}

// FuzzParse: an error names the file, and a line it names is inside the
// input; an accepted config has the apiVersion and kind of the spec, and
// written back as YAML (defaults applied) parses to the same
// configuration, on which Lint gives the same findings.
func FuzzParse(f *testing.F) {
	f.Add([]byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicy: static\nreservedSystemCPUs: 0-1\n"))
	f.Add([]byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nreservedMemory: [{numaNode: 0, limits: {memory: 1Gi}}]\nevictionHard: {memory.available: 5%}\n"))
	f.Add([]byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmergeDefaultEvictionSettings: true\nevictionHard: {nodefs.available: 5%}\nkubeReserved: {cpu: 500m}\n"))
	f.Add([]byte("{}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b, "fuzz.yaml")
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "fuzz.yaml:") {
				t.Fatalf("error does not start with the file name: %v", err)
			}
			lines := 1 + bytes.Count(b, []byte("\n"))
			rest := strings.TrimPrefix(msg, "fuzz.yaml:")
			if i := strings.IndexByte(rest, ':'); i > 0 {
				if n, err := strconv.Atoi(rest[:i]); err == nil && (n < 1 || n > lines) {
					t.Fatalf("error names line %d of %d: %s", n, lines, msg)
				}
			}
			return
		}
		if c.KC.APIVersion != "kubelet.config.k8s.io/v1beta1" || c.KC.Kind != "KubeletConfiguration" || c.Name != "fuzz.yaml" {
			t.Fatalf("accepted %q %q named %q", c.KC.APIVersion, c.KC.Kind, c.Name)
		}
		out, err := yaml.Marshal(c.KC)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Parse(out, "fuzz.yaml")
		if err != nil {
			t.Fatalf("the config written back does not parse: %v\n%s", err, out)
		}
		// Equal as JSON: an absent list and an empty one are the same
		// configuration.
		j1, err1 := json.Marshal(c.KC)
		j2, err2 := json.Marshal(again.KC)
		if err1 != nil || err2 != nil || !bytes.Equal(j1, j2) {
			t.Fatalf("round trip differs (%v, %v):\n%s\n%s", err1, err2, j1, j2)
		}
		r := Lint(c, nil)
		if r.SchemaVersion != ReportSchema {
			t.Fatal("schema")
		}
		// Whether evictionHard was written or defaulted changes only the
		// findings that say so; the rest must be equal.
		again.EvictionHardDefaulted = c.EvictionHardDefaulted
		if r2 := Lint(again, nil); !reflect.DeepEqual(r2, r) {
			t.Fatalf("Lint differs after the round trip:\n%+v\n%+v", r.Findings, r2.Findings)
		}
	})
}
