package mig

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpunode/gpunode/internal/goldenfile"

	"github.com/gpunode/gpunode/internal/output"
)

var update = flag.Bool("update", false, "rewrite golden files")

// golden compares got with testdata/golden/name (rewritten with -update).
// The CLI tests in internal/cli compare `gpunode mig ...` output with the
// same files.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", "golden", name), got, *update)
}

func render(t *testing.T, f output.Format, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := output.Write(&b, f, v, output.Options{}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// GoldenPlans are the plan cases shared with the CLI golden tests.
var goldenPlans = []struct {
	Name, Model, Want string
	GPUs              int
	CI                bool
}{
	{"plan-h100-feasible", "H100-80GB", "3g.40gb=1,2g.20gb=1,1g.10gb=2", 1, false},
	{"plan-h100-ci", "NVIDIA H100 80GB HBM3", "3g.40gb=1,4g.40gb=1", 1, true},
	{"plan-a100-infeasible", "A100-SXM4-40GB", "3g.20gb=2,1g.5gb=1", 1, false},
	{"plan-h100-8gpus", "H100-80GB", "3g.40gb=6,4g.40gb=3,2g.20gb=5,1g.10gb=9", 8, false},
	{"plan-a30-infeasible-2gpus", "A30-24GB", "4g.24gb=1,2g.12gb=2,1g.6gb+me=1,2g.12gb+me=1", 2, false},
	{"plan-h100-ci-forms", "H100-80GB", "1c.3g.40gb=4,2c.3g.40gb=1", 1, false},
}

func TestGoldenPlans(t *testing.T) {
	c := Builtin()
	for _, tc := range goldenPlans {
		t.Run(tc.Name, func(t *testing.T) {
			p, err := c.Lookup(tc.Model)
			if err != nil {
				t.Fatal(err)
			}
			w, err := ParseWant(tc.Want)
			if err != nil {
				t.Fatal(err)
			}
			pl, err := c.Plan(context.Background(), p, w, PlanOptions{GPUs: tc.GPUs, ComputeInstances: tc.CI})
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tc.Name+".txt", render(t, output.Table, pl))
			golden(t, tc.Name+".json", render(t, output.JSON, pl))
			checkPlanProperties(t, pl)
		})
	}
}

func TestGoldenValidate(t *testing.T) {
	data, err := os.ReadFile("testdata/mig-parted.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := ParseMigParted(data)
	if err != nil {
		t.Fatal(err)
	}
	c := Builtin()
	ids := make([]uint16, 8)
	for i := range ids {
		ids[i] = 0x2330
	}
	v, err := c.Validate(context.Background(), spec, ValidateOptions{File: "testdata/mig-parted.yaml", GPUs: NodeGPUs(ids)})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "validate-h100x8.txt", render(t, output.Table, v))
	golden(t, "validate-h100x8.json", render(t, output.JSON, v))
	v, err = c.Validate(context.Background(), spec, ValidateOptions{File: "testdata/mig-parted.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "validate-catalogue.txt", render(t, output.Table, v))
}

func TestGoldenProfiles(t *testing.T) {
	c := Builtin()
	p, _ := c.Lookup("H100-80GB")
	golden(t, "profiles-h100.txt", render(t, output.Table, ProfilesOf(p)))
	a30, _ := c.Lookup("A30-24GB")
	golden(t, "profiles-a30.json", render(t, output.JSON, ProfilesOf(a30)))
	golden(t, "profiles-all.txt", render(t, output.Table, ProfilesOf(c.Products()...)))
}
