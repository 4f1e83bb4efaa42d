package dra

import (
	"fmt"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The loaders judge the fields gpunode reads as the API server's
// create validation (k8s.io/kubernetes/pkg/apis/resource/validation)
// judges them: object metadata with the apimachinery validators that
// ValidateObjectMeta runs for the name, namespace, labels and annotations,
// and names, counts and node selection with checks of our own.
// conformance/dra's TestDRAValidationMatchesAPIServer compares the
// decisions on 1,000 mutated objects of the four kinds.

// Limits of resource.k8s.io/v1 (API documentation of the fields).
const (
	driverNameMaxLen = 63  // spec.driver: a DNS subdomain of at most 63
	poolNameMaxLen   = 253 // spec.pool.name: DNS subdomains joined by "/"
)

// firstError is the first of errs as "field", "reason" (the API server's
// wording), or ok false when errs is empty.
func firstError(errs field.ErrorList) (fld, reason string, ok bool) {
	if len(errs) == 0 {
		return "", "", false
	}
	return errs[0].Field, errs[0].ErrorBody(), true
}

// checkObjectMeta: the metadata gpunode reads (name, namespace, labels,
// annotations) as the API server validates it on create, with
// apimachinery's own validators. Names are DNS subdomains for every DRA
// kind; claims and templates are namespaced. Fields gpunode does not read
// (owner references, finalizers, ...) are not judged.
func checkObjectMeta(m *metav1.ObjectMeta, namespaced bool) field.ErrorList {
	p := field.NewPath("metadata")
	var errs field.ErrorList
	if m.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), "name or generateName is required"))
	} else {
		errs = append(errs, invalidMsgs(p.Child("name"), m.Name, apivalidation.NameIsDNSSubdomain(m.Name, false))...)
	}
	if namespaced {
		errs = append(errs, invalidMsgs(p.Child("namespace"), m.Namespace, apivalidation.ValidateNamespaceName(m.Namespace, false))...)
	}
	errs = append(errs, metav1validation.ValidateLabels(m.Labels, p.Child("labels"))...)
	errs = append(errs, apivalidation.ValidateAnnotations(m.Annotations, p.Child("annotations"))...)
	return errs
}

func invalidMsgs(p *field.Path, v string, msgs []string) field.ErrorList {
	var errs field.ErrorList
	for _, m := range msgs {
		errs = append(errs, field.Invalid(p, v, m))
	}
	return errs
}

// checkClaimSpec: request and subrequest names (DNS labels), device class
// names (DNS subdomains), allocation mode and count, after the API
// server's defaults (DefaultClaimSpec).
func checkClaimSpec(spec *resourceapi.ResourceClaimSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, r := range spec.Devices.Requests {
		rp := p.Child("devices", "requests").Index(i)
		errs = append(errs, invalidMsgs(rp.Child("name"), r.Name, validation.IsDNS1123Label(r.Name))...)
		if r.Exactly != nil {
			ep := rp.Child("exactly")
			errs = append(errs, checkClassName(r.Exactly.DeviceClassName, ep.Child("deviceClassName"))...)
			errs = append(errs, checkMode(r.Exactly.AllocationMode, r.Exactly.Count, ep)...)
		}
		for j, s := range r.FirstAvailable {
			sp := rp.Child("firstAvailable").Index(j)
			errs = append(errs, invalidMsgs(sp.Child("name"), s.Name, validation.IsDNS1123Label(s.Name))...)
			errs = append(errs, checkClassName(s.DeviceClassName, sp.Child("deviceClassName"))...)
			errs = append(errs, checkMode(s.AllocationMode, s.Count, sp)...)
		}
	}
	return errs
}

func checkClassName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	return invalidMsgs(p, name, validation.IsDNS1123Subdomain(name))
}

func checkMode(mode resourceapi.DeviceAllocationMode, count int64, p *field.Path) field.ErrorList {
	switch mode {
	case resourceapi.DeviceAllocationModeAll:
		if count != 0 {
			return field.ErrorList{field.Invalid(p.Child("count"), count, fmt.Sprintf("must not be specified when allocationMode is '%s'", mode))}
		}
	case resourceapi.DeviceAllocationModeExactCount:
		if count <= 0 {
			return field.ErrorList{field.Invalid(p.Child("count"), count, "must be greater than zero")}
		}
	default:
		return field.ErrorList{field.NotSupported(p.Child("allocationMode"), mode,
			[]resourceapi.DeviceAllocationMode{resourceapi.DeviceAllocationModeAll, resourceapi.DeviceAllocationModeExactCount})}
	}
	return nil
}

// checkSliceSpec: the driver and pool names, device names (DNS labels),
// the node name, and exactly one way of selecting nodes.
func checkSliceSpec(spec *resourceapi.ResourceSliceSpec) field.ErrorList {
	p := field.NewPath("spec")
	var errs field.ErrorList
	switch d := spec.Driver; {
	case d == "":
		errs = append(errs, field.Required(p.Child("driver"), ""))
	default:
		if len(d) > driverNameMaxLen {
			errs = append(errs, field.TooLong(p.Child("driver"), "", driverNameMaxLen))
		}
		// The API server compares the driver name case-insensitively.
		errs = append(errs, invalidMsgs(p.Child("driver"), d, validation.IsDNS1123Subdomain(strings.ToLower(d)))...)
	}
	pp := p.Child("pool", "name")
	switch n := spec.Pool.Name; {
	case n == "":
		errs = append(errs, field.Required(pp, ""))
	default:
		if len(n) > poolNameMaxLen {
			errs = append(errs, field.TooLong(pp, "", poolNameMaxLen))
		}
		for _, part := range strings.Split(n, "/") {
			errs = append(errs, invalidMsgs(pp, part, validation.IsDNS1123Subdomain(part))...)
		}
	}
	if spec.Pool.Generation < 0 {
		errs = append(errs, field.Invalid(p.Child("pool", "generation"), spec.Pool.Generation, "must be greater than or equal to zero"))
	}
	if spec.Pool.ResourceSliceCount <= 0 {
		errs = append(errs, field.Invalid(p.Child("pool", "resourceSliceCount"), spec.Pool.ResourceSliceCount, "must be greater than zero"))
	}
	set := 0
	if spec.NodeName != nil {
		if *spec.NodeName == "" {
			errs = append(errs, field.Invalid(p.Child("nodeName"), "", "must be either unset or set to a non-empty string"))
		} else {
			set++
			errs = append(errs, invalidMsgs(p.Child("nodeName"), *spec.NodeName, apivalidation.NameIsDNSSubdomain(*spec.NodeName, false))...)
		}
	}
	if spec.NodeSelector != nil {
		set++
	}
	for _, b := range []struct {
		v    *bool
		name string
	}{{spec.AllNodes, "allNodes"}, {spec.PerDeviceNodeSelection, "perDeviceNodeSelection"}} {
		switch {
		case b.v == nil:
		case *b.v:
			set++
		default:
			errs = append(errs, field.Invalid(p.Child(b.name), false, "must be either unset or set to true"))
		}
	}
	switch set {
	case 0:
		errs = append(errs, field.Required(p, "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"))
	case 1:
	default:
		errs = append(errs, field.Invalid(p, set, "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set"))
	}
	for i, d := range spec.Devices {
		errs = append(errs, invalidMsgs(p.Child("devices").Index(i).Child("name"), d.Name, validation.IsDNS1123Label(d.Name))...)
	}
	return errs
}
