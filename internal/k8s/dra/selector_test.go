package dra

import (
	"context"
	"fmt"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/utils/ptr"
)

// TestEqSelectorMatchesCEL: wherever eqSelector decides, upstream's CEL
// gives the same answer without error; where CEL errs, eqSelector leaves
// the device to CEL. Every expression of the shape compiles upstream.
func TestEqSelectorMatchesCEL(t *testing.T) {
	terms := []string{
		"device.driver == 'gpu.nvidia.com'",
		`device.driver=="other.example.com"`,
		"device.attributes['gpu.nvidia.com'].type == 'gpu'",
		"device.attributes[\"gpu.nvidia.com\"].type\t==\n'mig'",
		"device.attributes['other.example.com'].type == 'gpu'",
		"device.attributes['gpu.nvidia.com'].numa == '0'",
		"device.attributes['gpu.nvidia.com'].model == ''",
	}
	var exprs []string
	for _, a := range terms {
		exprs = append(exprs, a)
		for _, b := range terms {
			exprs = append(exprs, a+" && "+b, a+"&&"+b+" ")
		}
	}
	str := func(s string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{StringValue: &s} }
	i64 := func(v int64) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{IntValue: &v} }
	ver := func(v string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{VersionValue: &v} }
	type devCase struct {
		driver string
		attrs  map[resourceapi.QualifiedName]resourceapi.DeviceAttribute
	}
	devs := []devCase{
		{"gpu.nvidia.com", map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"type": str("gpu"), "numa": str("0"), "driverVersion": ver("550.54.15")}},
		{"gpu.nvidia.com", map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"type": str("mig"), "numa": i64(0), "model": str("")}},
		{"gpu.nvidia.com", map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"gpu.nvidia.com/type": str("gpu")}},
		{"gpu.nvidia.com", map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"type": str("gpu"), "driverVersion": ver("not-a-version")}},
		{"gpu.nvidia.com", map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"type": str("gpu"), "empty": {}}},
		{"gpu.nvidia.com", map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"type": {StringValue: ptr.To("gpu"), IntValue: ptr.To(int64(1))}}},
		{"gpu.nvidia.com", map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"type": {StringValues: []string{"gpu"}}}},
		{"gpu.nvidia.com", nil},
		{"other.example.com", map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"type": str("gpu"), "gpu.nvidia.com/type": str("mig")}},
		{"other.example.com", map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"gpu.nvidia.com/numa": str("0"), "gpu.nvidia.com/type": str("gpu")}},
	}
	cache := NewCELCache()
	ctx := context.Background()
	decided, left, celErr := 0, 0, 0
	for _, e := range exprs {
		sel, ok := parseEqSelector(e)
		if !ok {
			t.Fatalf("%q: not recognised", e)
		}
		compiled := cache.GetOrCompile(e)
		if compiled.Error != nil {
			t.Fatalf("%q: recognised, but CEL does not compile it: %v", e, compiled.Error)
		}
		for i, d := range devs {
			dev := &resourceapi.Device{Name: fmt.Sprint("d", i), Attributes: d.attrs}
			want, _, err := compiled.DeviceMatches(ctx, cel.Device{Driver: d.driver, Attributes: d.attrs})
			got, ok := sel.eval(d.driver, dev)
			if err != nil {
				celErr++
			}
			if !ok {
				left++
				continue
			}
			decided++
			if err != nil {
				t.Errorf("%q on device %d: eqSelector says %v, CEL fails: %v", e, i, got, err)
			} else if got != want {
				t.Errorf("%q on device %d: eqSelector says %v, CEL %v", e, i, got, want)
			}
		}
	}
	// The comparison covers all three outcomes.
	if decided < 200 || left < 50 || celErr < 50 {
		t.Errorf("decided %d, left to CEL %d, CEL errors %d: too few of some kind", decided, left, celErr)
	}
}

func TestParseEqSelector(t *testing.T) {
	got, ok := parseEqSelector(" device.driver == 'a.b' && device.attributes[\"x.io\"].t_1 == \"v w\" ")
	want := eqSelector{{value: "a.b"}, {attr: true, domain: "x.io", id: "t_1", value: "v w"}}
	if !ok || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %+v %v, want %+v", got, ok, want)
	}
	nine := strings.Repeat("device.driver == 'a' && ", 8) + "device.driver == 'a'"
	eight := strings.Repeat("device.driver == 'a' && ", 7) + "device.driver == 'a'"
	if _, ok := parseEqSelector(eight); !ok {
		t.Errorf("8 terms (the limit): not recognised")
	}
	long := "device.driver == '" + strings.Repeat("a", 1024-len("device.driver == ''")) + "'"
	if _, ok := parseEqSelector(long); !ok || len(long) != 1024 {
		t.Errorf("1024 bytes (the limit): not recognised")
	}
	for _, e := range []string{
		"", "device.driver", "device.driver == 'a' &&", "device.driver == 'a' || device.driver == 'b'",
		"device.driver != 'a'", "device.driverx == 'a'", "device.driver == 'a'b", "device.driver == 'a",
		"device.driver == 'a\\'b'", "device.driver == 'é'", "device.driver == 'a\tb'",
		"device.attributes['a'].if == 'b'", "device.attributes['a'].in == 'b'", "device.attributes['a'].1x == 'b'",
		"device.attributes['a'].x.y == 'b'", "device.attributes['a']['x'] == 'b'", "device.attributes[a].x == 'b'",
		"device.attributes['a'].== 'b'", "device.capacity['a'].x == 'b'", "device.driver == 1",
		"'a' == device.driver", "device.driver == r'a'", "device.driver == 'a' && true", "!device.driver == 'a'",
		nine, long + " ",
	} {
		if sel, ok := parseEqSelector(e); ok {
			t.Errorf("%q: recognised as %+v", e, sel)
		}
	}
	for _, w := range []string{"true", "false", "null", "in", "as", "break", "const", "continue", "else", "for",
		"function", "if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while"} {
		if !celReserved(w) {
			t.Errorf("%q: not reserved", w)
		}
	}
	for _, w := range []string{"type", "ifx", "vars", "uuid"} {
		if celReserved(w) {
			t.Errorf("%q: reserved", w)
		}
	}
}

// TestEasyCaseWithoutCEL: the easy case (the seed's classes, a claim that
// fits) is decided without building the CEL environment.
func TestEasyCaseWithoutCEL(t *testing.T) {
	in := loadSeedInput(t, "slices-dgx-h100.yaml", "5.3.1-shared-claim.yaml")
	rep, err := Run(context.Background(), in, Options{})
	if err != nil || !rep.Fits {
		t.Fatalf("%v %+v", err, rep)
	}
	if got := rep.Nodes[0].Allocations[0].Results[0].Device; got != "gpu-0" {
		t.Errorf("device %s, want gpu-0", got)
	}
	if in.cel != nil {
		t.Errorf("the CEL cache was built for the easy case")
	}
	// A selector of another shape does need it, and still decides.
	in = loadSeedInput(t, "slices-dgx-h100.yaml", "5.3.1-shared-claim.yaml")
	in.Classes[0].Spec.Selectors[0].CEL.Expression = "device.driver.startsWith('gpu.') && device.attributes['gpu.nvidia.com'].type == 'gpu'"
	rep, err = Run(context.Background(), in, Options{})
	if err != nil || !rep.Fits || in.cel == nil {
		t.Fatalf("other shape: %v %+v, cel built: %v", err, rep, in.cel != nil)
	}
}
