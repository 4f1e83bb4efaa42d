package lint

// Bounded memory: the Loader gives each object to the per-object rules
// (Rule.Local) as soon as it is decoded, then keeps of it only what the
// cross-object rules read. A Pod or a Deployment is dropped unless one of
// its pod templates may concern a cross-object rule (an extended resource,
// a DRA claim, a KAI/Kueue level annotation, a DRA driver image), and even
// then only those fields are kept; a Job keeps its counts, a DaemonSet the
// device plugin's images and ConfigMap volumes, a ConfigMap its keys (and
// the device plugin configs it holds), a ResourceSlice its attribute
// names. 40,000 Pods are linted in the memory of one Pod plus the index.

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpunode/gpunode/internal/k8s/objects"
	"github.com/gpunode/gpunode/internal/k8s/place"
)

// checkLocal runs the per-object rules on o (with its pod templates).
func (l *Loader) checkLocal(o *Object, pods []*PodRef) {
	c := &Context{In: l.in, Pods: pods, byKind: map[string][]*Object{o.Kind: {o}}, Classes: map[string]*Object{}}
	seen := map[string]bool{}
	for _, r := range l.rules {
		l.in.local = check(r, c, seen, l.in.local)
	}
}

// crossAnnotations are the pod template annotations the cross-object rules
// read (kaiAnn falls back to the object's own).
func crossAnnotations() []string {
	return []string{place.AnnotationKAIRequired, place.AnnotationKAIPreferred, place.AnnotationKAITopology,
		place.AnnotationKueueReq, place.AnnotationKueuePref}
}

// crossResource reports whether a resource name may concern a
// cross-object rule: GPU use, MIG, sharing, renaming, RDMA (extended
// resources, and anything named gpu).
func crossResource(r v1.ResourceName) bool {
	return isExtended(r) || strings.Contains(string(r), "gpu")
}

// limitRef is a container's limit of an extended resource: all that the
// device plugin rules (MIG strategy, shared and renamed resources) read of
// a pod, 100 bytes instead of a pod template.
type limitRef struct {
	obj   *Object
	path  string // the container's field path
	name  string // the container's name
	res   v1.ResourceName
	value int64
}

// limitRefs lists the extended-resource limits of p's containers (init
// then app containers, resources in name order).
func limitRefs(p *PodRef) []limitRef {
	var out []limitRef
	for _, ct := range p.Containers() {
		for _, r := range sortedNames(ct.C.Resources.Limits) {
			if crossResource(r) {
				q := ct.C.Resources.Limits[r]
				out = append(out, limitRef{p.Obj, ct.Path, ct.C.Name, r, q.Value()})
			}
		}
	}
	return out
}

// relevant reports whether a pod template may concern a cross-object rule
// other than the device plugin ones (which read limitRefs): a DRA claim,
// a KAI/Kueue level annotation, a DRA driver image, a GPU in a job's pods.
func relevant(p *PodRef) bool {
	if len(p.Spec.ResourceClaims) > 0 {
		return true
	}
	for _, k := range crossAnnotations() {
		if kaiAnn(p, k) != "" {
			return true
		}
	}
	for _, ct := range p.Containers() {
		if strings.Contains(ct.C.Image, "dra-driver") {
			return true
		}
		if !p.Job {
			continue
		}
		for _, l := range []v1.ResourceList{ct.C.Resources.Limits, ct.C.Resources.Requests} {
			for r := range l {
				if crossResource(r) {
					return true
				}
			}
		}
	}
	return false
}

func crossResources(l v1.ResourceList) v1.ResourceList {
	var out v1.ResourceList
	for r, q := range l {
		if crossResource(r) {
			if out == nil {
				out = v1.ResourceList{}
			}
			out[r] = q
		}
	}
	return out
}

func slimContainers(cs []v1.Container) []v1.Container {
	if len(cs) == 0 {
		return nil
	}
	out := make([]v1.Container, len(cs))
	for i := range cs {
		c := &cs[i]
		out[i] = v1.Container{Name: c.Name, Resources: v1.ResourceRequirements{
			Limits: crossResources(c.Resources.Limits), Requests: crossResources(c.Resources.Requests), Claims: c.Resources.Claims}}
		if strings.Contains(c.Image, "dra-driver") { // featureGates reads its flags
			out[i].Image, out[i].Command, out[i].Args, out[i].Env = c.Image, c.Command, c.Args, c.Env
		}
	}
	return out
}

// slimPod is p reduced to what the cross-object rules read of it.
func slimPod(p *PodRef) *PodRef {
	s := &v1.PodSpec{HostNetwork: p.Spec.HostNetwork, ResourceClaims: p.Spec.ResourceClaims,
		InitContainers: slimContainers(p.Spec.InitContainers), Containers: slimContainers(p.Spec.Containers)}
	if len(p.Spec.ResourceClaims) > 0 { // computedomain.clique: where the pods may land
		s.NodeSelector, s.Affinity = p.Spec.NodeSelector, p.Spec.Affinity
	}
	m := &metav1.ObjectMeta{Name: p.Meta.Name, Namespace: p.Meta.Namespace}
	for _, k := range append(crossAnnotations(), AnnotationMultus) {
		if v := kaiAnn(p, k); v != "" {
			if m.Annotations == nil {
				m.Annotations = map[string]string{}
			}
			m.Annotations[k] = v
		}
	}
	return &PodRef{Obj: p.Obj, Path: p.Path, Meta: m, Spec: s, Replicas: p.Replicas, Role: p.Role, Job: p.Job}
}

// keep adds to the index what the cross-object rules read of o, and lets
// the rest go.
func (l *Loader) keep(o *Object, pods []*PodRef) {
	in := l.in
	in.dp = append(in.dp, dpConfigs(o)...)
	for _, p := range pods {
		in.limits = append(in.limits, limitRefs(p)...)
	}
	if in.whole {
		in.pods = append(in.pods, pods...)
		in.Objects = append(in.Objects, o)
		return
	}
	rel := false
	for _, p := range pods {
		if relevant(p) {
			rel = true
			break
		}
	}
	if rel {
		for _, p := range pods {
			// a job's other templates count towards its pods (net.multi-node)
			if p.Job || relevant(p) {
				in.pods = append(in.pods, slimPod(p))
			}
		}
	}
	switch v := o.V.(type) {
	case *v1.Pod, *v1.PodTemplate, *appsv1.Deployment, *appsv1.StatefulSet, *appsv1.ReplicaSet, *batchv1.CronJob, *objects.MPIJob, *objects.PyTorchJob, *v1.Namespace:
		o.V = nil // read through its pod templates only
		return
	case *batchv1.Job: // gang.min-count
		j := &batchv1.Job{}
		j.Spec.Parallelism, j.Spec.Completions = v.Spec.Parallelism, v.Spec.Completions
		j.Spec.Template.Spec.SchedulingGroup = v.Spec.Template.Spec.SchedulingGroup
		o.V = j
	case *objects.VolcanoJob: // gang.min-count, gang.volcano-tier
		j := &objects.VolcanoJob{}
		j.Spec.MinAvailable, j.Spec.NetworkTopology = v.Spec.MinAvailable, v.Spec.NetworkTopology
		for _, t := range v.Spec.Tasks {
			j.Spec.Tasks = append(j.Spec.Tasks, objects.VolcanoTask{Name: t.Name, Replicas: t.Replicas})
		}
		o.V = j
	case *appsv1.DaemonSet: // deviceplugin.unread reads the device plugin's
		if !isDevicePluginPod(&v.Spec.Template.Spec) {
			o.V = nil
			return
		}
		ds := &appsv1.DaemonSet{}
		for _, c := range v.Spec.Template.Spec.Containers {
			ds.Spec.Template.Spec.Containers = append(ds.Spec.Template.Spec.Containers, v1.Container{Name: c.Name, Image: c.Image})
		}
		for _, vol := range v.Spec.Template.Spec.Volumes {
			if vol.ConfigMap != nil {
				ds.Spec.Template.Spec.Volumes = append(ds.Spec.Template.Spec.Volumes, v1.Volume{Name: vol.Name,
					VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: vol.ConfigMap.LocalObjectReference}}})
			}
		}
		o.V = ds
	case *v1.ConfigMap: // operator.device-plugin-config reads the keys
		cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: v.Name, Namespace: v.Namespace}, Data: make(map[string]string, len(v.Data))}
		for k := range v.Data {
			cm.Data[k] = ""
		}
		o.V = cm
	case *resourceapi.ResourceSlice: // dra.attribute reads the attribute names
		s := &resourceapi.ResourceSlice{}
		s.Spec.Driver = v.Spec.Driver
		for _, d := range v.Spec.Devices {
			attrs := make(map[resourceapi.QualifiedName]resourceapi.DeviceAttribute, len(d.Attributes))
			for k := range d.Attributes {
				attrs[k] = resourceapi.DeviceAttribute{}
			}
			s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Attributes: attrs})
		}
		o.V = s
	}
	in.Objects = append(in.Objects, o)
}

// dpConfigs are the device plugin configs o holds: a config file, the
// configs of a ConfigMap's keys or of the device plugin chart's values.
func dpConfigs(o *Object) []*DPConfig {
	switch v := o.V.(type) {
	case *configDoc:
		return []*DPConfig{decodeDP(o, "", "", v.raw)}
	case *v1.ConfigMap:
		return mapDPs(o, v.Data, false)
	case *DPChartValues:
		return mapDPs(o, v.Config.Map, true)
	}
	return nil
}
