package dra

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/gpunode/gpunode/internal/k8s/objects"
)

func readSeed(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "seed", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const v1beta1Slice = `apiVersion: resource.k8s.io/v1beta1
kind: ResourceSlice
metadata: {name: s}
spec:
  driver: gpu.nvidia.com
  nodeName: n1
  pool: {name: n1, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    basic:
      attributes:
        type: {string: gpu}
      capacity:
        memory: {value: 80Gi}
  - name: gpu-1
    basic:
      attributes:
        type: {string: gpu}
`

const v1beta1Claim = `apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata: {name: c, namespace: ns}
spec:
  devices:
    requests:
    - name: gpus
      deviceClassName: gpu.nvidia.com
      count: 2
`

func TestV1beta1Converted(t *testing.T) {
	ss, err := LoadSlices("s.yaml", []byte(v1beta1Slice))
	if err != nil {
		t.Fatal(err)
	}
	d := ss[0].Obj.Spec.Devices[0]
	if d.Name != "gpu-0" || d.Attributes["type"].StringValue == nil || func() string { q := d.Capacity["memory"].Value; return q.String() }() != "80Gi" {
		t.Fatalf("device not converted: %+v", d)
	}
	cs, err := LoadClaims("c.yaml", []byte(v1beta1Claim))
	if err != nil {
		t.Fatal(err)
	}
	e := cs[0].Obj.Spec.Devices.Requests[0].Exactly
	if e == nil || e.DeviceClassName != "gpu.nvidia.com" || e.Count != 2 || e.AllocationMode != "ExactCount" {
		t.Fatalf("request not converted: %+v", cs[0].Obj.Spec.Devices.Requests[0])
	}
	cls, err := LoadClasses("classes.yaml", readSeed(t, "classes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	in := &Input{Slices: []*resourceSliceT{ss[0].Obj}, Claims: []*resourceClaimT{cs[0].Obj}}
	for _, c := range cls {
		in.Classes = append(in.Classes, c.Obj)
	}
	rep, err := Run(context.Background(), in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Fits || len(rep.Nodes[0].Allocations[0].Results) != 2 {
		t.Fatalf("2 GPUs of 2 do not fit: %+v", rep.Nodes[0])
	}
}

// TestBadInput: every bad input names the object, the field and the reason.
func TestBadInput(t *testing.T) {
	classes := string(readSeed(t, "classes.yaml"))
	slice := string(readSeed(t, "slices-dgx-h100.yaml"))
	claim := func(class, expr string) string {
		s := "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c, namespace: ns}\nspec:\n  devices:\n    requests:\n    - name: r\n      exactly:\n        deviceClassName: " + class + "\n"
		if expr != "" {
			s += "        selectors:\n        - cel: {expression: \"" + expr + "\"}\n"
		}
		return s
	}
	cases := []struct {
		name, slices, classes, claims string
		want                          []string
	}{
		{"missing class", slice, classes, claim("nope.nvidia.com", ""), []string{`ResourceClaim "ns/c"`, "spec.devices.requests[0].exactly.deviceClassName", "Not found"}},
		{"unknown CEL field", slice, classes, claim("gpu.nvidia.com", "device.atributes.size() > 0"), []string{`ResourceClaim "ns/c"`, "selectors[0].cel.expression", "undefined field 'atributes'"}},
		{"CEL syntax error", slice, classes, claim("gpu.nvidia.com", "device.driver == "), []string{`ResourceClaim "ns/c"`, "selectors[0].cel.expression", "Syntax error"}},
		{"duplicate device", slice + "---\n" + strings.Replace(slice, "name: dgx-h100-gpu-nvidia-com-0", "name: other", 1), classes, claim("gpu.nvidia.com", ""), []string{`ResourceSlice "other"`, "spec.devices[0].name", "Duplicate value"}},
		{"wrong apiVersion", strings.Replace(slice, "resource.k8s.io/v1", "resource.k8s.io/v2", 1), classes, claim("gpu.nvidia.com", ""), []string{"apiVersion", `Unsupported value: "resource.k8s.io/v2"`}},
		{"unknown field", slice, classes, strings.Replace(claim("gpu.nvidia.com", ""), "deviceClassName", "deviceClass", 1), []string{`ResourceClaim "c"`, "deviceClass", "unknown field"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := loadAndRun(c.slices, c.classes, c.claims)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func loadAndRun(slices, classes, claims string) error {
	ss, err := LoadSlices("slices.yaml", []byte(slices))
	if err != nil {
		return err
	}
	cs, err := LoadClasses("classes.yaml", []byte(classes))
	if err != nil {
		return err
	}
	cl, err := LoadClaims("claims.yaml", []byte(claims))
	if err != nil {
		return err
	}
	in := &Input{}
	for _, s := range ss {
		in.Slices = append(in.Slices, s.Obj)
	}
	for _, c := range cs {
		in.Classes = append(in.Classes, c.Obj)
	}
	for _, c := range cl {
		in.Claims = append(in.Claims, c.Obj)
	}
	_, err = Run(context.Background(), in, Options{})
	return err
}

func fuzzSeeds(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "seed", "*.yaml"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil && len(b) < 1<<16 {
			f.Add(b)
		}
	}
	f.Add([]byte(v1beta1Slice))
	f.Add([]byte(v1beta1Claim))
	f.Add([]byte(`{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"a"}}]}`))
}

// fuzzLoad: a loader never panics, every failure is an *objects.Error, and
// whatever it accepts survives being written back as a v1 List and loaded
// again (roundTrip).
func fuzzLoad[T any](f *testing.F, kind string, load func([]byte) ([]Loaded[T], error)) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := load(data)
		var oe *objects.Error
		if err != nil && !errors.As(err, &oe) {
			t.Fatalf("error %v (%T) is not an *objects.Error", err, err)
		}
		roundTrip(t, kind, load, data)
	})
}

func FuzzLoadSlices(f *testing.F) {
	fuzzLoad(f, "ResourceSlice", func(b []byte) ([]Loaded[*resourceapi.ResourceSlice], error) { return LoadSlices("f", b) })
}

func FuzzLoadClasses(f *testing.F) {
	fuzzLoad(f, "DeviceClass", func(b []byte) ([]Loaded[*resourceapi.DeviceClass], error) { return LoadClasses("f", b) })
}

func FuzzLoadClaims(f *testing.F) {
	fuzzLoad(f, "ResourceClaim", func(b []byte) ([]Loaded[*resourceapi.ResourceClaim], error) { return LoadClaims("f", b) })
}

func FuzzLoadTemplates(f *testing.F) {
	fuzzLoad(f, "ResourceClaimTemplate", func(b []byte) ([]Loaded[*resourceapi.ResourceClaimTemplate], error) {
		return LoadTemplates("f", b)
	})
}
