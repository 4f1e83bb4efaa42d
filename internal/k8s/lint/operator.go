package lint

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"

	"github.com/gpunode/gpunode/internal/k8s/objects"
)

// Node labels the GPU Operator and GFD read or write.
const (
	LabelDeployDriver = "nvidia.com/gpu.deploy.driver" // "pre-installed" when the host has a driver
	LabelMIGConfig    = "nvidia.com/mig.config"
	LabelGPUPresent   = "nvidia.com/gpu.present"
)

func operatorRules() []Rule {
	return []Rule{
		{ID: "operator.driver", Severity: SeverityWarning, Section: "5.1",
			Summary: "driver container enabled (driver.enabled, default true) on nodes that already have a driver",
			Needs:   "--nodes", Check: checkOperatorDriver},
		{ID: "operator.toolkit", Severity: SeverityWarning, Section: "5.1",
			Summary: "toolkit disabled while nothing shows the NVIDIA runtime configured (no RuntimeClass with handler nvidia)",
			Check:   checkOperatorToolkit},
		{ID: "operator.device-plugin-config", Severity: SeverityError, Section: "5.1",
			Summary: "devicePlugin.config names a ConfigMap and default key that are in the input",
			Check:   checkOperatorDPConfig},
		{ID: "operator.mig-manager", Severity: SeverityWarning, Section: "5.1",
			Summary: "MIG manager enabled but no node carries a nvidia.com/mig.config label",
			Needs:   "--nodes", Check: checkOperatorMIG},
		{ID: "operator.dcgm-exporter", Severity: SeverityWarning, Section: "5.1",
			Summary: "dcgmExporter enabled (GPU metrics for monitoring and alerts)",
			Check:   checkOperatorDCGM},
	}
}

// operatorSpec returns the spec of a ClusterPolicy or the chart values.
func operatorSpec(o *Object) *objects.OperatorSpec {
	switch v := o.V.(type) {
	case *objects.ClusterPolicy:
		return &v.Spec
	case *objects.OperatorSpec:
		return v
	}
	return nil
}

func (c *Context) operators() []*Object {
	return append(append([]*Object(nil), c.Kind("ClusterPolicy")...), c.Kind(KindOperatorValues)...)
}

func checkOperatorDriver(c *Context, emit Emit) {
	var pre []string
	for _, n := range c.In.Nodes {
		if n.Labels[LabelDeployDriver] == "pre-installed" {
			pre = append(pre, n.Name)
		}
	}
	if len(pre) == 0 {
		return
	}
	sort.Strings(pre)
	for _, o := range c.operators() {
		if s := operatorSpec(o); s.Driver.On() {
			emit(o, opField(o, "driver.enabled"), fmt.Sprintf("driver.enabled is true but %d node(s) already have a driver (%s=pre-installed: %s): the driver container fights the host's driver there",
				len(pre), LabelDeployDriver, strings.Join(first(pre, 5), ", ")), "set driver.enabled: false (--set driver.enabled=false) for clusters with pre-installed drivers")
		}
	}
}

func first(l []string, n int) []string {
	if len(l) <= n {
		return l
	}
	return append(append([]string(nil), l[:n]...), fmt.Sprintf("... %d more", len(l)-n))
}

func checkOperatorToolkit(c *Context, emit Emit) {
	for _, rc := range c.Kind("RuntimeClass") {
		if rc.V.(*nodev1.RuntimeClass).Handler == "nvidia" {
			return
		}
	}
	for _, o := range c.operators() {
		if s := operatorSpec(o); !s.Toolkit.On() {
			emit(o, opField(o, "toolkit.enabled"), "toolkit.enabled is false and nothing in the input shows the NVIDIA container runtime configured (no RuntimeClass with handler nvidia): unless every node's containerd/CRI-O already registers nvidia-container-runtime, GPU pods start without the driver libraries and devices",
				"keep toolkit.enabled: true, or configure the runtime on the nodes (nvidia-ctk runtime configure) and add the RuntimeClass nvidia to the manifests")
		}
	}
}

func checkOperatorDPConfig(c *Context, emit Emit) {
	for _, o := range c.operators() {
		s := operatorSpec(o)
		if !s.DevicePlugin.On() || s.DevicePlugin.Config == nil || s.DevicePlugin.Config.Name == "" {
			continue
		}
		name, def := s.DevicePlugin.Config.Name, s.DevicePlugin.Config.Default
		var cm *v1.ConfigMap
		for _, co := range c.Kind("ConfigMap") {
			if co.Name == name {
				cm = co.V.(*v1.ConfigMap)
			}
		}
		if cm == nil {
			emit(o, opField(o, "devicePlugin.config.name"), fmt.Sprintf("devicePlugin.config.name is %q but no ConfigMap of that name is in the input: the device plugin waits for it and advertises nothing", name),
				fmt.Sprintf("add the ConfigMap %s (in the operator's namespace) to the manifests, or fix the name", name))
			continue
		}
		if def == "" {
			continue
		}
		if _, ok := cm.Data[def]; !ok {
			keys := make([]string, 0, len(cm.Data))
			for k := range cm.Data {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			emit(o, opField(o, "devicePlugin.config.default"), fmt.Sprintf("devicePlugin.config.default is %q but ConfigMap %s has keys %s: nodes without a nvidia.com/device-plugin.config label get no config",
				def, name, strings.Join(keys, ", ")), "set config.default to one of the ConfigMap's keys")
		}
	}
}

func checkOperatorMIG(c *Context, emit Emit) {
	if len(c.In.Nodes) == 0 {
		return
	}
	for _, n := range c.In.Nodes {
		if _, ok := n.Labels[LabelMIGConfig]; ok {
			return
		}
	}
	for _, o := range c.operators() {
		// only a policy that asks for MIG (migManager.enabled set to true,
		// or a mig.strategy) expects the manager to do something
		s := operatorSpec(o)
		explicit := (s.MIGManager.Enabled != nil && *s.MIGManager.Enabled) || s.MIG.Strategy != ""
		if s.MIGManager.On() && explicit {
			emit(o, opField(o, "migManager.enabled"), fmt.Sprintf("the MIG manager is enabled but none of the %d nodes carries %s: it configures nothing (MIG stays as it is on every GPU)", len(c.In.Nodes), LabelMIGConfig),
				fmt.Sprintf("label the MIG nodes (kubectl label node NODE %s=all-1g.10gb), or set migManager.enabled: false", LabelMIGConfig))
		}
	}
}

func checkOperatorDCGM(c *Context, emit Emit) {
	for _, o := range c.operators() {
		if s := operatorSpec(o); !s.DCGMExporter.On() {
			emit(o, opField(o, "dcgmExporter.enabled"), "dcgmExporter.enabled is false: no GPU utilisation, memory, XID or thermal metrics reach Prometheus, so slow or failing GPUs go unnoticed",
				"set dcgmExporter.enabled: true (or run dcgm-exporter yourself)")
		}
	}
}

// opField is f under spec for a ClusterPolicy, at the top for chart values.
func opField(o *Object, f string) string {
	if o.Kind == "ClusterPolicy" {
		return "spec." + f
	}
	return f
}
