package dra

import (
	"fmt"
	"math/rand/v2"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// templateInput draws a random device template: nodes nodes, each with
// devs devices of one driver carrying attrs attributes (a few values each,
// strings, ints, bools and versions mixed), and claims whose requests are
// tied together by large matchAttribute groups over several attributes
// (and sometimes a distinctAttribute), the shape of the probe's hidden
// case.
func templateInput(t testing.TB, r *rand.Rand, nodes, devs, attrs int) *Input {
	t.Helper()
	in := &Input{Classes: []*resourceapi.DeviceClass{{ObjectMeta: metav1.ObjectMeta{Name: "dev.example.com"},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: "device.driver == 'dev.example.com'"}}}}}}}
	nvals := make([]int, attrs)
	for a := range nvals {
		nvals[a] = 1 + r.IntN(4)
	}
	for n := 0; n < nodes; n++ {
		s := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node%d-dev", n)}, Spec: resourceapi.ResourceSliceSpec{
			Driver: "dev.example.com", NodeName: ptr.To(fmt.Sprintf("node%d", n)),
			Pool: resourceapi.ResourcePool{Name: fmt.Sprintf("node%d", n), Generation: 1, ResourceSliceCount: 1}}}
		for d := 0; d < devs; d++ {
			dev := resourceapi.Device{Name: fmt.Sprintf("dev-%d", d), Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{}}
			for a := 0; a < attrs; a++ {
				if r.IntN(12) == 0 {
					continue // some devices lack an attribute
				}
				v := r.IntN(nvals[a])
				var at resourceapi.DeviceAttribute
				switch a % 4 {
				case 0:
					at.StringValue = ptr.To(fmt.Sprintf("v%d", v))
				case 1:
					at.IntValue = ptr.To(int64(v))
				case 2:
					at.BoolValue = ptr.To(v%2 == 0)
				default:
					at.VersionValue = ptr.To(fmt.Sprintf("1.%d.0", v))
				}
				dev.Attributes[resourceapi.QualifiedName(fmt.Sprintf("a%d", a))] = at
			}
			s.Spec.Devices = append(s.Spec.Devices, dev)
		}
		in.Slices = append(in.Slices, s)
	}
	for c := 0; c < 1+r.IntN(3); c++ {
		claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c%d", c), Namespace: "default"}}
		nreq := 1 + r.IntN(4)
		for q := 0; q < nreq; q++ {
			e := resourceapi.ExactDeviceRequest{DeviceClassName: "dev.example.com", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: int64(1 + r.IntN(devs/4+1))}
			if r.IntN(3) == 0 {
				a := r.IntN(attrs)
				if a%4 == 1 {
					e.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
						Expression: fmt.Sprintf("!has(device.attributes['dev.example.com'].a%d) || device.attributes['dev.example.com'].a%d <= %d", a, a, r.IntN(nvals[a]))}}}
				}
			}
			claim.Spec.Devices.Requests = append(claim.Spec.Devices.Requests, resourceapi.DeviceRequest{Name: fmt.Sprintf("r%d", q), Exactly: &e})
		}
		for k := 0; k < 1+r.IntN(4); k++ {
			attr := resourceapi.FullyQualifiedName(fmt.Sprintf("dev.example.com/a%d", r.IntN(attrs)))
			con := resourceapi.DeviceConstraint{MatchAttribute: &attr}
			if r.IntN(5) == 0 {
				con = resourceapi.DeviceConstraint{DistinctAttribute: &attr}
			}
			if r.IntN(3) == 0 && nreq > 1 {
				// a group of some of the requests
				for q := 0; q < nreq; q++ {
					if r.IntN(2) == 0 {
						con.Requests = append(con.Requests, fmt.Sprintf("r%d", q))
					}
				}
			}
			claim.Spec.Devices.Constraints = append(claim.Spec.Devices.Constraints, con)
		}
		in.Claims = append(in.Claims, claim)
	}
	return in
}
