package dra

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// hardDistinct is a pigeonhole no bound of the search sees early: 24
// devices, two for each of 12 values of attribute a, 12 requests of one device
// under distinctAttribute a, the last three limited to a <= 2. Both
// allocators enumerate the first nine requests' values (about 80 million
// ways) before every branch fails: minutes, not seconds.
func hardDistinct() *Input {
	in := &Input{Classes: []*resourceapi.DeviceClass{{ObjectMeta: metav1.ObjectMeta{Name: "dev.example.com"},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: "device.driver == 'dev.example.com'"}}}}}}}
	s := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "n1-dev"}, Spec: resourceapi.ResourceSliceSpec{
		Driver: "dev.example.com", NodeName: ptr.To("n1"), Pool: resourceapi.ResourcePool{Name: "n1", Generation: 1, ResourceSliceCount: 1}}}
	for i := 0; i < 24; i++ {
		s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("dev-%d", i),
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"a": {IntValue: ptr.To(int64(1 + i%12))}}})
	}
	in.Slices = []*resourceapi.ResourceSlice{s}
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "c0", Namespace: "default"}}
	for r := 0; r < 12; r++ {
		e := resourceapi.ExactDeviceRequest{DeviceClassName: "dev.example.com", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}
		if r >= 9 {
			e.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: "device.attributes['dev.example.com'].a <= 2"}}}
		}
		c.Spec.Devices.Requests = append(c.Spec.Devices.Requests, resourceapi.DeviceRequest{Name: fmt.Sprintf("r%d", r), Exactly: &e})
	}
	c.Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{DistinctAttribute: ptr.To(resourceapi.FullyQualifiedName("dev.example.com/a"))}}
	in.Claims = []*resourceapi.ResourceClaim{c}
	return in
}

// TestTimeoutUndecided: a decision past --timeout is "undecided within T",
// naming where the search stood, fits false; it returns at the deadline,
// not minutes later. The bound holds for gpunode's search, for the
// upstream allocator alone, and for the explanation.
func TestTimeoutUndecided(t *testing.T) {
	for _, o := range []Options{
		{Timeout: 200 * time.Millisecond},
		{Timeout: 200 * time.Millisecond, Explain: true},
		{Timeout: 200 * time.Millisecond, Solver: SolverGpunode},
		{Timeout: 200 * time.Millisecond, Solver: SolverUpstream},
	} {
		t0 := time.Now()
		rep, err := Run(context.Background(), hardDistinct(), o)
		took := time.Since(t0)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		nr := rep.Nodes[0]
		if !nr.Undecided || nr.Fits || !rep.Undecided || rep.Fits || nr.Explain == nil {
			t.Fatalf("%+v: not undecided: %+v", o, nr)
		}
		if !strings.HasPrefix(nr.Explain.Reason, "undecided within 200ms") {
			t.Fatalf("%+v: reason %q", o, nr.Explain.Reason)
		}
		if o.Solver != SolverUpstream && !strings.Contains(nr.Explain.Reason, "was at claim default/c0, request r") {
			t.Fatalf("%+v: reason does not name what was left: %q", o, nr.Explain.Reason)
		}
		if o.Solver == SolverUpstream && !strings.Contains(nr.Explain.Reason, "the upstream allocator did not finish") {
			t.Fatalf("%+v: reason %q", o, nr.Explain.Reason)
		}
		// The deadline plus the time to notice it (every 256 states), with
		// room for a loaded machine: seconds, never the minutes the full
		// search takes.
		if took > 3*time.Second {
			t.Fatalf("%+v: took %s past a 200ms timeout", o, took)
		}
		t.Logf("%+v: %s: %s", o.Solver, took, nr.Explain.Reason)
	}
}

// TestTimeoutRange: above 0, at most the scheduler's 10 s.
func TestTimeoutRange(t *testing.T) {
	for _, c := range []struct {
		d  time.Duration
		ok bool
	}{{-time.Second, false}, {time.Nanosecond, true}, {SchedulerFilterTimeout - time.Millisecond, true},
		{SchedulerFilterTimeout, true}, {SchedulerFilterTimeout + time.Millisecond, false}, {time.Minute, false}} {
		o, err := Options{Timeout: c.d}.withDefaults()
		if c.ok != (err == nil) || (err != nil && !errors.Is(err, ErrTimeoutRange)) {
			t.Fatalf("%s: err %v", c.d, err)
		}
		if c.ok && o.Timeout != c.d {
			t.Fatalf("%s: became %s", c.d, o.Timeout)
		}
	}
	o, _ := Options{}.withDefaults()
	if o.Timeout != 5*time.Second || o.UpstreamLimit != 5*time.Second {
		t.Fatalf("defaults: %+v", o)
	}
}
