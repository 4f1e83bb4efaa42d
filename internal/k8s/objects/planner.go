package objects

// The planner-sized Node and Pod: exactly the fields `k8s place`, `k8s
// admit` and `k8s dra` read (nodeFields, podFields), decoded in one strict
// pass (typed.go) without building whole v1 objects. A v1.Pod is ~1,240
// bytes before any field is set, and its ResourceLists are maps of 56-byte
// Quantities; a Pod here is ~180 bytes plus what it holds, and the rarely
// set pod fields sit behind one pointer (PodMore).

import (
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Resource is one entry of a ResourceList.
type Resource struct {
	Name     v1.ResourceName
	Quantity resource.Quantity
}

// ResourceList is a v1.ResourceList as a slice, in the document's order;
// names are unique (a duplicate is a decode error). nil when the field is
// absent or null, non-nil and empty for {}. A decoded list may be shared
// by the objects that wrote the same one: read-only.
type ResourceList []Resource

// Get returns the quantity of name.
func (l ResourceList) Get(name v1.ResourceName) (resource.Quantity, bool) {
	for i := range l {
		if l[i].Name == name {
			return l[i].Quantity, true
		}
	}
	return resource.Quantity{}, false
}

// V1 returns l as a v1.ResourceList (nil for nil).
func (l ResourceList) V1() v1.ResourceList {
	if l == nil {
		return nil
	}
	m := make(v1.ResourceList, len(l))
	for _, r := range l {
		m[r.Name] = r.Quantity
	}
	return m
}

// sortedNames returns l's names in order.
func (l ResourceList) sortedNames() []string {
	out := make([]string, len(l))
	for i := range l {
		out[i] = string(l[i].Name)
	}
	sort.Strings(out)
	return out
}

// NodeCondition is a node condition's type and status (the planners read
// only Ready's status).
type NodeCondition struct {
	Type   v1.NodeConditionType
	Status v1.ConditionStatus
}

// Node is the part of a v1 Node the planners read.
type Node struct {
	Kind, APIVersion string
	Name, Namespace  string
	UID              types.UID
	Labels           map[string]string
	Annotations      map[string]string
	Unschedulable    bool
	Taints           []v1.Taint
	Capacity         ResourceList
	Allocatable      ResourceList
	Conditions       []NodeCondition
}

// Ready reports whether the node's Ready condition is True.
func (n *Node) Ready() bool {
	ready := false
	for _, c := range n.Conditions {
		if c.Type == v1.NodeReady {
			ready = c.Status == v1.ConditionTrue
		}
	}
	return ready
}

// V1 returns n as a v1 Node holding exactly n's fields (maps and slices
// shared with n).
func (n *Node) V1() *v1.Node {
	out := &v1.Node{
		TypeMeta:   metav1.TypeMeta{Kind: n.Kind, APIVersion: n.APIVersion},
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Namespace: n.Namespace, UID: n.UID, Labels: n.Labels, Annotations: n.Annotations},
		Spec:       v1.NodeSpec{Unschedulable: n.Unschedulable, Taints: n.Taints},
		Status:     v1.NodeStatus{Capacity: n.Capacity.V1(), Allocatable: n.Allocatable.V1()},
	}
	if n.Conditions != nil {
		out.Status.Conditions = make([]v1.NodeCondition, len(n.Conditions))
		for i, c := range n.Conditions {
			out.Status.Conditions[i] = v1.NodeCondition{Type: c.Type, Status: c.Status}
		}
	}
	return out
}

// Container is the part of a container the planners read: its name,
// resources and restart policy (an init container with Always is a sidecar).
type Container struct {
	Name          string
	Requests      ResourceList
	Limits        ResourceList
	Claims        []v1.ResourceClaim
	RestartPolicy *v1.ContainerRestartPolicy
}

func (c *Container) v1() v1.Container {
	return v1.Container{Name: c.Name, RestartPolicy: c.RestartPolicy,
		Resources: v1.ResourceRequirements{Requests: c.Requests.V1(), Limits: c.Limits.V1(), Claims: c.Claims}}
}

// Pod is the part of a v1 Pod the planners read. The fields most exports
// leave unset for most pods are in More (nil when none is set).
type Pod struct {
	Kind, APIVersion string
	Name, Namespace  string
	UID              types.UID
	Labels           map[string]string
	NodeName         string
	Phase            v1.PodPhase
	QOSClass         v1.PodQOSClass
	Containers       []Container
	InitContainers   []Container
	More             *PodMore
}

// PodMore is the rest of what the planners read of a Pod.
type PodMore struct {
	Annotations       map[string]string
	OwnerReferences   []metav1.OwnerReference
	NodeSelector      map[string]string
	Affinity          *v1.Affinity
	Tolerations       []v1.Toleration
	Resources         *v1.ResourceRequirements // pod-level
	Overhead          ResourceList
	ResourceClaims    []v1.PodResourceClaim
	SchedulingGates   []v1.PodSchedulingGate
	Priority          *int32
	PriorityClassName string
	SchedulerName     string
}

// Overhead is the pod's spec.overhead (nil when unset).
func (p *Pod) Overhead() ResourceList {
	if p.More == nil {
		return nil
	}
	return p.More.Overhead
}

// PodResources is the pod-level spec.resources (nil when unset).
func (p *Pod) PodResources() *v1.ResourceRequirements {
	if p.More == nil {
		return nil
	}
	return p.More.Resources
}

// more returns p.More, allocating it.
func (p *Pod) more() *PodMore {
	if p.More == nil {
		p.More = &PodMore{}
	}
	return p.More
}

// V1 returns p as a v1 Pod holding exactly p's fields (maps and slices
// other than resource lists shared with p).
func (p *Pod) V1() *v1.Pod {
	out := &v1.Pod{
		TypeMeta:   metav1.TypeMeta{Kind: p.Kind, APIVersion: p.APIVersion},
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, Labels: p.Labels},
		Spec:       v1.PodSpec{NodeName: p.NodeName, Containers: containersV1(p.Containers), InitContainers: containersV1(p.InitContainers)},
		Status:     v1.PodStatus{Phase: p.Phase, QOSClass: p.QOSClass},
	}
	if m := p.More; m != nil {
		out.Annotations, out.OwnerReferences = m.Annotations, m.OwnerReferences
		s := &out.Spec
		s.NodeSelector, s.Affinity, s.Tolerations, s.Resources, s.Overhead = m.NodeSelector, m.Affinity, m.Tolerations, m.Resources, m.Overhead.V1()
		s.ResourceClaims, s.SchedulingGates, s.Priority = m.ResourceClaims, m.SchedulingGates, m.Priority
		s.PriorityClassName, s.SchedulerName = m.PriorityClassName, m.SchedulerName
	}
	return out
}

func containersV1(cs []Container) []v1.Container {
	if cs == nil {
		return nil
	}
	out := make([]v1.Container, len(cs))
	for i := range cs {
		out[i] = cs[i].v1()
	}
	return out
}

// PodFromV1 returns the planner Pod of a v1 Pod (a live cluster's, from
// client-go): the same fields a decode keeps.
func PodFromV1(in *v1.Pod) *Pod {
	p := &Pod{Kind: in.Kind, APIVersion: in.APIVersion, Name: in.Name, Namespace: in.Namespace, UID: in.UID, Labels: in.Labels,
		NodeName: in.Spec.NodeName, Phase: in.Status.Phase, QOSClass: in.Status.QOSClass,
		Containers: containersFromV1(in.Spec.Containers), InitContainers: containersFromV1(in.Spec.InitContainers)}
	s := &in.Spec
	if in.Annotations != nil || in.OwnerReferences != nil || s.NodeSelector != nil || s.Affinity != nil || s.Tolerations != nil ||
		s.Resources != nil || s.Overhead != nil || s.ResourceClaims != nil || s.SchedulingGates != nil || s.Priority != nil ||
		s.PriorityClassName != "" || s.SchedulerName != "" {
		p.More = &PodMore{Annotations: in.Annotations, OwnerReferences: in.OwnerReferences, NodeSelector: s.NodeSelector, Affinity: s.Affinity,
			Tolerations: s.Tolerations, Resources: s.Resources, Overhead: resourceListFromV1(s.Overhead), ResourceClaims: s.ResourceClaims,
			SchedulingGates: s.SchedulingGates, Priority: s.Priority, PriorityClassName: s.PriorityClassName, SchedulerName: s.SchedulerName}
	}
	return p
}

// NodeFromV1 returns the planner Node of a v1 Node.
func NodeFromV1(in *v1.Node) *Node {
	n := &Node{Kind: in.Kind, APIVersion: in.APIVersion, Name: in.Name, Namespace: in.Namespace, UID: in.UID, Labels: in.Labels,
		Annotations: in.Annotations, Unschedulable: in.Spec.Unschedulable, Taints: in.Spec.Taints,
		Capacity: resourceListFromV1(in.Status.Capacity), Allocatable: resourceListFromV1(in.Status.Allocatable)}
	if in.Status.Conditions != nil {
		n.Conditions = make([]NodeCondition, len(in.Status.Conditions))
		for i, c := range in.Status.Conditions {
			n.Conditions[i] = NodeCondition{Type: c.Type, Status: c.Status}
		}
	}
	return n
}

func containersFromV1(cs []v1.Container) []Container {
	if cs == nil {
		return nil
	}
	out := make([]Container, len(cs))
	for i := range cs {
		c := &cs[i]
		out[i] = Container{Name: c.Name, Requests: resourceListFromV1(c.Resources.Requests), Limits: resourceListFromV1(c.Resources.Limits),
			Claims: c.Resources.Claims, RestartPolicy: c.RestartPolicy}
	}
	return out
}

// resourceListFromV1 converts m, names in order (a map has none).
func resourceListFromV1(m v1.ResourceList) ResourceList {
	if m == nil {
		return nil
	}
	out := make(ResourceList, 0, len(m))
	for _, k := range sortedKeys(m) {
		out = append(out, Resource{Name: v1.ResourceName(k), Quantity: m[v1.ResourceName(k)]})
	}
	return out
}
