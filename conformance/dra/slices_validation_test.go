package dra

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	resourceinternal "k8s.io/kubernetes/pkg/apis/resource"
	_ "k8s.io/kubernetes/pkg/apis/resource/install"
	"k8s.io/kubernetes/pkg/apis/resource/validation"

	"github.com/gpunode/gpunode/internal/k8s/dra"
)

// validateSlices runs the apiserver's create validation on every slice.
func validateSlices(t *testing.T, what string, slices []*resourcev1.ResourceSlice) {
	t.Helper()
	for _, s := range slices {
		var in resourceinternal.ResourceSlice
		if err := legacyscheme.Scheme.Convert(s, &in, nil); err != nil {
			t.Fatalf("%s: convert %s: %v", what, s.Name, err)
		}
		if errs := validation.ValidateResourceSlice(&in); len(errs) > 0 {
			t.Errorf("%s: ResourceSlice %s rejected by the apiserver: %v", what, s.Name, errs.ToAggregate())
		}
	}
}

// TestSlicesPassAPIServerValidation: `dra slices` for every fixture host and
// MIG mode, and synthetic nodes of 1-24 GPUs with dynamic MIG.
func TestSlicesPassAPIServerValidation(t *testing.T) {
	for _, f := range []string{"slices-dgx-h100.yaml", "slices-dgx-h100-dynamic-mig.yaml"} {
		p := filepath.Join("..", "..", "internal", "k8s", "dra", "testdata", "seed", f)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		ls, err := dra.LoadSlices(p, b)
		if err != nil {
			t.Fatal(err)
		}
		var ss []*resourcev1.ResourceSlice
		for _, l := range ls {
			ss = append(ss, l.Obj)
		}
		validateSlices(t, f, ss)
	}
	n := 0
	for _, gpus := range []int{1, 2, 8, 9, 16, 24} {
		for _, mode := range []string{dra.MIGNone, dra.MIGDynamic} {
			ss := synthSlices(t, fmt.Sprintf("node-%d", gpus), gpus, 4, mode)
			validateSlices(t, fmt.Sprintf("%d GPUs, --mig %s", gpus, mode), ss)
			n += len(ss)
		}
	}
	t.Logf("%d synthetic slices validated", n)
}
