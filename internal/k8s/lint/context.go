package lint

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpunode/gpunode/internal/k8s/dra"
	"github.com/gpunode/gpunode/internal/k8s/objects"
)

// ResourceGPU is the device plugin's full-GPU resource.
const ResourceGPU v1.ResourceName = "nvidia.com/gpu"

// PodRef is one pod template of the input (a Pod is its own template):
// the object, the field path of its pod spec, and how many pods it makes.
type PodRef struct {
	Obj  *Object
	Path string // e.g. "spec" or "spec.template.spec"
	Meta *metav1.ObjectMeta
	Spec *v1.PodSpec
	// Replicas is the number of pods this template makes (0 unknown, as
	// for a DaemonSet).
	Replicas int
	// Role is the MPIJob replica type or the Volcano task name.
	Role string
	// Job marks templates of a distributed job (batch Job, MPIJob,
	// Volcano Job): the multi-node rules look at these.
	Job bool
}

// Pod returns a Pod made from the template (shared spec, not a copy).
func (p *PodRef) Pod() *v1.Pod {
	pod := &v1.Pod{ObjectMeta: *p.Meta, Spec: *p.Spec}
	if pod.Name == "" {
		pod.Name = p.Obj.Name
	}
	if pod.Namespace == "" {
		pod.Namespace = p.Obj.Namespace
	}
	return pod
}

// Container is one container of a pod template with its field path.
type Container struct {
	C    *v1.Container
	Path string
	Init bool
}

// Containers lists init then app containers.
func (p *PodRef) Containers() []Container {
	var out []Container
	for i := range p.Spec.InitContainers {
		out = append(out, Container{&p.Spec.InitContainers[i], fmt.Sprintf("%s.initContainers[%d]", p.Path, i), true})
	}
	for i := range p.Spec.Containers {
		out = append(out, Container{&p.Spec.Containers[i], fmt.Sprintf("%s.containers[%d]", p.Path, i), false})
	}
	return out
}

// DPConfig is one device plugin config: a file or one key of a ConfigMap.
type DPConfig struct {
	Obj *Object
	// Prefix is the field path of the config inside Obj ("" for a file,
	// "data[KEY]" for a ConfigMap key); Key is the ConfigMap key.
	Prefix string
	Key    string
	Raw    []byte
	Cfg    *objects.DevicePluginConfig // nil when it does not decode
	Err    string                      // why it does not decode (strictly)
	Field  string
}

// Context is the input indexed for the rules.
type Context struct {
	In      *Input
	Pods    []*PodRef
	DP      []*DPConfig
	Classes map[string]*Object // DeviceClass by name
	// compileCEL compiles a selector with internal/k8s/dra's shared cache.
	compileCEL func(expr string) error
	byKind     map[string][]*Object
}

// Kind returns the objects of one kind in input order.
func (c *Context) Kind(kind string) []*Object { return c.byKind[kind] }

// newContext indexes the Loader's input for the cross-object rules.
func newContext(in *Input) *Context {
	cache := dra.NewCELCache()
	c := &Context{In: in, byKind: map[string][]*Object{}, Classes: map[string]*Object{}, Pods: in.pods, DP: in.dp,
		compileCEL: func(expr string) error { return dra.CompileSelector(cache, expr) }}
	if len(in.Nodes) == 0 {
		// Nodes among the manifests (a cluster dump) stand in for --nodes.
		var nodes []*v1.Node
		for _, o := range in.Objects {
			if n, ok := o.V.(*v1.Node); ok {
				nodes = append(nodes, n)
			}
		}
		if len(nodes) > 0 {
			cp := *in
			cp.Nodes = nodes
			c.In = &cp
		}
	}
	for _, o := range in.Objects {
		c.byKind[o.Kind] = append(c.byKind[o.Kind], o)
		if o.Kind == "DeviceClass" {
			c.Classes[o.Name] = o
		}
	}
	return c
}

// mapDPs are the device plugin configs among the values of m (a
// ConfigMap's data; the device plugin chart's config.map when chart is
// set, its fields then named under "config.map[KEY]"), keys in order.
func mapDPs(o *Object, m map[string]string, chart bool) []*DPConfig {
	var out []*DPConfig
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if d := configMapDP(o, k, m[k]); d != nil {
			if chart {
				d.Prefix = fmt.Sprintf("config.map[%s]", k)
			}
			out = append(out, d)
		}
	}
	return out
}

func jobPods(j *batchv1.JobSpec) int {
	n := 1
	if j.Parallelism != nil {
		n = int(*j.Parallelism)
	}
	if j.Completions != nil && int(*j.Completions) < n {
		n = int(*j.Completions)
	}
	return n
}

func replicasOr1(r *int32) int {
	if r == nil {
		return 1
	}
	return int(*r)
}

// podRefs returns the pod templates of one object.
func podRefs(o *Object) []*PodRef {
	switch v := o.V.(type) {
	case *v1.Pod:
		return []*PodRef{{Obj: o, Path: "spec", Meta: &v.ObjectMeta, Spec: &v.Spec, Replicas: 1}}
	case *v1.PodTemplate:
		return []*PodRef{{Obj: o, Path: "template.spec", Meta: &v.Template.ObjectMeta, Spec: &v.Template.Spec, Replicas: 1}}
	case *appsv1.Deployment:
		return []*PodRef{{Obj: o, Path: "spec.template.spec", Meta: &v.Spec.Template.ObjectMeta, Spec: &v.Spec.Template.Spec, Replicas: replicasOr1(v.Spec.Replicas)}}
	case *appsv1.StatefulSet:
		return []*PodRef{{Obj: o, Path: "spec.template.spec", Meta: &v.Spec.Template.ObjectMeta, Spec: &v.Spec.Template.Spec, Replicas: replicasOr1(v.Spec.Replicas)}}
	case *appsv1.ReplicaSet:
		return []*PodRef{{Obj: o, Path: "spec.template.spec", Meta: &v.Spec.Template.ObjectMeta, Spec: &v.Spec.Template.Spec, Replicas: replicasOr1(v.Spec.Replicas)}}
	case *appsv1.DaemonSet:
		return []*PodRef{{Obj: o, Path: "spec.template.spec", Meta: &v.Spec.Template.ObjectMeta, Spec: &v.Spec.Template.Spec}}
	case *batchv1.Job:
		return []*PodRef{{Obj: o, Path: "spec.template.spec", Meta: &v.Spec.Template.ObjectMeta, Spec: &v.Spec.Template.Spec, Replicas: jobPods(&v.Spec), Job: true}}
	case *batchv1.CronJob:
		t := &v.Spec.JobTemplate.Spec
		return []*PodRef{{Obj: o, Path: "spec.jobTemplate.spec.template.spec", Meta: &t.Template.ObjectMeta, Spec: &t.Template.Spec, Replicas: jobPods(t), Job: true}}
	case *objects.VolcanoJob:
		var out []*PodRef
		for i := range v.Spec.Tasks {
			t := &v.Spec.Tasks[i]
			out = append(out, &PodRef{Obj: o, Path: fmt.Sprintf("spec.tasks[%d].template.spec", i), Meta: &t.Template.ObjectMeta, Spec: &t.Template.Spec,
				Replicas: int(t.Replicas), Role: t.Name, Job: true})
		}
		return out
	case *objects.MPIJob:
		return replicaRefs(o, "spec.mpiReplicaSpecs", v.Spec.MPIReplicaSpecs)
	case *objects.PyTorchJob:
		return replicaRefs(o, "spec.pytorchReplicaSpecs", v.Spec.PyTorchReplicaSpecs)
	}
	return nil
}

// isExtended reports whether r is an extended resource (a domain-prefixed
// name outside kubernetes.io, not hugepages).
func isExtended(r v1.ResourceName) bool {
	s := string(r)
	return strings.Contains(s, "/") && !strings.HasPrefix(s, "kubernetes.io/") && !strings.Contains(s, ".kubernetes.io/") && !strings.HasPrefix(s, v1.ResourceHugePagesPrefix)
}

// amount is a container's request of r, else its limit (what the
// scheduler counts once the API server defaults requests from limits).
func amount(c *v1.Container, r v1.ResourceName) (resource.Quantity, bool) {
	if q, ok := c.Resources.Requests[r]; ok {
		return q, true
	}
	q, ok := c.Resources.Limits[r]
	return q, ok
}

// gpus counts a container's nvidia.com/gpu.
func gpus(c *v1.Container) int64 {
	q, _ := amount(c, ResourceGPU)
	return q.Value()
}

// usesGPU reports whether the pod asks for a GPU: an nvidia.com/* extended
// resource or a DRA claim.
func usesGPU(p *PodRef) bool {
	if len(p.Spec.ResourceClaims) > 0 {
		return true
	}
	for _, c := range p.Containers() {
		for r := range c.C.Resources.Limits {
			if strings.HasPrefix(string(r), "nvidia.com/") || strings.Contains(string(r), "gpu") {
				return true
			}
		}
		for r := range c.C.Resources.Requests {
			if strings.HasPrefix(string(r), "nvidia.com/") || strings.Contains(string(r), "gpu") {
				return true
			}
		}
	}
	return false
}

// ownerJobs groups the job templates by object: total pods per object.
func (c *Context) jobs() []*jobGroup {
	var out []*jobGroup
	idx := map[*Object]*jobGroup{}
	for _, p := range c.Pods {
		if !p.Job {
			continue
		}
		g := idx[p.Obj]
		if g == nil {
			g = &jobGroup{Obj: p.Obj}
			idx[p.Obj] = g
			out = append(out, g)
		}
		g.Pods = append(g.Pods, p)
		g.Total += p.Replicas
	}
	return out
}

type jobGroup struct {
	Obj   *Object
	Pods  []*PodRef
	Total int
}

// replicaRefs lists the pod templates of a Kubeflow job's replica specs,
// roles in name order.
func replicaRefs(o *Object, path string, specs map[string]*objects.MPIReplicaSpec) []*PodRef {
	roles := make([]string, 0, len(specs))
	for r := range specs {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	var out []*PodRef
	for _, r := range roles {
		rs := specs[r]
		if rs == nil {
			continue
		}
		out = append(out, &PodRef{Obj: o, Path: fmt.Sprintf("%s.%s.template.spec", path, r), Meta: &rs.Template.ObjectMeta, Spec: &rs.Template.Spec,
			Replicas: replicasOr1(rs.Replicas), Role: r, Job: true})
	}
	return out
}
