package objects

// The planner-sized Node and Pod: exactly the fields `k8s place`, `k8s
// admit` and `k8s dra` read (nodeFields, podFields), decoded in one strict
// pass (typed.go) without building whole v1 objects. A v1.Pod is ~1,240
// bytes before any field is set, and its ResourceLists are maps of 56-byte
// Quantities; a Pod here is 144 bytes plus what it holds, and the rarely
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
// resources and restart policy (an init container with Always is a sidecar),
// the last two in More (nil when neither is set).
type Container struct {
	Name     string
	Requests ResourceList
	Limits   ResourceList
	More     *ContainerMore
}

// ContainerMore is the rest of what the planners read of a container.
type ContainerMore struct {
	Claims        []v1.ResourceClaim
	RestartPolicy *v1.ContainerRestartPolicy
}

func (c *Container) more() *ContainerMore {
	if c.More == nil {
		c.More = &ContainerMore{}
	}
	return c.More
}

func (c *Container) v1() v1.Container {
	out := v1.Container{Name: c.Name, Resources: v1.ResourceRequirements{Requests: c.Requests.V1(), Limits: c.Limits.V1()}}
	if c.More != nil {
		out.RestartPolicy, out.Resources.Claims = c.More.RestartPolicy, c.More.Claims
	}
	return out
}

// Pod is the part of a v1 Pod the planners read. The fields most exports
// leave unset for most pods are in More (nil when none is set).
type Pod struct {
	Name, Namespace string
	UID             types.UID
	Labels          map[string]string
	NodeName        string
	Phase           v1.PodPhase
	QOSClass        v1.PodQOSClass
	Containers      []Container
	More            *PodMore
	// kind and apiVersion as codes (a decoded Pod has "Pod" and "v1", or
	// none in a List's items); any other value is in More.
	kind, apiVersion typeCode
}

// typeCode is a kind or apiVersion: none, the usual one, or another.
type typeCode uint8

const (
	typeNone typeCode = iota
	typeUsual
	typeOther
)

// Kind is the pod's kind as written ("" when not).
func (p *Pod) Kind() string {
	switch p.kind {
	case typeUsual:
		return "Pod"
	case typeOther:
		return p.More.kind
	}
	return ""
}

// APIVersion is the pod's apiVersion as written ("" when not).
func (p *Pod) APIVersion() string {
	switch p.apiVersion {
	case typeUsual:
		return "v1"
	case typeOther:
		return p.More.apiVersion
	}
	return ""
}

func (p *Pod) setKind(s string) {
	switch s {
	case "":
		p.kind = typeNone
	case "Pod":
		p.kind = typeUsual
	default:
		p.kind, p.more().kind = typeOther, s
	}
}

func (p *Pod) setAPIVersion(s string) {
	switch s {
	case "":
		p.apiVersion = typeNone
	case "v1":
		p.apiVersion = typeUsual
	default:
		p.apiVersion, p.more().apiVersion = typeOther, s
	}
}

// PodMore is the rest of what the planners read of a Pod.
type PodMore struct {
	kind, apiVersion  string // when not "Pod" and "v1"
	InitContainers    []Container
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

// Inits is the pod's init containers (nil when unset).
func (p *Pod) Inits() []Container {
	if p.More == nil {
		return nil
	}
	return p.More.InitContainers
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
		TypeMeta:   metav1.TypeMeta{Kind: p.Kind(), APIVersion: p.APIVersion()},
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, Labels: p.Labels},
		Spec:       v1.PodSpec{NodeName: p.NodeName, Containers: containersV1(p.Containers)},
		Status:     v1.PodStatus{Phase: p.Phase, QOSClass: p.QOSClass},
	}
	if m := p.More; m != nil {
		out.Annotations, out.OwnerReferences = m.Annotations, m.OwnerReferences
		s := &out.Spec
		s.InitContainers = containersV1(m.InitContainers)
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
	p := &Pod{Name: in.Name, Namespace: in.Namespace, UID: in.UID, Labels: in.Labels,
		NodeName: in.Spec.NodeName, Phase: in.Status.Phase, QOSClass: in.Status.QOSClass,
		Containers: containersFromV1(in.Spec.Containers)}
	s := &in.Spec
	if s.InitContainers != nil || in.Annotations != nil || in.OwnerReferences != nil || s.NodeSelector != nil || s.Affinity != nil || s.Tolerations != nil ||
		s.Resources != nil || s.Overhead != nil || s.ResourceClaims != nil || s.SchedulingGates != nil || s.Priority != nil ||
		s.PriorityClassName != "" || s.SchedulerName != "" {
		p.More = &PodMore{InitContainers: containersFromV1(s.InitContainers), Annotations: in.Annotations, OwnerReferences: in.OwnerReferences, NodeSelector: s.NodeSelector, Affinity: s.Affinity,
			Tolerations: s.Tolerations, Resources: s.Resources, Overhead: resourceListFromV1(s.Overhead), ResourceClaims: s.ResourceClaims,
			SchedulingGates: s.SchedulingGates, Priority: s.Priority, PriorityClassName: s.PriorityClassName, SchedulerName: s.SchedulerName}
	}
	p.setKind(in.Kind)
	p.setAPIVersion(in.APIVersion)
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
		out[i] = Container{Name: c.Name, Requests: resourceListFromV1(c.Resources.Requests), Limits: resourceListFromV1(c.Resources.Limits)}
		if c.Resources.Claims != nil || c.RestartPolicy != nil {
			out[i].More = &ContainerMore{Claims: c.Resources.Claims, RestartPolicy: c.RestartPolicy}
		}
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
