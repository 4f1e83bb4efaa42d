package kubeletcfg

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/cpuset"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestRecommendPassesLint(t *testing.T) {
	for _, nodeFile := range []string{"node-2numa-smt.yaml", "node-gb200.yaml"} {
		n := mustNode(t, filepath.Join("testdata", nodeFile))
		for _, profile := range []string{ProfileTraining, ProfileInference} {
			name := strings.TrimSuffix(nodeFile, ".yaml") + "-" + profile
			t.Run(name, func(t *testing.T) {
				rec, err := Recommend(n, profile)
				if err != nil {
					t.Fatal(err)
				}
				c, err := rec.KubeletConfiguration()
				if err != nil {
					t.Fatal(err)
				}
				r := Lint(c, n)
				if r.Problems() != 0 {
					t.Fatalf("recommended config has findings:\n%s", dump(r))
				}
				// reservedMemory sums exactly to the reservations.
				sum := resource.NewQuantity(0, resource.BinarySI)
				for _, rm := range c.KC.ReservedMemory {
					sum.Add(rm.Limits[v1.ResourceMemory])
				}
				want := resource.MustParse(c.KC.SystemReserved["memory"])
				want.Add(resource.MustParse(c.KC.KubeReserved["memory"]))
				want.Add(resource.MustParse(c.KC.EvictionHard["memory.available"]))
				if !sum.Equal(want) {
					t.Errorf("reservedMemory sum %s != %s", sum, &want)
				}
				// Whole cores on every NUMA node with CPUs.
				set, err := cpuset.Parse(c.KC.ReservedSystemCPUs)
				if err != nil {
					t.Fatal(err)
				}
				perNode := map[int]int{}
				cores := map[int]bool{}
				for _, cpu := range n.CPUs {
					if set.Contains(cpu.ID) {
						perNode[cpu.NUMANode]++
						cores[cpu.Core] = true
					}
				}
				for _, cpu := range n.CPUs {
					if cores[cpu.Core] && !set.Contains(cpu.ID) {
						t.Errorf("CPU %d: sibling of a reserved CPU is not reserved", cpu.ID)
					}
				}
				for _, nn := range n.NUMANodes {
					if nn.CPUs.Size() > 0 && perNode[nn.ID] == 0 {
						t.Errorf("NUMA node %d has CPUs but none reserved", nn.ID)
					}
				}
				got, err := rec.YAML()
				if err != nil {
					t.Fatal(err)
				}
				golden := filepath.Join("testdata", name+".golden.yaml")
				if *update {
					if err := os.WriteFile(golden, got, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want2, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run go test -update)", err)
				}
				if !bytes.Equal(got, want2) {
					t.Errorf("YAML differs from %s (run go test -update):\n%s", golden, got)
				}
			})
		}
	}
}

func TestRecommendErrors(t *testing.T) {
	n := mustNode(t, "testdata/node-2numa-smt.yaml")
	if _, err := Recommend(n, "batch"); err == nil || !strings.Contains(err.Error(), `unknown profile "batch"`) {
		t.Errorf("err = %v", err)
	}
	if _, err := Recommend(nil, ProfileTraining); err == nil {
		t.Error("nil node accepted")
	}
}
