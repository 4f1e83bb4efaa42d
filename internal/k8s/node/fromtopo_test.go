package node

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/testhost"
	"github.com/gpunode/gpunode/internal/topo"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestFromTopologyFixtures(t *testing.T) {
	for _, name := range []string{"dgx-h100", "gh200", "amd-8numa", "vm-2vcpu"} {
		t.Run(name, func(t *testing.T) {
			fs, err := hostfs.New(testhost.Path(t, name))
			if err != nil {
				t.Fatal(err)
			}
			tp, err := topo.Discover(context.Background(), fs)
			if err != nil {
				t.Fatal(err)
			}
			n, err := FromTopology(tp)
			if err != nil {
				t.Fatal(err)
			}
			online := 0
			for _, c := range tp.CPUs {
				if c.Online {
					online++
				}
			}
			if len(n.CPUs) != online || len(n.NUMANodes) != max(1, len(tp.NUMANodes)) {
				t.Fatalf("%d CPUs, %d NUMA nodes; topology has %d online CPUs, %d NUMA nodes", len(n.CPUs), len(n.NUMANodes), online, len(tp.NUMANodes))
			}
			if len(tp.GPUs) > 0 {
				gpus := n.DeviceResource(GPUResource)
				if gpus == nil || len(gpus.Devices) != len(tp.GPUs) {
					t.Fatalf("gpus = %+v", gpus)
				}
				for i, g := range tp.GPUs {
					d := gpus.Devices[i]
					if g.NUMANode >= 0 && (len(d.NUMANodes) != 1 || d.NUMANodes[0] != g.NUMANode) {
						t.Errorf("GPU %d on NUMA %d, device %+v", g.Index, g.NUMANode, d)
					}
				}
			}
			for _, c := range n.CPUs {
				if c.Core > c.ID {
					t.Errorf("CPU %d: core id %d is not its lowest sibling", c.ID, c.Core)
				}
			}
			// The model survives a round trip through the node file form, which
			// is kept as a golden file (and doubles as an example node file).
			if _, err := n.ToFile().Build(); err != nil {
				t.Fatalf("round trip: %v", err)
			}
			b, err := yaml.Marshal(n.ToFile())
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "hosts", name+".yaml")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if string(want) != string(b) {
				t.Errorf("%s differs from the live topology's node file:\n%s", golden, b)
			}
		})
	}
}
