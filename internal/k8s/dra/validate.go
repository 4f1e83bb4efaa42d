package dra

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
)

// InputError is bad input found before allocating: the object, the field
// and the reason.
type InputError struct {
	Object string
	Field  string
	Reason string
}

func (e *InputError) Error() string { return e.Object + ": " + e.Field + ": " + e.Reason }

// Validate checks what the allocator would reject for any node: claims
// naming missing classes, selectors that do not compile, bad counts.
func Validate(in *Input) error {
	in.init()
	for _, c := range in.Classes {
		obj := fmt.Sprintf("DeviceClass %q", c.Name)
		if err := checkSelectors(in, obj, "spec.selectors", c.Spec.Selectors); err != nil {
			return err
		}
	}
	for _, c := range in.Claims {
		obj := fmt.Sprintf("ResourceClaim %q", c.Namespace+"/"+c.Name)
		if c.Status.Allocation != nil {
			return &InputError{obj, "status.allocation", "Invalid value: the claim is already allocated (give it with --allocated)"}
		}
		reqs := c.Spec.Devices.Requests
		if len(reqs) == 0 {
			return &InputError{obj, "spec.devices.requests", "Required value: the claim requests no devices"}
		}
		names := map[string]bool{}
		for i, r := range reqs {
			f := fmt.Sprintf("spec.devices.requests[%d]", i)
			if r.Name == "" {
				return &InputError{obj, f + ".name", "Required value"}
			}
			if names[r.Name] {
				return &InputError{obj, f + ".name", fmt.Sprintf("Duplicate value: %q", r.Name)}
			}
			names[r.Name] = true
			switch {
			case r.Exactly != nil && len(r.FirstAvailable) > 0:
				return &InputError{obj, f, "Invalid value: exactly one of exactly and firstAvailable"}
			case r.Exactly != nil:
				e := r.Exactly
				if err := checkRequest(in, obj, f+".exactly", e.DeviceClassName, e.Selectors, e.AllocationMode, e.Count); err != nil {
					return err
				}
			case len(r.FirstAvailable) > 0:
				for j, s := range r.FirstAvailable {
					sf := fmt.Sprintf("%s.firstAvailable[%d]", f, j)
					if s.Name == "" {
						return &InputError{obj, sf + ".name", "Required value"}
					}
					if err := checkRequest(in, obj, sf, s.DeviceClassName, s.Selectors, s.AllocationMode, s.Count); err != nil {
						return err
					}
				}
			default:
				return &InputError{obj, f, "Required value: exactly or firstAvailable"}
			}
		}
		for i, k := range c.Spec.Devices.Constraints {
			f := fmt.Sprintf("spec.devices.constraints[%d]", i)
			if (k.MatchAttribute == nil) == (k.DistinctAttribute == nil) {
				return &InputError{obj, f, "Invalid value: exactly one of matchAttribute and distinctAttribute"}
			}
			for j, n := range k.Requests {
				if !requestNameExists(reqs, n) {
					return &InputError{obj, fmt.Sprintf("%s.requests[%d]", f, j), fmt.Sprintf("Invalid value: %q: must be the name of a request in the claim or the name of a request and a subrequest separated by '/'", n)}
				}
			}
		}
	}
	for _, c := range in.Allocated {
		if c.Status.Allocation == nil {
			return &InputError{fmt.Sprintf("ResourceClaim %q", c.Namespace+"/"+c.Name), "status.allocation", "Required value: --allocated takes allocated claims"}
		}
	}
	return nil
}

func requestNameExists(reqs []resourceapi.DeviceRequest, n string) bool {
	for _, r := range reqs {
		if r.Name == n {
			return true
		}
		for _, s := range r.FirstAvailable {
			if r.Name+"/"+s.Name == n {
				return true
			}
		}
	}
	return false
}

func checkRequest(in *Input, obj, f, class string, sels []resourceapi.DeviceSelector, mode resourceapi.DeviceAllocationMode, count int64) error {
	if class == "" {
		return &InputError{obj, f + ".deviceClassName", "Required value"}
	}
	if in.class(class) == nil {
		return &InputError{obj, f + ".deviceClassName", fmt.Sprintf("Not found: DeviceClass %q is not in --classes", class)}
	}
	switch mode {
	case "", resourceapi.DeviceAllocationModeExactCount:
		// A count over the 32-device limit is the allocator's failure
		// (the node does not fit), not bad input.
		if count < 0 {
			return &InputError{obj, f + ".count", fmt.Sprintf("Invalid value: %d: must be greater than zero", count)}
		}
	case resourceapi.DeviceAllocationModeAll:
	default:
		return &InputError{obj, f + ".allocationMode", fmt.Sprintf("Unsupported value: %q: supported values: \"All\", \"ExactCount\"", mode)}
	}
	return checkSelectors(in, obj, f+".selectors", sels)
}

func checkSelectors(in *Input, obj, f string, sels []resourceapi.DeviceSelector) error {
	for i, s := range sels {
		sf := fmt.Sprintf("%s[%d].cel.expression", f, i)
		if s.CEL == nil || s.CEL.Expression == "" {
			return &InputError{obj, sf, "Required value"}
		}
		if _, ok := in.eqSelector(s.CEL.Expression); ok {
			// The shape CEL compiles: no compiler needed.
			continue
		}
		if err := CompileSelector(in.celCache(), s.CEL.Expression); err != nil {
			return &InputError{obj, sf, "Invalid value: " + err.Error()}
		}
	}
	return nil
}
