package lint

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpunode/gpunode/internal/k8s/objects"
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
		// Document start lines: increasing, each inside the input.
		lines := 1 + strings.Count(string(data), "\n")
		dl := DocumentLines(data)
		for i, n := range dl {
			if n < 1 || n > lines || i > 0 && n <= dl[i-1] {
				t.Fatalf("document lines %v in %d lines", dl, lines)
			}
		}
		// Every finding is of a known rule, at that rule's severity, about
		// an object of this file.
		rules := map[string]Severity{}
		for _, r := range Rules() {
			rules[r.ID] = r.Severity
		}
		for _, fd := range rep.Findings {
			if sev, ok := rules[fd.Rule]; !ok || sev != fd.Severity {
				t.Fatalf("finding of rule %q at %q: not a rule of Rules() (%q)", fd.Rule, fd.Severity, sev)
			}
			if fd.File != "fuzz.yaml" || fd.Doc < 1 || fd.Object == "" || fd.Message == "" {
				t.Fatalf("finding not located in this file: %+v", fd)
			}
		}
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

// foldGet is encoding/json's key match: the value of the key equal to k
// without regard to case; ok is false when none or several keys match
// (several: the last one wins, an order a map loses).
func foldGet(m map[string]any, k string) (v any, ok bool) {
	n := 0
	for key, x := range m {
		if strings.EqualFold(key, k) {
			v, n = x, n+1
		}
	}
	return v, n == 1
}

// pathIn reports whether the dotted path names a non-null value in m
// (exact keys: strict decoding has refused any other spelling).
func pathIn(m map[string]any, path string) bool {
	var v any = m
	for _, k := range strings.Split(path, ".") {
		mm, ok := v.(map[string]any)
		if !ok {
			return false
		}
		if v, ok = mm[k]; !ok {
			return false
		}
	}
	return v != nil
}

// specGpuConfig is a second reader of the NVIDIA DRA driver's GpuConfig
// rules over a generic decode of a document parseGpuConfig accepted:
// the problem it finds, "" when none.
func specGpuConfig(m map[string]any) string {
	kind, _ := foldGet(m, "kind")
	if kind != "GpuConfig" && kind != "MigDeviceConfig" {
		return ""
	}
	sharing, _ := m["sharing"].(map[string]any)
	if sharing == nil {
		return ""
	}
	set := func(k string) bool { return sharing[k] != nil }
	switch sharing["strategy"] {
	case "TimeSlicing":
		if set("mpsConfig") {
			return "mpsConfig under TimeSlicing"
		}
		if kind == "MigDeviceConfig" && set("timeSlicingConfig") {
			return "timeSlicingConfig on a MIG device"
		}
		if ts, _ := sharing["timeSlicingConfig"].(map[string]any); ts != nil && ts["interval"] != nil {
			switch ts["interval"] {
			case "Default", "Short", "Medium", "Long":
			default:
				return fmt.Sprintf("interval %v", ts["interval"])
			}
		}
	case "MPS":
		if set("timeSlicingConfig") {
			return "timeSlicingConfig under MPS"
		}
		mps, _ := sharing["mpsConfig"].(map[string]any)
		if p, ok := mps["defaultActiveThreadPercentage"].(float64); ok && (p < 0 || p > 100) {
			return fmt.Sprintf("percentage %v", p)
		}
		if q, ok := mps["defaultPinnedDeviceMemoryLimit"].(string); ok {
			if v, err := resource.ParseQuantity(q); err != nil || v.Cmp(resource.MustParse("1Mi")) < 0 {
				return fmt.Sprintf("pinned limit %q", q)
			}
		}
	default:
		return fmt.Sprintf("strategy %v", sharing["strategy"])
	}
	return ""
}

// FuzzGpuConfig: a field is named only with a message, and only one of
// the paths the rules check, present in the document when it lies under
// sharing; what is accepted has the driver's apiVersion and a known kind,
// passes specGpuConfig, and decoded into objects.GpuConfig and encoded
// again is accepted again.
func FuzzGpuConfig(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS","mpsConfig":{"defaultActiveThreadPercentage":50,"defaultPinnedDeviceMemoryLimit":"10Gi"}}}`))
	f.Add([]byte(`{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"TimeSlicing","timeSlicingConfig":{"interval":"Long"}}}`))
	f.Add([]byte(`{"apiVersion":"gpu.nvidia.com/v1","kind":"GpuConfig"}`))
	f.Add([]byte(`{"apiVersion":"resource.nvidia.com/v1beta1","kind":"MigDeviceConfig","sharing":{"strategy":"MPS","mpsConfig":{"defaultActiveThreadPercentage":101}}}`))
	f.Add([]byte(`{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS","mpsConfig":{"defaultPinnedDeviceMemoryLimit":"1023Ki"}}}`))
	f.Add([]byte(`{"apiVersion":"resource.nvidia.com/v1beta1","kind":"ComputeDomainChannelConfig","x":1}`))
	fields := map[string]bool{"apiVersion": true, "kind": true, "sharing.strategy": true,
		"sharing.mpsConfig": true, "sharing.timeSlicingConfig": true, "sharing.timeSlicingConfig.interval": true,
		"sharing.mpsConfig.defaultActiveThreadPercentage": true, "sharing.mpsConfig.defaultPinnedDeviceMemoryLimit": true}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) > 1<<14 {
			return
		}
		msg, field := parseGpuConfig(raw)
		if msg == "" && field != "" {
			t.Fatalf("field %q without a message", field)
		}
		var m map[string]any
		generic := json.Unmarshal(raw, &m)
		if field != "" {
			if !fields[field] {
				t.Fatalf("field %q is none the rules check: %s", field, msg)
			}
			if strings.HasPrefix(field, "sharing.") && field != "sharing.strategy" && !pathIn(m, field) {
				t.Fatalf("field %q is not in the document: %s", field, msg)
			}
			return
		}
		if msg != "" {
			return
		}
		if generic != nil {
			t.Fatalf("accepted what does not decode: %v", generic)
		}
		av, ok1 := foldGet(m, "apiVersion")
		kind, ok2 := foldGet(m, "kind")
		if ok1 && av != "resource.nvidia.com/v1beta1" {
			t.Fatalf("accepted apiVersion %v", av)
		}
		switch kind {
		case "GpuConfig", "MigDeviceConfig", "ComputeDomainChannelConfig", "ComputeDomainDaemonConfig", "VfioDeviceConfig":
		default:
			if ok2 {
				t.Fatalf("accepted kind %v", kind)
			}
		}
		if !ok1 || !ok2 || (kind != "GpuConfig" && kind != "MigDeviceConfig") {
			return
		}
		if p := specGpuConfig(m); p != "" {
			t.Fatalf("accepted, the second reader finds %s", p)
		}
		g := &objects.GpuConfig{}
		if err := json.Unmarshal(raw, g); err != nil {
			t.Fatal(err)
		}
		out, err := json.Marshal(g)
		if err != nil {
			t.Fatal(err)
		}
		if msg, field := parseGpuConfig(out); msg != "" {
			t.Fatalf("%s re-encoded as %s: %s (%s)", raw, out, msg, field)
		}
	})
}
