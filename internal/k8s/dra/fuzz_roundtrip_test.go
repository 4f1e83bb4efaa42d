package dra

import (
	"encoding/json"
	"reflect"
	"testing"
)

// roundTrip is the fuzzers' property beyond "no panic": whatever a loader
// accepts, written back as a v1 List and loaded again, gives the same
// objects (the second load reads what the first produced).
func roundTrip[T any](t *testing.T, kind string, load func([]byte) ([]Loaded[T], error), data []byte) {
	out, err := load(data)
	if err != nil || len(out) == 0 {
		return
	}
	items := make([]map[string]any, 0, len(out))
	for _, o := range out {
		b, err := json.Marshal(o.Obj)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		m["apiVersion"], m["kind"] = "resource.k8s.io/v1", kind
		items = append(items, m)
	}
	list, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		t.Fatal(err)
	}
	again, err := load(list)
	if err != nil {
		t.Fatalf("the loader refuses what it produced: %v\n%s", err, list)
	}
	if len(again) != len(out) {
		t.Fatalf("%d objects, %d after the round trip", len(out), len(again))
	}
	for i := range out {
		if !reflect.DeepEqual(out[i].Obj, again[i].Obj) {
			t.Fatalf("object %d differs after the round trip:\n%+v\n%+v", i, out[i].Obj, again[i].Obj)
		}
	}
}

func FuzzRoundTripSlices(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		roundTrip(t, "ResourceSlice", func(b []byte) ([]Loaded[*resourceSliceT], error) { return LoadSlices("f", b) }, data)
	})
}

func FuzzRoundTripClaims(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		roundTrip(t, "ResourceClaim", func(b []byte) ([]Loaded[*resourceClaimT], error) { return LoadClaims("f", b) }, data)
	})
}
