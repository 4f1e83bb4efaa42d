package kubeletcfg

import (
	"strings"
	"testing"
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

func FuzzParse(f *testing.F) {
	f.Add([]byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicy: static\nreservedSystemCPUs: 0-1\n"))
	f.Add([]byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nreservedMemory: [{numaNode: 0, limits: {memory: 1Gi}}]\nevictionHard: {memory.available: 5%}\n"))
	f.Add([]byte("{}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b, "fuzz.yaml")
		if err != nil {
			return
		}
		// Lint must not panic on any config that decodes.
		r := Lint(c, nil)
		if r.SchemaVersion != ReportSchema {
			t.Fatal("schema")
		}
	})
}
