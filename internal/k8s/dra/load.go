package dra

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gpunode/gpunode/internal/k8s/objects"
)

// API versions of resource.k8s.io that the loaders read. v1 is the storage
// form; v1beta2 has the same shape; v1beta1 keeps a device's fields under
// "basic" and a request's fields at the request's top level.
const (
	GroupVersionV1      = "resource.k8s.io/v1"
	GroupVersionV1beta2 = "resource.k8s.io/v1beta2"
	GroupVersionV1beta1 = "resource.k8s.io/v1beta1"
)

// MaxObjects bounds the DRA objects read from one file.
const MaxObjects = 200000

// Loaded is a decoded object and where it came from.
type Loaded[T any] struct {
	objects.Source
	Obj T
}

func supportedVersion(v string) bool {
	return v == GroupVersionV1 || v == GroupVersionV1beta2 || v == GroupVersionV1beta1
}

// decodeKind splits data into objects and decodes every object of kind into
// a new T (after converting older versions to v1). Objects of other kinds
// are errors unless extra accepts them.
func decodeKind[T any](file string, data []byte, kind string, convert func(map[string]any), extra func(objects.Object) (bool, error)) ([]Loaded[*T], error) {
	objs, err := objects.Objects(file, data)
	if err != nil {
		return nil, err
	}
	if len(objs) > MaxObjects {
		return nil, &objects.Error{File: file, Item: -1, Reason: fmt.Sprintf("more than %d objects", MaxObjects)}
	}
	var out []Loaded[*T]
	for _, o := range objs {
		if o.Kind != kind {
			if extra != nil {
				ok, err := extra(o)
				if err != nil {
					return nil, err
				}
				if ok {
					continue
				}
			}
			return nil, o.Errorf(o.Label(), "kind", "Unsupported value: %q: supported values: %q", o.Kind, kind)
		}
		if !supportedVersion(o.APIVersion) {
			return nil, o.Errorf(o.Label(), "apiVersion", "Unsupported value: %q: supported values: %q, %q, %q",
				o.APIVersion, GroupVersionV1, GroupVersionV1beta2, GroupVersionV1beta1)
		}
		if o.APIVersion == GroupVersionV1beta1 && convert != nil {
			b, err := convertJSON(o.JSON, convert)
			if err != nil {
				return nil, o.Errorf(o.Label(), "", "%v", err)
			}
			o.JSON = b
		}
		v := new(T)
		if err := o.Decode(v); err != nil {
			return nil, err
		}
		out = append(out, Loaded[*T]{Source: o.Source, Obj: v})
	}
	return out, nil
}

func convertJSON(b []byte, convert func(map[string]any)) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	convert(m)
	m["apiVersion"] = GroupVersionV1
	return json.Marshal(m)
}

func asMap(v any) map[string]any { m, _ := v.(map[string]any); return m }

func asList(v any) []any { l, _ := v.([]any); return l }

// convertSliceV1beta1 lifts every spec.devices[i].basic into the device.
func convertSliceV1beta1(m map[string]any) {
	for _, d := range asList(asMap(m["spec"])["devices"]) {
		dm := asMap(d)
		basic := asMap(dm["basic"])
		if dm == nil || basic == nil {
			continue
		}
		delete(dm, "basic")
		for k, v := range basic {
			dm[k] = v
		}
	}
}

// convertRequestsV1beta1 moves a v1beta1 request's own fields under
// "exactly" (requests with firstAvailable keep them, where they are errors).
func convertRequestsV1beta1(spec map[string]any) {
	for _, r := range asList(asMap(spec["devices"])["requests"]) {
		rm := asMap(r)
		if rm == nil {
			continue
		}
		if _, ok := rm["firstAvailable"]; ok {
			continue
		}
		exactly := map[string]any{}
		for k, v := range rm {
			if k != "name" {
				exactly[k] = v
				delete(rm, k)
			}
		}
		rm["exactly"] = exactly
	}
}

func convertClaimV1beta1(m map[string]any) { convertRequestsV1beta1(asMap(m["spec"])) }

func convertTemplateV1beta1(m map[string]any) {
	convertRequestsV1beta1(asMap(asMap(m["spec"])["spec"]))
}

// DefaultClaimSpec applies the apiserver's defaults to a claim spec:
// allocationMode ExactCount and count 1 for requests and subrequests.
func DefaultClaimSpec(spec *resourceapi.ResourceClaimSpec) {
	for i := range spec.Devices.Requests {
		r := &spec.Devices.Requests[i]
		if r.Exactly != nil {
			defaultMode(&r.Exactly.AllocationMode, &r.Exactly.Count)
		}
		for j := range r.FirstAvailable {
			defaultMode(&r.FirstAvailable[j].AllocationMode, &r.FirstAvailable[j].Count)
		}
	}
}

func defaultMode(mode *resourceapi.DeviceAllocationMode, count *int64) {
	if *mode == "" {
		*mode = resourceapi.DeviceAllocationModeExactCount
	}
	if *mode == resourceapi.DeviceAllocationModeExactCount && *count == 0 {
		*count = 1
	}
}

// LoadSlices decodes ResourceSlices. A slice must have a driver and a pool,
// and device names must be unique within a pool.
func LoadSlices(file string, data []byte) (_ []Loaded[*resourceapi.ResourceSlice], retErr error) {
	defer func() { retErr = objects.Locate(retErr, data) }()
	out, err := decodeKind[resourceapi.ResourceSlice](file, data, "ResourceSlice", convertSliceV1beta1, nil)
	if err != nil {
		return nil, err
	}
	type key struct {
		driver, pool, device string
		generation           int64
	}
	seen := map[key]string{}
	for _, s := range out {
		label := fmt.Sprintf("ResourceSlice %q", s.Obj.Name)
		if f, r, bad := firstError(append(checkObjectMeta(&s.Obj.ObjectMeta, false), checkSliceSpec(&s.Obj.Spec)...)); bad {
			return nil, s.Errorf(label, f, "%s", r)
		}
		for i, d := range s.Obj.Spec.Devices {
			k := key{s.Obj.Spec.Driver, s.Obj.Spec.Pool.Name, d.Name, s.Obj.Spec.Pool.Generation}
			if prev, dup := seen[k]; dup {
				return nil, s.Errorf(label, fmt.Sprintf("spec.devices[%d].name", i),
					"Duplicate value: %q (driver %s, pool %s; also in ResourceSlice %q)", d.Name, k.driver, k.pool, prev)
			}
			seen[k] = s.Obj.Name
		}
	}
	return out, nil
}

// LoadClasses decodes DeviceClasses (unique names).
func LoadClasses(file string, data []byte) (_ []Loaded[*resourceapi.DeviceClass], retErr error) {
	defer func() { retErr = objects.Locate(retErr, data) }()
	out, err := decodeKind[resourceapi.DeviceClass](file, data, "DeviceClass", nil, nil)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, c := range out {
		if f, r, bad := firstError(checkObjectMeta(&c.Obj.ObjectMeta, false)); bad {
			return nil, c.Errorf(fmt.Sprintf("DeviceClass %q", c.Obj.Name), f, "%s", r)
		}
		if seen[c.Obj.Name] {
			return nil, c.Errorf(fmt.Sprintf("DeviceClass %q", c.Obj.Name), "metadata.name", "Duplicate value: %q", c.Obj.Name)
		}
		seen[c.Obj.Name] = true
	}
	return out, nil
}

// LoadClaims decodes ResourceClaims (unique namespace/name; an empty
// namespace is "default").
func LoadClaims(file string, data []byte) (_ []Loaded[*resourceapi.ResourceClaim], retErr error) {
	defer func() { retErr = objects.Locate(retErr, data) }()
	out, err := decodeKind[resourceapi.ResourceClaim](file, data, "ResourceClaim", convertClaimV1beta1, nil)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, c := range out {
		DefaultClaimSpec(&c.Obj.Spec)
		if c.Obj.Namespace == "" {
			c.Obj.Namespace = "default"
		}
		k := c.Obj.Namespace + "/" + c.Obj.Name
		if f, r, bad := firstError(append(checkObjectMeta(&c.Obj.ObjectMeta, true), checkClaimSpec(&c.Obj.Spec, field.NewPath("spec"))...)); bad {
			return nil, c.Errorf(fmt.Sprintf("ResourceClaim %q", k), f, "%s", r)
		}
		if seen[k] {
			return nil, c.Errorf(fmt.Sprintf("ResourceClaim %q", k), "metadata.name", "Duplicate value: %q", k)
		}
		seen[k] = true
	}
	return out, nil
}

// LoadTemplates decodes ResourceClaimTemplates.
func LoadTemplates(file string, data []byte) (_ []Loaded[*resourceapi.ResourceClaimTemplate], retErr error) {
	defer func() { retErr = objects.Locate(retErr, data) }()
	out, err := decodeKind[resourceapi.ResourceClaimTemplate](file, data, "ResourceClaimTemplate", convertTemplateV1beta1, nil)
	if err != nil {
		return nil, err
	}
	for _, t := range out {
		DefaultClaimSpec(&t.Obj.Spec.Spec)
		if t.Obj.Namespace == "" {
			t.Obj.Namespace = "default"
		}
		if f, r, bad := firstError(append(checkObjectMeta(&t.Obj.ObjectMeta, true), checkClaimSpec(&t.Obj.Spec.Spec, field.NewPath("spec", "spec"))...)); bad {
			return nil, t.Errorf(fmt.Sprintf("ResourceClaimTemplate %q", t.Obj.Namespace+"/"+t.Obj.Name), f, "%s", r)
		}
	}
	return out, nil
}

// LoadPod decodes exactly one v1 Pod.
func LoadPod(file string, data []byte) (_ *corev1.Pod, retErr error) {
	defer func() { retErr = objects.Locate(retErr, data) }()
	pods, err := objects.LoadPods(file, data)
	if err != nil {
		return nil, err
	}
	if len(pods) != 1 {
		return nil, &objects.Error{File: file, Item: -1, Object: "Pod", Reason: fmt.Sprintf("want exactly one Pod, found %d", len(pods))}
	}
	if pods[0].Namespace == "" {
		pods[0].Namespace = "default"
	}
	return pods[0], nil
}

// PodClaims returns the claims a pod uses, in the pod's order: a claim made
// from a template is named "<pod>-<claim name>" in the pod's namespace (the
// real controller appends a random suffix); a named claim must be in claims.
func PodClaims(pod *corev1.Pod, podFile string, templates []Loaded[*resourceapi.ResourceClaimTemplate], claims []Loaded[*resourceapi.ResourceClaim]) ([]*resourceapi.ResourceClaim, error) {
	label := fmt.Sprintf("Pod %q", pod.Namespace+"/"+pod.Name)
	var out []*resourceapi.ResourceClaim
	for i, pc := range pod.Spec.ResourceClaims {
		at := fmt.Sprintf("spec.resourceClaims[%d]", i)
		switch {
		case pc.ResourceClaimName != nil && pc.ResourceClaimTemplateName != nil:
			return nil, &objects.Error{File: podFile, Item: -1, Object: label, Field: at, Reason: "Invalid value: exactly one of resourceClaimName and resourceClaimTemplateName"}
		case pc.ResourceClaimName != nil:
			var found *resourceapi.ResourceClaim
			for _, c := range claims {
				if c.Obj.Namespace == pod.Namespace && c.Obj.Name == *pc.ResourceClaimName {
					found = c.Obj
				}
			}
			if found == nil {
				return nil, &objects.Error{File: podFile, Item: -1, Object: label, Field: at + ".resourceClaimName",
					Reason: fmt.Sprintf("Not found: ResourceClaim %q in --claims", pod.Namespace+"/"+*pc.ResourceClaimName)}
			}
			out = append(out, found)
		case pc.ResourceClaimTemplateName != nil:
			var found *resourceapi.ResourceClaimTemplate
			for _, t := range templates {
				if t.Obj.Namespace == pod.Namespace && t.Obj.Name == *pc.ResourceClaimTemplateName {
					found = t.Obj
				}
			}
			if found == nil {
				return nil, &objects.Error{File: podFile, Item: -1, Object: label, Field: at + ".resourceClaimTemplateName",
					Reason: fmt.Sprintf("Not found: ResourceClaimTemplate %q in --templates", pod.Namespace+"/"+*pc.ResourceClaimTemplateName)}
			}
			c := &resourceapi.ResourceClaim{}
			c.APIVersion, c.Kind = GroupVersionV1, "ResourceClaim"
			c.Name, c.Namespace = pod.Name+"-"+pc.Name, pod.Namespace
			c.Spec = *found.Spec.Spec.DeepCopy()
			out = append(out, c)
		default:
			return nil, &objects.Error{File: podFile, Item: -1, Object: label, Field: at, Reason: "Required value: resourceClaimName or resourceClaimTemplateName"}
		}
	}
	if len(out) == 0 {
		return nil, &objects.Error{File: podFile, Item: -1, Object: label, Field: "spec.resourceClaims", Reason: "Required value: the pod uses no ResourceClaims"}
	}
	return out, nil
}
