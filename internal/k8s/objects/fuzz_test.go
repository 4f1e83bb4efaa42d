package objects

import (
	"errors"
	"os"
	"path/filepath"
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

// fuzzLoader: a loader never panics, and every failure is an *Error.
func fuzzLoader(f *testing.F, load func(string, []byte) error) {
	seeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		err := load("fuzz", data)
		var oe *Error
		if err != nil && !errors.As(err, &oe) {
			t.Fatalf("error %v (%T) is not an *Error", err, err)
		}
	})
}

func FuzzLoadNodes(f *testing.F)    { fuzzLoader(f, nodes) }
func FuzzLoadPods(f *testing.F)     { fuzzLoader(f, pods) }
func FuzzLoadWorkload(f *testing.F) { fuzzLoader(f, work) }
func FuzzLoadTopology(f *testing.F) { fuzzLoader(f, topo) }
