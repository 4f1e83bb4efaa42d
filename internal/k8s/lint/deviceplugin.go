package lint

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/gpunode/gpunode/internal/k8s/objects"
)

func devicePluginRules() []Rule {
	return []Rule{
		{ID: "deviceplugin.config", Severity: SeverityError, Section: "5.2",
			Summary: "k8s-device-plugin config (file or ConfigMap key): version v1, known fields, migStrategy, sharing resources and replicas",
			Check:   checkDPConfig},
		{ID: "deviceplugin.unread", Severity: SeverityWarning, Section: "5.2",
			Summary: "a device plugin ConfigMap that the ClusterPolicy / device plugin DaemonSet in the input never reads",
			Check:   checkDPUnread},
		{ID: "deviceplugin.mig-strategy", Severity: SeverityError, Section: "5.2",
			Summary: "nvidia.com/mig-* requests only under migStrategy mixed (single and none never advertise them)",
			Check:   checkMIGStrategy},
		{ID: "deviceplugin.shared-request", Severity: SeverityError, Section: "5.2",
			Summary: "no more than 1 shared GPU per container under time-slicing/MPS with failRequestsGreaterThanOne",
			Check:   func(c *Context, emit Emit) { checkSharedRequests(c, emit, true) }},
		{ID: "deviceplugin.renamed", Severity: SeverityWarning, Section: "5.2",
			Summary: "no requests for a resource every sharing config renames (renameByDefault: nvidia.com/gpu becomes nvidia.com/gpu.shared)",
			Check:   checkRenamed},
		{ID: "deviceplugin.shared-multi", Severity: SeverityWarning, Section: "5.2",
			Summary: "more than 1 shared GPU per container under time-slicing/MPS (replicas may be the same GPU)",
			Check:   func(c *Context, emit Emit) { checkSharedRequests(c, emit, false) }},
	}
}

// decodeDP decodes one device plugin config strictly; a failure is kept
// for deviceplugin.config.
func decodeDP(o *Object, prefix, key string, raw []byte) *DPConfig {
	d := &DPConfig{Obj: o, Prefix: prefix, Key: key, Raw: raw}
	cfg := &objects.DevicePluginConfig{}
	serrs, err := sigsjson.UnmarshalStrict(raw, cfg, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		d.Err = strings.TrimPrefix(err.Error(), "json: ")
		return d
	}
	if len(serrs) > 0 {
		d.Err = strings.TrimPrefix(serrs[0].Error(), "json: ")
		if i := strings.Index(d.Err, "unknown field \""); i >= 0 {
			d.Field = strings.TrimSuffix(d.Err[i+len("unknown field \""):], "\"")
		}
		return d
	}
	d.Cfg = cfg
	return d
}

// configMapDP reads a ConfigMap value as a device plugin config when it
// looks like one (a version key and flags/sharing/resources/imex).
func configMapDP(o *Object, key, value string) *DPConfig {
	j, err := yaml.YAMLToJSON([]byte(value))
	if err != nil {
		return nil
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(j, &top) != nil {
		return nil
	}
	if _, ok := top["version"]; !ok || !isDevicePluginConfig(top) {
		return nil
	}
	return decodeDP(o, fmt.Sprintf("data[%s]", key), key, j)
}

func (d *DPConfig) field(f string) string {
	switch {
	case d.Prefix == "":
		return f
	case f == "":
		return d.Prefix
	}
	return d.Prefix + "." + f
}

// where names the config for messages.
func (d *DPConfig) where() string {
	if d.Key != "" {
		return fmt.Sprintf("%s key %s", d.Obj.ID(), d.Key)
	}
	return d.Obj.ID()
}

// migStrategy is the config's strategy ("none" when unset).
func (d *DPConfig) migStrategy() string {
	if d.Cfg == nil || d.Cfg.Flags.MigStrategy == nil {
		return "none"
	}
	return *d.Cfg.Flags.MigStrategy
}

func checkDPConfig(c *Context, emit Emit) {
	for _, d := range c.DP {
		if d.Cfg == nil {
			emit(d.Obj, d.field(d.Field), fmt.Sprintf("the device plugin config does not decode: %s", d.Err),
				"fix the field (names are case-sensitive: version, flags.migStrategy, sharing.timeSlicing|mps.{renameByDefault, failRequestsGreaterThanOne, resources[].{name, rename, devices, replicas}})")
			continue
		}
		cfg := d.Cfg
		if cfg.Version != "v1" {
			emit(d.Obj, d.field("version"), fmt.Sprintf("version %q: the plugin knows only v1 and refuses to start (unknown version)", cfg.Version), "set version: v1")
		}
		if s := d.migStrategy(); s != "none" && s != "single" && s != "mixed" {
			emit(d.Obj, d.field("flags.migStrategy"), fmt.Sprintf("migStrategy %q: the plugin accepts none, single or mixed", s), "set flags.migStrategy to none, single or mixed")
		}
		ts, mps := cfg.Sharing.TimeSlicing, cfg.Sharing.MPS
		if ts != nil && mps != nil && len(ts.Resources) > 0 && len(mps.Resources) > 0 {
			emit(d.Obj, d.field("sharing"), "both sharing.timeSlicing and sharing.mps list resources: the two are mutually exclusive and the plugin uses MPS only",
				"keep one of sharing.timeSlicing and sharing.mps")
		}
		for _, m := range []struct {
			name string
			r    *objects.DPReplicated
		}{{"timeSlicing", ts}, {"mps", mps}} {
			if m.r == nil {
				continue
			}
			base := "sharing." + m.name
			if m.r.Strategy != "" {
				emit(d.Obj, d.field(base+".strategy"), fmt.Sprintf("strategy %q: the plugin knows no %s strategy (leave it unset)", m.r.Strategy, m.name), "remove strategy")
			}
			if len(m.r.Resources) == 0 {
				emit(d.Obj, d.field(base+".resources"), fmt.Sprintf("%s has no resources: the plugin refuses the config (no resources specified)", base), "list the resource to share, e.g. {name: nvidia.com/gpu, replicas: 4}")
			}
			for i, r := range m.r.Resources {
				rf := fmt.Sprintf("%s.resources[%d]", base, i)
				if r.Name == "" {
					emit(d.Obj, d.field(rf+".name"), "resource without a name", "set name: nvidia.com/gpu (or a MIG resource under the mixed strategy)")
				}
				if r.Replicas == nil {
					emit(d.Obj, d.field(rf+".replicas"), fmt.Sprintf("resource %s without replicas: the plugin refuses the config (no replicas specified)", r.Name), "set replicas: N (shared accesses per GPU)")
				} else if *r.Replicas < 1 {
					emit(d.Obj, d.field(rf+".replicas"), fmt.Sprintf("resource %s has replicas %d: it must be 1 or more", r.Name, *r.Replicas), "set replicas to the number of pods that may share one GPU")
				}
				if msg := checkDevices(r.Devices); msg != "" {
					emit(d.Obj, d.field(rf+".devices"), msg, `use "all", a positive count, or a list of GPU indices, MIG indices (gpu:mig) or UUIDs`)
				}
				if m.name == "mps" && r.Name != "" && r.Name != string(ResourceGPU) {
					emit(d.Obj, d.field(rf+".name"), fmt.Sprintf("MPS shares only full GPUs (nvidia.com/gpu), not %s", r.Name), "share nvidia.com/gpu with MPS, or use time-slicing for MIG resources")
				}
				if m.name == "timeSlicing" && strings.HasPrefix(r.Name, "nvidia.com/mig-") && d.migStrategy() != "mixed" {
					emit(d.Obj, d.field(rf+".name"), fmt.Sprintf("time-slicing %s under migStrategy %s: that resource exists only under mixed", r.Name, d.migStrategy()), "set flags.migStrategy: mixed or share nvidia.com/gpu")
				}
			}
		}
	}
}

func checkDevices(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s != "all" {
			return fmt.Sprintf("devices %q: the only string the plugin accepts is \"all\"", s)
		}
		return ""
	}
	var n int
	if json.Unmarshal(raw, &n) == nil {
		if n <= 0 {
			return fmt.Sprintf("devices %d: a count must be > 0", n)
		}
		return ""
	}
	var l []any
	if json.Unmarshal(raw, &l) == nil {
		return ""
	}
	return fmt.Sprintf("devices %s: not \"all\", a count or a list", string(raw))
}

// dpReaders returns the names of ConfigMaps something in the input points
// the device plugin at, and whether anything configures the plugin.
func (c *Context) dpReaders() (map[string]bool, bool) {
	names := map[string]bool{}
	configurer := false
	for _, o := range append(append([]*Object(nil), c.Kind("ClusterPolicy")...), c.Kind(KindOperatorValues)...) {
		spec := operatorSpec(o)
		if spec == nil {
			continue
		}
		configurer = true
		if spec.DevicePlugin.Config != nil && spec.DevicePlugin.Config.Name != "" {
			names[spec.DevicePlugin.Config.Name] = true
		}
	}
	for _, o := range c.Kind(KindDPChartValues) {
		configurer = true
		if n := o.V.(*DPChartValues).Config.Name; n != "" {
			names[n] = true
		}
	}
	for _, o := range c.Kind("DaemonSet") {
		ds := o.V.(*appsv1.DaemonSet)
		if !isDevicePluginPod(&ds.Spec.Template.Spec) {
			continue
		}
		configurer = true
		for _, v := range ds.Spec.Template.Spec.Volumes {
			if v.ConfigMap != nil {
				names[v.ConfigMap.Name] = true
			}
		}
	}
	return names, configurer
}

func isDevicePluginPod(spec *v1.PodSpec) bool {
	for _, ct := range spec.Containers {
		if strings.Contains(ct.Image, "k8s-device-plugin") {
			return true
		}
	}
	return false
}

func checkDPUnread(c *Context, emit Emit) {
	names, configurer := c.dpReaders()
	if !configurer {
		return
	}
	done := map[*Object]bool{}
	for _, d := range c.DP {
		if d.Obj.Kind != "ConfigMap" || done[d.Obj] || names[d.Obj.Name] {
			continue
		}
		done[d.Obj] = true
		known := make([]string, 0, len(names))
		for n := range names {
			known = append(known, n)
		}
		sort.Strings(known)
		emit(d.Obj, "metadata.name", fmt.Sprintf("ConfigMap %s holds a device plugin config (key %s) but nothing in the input reads it: the ClusterPolicy / device plugin DaemonSet reads %s",
			d.Obj.Name, d.Key, orNone(known)), fmt.Sprintf("point devicePlugin.config.name (GPU Operator) or config.name (device plugin chart) at %s, with config.default: %s", d.Obj.Name, d.Key))
	}
}

func orNone(l []string) string {
	if len(l) == 0 {
		return "no ConfigMap"
	}
	return "ConfigMap " + strings.Join(l, ", ")
}

func checkMIGStrategy(c *Context, emit Emit) {
	var strategies []string
	var from string
	for _, o := range append(append([]*Object(nil), c.Kind("ClusterPolicy")...), c.Kind(KindOperatorValues)...) {
		spec := operatorSpec(o)
		s := spec.MIG.Strategy
		if s == "" {
			s = "single"
		}
		strategies = append(strategies, s)
		from = fmt.Sprintf("%s mig.strategy", o.ID())
	}
	if len(strategies) == 0 {
		for _, o := range c.Kind(KindDPChartValues) {
			if s := o.V.(*DPChartValues).MigStrategy; s != "" {
				strategies = append(strategies, s)
				from = fmt.Sprintf("%s migStrategy", o.ID())
			}
		}
	}
	if len(strategies) == 0 {
		for _, d := range c.DP {
			if d.Cfg == nil {
				continue
			}
			strategies = append(strategies, d.migStrategy())
			from = fmt.Sprintf("%s flags.migStrategy", d.where())
		}
	}
	if len(strategies) == 0 {
		return
	}
	for _, s := range strategies {
		if s == "mixed" {
			return
		}
	}
	for _, lr := range c.In.limits {
		r := lr.res
		if !strings.HasPrefix(string(r), "nvidia.com/mig-") {
			continue
		}
		emit(lr.obj, fmt.Sprintf("%s.resources.limits[%s]", lr.path, r), fmt.Sprintf("container %s asks for %s but the MIG strategy is %s (%s): only mixed advertises nvidia.com/mig-<profile>; under single MIG devices are nvidia.com/gpu, under none they are not exposed, so the pod stays Pending",
			lr.name, r, strategies[len(strategies)-1], from), "set the MIG strategy to mixed, or request nvidia.com/gpu on nodes whose MIG layout is uniform (single)")
	}
}

// sharedName is the resource a replicated resource is advertised as.
func sharedName(r objects.DPResource, rename bool) string {
	switch {
	case r.Rename != "":
		return r.Rename
	case rename:
		return r.Name + ".shared"
	}
	return r.Name
}

func checkSharedRequests(c *Context, emit Emit, failing bool) {
	type shared struct {
		d    *DPConfig
		mode string
		fail bool
	}
	byName := map[string][]shared{}
	for _, d := range c.DP {
		if d.Cfg == nil {
			continue
		}
		for _, m := range []struct {
			name string
			r    *objects.DPReplicated
			def  bool
		}{{"timeSlicing", d.Cfg.Sharing.TimeSlicing, false}, {"mps", d.Cfg.Sharing.MPS, true}} {
			if m.r == nil {
				continue
			}
			fail := m.def // the plugin defaults MPS's failRequestsGreaterThanOne to true
			if m.r.FailRequestsGreaterThanOne != nil {
				fail = *m.r.FailRequestsGreaterThanOne
			}
			for _, r := range m.r.Resources {
				if r.Replicas == nil || *r.Replicas < 1 {
					continue
				}
				n := sharedName(r, m.r.RenameByDefault)
				byName[n] = append(byName[n], shared{d, m.name, fail})
			}
		}
	}
	if len(byName) == 0 {
		return
	}
	for _, lr := range c.In.limits {
		r := lr.res
		cfgs := byName[string(r)]
		if len(cfgs) == 0 || lr.value <= 1 {
			continue
		}
		for _, s := range cfgs {
			if s.fail != failing {
				continue
			}
			field := fmt.Sprintf("%s.resources.limits[%s]", lr.path, r)
			if failing {
				emit(lr.obj, field, fmt.Sprintf("container %s asks for %s: %d, but %s shares it with %s and failRequestsGreaterThanOne: kubelet rejects the pod with UnexpectedAdmissionError (%q)",
					lr.name, r, lr.value, s.d.where(), s.mode, fmt.Sprintf(quoteSharedTooLarge, r, lr.value)),
					fmt.Sprintf("ask for %s: 1 (a shared replica is access to a GPU, not a share of it), or use full GPUs on nodes without sharing", r))
			} else {
				emit(lr.obj, field, fmt.Sprintf("container %s asks for %s: %d, shared with %s by %s: the %d replicas may all be the same GPU and give no more compute than 1",
					lr.name, r, lr.value, s.mode, s.d.where(), lr.value), fmt.Sprintf("ask for %s: 1, or set failRequestsGreaterThanOne: true so such requests fail loudly", r))
			}
		}
	}
}

// checkRenamed reports requests for a resource that every sharing config
// of the input advertises under another name only.
func checkRenamed(c *Context, emit Emit) {
	renamed := map[string]string{} // original -> advertised, when all configs agree
	kept := map[string]bool{}
	n := 0
	for _, d := range c.DP {
		if d.Cfg == nil {
			continue
		}
		n++
		seen := map[string]bool{}
		for _, r := range []*objects.DPReplicated{d.Cfg.Sharing.TimeSlicing, d.Cfg.Sharing.MPS} {
			if r == nil {
				continue
			}
			for _, res := range r.Resources {
				if to := sharedName(res, r.RenameByDefault); to != res.Name {
					renamed[res.Name] = to
					seen[res.Name] = true
				}
			}
		}
		for _, name := range []string{string(ResourceGPU)} {
			if !seen[name] {
				kept[name] = true
			}
		}
	}
	if n == 0 {
		return
	}
	for _, lr := range c.In.limits {
		r := lr.res
		to, ok := renamed[string(r)]
		if !ok || kept[string(r)] {
			continue
		}
		emit(lr.obj, fmt.Sprintf("%s.resources.limits[%s]", lr.path, r), fmt.Sprintf("container %s asks for %s, but every device plugin config in the input shares it under the name %s (renameByDefault or rename): no node advertises %s, so the pod stays Pending",
			lr.name, r, to, r), fmt.Sprintf("ask for %s: 1, or keep the name (renameByDefault: false) on some nodes", to))
	}
}
