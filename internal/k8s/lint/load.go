package lint

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	schedv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpunode/gpunode/internal/k8s/dra"
	"github.com/gpunode/gpunode/internal/k8s/kubeletcfg"
	"github.com/gpunode/gpunode/internal/k8s/node"
	"github.com/gpunode/gpunode/internal/k8s/objects"
)

// Bounds on the input.
const (
	MaxFiles   = 100000
	MaxObjects = 1000000
)

// Kinds of inputs that are not Kubernetes objects.
const (
	KindDevicePluginConfig = "DevicePluginConfig"
	KindOperatorValues     = "GPUOperatorValues"
	KindDPChartValues      = "DevicePluginChartValues"
)

// Object is one decoded object and where it came from. V holds the typed
// object (*v1.Pod, *appsv1.Deployment, *resourceapi.ResourceClaim,
// *ComputeDomain, *DevicePluginConfig, ...) while the per-object rules run;
// once they have, the Loader keeps of V only what the cross-object rules
// read (see keep): nil for a Pod or a Deployment, a Job's counts, a
// ConfigMap's keys. Seq is the object's place in the input.
type Object struct {
	Src        objects.Source
	Kind       string
	APIVersion string
	Namespace  string
	Name       string
	V          any
	Seq        int
}

// ID is kind/namespace/name, or kind/name when there is no namespace.
func (o *Object) ID() string {
	if o.Namespace == "" {
		return o.Kind + "/" + o.Name
	}
	return o.Kind + "/" + o.Namespace + "/" + o.Name
}

// Input is what lint checks, as the Loader leaves it: the findings of the
// per-object rules (run as each object is decoded), an index for the
// cross-object rules (the objects they read, in input order, reduced to
// what they read; the pod templates that may concern them), the number of
// objects checked and of documents skipped (unknown kinds), and the
// optional context.
//
// The context read by the per-object rules (Kubelet, Node, NodeName,
// ShmMin) is set before the first Add; Nodes may be set any time before
// Run.
type Input struct {
	Objects []*Object
	Checked int
	Skipped int
	// Charts are the Helm charts rendered into the input (AddScoped).
	Charts []RenderedChart
	// SkippedFiles are the files none of whose documents is a Kubernetes
	// object or a config lint reads (a Grafana dashboard, a chart's
	// values of another project), one line each in the report.
	SkippedFiles []SkippedFile

	// Nodes (--nodes): v1 Nodes whose labels some rules read.
	Nodes []*v1.Node
	// Node and Kubelet (--node-file, --kubelet-config): the `k8s admit`
	// inputs for topology.single-numa and the QoS rules.
	Node     *node.Node
	NodeName string
	Kubelet  *kubeletcfg.Config
	// ShmMin is the smallest /dev/shm that shm.size accepts (0: 1Gi).
	ShmMin resource.Quantity

	// local are the per-object rules' findings; pods the pod templates
	// kept (reduced) for the cross-object rules; limits the containers'
	// extended-resource limits; dp the device plugin configs of the input.
	local  []Finding
	pods   []*PodRef
	limits []limitRef
	dp     []*DPConfig
	// kubeletRefused: topology.single-numa has said that kubelet would
	// not start with the given config (once for the input).
	kubeletRefused bool
	// whole keeps every object and pod template as decoded, and Run
	// runs every rule on them (the tests' reference for the index).
	whole bool
}

// group returns the API group of an apiVersion ("" for core).
func group(apiVersion string) string {
	if i := strings.Index(apiVersion, "/"); i >= 0 {
		return apiVersion[:i]
	}
	return ""
}

type kindSpec struct {
	kind       string
	versions   []string
	namespaced bool
	// builtin kinds live only in their group: another group is bad input.
	builtin bool
	decode  func(o objects.Object) (any, error)
}

func strictInto[T any]() func(objects.Object) (any, error) {
	return func(o objects.Object) (any, error) {
		v := new(T)
		if err := o.Decode(v); err != nil {
			return nil, err
		}
		return v, nil
	}
}

// rebase moves a loader's error (reported against a one-object buffer) to
// the object's real place.
func rebase(err error, s objects.Source) error {
	var oe *objects.Error
	if errors.As(err, &oe) {
		c := *oe
		c.File, c.Doc, c.Item = s.File, s.Doc, s.Item
		return &c
	}
	return err
}

func draDecode[T any](load func(string, []byte) ([]dra.Loaded[T], error)) func(objects.Object) (any, error) {
	return func(o objects.Object) (any, error) {
		out, err := load(o.File, o.JSON)
		if err != nil {
			return nil, rebase(err, o.Source)
		}
		if len(out) != 1 {
			return nil, o.Errorf(o.Label(), "", "want one object, decoded %d", len(out))
		}
		return out[0].Obj, nil
	}
}

func lenientClusterPolicy(o objects.Object) (any, error) {
	cp := &objects.ClusterPolicy{}
	if err := json.Unmarshal(o.JSON, cp); err != nil {
		return nil, o.Errorf(o.Label(), "", "%v", err)
	}
	if cp.Name == "" {
		return nil, o.Errorf(o.Label(), "metadata.name", "Required value: name is required")
	}
	return cp, nil
}

var draVersions = []string{dra.GroupVersionV1, dra.GroupVersionV1beta2, dra.GroupVersionV1beta1}

// kinds lists the kinds lint decodes (a function: no package state).
func kinds() []kindSpec {
	return []kindSpec{
		{"Pod", []string{"v1"}, true, true, strictInto[v1.Pod]()},
		{"ConfigMap", []string{"v1"}, true, true, strictInto[v1.ConfigMap]()},
		{"Node", []string{"v1"}, false, true, strictInto[v1.Node]()},
		{"Namespace", []string{"v1"}, false, true, strictInto[v1.Namespace]()},
		{"PodTemplate", []string{"v1"}, true, true, strictInto[v1.PodTemplate]()},
		{"RuntimeClass", []string{"node.k8s.io/v1"}, false, true, strictInto[nodev1.RuntimeClass]()},
		{"Deployment", []string{"apps/v1"}, true, true, strictInto[appsv1.Deployment]()},
		{"StatefulSet", []string{"apps/v1"}, true, true, strictInto[appsv1.StatefulSet]()},
		{"DaemonSet", []string{"apps/v1"}, true, true, strictInto[appsv1.DaemonSet]()},
		{"ReplicaSet", []string{"apps/v1"}, true, true, strictInto[appsv1.ReplicaSet]()},
		{"Job", []string{"batch/v1"}, true, false, strictInto[batchv1.Job]()},
		{"CronJob", []string{"batch/v1"}, true, true, strictInto[batchv1.CronJob]()},
		{"Job", []string{objects.GroupVersionVolcanoBatch}, true, false, strictInto[objects.VolcanoJob]()},
		{"PodGroup", []string{objects.GroupVersionPodGroupAlpha2, objects.GroupVersionPodGroupAlpha3}, true, false, strictInto[schedv1alpha3.PodGroup]()},
		{"HyperNode", []string{objects.GroupVersionHyperNode}, false, false, strictInto[objects.HyperNode]()},
		{"Topology", []string{objects.GroupVersionKAI, objects.GroupVersionKueueV1beta1, objects.GroupVersionKueueV1beta2}, false, false, strictInto[objects.LevelTopology]()},
		{"DeviceClass", draVersions, false, true, draDecode(dra.LoadClasses)},
		{"ResourceClaim", draVersions, true, true, draDecode(dra.LoadClaims)},
		{"ResourceClaimTemplate", draVersions, true, true, draDecode(dra.LoadTemplates)},
		{"ResourceSlice", draVersions, false, true, draDecode(dra.LoadSlices)},
		{"ComputeDomain", []string{objects.GroupVersionComputeDomain}, true, false, strictInto[objects.ComputeDomain]()},
		{"ClusterPolicy", []string{objects.GroupVersionClusterPolicy}, false, false, lenientClusterPolicy},
		{"MPIJob", []string{objects.GroupVersionMPIJobV2beta1}, true, false, strictInto[objects.MPIJob]()},
		{"PyTorchJob", []string{objects.GroupVersionKubeflowV1}, true, false, strictInto[objects.PyTorchJob]()},
	}
}

// Loader reads objects from several files, one document at a time: each
// object is decoded, checked for duplicates, given to the per-object rules,
// and reduced to what the cross-object rules read (keep) before the next
// one is decoded. Memory grows with the index, not with the objects.
type Loader struct {
	in    *Input
	scope string // duplicates are looked for within one scope
	seen  map[string]objects.Source
	specs []kindSpec
	rules []Rule // the per-object rules
	// skipWhy is why the file being added had a document skipped as not
	// a Kubernetes object ("" when none was).
	skipWhy string
}

// SkippedFile is a file lint read and skipped whole, and why.
type SkippedFile struct {
	File   string `json:"file"`
	Reason string `json:"reason"`
}

// NewLoader starts an empty input.
func NewLoader() *Loader {
	l := &Loader{in: &Input{}, seen: map[string]objects.Source{}, specs: kinds()}
	for _, r := range Rules() {
		if r.Local {
			l.rules = append(l.rules, r)
		}
	}
	return l
}

// Input returns what was loaded (and, before the first Add, the place to
// set the context the per-object rules read).
func (l *Loader) Input() *Input { return l.in }

// AddScoped is Add for the files of one Helm chart's rendering (scope: the
// chart): an object is a duplicate only of one of the same scope, so a
// chart and the plain manifests it renders to (both in one repository, as
// deploy/ holds them) are linted side by side.
func (l *Loader) AddScoped(scope, file string, data []byte) error {
	l.scope = scope
	defer func() { l.scope = "" }()
	return l.Add(file, data)
}

// Add decodes every document of one file. Errors are *objects.Error
// naming the file, document, item and field.
func (l *Loader) Add(file string, data []byte) error {
	checked := l.in.Checked
	l.skipWhy = ""
	err := l.each(file, data)
	if err == nil && l.skipWhy != "" && l.in.Checked == checked {
		l.in.SkippedFiles = append(l.in.SkippedFiles, SkippedFile{File: file, Reason: l.skipWhy})
	}
	return err
}

func (l *Loader) each(file string, data []byte) error {
	return objects.EachObject(file, data, func(o objects.Object) error {
		if l.in.Checked >= MaxObjects {
			return &objects.Error{File: file, Doc: o.Doc, Item: o.Item, Reason: fmt.Sprintf("more than %d objects", MaxObjects)}
		}
		return l.addObject(o)
	})
}

func (l *Loader) addObject(o objects.Object) error {
	if o.Kind == "" && o.APIVersion == "" {
		return l.addConfig(o)
	}
	if o.Kind == "" {
		return o.Errorf("", "kind", "Required value: a Kubernetes object needs apiVersion and kind")
	}
	if o.APIVersion == "" {
		return o.Errorf(o.Label(), "apiVersion", "Required value: a Kubernetes object needs apiVersion and kind")
	}
	var cands []kindSpec
	for _, s := range l.specs {
		if s.kind == o.Kind {
			cands = append(cands, s)
		}
	}
	if len(cands) == 0 {
		l.in.Skipped++
		return nil
	}
	var spec *kindSpec
	var supported []string
	groupKnown, builtin := false, false
	for i := range cands {
		for _, v := range cands[i].versions {
			supported = append(supported, fmt.Sprintf("%q", v))
			if v == o.APIVersion {
				spec = &cands[i]
			}
			if group(v) == group(o.APIVersion) {
				groupKnown = true
			}
		}
		builtin = builtin || cands[i].builtin
	}
	if spec == nil {
		if groupKnown || builtin {
			return o.Errorf(o.Label(), "apiVersion", "Unsupported value: %q for kind %s: supported values: %s", o.APIVersion, o.Kind, strings.Join(supported, ", "))
		}
		l.in.Skipped++ // a same-named kind of another project (e.g. Kyverno's ClusterPolicy)
		return nil
	}
	v, err := spec.decode(o)
	if err != nil {
		return err
	}
	obj := &Object{Src: o.Source, Kind: o.Kind, APIVersion: o.APIVersion, Name: o.Metadata.Name, V: v}
	if spec.namespaced {
		obj.Namespace = namespaceOf(v)
		if obj.Namespace == "" {
			obj.Namespace = "default"
		}
	}
	return l.push(obj, group(o.APIVersion))
}

// push checks obj for a duplicate, runs the per-object rules on it and
// keeps what the cross-object rules read.
func (l *Loader) push(obj *Object, grp string) error {
	key := l.scope + "\x00" + obj.Kind + "." + grp + "/" + obj.Namespace + "/" + obj.Name
	if prev, dup := l.seen[key]; dup {
		return &objects.Error{File: obj.Src.File, Doc: obj.Src.Doc, Item: obj.Src.Item, Object: obj.ID(), Field: "metadata.name",
			Reason: fmt.Sprintf("Duplicate value: %q (also %s)", strings.TrimPrefix(obj.Namespace+"/"+obj.Name, "/"), label(prev))}
	}
	l.seen[key] = obj.Src
	obj.Seq = l.in.Checked
	l.in.Checked++
	pods := podRefs(obj)
	if !l.in.whole {
		l.checkLocal(obj, pods)
	}
	l.keep(obj, pods)
	return nil
}

// namespaceOf reads metadata.namespace of a decoded object.
func namespaceOf(v any) string {
	type nsGetter interface{ GetNamespace() string }
	if g, ok := v.(nsGetter); ok {
		return g.GetNamespace()
	}
	return ""
}

// operatorKeys are top-level keys of the gpu-operator chart's values.
var operatorKeys = []string{"driver", "toolkit", "devicePlugin", "dcgmExporter", "migManager", "gfd", "dcgm", "nodeStatusExporter", "validator"}

// addConfig classifies a document without apiVersion and kind: a device
// plugin config (version + flags/sharing/resources) or the GPU Operator's
// Helm values; anything else is skipped.
func (l *Loader) addConfig(o objects.Object) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(o.JSON, &top); err != nil {
		return o.Errorf("", "", "%v", err)
	}
	name := filepath.Base(o.File)
	if o.Doc > 1 || o.Item >= 0 {
		name += fmt.Sprintf("#%d", o.Doc)
	}
	if raw, ok := top["featureGates"]; ok {
		v := &draValues{}
		if err := json.Unmarshal(raw, &v.FeatureGates); err != nil {
			return o.Errorf(KindDRADriverValues+" "+name, "featureGates", "%v", err)
		}
		return l.push(&Object{Src: o.Source, Kind: KindDRADriverValues, Name: name, V: v}, "")
	}
	if raw, ok := top["config"]; ok && isDPChartConfig(raw) {
		v := &DPChartValues{}
		if err := json.Unmarshal(o.JSON, v); err != nil {
			return o.Errorf(KindDPChartValues+" "+name, "config", "%v", err)
		}
		return l.push(&Object{Src: o.Source, Kind: KindDPChartValues, Name: name, V: v}, "")
	}
	if _, ok := top["version"]; ok && isDevicePluginConfig(top) {
		return l.push(&Object{Src: o.Source, Kind: KindDevicePluginConfig, Name: name, V: &configDoc{raw: o.JSON}}, "")
	}
	for _, k := range operatorKeys {
		if _, ok := top[k]; ok {
			spec := &objects.OperatorSpec{}
			if err := json.Unmarshal(o.JSON, spec); err != nil {
				return o.Errorf(KindOperatorValues+" "+name, "", "%v", err)
			}
			return l.push(&Object{Src: o.Source, Kind: KindOperatorValues, Name: name, V: spec}, "")
		}
	}
	l.in.Skipped++
	if l.skipWhy == "" {
		l.skipWhy = notObjectReason(top)
	}
	return nil
}

// notObjectReason is the one line saying why a document without
// apiVersion and kind was skipped, with its first top-level keys (what
// the file is, for a reader: a dashboard's panels, a chart's values).
func notObjectReason(top map[string]json.RawMessage) string {
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	const show = 2
	list := strings.Join(keys[:min(show, len(keys))], ", ")
	if len(keys) > show {
		list += fmt.Sprintf(", ... %d in all", len(keys))
	}
	if list == "" {
		list = "none"
	}
	return "no apiVersion and kind, not a config lint reads (keys: " + list + ")"
}

func isDevicePluginConfig(top map[string]json.RawMessage) bool {
	for _, k := range []string{"flags", "sharing", "resources", "imex"} {
		if _, ok := top[k]; ok {
			return true
		}
	}
	return false
}

// configDoc is a device plugin config document, decoded by the
// deviceplugin rules (its errors are findings, not bad input: the plugin
// itself reads it leniently or refuses to start).
type configDoc struct{ raw []byte }

// DPChartValues is the part of the nvidia-device-plugin chart's values lint
// reads: config.name (an existing ConfigMap), config.map (configs the chart
// turns into a ConfigMap), config.default, and the migStrategy value.
type DPChartValues struct {
	Config struct {
		Name    string            `json:"name,omitempty"`
		Default string            `json:"default,omitempty"`
		Map     map[string]string `json:"map,omitempty"`
	} `json:"config"`
	MigStrategy string `json:"migStrategy,omitempty"`
}

// isDPChartConfig reports whether a top-level config value looks like the
// device plugin chart's (an object with name, map or default).
func isDPChartConfig(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	for _, k := range []string{"map", "name", "default"} {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}
