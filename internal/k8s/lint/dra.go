package lint

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	sigsjson "sigs.k8s.io/json"

	"github.com/gpunode/gpunode/internal/k8s/dra"
	"github.com/gpunode/gpunode/internal/k8s/objects"
)

// CEL goes through internal/k8s/dra's shared environment (dra.NewCELCache,
// dra.CompileSelector: upstream's compiler from
// k8s.io/dynamic-resource-allocation/cel).

func draRules() []Rule {
	return []Rule{
		{ID: "dra.device-class", Severity: SeverityError, Section: "5.3",
			Summary: "claims and templates name a DeviceClass that is in the input (or one the NVIDIA driver chart installs)",
			Check:   checkDeviceClass},
		{ID: "dra.cel", Severity: SeverityError, Section: "5.3",
			Summary: "CEL selectors of claims, templates and DeviceClasses compile (k8s.io/dynamic-resource-allocation/cel)",
			Check:   checkCEL},
		{ID: "dra.attribute", Severity: SeverityWarning, Section: "5.3",
			Summary: "CEL selectors name attributes the driver publishes (the input's ResourceSlices, else the NVIDIA driver's list)",
			Check:   checkCELAttributes},
		{ID: "dra.mig-attribute", Severity: SeverityError, Section: "5.3.3",
			Summary: "no MIG-only attribute (parentUUID, profile) in a request of the full-GPU class gpu.nvidia.com",
			Check:   checkMIGAttributes},
		{ID: "dra.constraint-attribute", Severity: SeverityError, Section: "5.5.5",
			Summary: "matchAttribute/distinctAttribute name an attribute some device has",
			Check:   checkConstraintAttributes},
		{ID: "dra.gpuconfig", Severity: SeverityError, Section: "5.3.2",
			Summary: "GpuConfig/MigDeviceConfig opaque parameters parse: strategy TimeSlicing|MPS, its own settings only, interval, thread percentage",
			Check:   checkGpuConfig},
		{ID: "dra.mps-dynamic-mig", Severity: SeverityError, Section: "5.3.4",
			Summary: "no MPS sharing together with the driver's DynamicMIG feature gate (mutually exclusive)",
			Check:   checkMPSDynamicMIG},
	}
}

// NVIDIA driver names.
const (
	driverGPU        = dra.DriverName
	classGPU         = "gpu.nvidia.com"
	classMIG         = "mig.nvidia.com"
	domainK8s        = "resource.kubernetes.io"
	groupNVIDIAParam = "resource.nvidia.com/v1beta1"
)

// chartClasses are the DeviceClasses the NVIDIA DRA driver's chart
// installs: claims may name them without the input holding them.
func chartClasses() map[string]bool {
	return map[string]bool{classGPU: true, classMIG: true, "vfio.gpu.nvidia.com": true,
		"compute-domain-default-channel.nvidia.com": true, "compute-domain-daemon.nvidia.com": true}
}

// Attributes the NVIDIA driver publishes (unqualified names are in the
// driver's domain gpu.nvidia.com).
func gpuAttributes() map[string]bool {
	m := map[string]bool{}
	for _, a := range []string{"type", "uuid", "productName", "brand", "architecture", "cudaComputeCapability", "driverVersion", "cudaDriverVersion", "addressingMode", "index", "minor"} {
		m[a] = true
	}
	return m
}

func migOnlyAttributes() map[string]bool {
	return map[string]bool{"parentUUID": true, "profile": true, "parentIndex": true, "parentMinor": true}
}

func k8sAttributes() map[string]bool {
	return map[string]bool{"pciBusID": true, "pcieRoot": true, "numaNode": true}
}

// claimSpec is one claim spec of the input with its field path.
type claimSpec struct {
	obj  *Object
	path string // "spec" or "spec.spec"
	spec *resourceapi.ResourceClaimSpec
}

func (c *Context) claimSpecs() []claimSpec {
	var out []claimSpec
	for _, kind := range []string{"ResourceClaim", "ResourceClaimTemplate"} {
		for _, o := range c.Kind(kind) {
			switch v := o.V.(type) {
			case *resourceapi.ResourceClaim:
				out = append(out, claimSpec{o, "spec", &v.Spec})
			case *resourceapi.ResourceClaimTemplate:
				out = append(out, claimSpec{o, "spec.spec", &v.Spec.Spec})
			}
		}
	}
	return out
}

// requestAlt is a request or one of its firstAvailable subrequests.
type requestAlt struct {
	path      string
	class     string
	selectors []resourceapi.DeviceSelector
}

func (cs claimSpec) alts() []requestAlt {
	var out []requestAlt
	for i, r := range cs.spec.Devices.Requests {
		base := fmt.Sprintf("%s.devices.requests[%d]", cs.path, i)
		if r.Exactly != nil {
			out = append(out, requestAlt{base + ".exactly", r.Exactly.DeviceClassName, r.Exactly.Selectors})
		}
		for j, s := range r.FirstAvailable {
			out = append(out, requestAlt{fmt.Sprintf("%s.firstAvailable[%d]", base, j), s.DeviceClassName, s.Selectors})
		}
	}
	return out
}

func checkDeviceClass(c *Context, emit Emit) {
	chart := chartClasses()
	for _, cs := range c.claimSpecs() {
		for _, a := range cs.alts() {
			if a.class == "" {
				emit(cs.obj, a.path+".deviceClassName", "the request names no DeviceClass: the API server rejects it", "set deviceClassName (e.g. gpu.nvidia.com)")
				continue
			}
			if c.Classes[a.class] != nil || chart[a.class] {
				continue
			}
			names := make([]string, 0, len(c.Classes))
			for n := range c.Classes {
				names = append(names, n)
			}
			sort.Strings(names)
			emit(cs.obj, a.path+".deviceClassName", fmt.Sprintf("DeviceClass %s is not in the input (classes there: %s) and is not one the NVIDIA DRA driver installs: the claim never allocates and its pods stay Pending",
				a.class, strings.Join(append(names, "(none)")[:max(1, len(names))], ", ")), "name an existing DeviceClass (kubectl get deviceclasses) or add it to the manifests")
		}
	}
}

func checkCEL(c *Context, emit Emit) {
	for _, cs := range c.claimSpecs() {
		for _, a := range cs.alts() {
			for k, s := range a.selectors {
				if s.CEL == nil {
					continue
				}
				if err := c.compileCEL(s.CEL.Expression); err != nil {
					emit(cs.obj, fmt.Sprintf("%s.selectors[%d].cel.expression", a.path, k), fmt.Sprintf("CEL does not compile: %v", oneLine(err.Error())), "fix the expression (device.attributes['gpu.nvidia.com'].NAME, device.capacity['gpu.nvidia.com'].memory, device.driver)")
				}
			}
		}
	}
	for _, o := range c.Kind("DeviceClass") {
		dc := o.V.(*resourceapi.DeviceClass)
		for k, s := range dc.Spec.Selectors {
			if s.CEL == nil {
				continue
			}
			if err := c.compileCEL(s.CEL.Expression); err != nil {
				emit(o, fmt.Sprintf("spec.selectors[%d].cel.expression", k), fmt.Sprintf("CEL does not compile: %v", oneLine(err.Error())), "fix the expression")
			}
		}
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// attrRef matches device.attributes['DOMAIN'].NAME and
// device.attributes['DOMAIN']['NAME'].
var attrRef = regexp.MustCompile(`device\.attributes\[\s*["']([^"']+)["']\s*\](?:\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)|\s*\[\s*["']([^"']+)["']\s*\])`)

type attrUse struct{ domain, name string }

func attrUses(expr string) []attrUse {
	var out []attrUse
	for _, m := range attrRef.FindAllStringSubmatch(expr, 64) {
		n := m[2]
		if n == "" {
			n = m[3]
		}
		out = append(out, attrUse{m[1], n})
	}
	return out
}

// published returns, per domain, the attribute names the input's
// ResourceSlices publish (nil when there are none for that domain).
func (c *Context) published() map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, o := range c.Kind("ResourceSlice") {
		s := o.V.(*resourceapi.ResourceSlice)
		for _, d := range s.Spec.Devices {
			for k := range d.Attributes {
				dom, name := s.Spec.Driver, string(k)
				if i := strings.Index(name, "/"); i >= 0 {
					dom, name = name[:i], name[i+1:]
				}
				if out[dom] == nil {
					out[dom] = map[string]bool{}
				}
				out[dom][name] = true
			}
		}
	}
	return out
}

// known returns the attribute names of domain the checks accept, and
// whether the domain is known at all.
func (c *Context) known(pub map[string]map[string]bool, domain, class string) (map[string]bool, bool) {
	if p := pub[domain]; p != nil {
		return p, true
	}
	switch domain {
	case domainK8s:
		return k8sAttributes(), true
	case driverGPU:
		m := gpuAttributes()
		if !c.fullGPUOnly(class) {
			for k := range migOnlyAttributes() {
				m[k] = true
			}
		}
		return m, true
	}
	return nil, false
}

// typeGPU matches a selector's test for full GPUs.
var typeGPU = regexp.MustCompile(`\.type\s*==\s*["']gpu["']`)

// fullGPUOnly reports whether a class selects only full GPUs: the
// driver's gpu.nvidia.com (absent from the input) or a class whose
// selector tests type == 'gpu'.
func (c *Context) fullGPUOnly(class string) bool {
	o := c.Classes[class]
	if o == nil {
		return class == classGPU
	}
	for _, s := range o.V.(*resourceapi.DeviceClass).Spec.Selectors {
		if s.CEL != nil && typeGPU.MatchString(s.CEL.Expression) {
			return true
		}
	}
	return false
}

func checkCELAttributes(c *Context, emit Emit) {
	pub := c.published()
	mig := migOnlyAttributes()
	for _, cs := range c.claimSpecs() {
		for _, a := range cs.alts() {
			for k, s := range a.selectors {
				if s.CEL == nil {
					continue
				}
				for _, u := range attrUses(s.CEL.Expression) {
					names, ok := c.known(pub, u.domain, a.class)
					if !ok || names[u.name] || (u.domain == driverGPU && mig[u.name] && pub[u.domain] == nil) {
						continue // unknown domain, published, or dra.mig-attribute's case
					}
					src := "the NVIDIA DRA driver's attributes"
					if pub[u.domain] != nil {
						src = "the input's ResourceSlices"
					}
					emit(cs.obj, fmt.Sprintf("%s.selectors[%d].cel.expression", a.path, k), fmt.Sprintf("attribute %s/%s is not published for class %s (checked against %s: %s): the selector errors or never matches",
						u.domain, u.name, a.class, src, strings.Join(sortedKeys(names), ", ")), "use an attribute the driver publishes (kubectl get resourceslices -o yaml)")
				}
			}
		}
	}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func checkMIGAttributes(c *Context, emit Emit) {
	mig := migOnlyAttributes()
	for _, cs := range c.claimSpecs() {
		for _, a := range cs.alts() {
			if !c.fullGPUOnly(a.class) {
				continue
			}
			for k, s := range a.selectors {
				if s.CEL == nil {
					continue
				}
				for _, u := range attrUses(s.CEL.Expression) {
					if u.domain == driverGPU && mig[u.name] {
						emit(cs.obj, fmt.Sprintf("%s.selectors[%d].cel.expression", a.path, k), fmt.Sprintf("attribute %s exists only on MIG devices, but class %s selects full GPUs: the request never matches a device",
							u.name, a.class), fmt.Sprintf("request deviceClassName: %s for MIG devices, or drop the %s test", classMIG, u.name))
					}
				}
			}
		}
	}
}

func checkConstraintAttributes(c *Context, emit Emit) {
	pub := c.published()
	for _, cs := range c.claimSpecs() {
		class := ""
		if alts := cs.alts(); len(alts) > 0 {
			class = alts[0].class
		}
		for i, con := range cs.spec.Devices.Constraints {
			for _, f := range []struct {
				name string
				q    *resourceapi.FullyQualifiedName
			}{{"matchAttribute", con.MatchAttribute}, {"distinctAttribute", con.DistinctAttribute}} {
				if f.q == nil {
					continue
				}
				q := string(*f.q)
				j := strings.Index(q, "/")
				if j < 0 {
					emit(cs.obj, fmt.Sprintf("%s.devices.constraints[%d].%s", cs.path, i, f.name), fmt.Sprintf("%s %q is not fully qualified (DOMAIN/NAME): the API server rejects it", f.name, q), "write e.g. resource.kubernetes.io/pcieRoot or gpu.nvidia.com/parentUUID")
					continue
				}
				names, ok := c.known(pub, q[:j], "")
				if !ok || names[q[j+1:]] {
					continue
				}
				emit(cs.obj, fmt.Sprintf("%s.devices.constraints[%d].%s", cs.path, i, f.name), fmt.Sprintf("%s %s: no device publishes that attribute (known %s attributes: %s): a matchAttribute on a missing attribute fails every allocation",
					f.name, q, q[:j], strings.Join(sortedKeys(names), ", ")), "constrain on a published attribute (resource.kubernetes.io/pcieRoot for one PCIe root, gpu.nvidia.com/parentUUID for one physical GPU)")
				_ = class
			}
		}
	}
}

// opaqueConfig is one opaque device configuration of a claim, template or
// DeviceClass with the field path of its opaque block.
type opaqueConfig struct {
	obj   *Object
	field string
	op    *resourceapi.OpaqueDeviceConfiguration
}

func (c *Context) opaqueConfigs() []opaqueConfig {
	var out []opaqueConfig
	for _, cs := range c.claimSpecs() {
		for i := range cs.spec.Devices.Config {
			if op := cs.spec.Devices.Config[i].Opaque; op != nil {
				out = append(out, opaqueConfig{cs.obj, fmt.Sprintf("%s.devices.config[%d].opaque", cs.path, i), op})
			}
		}
	}
	for _, o := range c.Kind("DeviceClass") {
		dc := o.V.(*resourceapi.DeviceClass)
		for i := range dc.Spec.Config {
			if op := dc.Spec.Config[i].Opaque; op != nil {
				out = append(out, opaqueConfig{o, fmt.Sprintf("spec.config[%d].opaque", i), op})
			}
		}
	}
	return out
}

func checkGpuConfig(c *Context, emit Emit) {
	for _, oc := range c.opaqueConfigs() {
		if oc.op.Driver != driverGPU {
			continue
		}
		field := oc.field + ".parameters"
		msg, sub := parseGpuConfig(oc.op.Parameters.Raw)
		if msg != "" {
			if sub != "" {
				field += "." + sub
			}
			emit(oc.obj, field, msg+": the driver fails to prepare the claim and the pod stays in ContainerCreating",
				"write {apiVersion: resource.nvidia.com/v1beta1, kind: GpuConfig, sharing: {strategy: TimeSlicing, timeSlicingConfig: {interval: Long}}} or strategy MPS with mpsConfig")
		}
	}
}

// parseGpuConfig checks one opaque parameter object; it returns the
// problem and the field under parameters.
func parseGpuConfig(raw []byte) (string, string) {
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := json.Unmarshal(raw, &tm); err != nil {
		return fmt.Sprintf("parameters are not an object: %v", err), ""
	}
	if tm.APIVersion != groupNVIDIAParam {
		return fmt.Sprintf("apiVersion %q: the driver reads %s", tm.APIVersion, groupNVIDIAParam), "apiVersion"
	}
	switch tm.Kind {
	case "GpuConfig", "MigDeviceConfig":
	case "ComputeDomainChannelConfig", "ComputeDomainDaemonConfig", "VfioDeviceConfig":
		return "", ""
	default:
		return fmt.Sprintf("kind %q: the driver knows GpuConfig, MigDeviceConfig, VfioDeviceConfig, ComputeDomainChannelConfig, ComputeDomainDaemonConfig", tm.Kind), "kind"
	}
	g := &objects.GpuConfig{}
	serrs, err := sigsjson.UnmarshalStrict(raw, g, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return fmt.Sprintf("%s does not decode: %s", tm.Kind, strings.TrimPrefix(err.Error(), "json: ")), ""
	}
	if len(serrs) > 0 {
		return fmt.Sprintf("%s does not decode: %s", tm.Kind, strings.TrimPrefix(serrs[0].Error(), "json: ")), ""
	}
	s := g.Sharing
	if s == nil {
		return "", ""
	}
	switch s.Strategy {
	case "TimeSlicing":
		if s.MpsConfig != nil {
			return "strategy TimeSlicing with mpsConfig: the driver refuses MPS settings under TimeSlicing", "sharing.mpsConfig"
		}
		if tm.Kind == "MigDeviceConfig" && s.TimeSlicingConfig != nil {
			return "MigDeviceConfig has no timeSlicingConfig", "sharing.timeSlicingConfig"
		}
		if t := s.TimeSlicingConfig; t != nil && t.Interval != nil {
			switch *t.Interval {
			case "Default", "Short", "Medium", "Long":
			default:
				return fmt.Sprintf("time-slice interval %q: the driver knows Default, Short, Medium, Long", *t.Interval), "sharing.timeSlicingConfig.interval"
			}
		}
	case "MPS":
		if s.TimeSlicingConfig != nil {
			return "strategy MPS with timeSlicingConfig: the driver refuses time-slicing settings under MPS", "sharing.timeSlicingConfig"
		}
		if m := s.MpsConfig; m != nil && m.DefaultActiveThreadPercentage != nil {
			if p := *m.DefaultActiveThreadPercentage; p < 0 || p > 100 {
				return fmt.Sprintf("defaultActiveThreadPercentage %d: must be 0 to 100", p), "sharing.mpsConfig.defaultActiveThreadPercentage"
			}
		}
		if m := s.MpsConfig; m != nil && m.DefaultPinnedDeviceMemoryLimit != nil && m.DefaultPinnedDeviceMemoryLimit.Value() < 1<<20 {
			return fmt.Sprintf("defaultPinnedDeviceMemoryLimit %s: below 1Mi, the driver rejects it as too low", m.DefaultPinnedDeviceMemoryLimit.String()), "sharing.mpsConfig.defaultPinnedDeviceMemoryLimit"
		}
	case "Fabric":
		return "strategy Fabric: not enabled in the driver", "sharing.strategy"
	default:
		return fmt.Sprintf("unknown GPU sharing strategy %q (TimeSlicing or MPS)", s.Strategy), "sharing.strategy"
	}
	return "", ""
}

// featureGates collects the DRA driver's feature gates from the input:
// --feature-gates=... arguments and FEATURE_GATES environment values of
// the driver's containers, and featureGates in its chart values.
func (c *Context) featureGates() []gateSource {
	var out []gateSource
	add := func(o *Object, field, spec string) {
		g := map[string]bool{}
		for _, kv := range strings.Split(spec, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if ok {
				g[k] = strings.EqualFold(v, "true")
			}
		}
		out = append(out, gateSource{o, field, g})
	}
	for _, p := range c.Pods {
		if (p.Obj.Kind != "DaemonSet" && p.Obj.Kind != "Deployment") || p.Obj.APIVersion != "apps/v1" {
			continue
		}
		for _, ct := range p.Containers() {
			if !strings.Contains(ct.C.Image, "dra-driver") {
				continue
			}
			for i, a := range append(append([]string(nil), ct.C.Command...), ct.C.Args...) {
				if v, ok := strings.CutPrefix(a, "--feature-gates="); ok {
					add(p.Obj, fmt.Sprintf("%s.args[%d]", ct.Path, i), v)
				}
			}
			for i, e := range ct.C.Env {
				if e.Name == "FEATURE_GATES" {
					add(p.Obj, fmt.Sprintf("%s.env[%d].value", ct.Path, i), e.Value)
				}
			}
		}
	}
	for _, o := range c.Kind(KindDRADriverValues) {
		g := o.V.(*draValues)
		out = append(out, gateSource{o, "featureGates", g.FeatureGates})
	}
	return out
}

type gateSource struct {
	obj   *Object
	field string
	gates map[string]bool
}

// KindDRADriverValues is the NVIDIA DRA driver chart's values (a document
// with featureGates).
const KindDRADriverValues = "DRADriverValues"

type draValues struct {
	FeatureGates map[string]bool `json:"featureGates"`
}

func checkMPSDynamicMIG(c *Context, emit Emit) {
	var dyn *gateSource
	for _, g := range c.featureGates() {
		if g.gates["DynamicMIG"] {
			g := g
			dyn = &g
			if g.gates["MPSSupport"] {
				emit(g.obj, g.field, "the driver's feature gates enable both MPSSupport and DynamicMIG: the two are mutually exclusive and the driver refuses to start", "enable one of MPSSupport and DynamicMIG")
			}
		}
	}
	if dyn == nil {
		return
	}
	for _, oc := range c.opaqueConfigs() {
		if oc.op.Driver != driverGPU {
			continue
		}
		var g objects.GpuConfig
		if json.Unmarshal(oc.op.Parameters.Raw, &g) != nil || g.Sharing == nil || g.Sharing.Strategy != "MPS" {
			continue
		}
		emit(oc.obj, oc.field+".parameters.sharing.strategy", fmt.Sprintf("MPS sharing while the driver runs with DynamicMIG (%s %s): MPS needs the MPSSupport gate, which DynamicMIG excludes, so the claim cannot be prepared",
			dyn.obj.ID(), dyn.field), "use TimeSlicing (combines with DynamicMIG), or run the driver with MPSSupport instead of DynamicMIG")
	}
}
