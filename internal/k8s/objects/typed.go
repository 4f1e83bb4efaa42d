package objects

// The typed decode of Nodes and Pods into the planner types (planner.go):
// the view decoder's walk (view.go) with the kept fields written by hand
// instead of by reflection into whole v1 objects. The v1 types' plans still
// drive every field: an unknown or duplicate field name, a JSON kind that
// does not fit the Go type, or a value its UnmarshalJSON refuses is the
// same error, at the same path, as the view decode (and sigs.k8s.io/json's
// strict decode) report. Fields the planners read but that are rarely set
// and nested deeply (taints, tolerations, affinity, claims, owner
// references) are decoded by the reflective walk into their v1 types.

import (
	"reflect"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// maxInterned bounds the strings one decode shares (label keys and values,
// namespaces, node names of pods, resource names) and their length.
const (
	maxInterned    = 1 << 16
	maxInternedLen = 64
	maxSharedList  = 512
)

// typedPlans are the struct plans the typed decode walks.
type typedPlans struct {
	nodeDoc, node, pod, podDoc *plan
}

var typedPlansOnce = sync.OnceValue(func() *typedPlans {
	c := plans()
	return &typedPlans{
		nodeDoc: c.full(reflect.TypeFor[nodeDoc]()),
		node:    c.full(reflect.TypeFor[v1.Node]()),
		podDoc:  c.full(reflect.TypeFor[podDoc]()),
		pod:     c.full(reflect.TypeFor[v1.Pod]()),
	}
})

// typedDecoder is a decoder reused over the documents of one file, with its
// table of shared strings.
type typedDecoder struct {
	decoder
	strs  map[string]string
	qs    map[string]resource.Quantity // parsed quantities by their JSON
	lists map[string]ResourceList      // decoded lists by their JSON
	res   ResourceList                 // scratch of resourceList
}

func (d *typedDecoder) reset(data []byte) {
	d.data, d.i, d.depth, d.path, d.seen = data, 0, 0, d.path[:0], d.seen[:0]
}

// finish checks that only whitespace follows the top-level value.
func (d *typedDecoder) finish() error {
	d.ws()
	if d.i < len(d.data) {
		return d.syntax("after top-level value")
	}
	return nil
}

func (d *typedDecoder) intern(b []byte) string {
	if s, ok := d.strs[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(b) <= maxInternedLen && len(d.strs) < maxInterned {
		if d.strs == nil {
			d.strs = make(map[string]string, 256)
		}
		d.strs[s] = s
	}
	return s
}

// remember keeps q as the quantity of raw for the rest of the decode when
// it can be shared: copies of a Quantity share its *inf.Dec (set only for
// values past int64), so those are parsed each time.
func (d *typedDecoder) remember(raw []byte, q resource.Quantity) {
	if len(raw) > maxInternedLen || len(d.qs) >= maxInterned || !reflect.ValueOf(&q).Elem().FieldByName("d").Field(0).IsNil() {
		return
	}
	if d.qs == nil {
		d.qs = make(map[string]resource.Quantity, 64)
	}
	d.qs[string(raw)] = q
}

// null consumes a null at d.i and reports whether there was one.
func (d *typedDecoder) null() (bool, error) {
	d.ws()
	if d.i >= len(d.data) {
		return false, d.syntax("")
	}
	if d.data[d.i] != 'n' {
		return false, nil
	}
	return true, d.literal("null")
}

// fields walks the object at d.i as struct plan p: unknown and duplicate
// field names are errors; keep is called with each field (its path pushed,
// d at its value) and returns false when it did not take the value, which
// is then checked per the field's plan and dropped. null is no fields; any
// other non-object is a mismatch.
func (d *typedDecoder) fields(p *plan, keep func(f *fieldPlan) (bool, error)) error {
	if isNull, err := d.null(); isNull || err != nil {
		return err
	}
	if d.data[d.i] != '{' {
		return d.mismatch(p)
	}
	return d.structFields(p, func(f *fieldPlan) error {
		took, err := keep(f)
		if err == nil && !took {
			err = d.value(f.plan, reflect.Value{})
		}
		return err
	})
}

// elements walks the array at d.i (slice plan p), calling each with d at
// element i (its index pushed). null is no elements (ok reports false).
func (d *typedDecoder) elements(p *plan, each func(i int) error) (ok bool, err error) {
	if isNull, err := d.null(); isNull || err != nil {
		return false, err
	}
	if d.data[d.i] != '[' {
		return false, d.mismatch(p)
	}
	if err := d.enter(); err != nil {
		return false, err
	}
	defer func() { d.depth-- }()
	d.i++
	d.ws()
	if d.i < len(d.data) && d.data[d.i] == ']' {
		d.i++
		return true, nil
	}
	for n := 0; ; n++ {
		d.path = append(d.path, step{index: n})
		if err := each(n); err != nil {
			return true, err
		}
		d.path = d.path[:len(d.path)-1]
		if done, err := d.next(']', "after array element"); done || err != nil {
			return true, err
		}
	}
}

// entries walks the map at d.i (map plan p): duplicate keys are errors;
// each is called with the key (its step pushed, d at the value). null is
// no entries (ok reports false).
func (d *typedDecoder) entries(p *plan, each func(key []byte) error) (ok bool, err error) {
	if isNull, err := d.null(); isNull || err != nil {
		return false, err
	}
	if d.data[d.i] != '{' {
		return false, d.mismatch(p)
	}
	return true, d.mapEntries(each)
}

// text decodes a string field (plan p): null is "".
func (d *typedDecoder) text(p *plan, intern bool) (string, error) {
	d.ws()
	if d.i >= len(d.data) {
		return "", d.syntax("")
	}
	switch d.data[d.i] {
	case 'n':
		return "", d.literal("null")
	case '"':
	default:
		return "", d.mismatch(p)
	}
	b, err := d.strBytes()
	if err != nil {
		return "", err
	}
	if intern {
		return d.intern(b), nil
	}
	return string(b), nil
}

// stringMap decodes a map[string]string field (plan p), keys shared.
func (d *typedDecoder) stringMap(p *plan) (map[string]string, error) {
	var m map[string]string
	ok, err := d.entries(p, func(key []byte) error {
		v, err := d.text(p.elem, false) // values are often unique (hostnames)
		if err != nil {
			return err
		}
		if m == nil {
			m = make(map[string]string, 8)
		}
		m[d.intern(key)] = v
		return nil
	})
	if ok && m == nil {
		m = map[string]string{}
	}
	return m, err
}

// resourceList decodes a ResourceList field (plan p: map of Quantity).
// Lists written alike (the pods of one workload request the same) are one
// shared, read-only list.
func (d *typedDecoder) resourceList(p *plan) (ResourceList, error) {
	d.ws()
	start := d.i
	if d.i < len(d.data) && d.data[d.i] == '{' {
		if err := d.skip(); err != nil {
			d.i = start
		} else if l, ok := d.lists[string(d.data[start:d.i])]; ok {
			return l, nil
		} else {
			d.i = start
		}
	}
	l, err := d.parseResourceList(p)
	if raw := d.data[start:d.i]; err == nil && l != nil && len(raw) <= maxSharedList && len(d.lists) < maxInterned {
		if d.lists == nil {
			d.lists = make(map[string]ResourceList, 64)
		}
		d.lists[string(raw)] = l
	}
	return l, err
}

func (d *typedDecoder) parseResourceList(p *plan) (ResourceList, error) {
	mark := len(d.res) // a list inside a list's value is not possible, but stay safe
	defer func() { d.res = d.res[:mark] }()
	ok, err := d.entries(p, func(key []byte) error {
		d.ws()
		start := d.i
		if err := d.skip(); err != nil {
			return err
		}
		raw := d.data[start:d.i]
		var r Resource
		if q, ok := d.qs[string(raw)]; ok {
			r.Quantity = q
		} else {
			if err := r.Quantity.UnmarshalJSON(raw); err != nil {
				return d.fail("Invalid value: %s: %v", raw, err)
			}
			d.remember(raw, r.Quantity)
		}
		r.Name = v1.ResourceName(d.intern(key))
		d.res = append(d.res, r)
		return nil
	})
	if !ok || err != nil {
		return nil, err
	}
	if len(d.res) == mark {
		return ResourceList{}, nil
	}
	return append(make(ResourceList, 0, len(d.res)-mark), d.res[mark:]...), nil
}

// into decodes the field's value reflectively into ptr (a pointer to a
// value of the field's type).
func (d *typedDecoder) into(f *fieldPlan, ptr any) error {
	return d.value(f.plan, reflect.ValueOf(ptr).Elem())
}

// meta is what the planners read of an object's metadata.
type meta struct {
	Name, Namespace string
	UID             types.UID
	Labels          map[string]string
	Annotations     map[string]string
}

// metadata decodes an object's (or a List's) metadata per p into m;
// owners (nil: not kept) receives ownerReferences.
func (d *typedDecoder) metadata(p *plan, m *meta, owners func(f *fieldPlan) error) error {
	return d.fields(p, func(f *fieldPlan) (bool, error) {
		var err error
		switch f.name {
		case "name":
			m.Name, err = d.text(f.plan, false)
		case "namespace":
			m.Namespace, err = d.text(f.plan, true)
		case "uid":
			var s string
			s, err = d.text(f.plan, false)
			m.UID = types.UID(s)
		case "labels":
			m.Labels, err = d.stringMap(f.plan)
		case "annotations":
			m.Annotations, err = d.stringMap(f.plan)
		case "ownerReferences":
			if owners == nil {
				return false, nil
			}
			err = owners(f)
		default:
			return false, nil
		}
		return true, err
	})
}

// nodeObject decodes a Node's fields per p (a v1.Node, or a nodeDoc whose
// items are appended to *items and whose metadata is a List's).
func (d *typedDecoder) nodeObject(p *plan, n *Node, items *[]*Node, hasItems *bool) error {
	var m meta
	err := d.fields(p, func(f *fieldPlan) (bool, error) {
		var err error
		switch f.name {
		case "kind":
			n.Kind, err = d.text(f.plan, true)
		case "apiVersion":
			n.APIVersion, err = d.text(f.plan, true)
		case "metadata":
			err = d.metadata(f.plan, &m, nil)
		case "spec":
			err = d.fields(f.plan, func(f *fieldPlan) (bool, error) {
				switch f.name {
				case "unschedulable":
					return true, d.into(f, &n.Unschedulable)
				case "taints":
					return true, d.into(f, &n.Taints)
				}
				return false, nil
			})
		case "status":
			err = d.fields(f.plan, func(f *fieldPlan) (bool, error) {
				var err error
				switch f.name {
				case "capacity":
					n.Capacity, err = d.resourceList(f.plan)
				case "allocatable":
					n.Allocatable, err = d.resourceList(f.plan)
				case "conditions":
					err = d.conditions(f.plan, &n.Conditions)
				default:
					return false, nil
				}
				return true, err
			})
		case "items":
			if items == nil {
				return false, nil
			}
			// []*v1.Node: f.plan.elem.elem is the v1.Node plan
			return true, decodeItems(d, f.plan, items, hasItems, d.nodeObject)
		default:
			return false, nil
		}
		return true, err
	})
	n.Name, n.Namespace, n.UID, n.Labels, n.Annotations = m.Name, m.Namespace, m.UID, m.Labels, m.Annotations
	return err
}

func (d *typedDecoder) conditions(p *plan, out *[]NodeCondition) error {
	var cs []NodeCondition
	ok, err := d.elements(p, func(int) error {
		cs = append(cs, NodeCondition{})
		c := &cs[len(cs)-1]
		return d.fields(p.elem, func(f *fieldPlan) (bool, error) {
			switch f.name {
			case "type":
				s, err := d.text(f.plan, true)
				c.Type = v1.NodeConditionType(s)
				return true, err
			case "status":
				s, err := d.text(f.plan, true)
				c.Status = v1.ConditionStatus(s)
				return true, err
			}
			return false, nil
		})
	})
	if ok && cs == nil {
		cs = []NodeCondition{}
	}
	*out = cs
	return err
}

// podObject decodes a Pod's fields per p (a v1.Pod, or a podDoc whose
// items are appended to *items).
func (d *typedDecoder) podObject(p *plan, pod *Pod, items *[]*Pod, hasItems *bool) error {
	var m meta
	err := d.fields(p, func(f *fieldPlan) (bool, error) {
		var err error
		switch f.name {
		case "kind":
			var k string
			k, err = d.text(f.plan, true)
			pod.setKind(k)
		case "apiVersion":
			var v string
			v, err = d.text(f.plan, true)
			pod.setAPIVersion(v)
		case "metadata":
			err = d.metadata(f.plan, &m, func(f *fieldPlan) error {
				if isNull, err := d.null(); isNull || err != nil {
					return err
				}
				return d.into(f, &pod.more().OwnerReferences)
			})
		case "spec":
			err = d.podSpec(f.plan, pod)
		case "status":
			err = d.fields(f.plan, func(f *fieldPlan) (bool, error) {
				var s string
				var err error
				switch f.name {
				case "phase":
					s, err = d.text(f.plan, true)
					pod.Phase = v1.PodPhase(s)
				case "qosClass":
					s, err = d.text(f.plan, true)
					pod.QOSClass = v1.PodQOSClass(s)
				default:
					return false, nil
				}
				return true, err
			})
		case "items":
			if items == nil {
				return false, nil
			}
			// []*v1.Pod: f.plan.elem.elem is the v1.Pod plan
			return true, decodeItems(d, f.plan, items, hasItems, d.podObject)
		default:
			return false, nil
		}
		return true, err
	})
	pod.Name, pod.Namespace, pod.UID, pod.Labels = m.Name, m.Namespace, m.UID, m.Labels
	if m.Annotations != nil {
		pod.more().Annotations = m.Annotations
	}
	return err
}

func (d *typedDecoder) podSpec(p *plan, pod *Pod) error {
	return d.fields(p, func(f *fieldPlan) (bool, error) {
		var err error
		switch f.name {
		case "nodeName":
			pod.NodeName, err = d.text(f.plan, true)
		case "containers":
			pod.Containers, err = d.containers(f.plan)
		case "initContainers":
			var cs []Container
			if cs, err = d.containers(f.plan); cs != nil {
				pod.more().InitContainers = cs
			}
		case "nodeSelector", "affinity", "tolerations", "resources", "overhead", "resourceClaims", "schedulingGates",
			"priority", "priorityClassName", "schedulerName":
			if isNull, err := d.null(); isNull || err != nil {
				return true, err
			}
			m := pod.more()
			switch f.name {
			case "nodeSelector":
				m.NodeSelector, err = d.stringMap(f.plan)
			case "affinity":
				err = d.into(f, &m.Affinity)
			case "tolerations":
				err = d.into(f, &m.Tolerations)
			case "resources":
				err = d.into(f, &m.Resources)
			case "overhead":
				m.Overhead, err = d.resourceList(f.plan)
			case "resourceClaims":
				err = d.into(f, &m.ResourceClaims)
			case "schedulingGates":
				err = d.into(f, &m.SchedulingGates)
			case "priority":
				err = d.into(f, &m.Priority)
			case "priorityClassName":
				m.PriorityClassName, err = d.text(f.plan, true)
			case "schedulerName":
				m.SchedulerName, err = d.text(f.plan, true)
			}
		default:
			return false, nil
		}
		return true, err
	})
}

func (d *typedDecoder) containers(p *plan) ([]Container, error) {
	var cs []Container
	ok, err := d.elements(p, func(int) error {
		cs = append(cs, Container{})
		c := &cs[len(cs)-1]
		return d.fields(p.elem, func(f *fieldPlan) (bool, error) {
			var err error
			switch f.name {
			case "name":
				c.Name, err = d.text(f.plan, true)
			case "restartPolicy":
				if isNull, err := d.null(); isNull || err != nil {
					return true, err
				}
				err = d.into(f, &c.more().RestartPolicy)
			case "resources":
				err = d.fields(f.plan, func(f *fieldPlan) (bool, error) {
					var err error
					switch f.name {
					case "requests":
						c.Requests, err = d.resourceList(f.plan)
					case "limits":
						c.Limits, err = d.resourceList(f.plan)
					case "claims":
						if isNull, err := d.null(); isNull || err != nil {
							return true, err
						}
						err = d.into(f, &c.more().Claims)
					default:
						return false, nil
					}
					return true, err
				})
			default:
				return false, nil
			}
			return true, err
		})
	})
	if ok && cs == nil {
		cs = []Container{}
	}
	return cs, err
}

// decodeItems decodes a List's items (p is the []*T plan) with obj, each
// item a T of its own; a null item is kept as nil, and an empty list is an
// empty, non-nil slice. hasItems says whether the field was there.
func decodeItems[T any](d *typedDecoder, p *plan, items *[]*T, hasItems *bool, obj func(*plan, *T, *[]*T, *bool) error) error {
	elem := p.elem.elem
	ok, err := d.elements(p, func(int) error {
		if isNull, err := d.null(); isNull || err != nil {
			*items = append(*items, nil)
			return err
		}
		it := new(T)
		*items = append(*items, it)
		if d.data[d.i] != '{' {
			return d.mismatch(elem)
		}
		return obj(elem, it, nil, nil)
	})
	if ok && *items == nil {
		*items = []*T{}
	}
	*hasItems = ok
	return err
}
