package objects

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

// seeds are the place testdata files plus small documents of every kind.
func seeds(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "place", "testdata", "*", "*.yaml"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(goodNode))
	f.Add([]byte(`{"apiVersion":"v1","kind":"List","items":[{"metadata":{"name":"a"}}]}`))
	f.Add([]byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {nodeName: a, containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]}\n"))
}

// fuzzLoader: a loader's failure is an *Error naming the file and a line
// inside the input (or none); what it accepts, written back as one List
// of the objects' JSON, loads again to objects with equal JSON (objects
// lists each accepted object's JSON).
func fuzzLoader[T any](f *testing.F, load func(string, []byte) (T, error), objects func(T) []any) {
	seeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := load("fuzz", data)
		var oe *Error
		if err != nil {
			if !errors.As(err, &oe) {
				t.Fatalf("error %v (%T) is not an *Error", err, err)
			}
			if lines := 1 + bytes.Count(data, []byte("\n")); oe.File != "fuzz" || oe.Line < 0 || oe.Line > lines {
				t.Fatalf("error at %s:%d, input has %d lines: %v", oe.File, oe.Line, lines, err)
			}
			return
		}
		asJSON := func(objs []any) []map[string]any {
			items := make([]map[string]any, 0, len(objs))
			for _, o := range objs {
				b, err := json.Marshal(o)
				if err != nil {
					t.Fatal(err)
				}
				var m map[string]any
				if err := json.Unmarshal(b, &m); err != nil {
					t.Fatal(err)
				}
				items = append(items, m)
			}
			return items
		}
		items := asJSON(objects(got))
		list, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
		if err != nil {
			t.Fatal(err)
		}
		again, err := load("again", list)
		if err != nil {
			t.Fatalf("the loader refuses what it accepted, written back: %v\n%s", err, list)
		}
		if got := asJSON(objects(again)); !reflect.DeepEqual(got, items) {
			t.Fatalf("the objects differ after the round trip:\n%v\n%v", items, got)
		}
	})
}

func workloadObjects(w *Workload) []any {
	var out []any
	for _, o := range w.PodGroups {
		out = append(out, o.PodGroup)
	}
	for _, o := range w.Jobs {
		out = append(out, o.Job)
	}
	for _, o := range w.VolcanoJobs {
		out = append(out, o.VolcanoJob)
	}
	return out
}

func topologyObjects(t *Topology) []any {
	var out []any
	for _, o := range t.HyperNodes {
		out = append(out, o.HyperNode)
	}
	for _, o := range append(slices.Clone(t.KAI), t.Kueue...) {
		out = append(out, o.LevelTopology)
	}
	return out
}

// fuzzRoundTrip: whatever a loader of v1 objects accepts, written back as
// a v1 List and loaded again, gives the same objects.
func fuzzRoundTrip[T any](f *testing.F, kind string, load func(string, []byte) ([]T, error)) {
	seeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := load("fuzz", data)
		var oe *Error
		if err != nil {
			if !errors.As(err, &oe) {
				t.Fatalf("error %v (%T) is not an *Error", err, err)
			}
			return
		}
		// As v1 objects in JSON, with apiVersion and kind written (a List
		// item may leave them out).
		asJSON := func(objs []T) []map[string]any {
			items := make([]map[string]any, 0, len(objs))
			for _, o := range objs {
				b, err := json.Marshal(o)
				if err != nil {
					t.Fatal(err)
				}
				var m map[string]any
				if err := json.Unmarshal(b, &m); err != nil {
					t.Fatal(err)
				}
				m["apiVersion"], m["kind"] = "v1", kind
				items = append(items, m)
			}
			return items
		}
		items := asJSON(out)
		list, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
		if err != nil {
			t.Fatal(err)
		}
		again, err := load("again", list)
		if err != nil {
			t.Fatalf("the loader refuses what it produced: %v\n%s", err, list)
		}
		if got := asJSON(again); !reflect.DeepEqual(got, items) {
			t.Fatalf("the objects differ after the round trip:\n%v\n%v", items, got)
		}
	})
}

func FuzzLoadNodes(f *testing.F)    { fuzzRoundTrip(f, "Node", LoadNodes) }
func FuzzLoadPods(f *testing.F)     { fuzzRoundTrip(f, "Pod", LoadPods) }
func FuzzLoadWorkload(f *testing.F) { fuzzLoader(f, LoadWorkload, workloadObjects) }
func FuzzLoadTopology(f *testing.F) { fuzzLoader(f, LoadTopology, topologyObjects) }
