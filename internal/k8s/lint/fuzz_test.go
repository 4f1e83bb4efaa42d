package lint

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad feeds arbitrary bytes to the loader and the rules: no panic,
// and either a located error or a report whose counts add up.
func FuzzLoad(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join(manifests, "rules", "*", "*.yaml"))
	more, _ := filepath.Glob(filepath.Join(manifests, "seed", "*.yaml"))
	for _, p := range append(seeds, more...) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("version: v1\nsharing: {mps: {resources: [{name: nvidia.com/gpu, replicas: 2}]}}\n"))
	f.Add([]byte("featureGates: {DynamicMIG: true, MPSSupport: true}\n"))
	f.Add([]byte(`{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		l := NewLoader()
		if err := l.Add("fuzz.yaml", data); err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		in := l.Input()
		rep := Run(in)
		if rep.Objects != in.Checked || len(in.Objects) > in.Checked || rep.Findings == nil {
			t.Fatalf("report counts: %+v", rep)
		}
		_ = DocumentLines(data)
	})
}

// FuzzDevicePluginConfig feeds arbitrary ConfigMap values to the device
// plugin config decoder and its rules.
func FuzzDevicePluginConfig(f *testing.F) {
	f.Add("version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n")
	f.Add("version: v1\nflags: {migStrategy: mixed}\nsharing: {timeSlicing: {renameByDefault: true, failRequestsGreaterThanOne: true, resources: [{name: nvidia.com/mig-1g.10gb, devices: all, replicas: 2}]}}\n")
	f.Add("version: v2\nsharing: {mps: {resources: [{name: x, devices: [0, \"1:0\"], replicas: 0}]}}\n")
	f.Fuzz(func(t *testing.T, value string) {
		if len(value) > 1<<14 {
			return
		}
		o := &Object{Kind: "ConfigMap", Name: "c", Namespace: "default"}
		d := configMapDP(o, "k", value)
		if d == nil {
			return
		}
		if (d.Cfg == nil) == (d.Err == "") {
			t.Fatalf("decoded %v with error %q", d.Cfg != nil, d.Err)
		}
		c := &Context{In: &Input{}, DP: []*DPConfig{d}, byKind: map[string][]*Object{}}
		n := 0
		checkDPConfig(c, func(*Object, string, string, string) { n++ })
		if d.Cfg == nil && n == 0 {
			t.Fatal("a config that does not decode gave no finding")
		}
	})
}

// FuzzGpuConfig feeds arbitrary opaque parameters to the GpuConfig parser.
func FuzzGpuConfig(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS","mpsConfig":{"defaultActiveThreadPercentage":50,"defaultPinnedDeviceMemoryLimit":"10Gi"}}}`))
	f.Add([]byte(`{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"TimeSlicing","timeSlicingConfig":{"interval":"Long"}}}`))
	f.Add([]byte(`{"apiVersion":"gpu.nvidia.com/v1","kind":"GpuConfig"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) > 1<<14 {
			return
		}
		msg, field := parseGpuConfig(raw)
		if msg == "" && field != "" {
			t.Fatalf("field %q without a message", field)
		}
	})
}
