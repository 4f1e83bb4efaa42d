package node

import (
	"strings"
	"testing"
)

func TestLoadSeed(t *testing.T) {
	n, err := Load("testdata/seed-5.5.4.yaml", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(n.NUMANodes) != 2 || len(n.CPUs) != 96 {
		t.Fatalf("got %d NUMA nodes, %d CPUs", len(n.NUMANodes), len(n.CPUs))
	}
	if got := n.NUMANodes[1].MemoryBytes; got != 512<<30 {
		t.Errorf("memory of node 1 = %d", got)
	}
	gpu := n.DeviceResource("nvidia.com/gpu")
	if gpu == nil || len(gpu.Devices) != 8 || gpu.Devices[5].NUMANodes[0] != 1 {
		t.Fatalf("gpus = %+v", gpu)
	}
	if d, ok := n.Distance(0, 1); !ok || d != 21 {
		t.Errorf("distance(0,1) = %d, %v", d, ok)
	}
	c := n.CPUs[50]
	if c.ID != 50 || c.NUMANode != 1 || c.Socket != 1 || c.Core != 50 || c.Uncore != 1 {
		t.Errorf("cpu 50 = %+v", c)
	}
}

func TestRoundTrip(t *testing.T) {
	src := `apiVersion: gpunode.io/v1
kind: Node
numaNodes:
- {id: 0, cpus: "0-3", memory: 8Gi, hugepages: [{pageSize: 2Mi, count: 512}]}
- {id: 1, cpus: "4-7", memory: 8Gi}
cores: ["0,2", "1,3", "4,6", "5,7"]
sockets: [{id: 0, cpus: "0-7"}]
uncoreCaches: [{id: 0, cpus: "0-3"}, {id: 1, cpus: "4-7"}]
devices:
  example.com/nic: [{id: a, numaNodes: [0, 1]}, {id: b}, {id: c, numaNode: 1, health: Unhealthy}]
`
	n, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if c := n.CPUs[3]; c.Core != 1 || c.Socket != 0 || c.Uncore != 0 {
		t.Errorf("cpu 3 = %+v", c)
	}
	if c := n.CPUs[6]; c.Core != 4 || c.Uncore != 1 {
		t.Errorf("cpu 6 = %+v", c)
	}
	f := n.ToFile()
	n2, err := f.Build()
	if err != nil {
		t.Fatal(err)
	}
	if len(n2.CPUs) != 8 || n2.CPUs[6] != n.CPUs[6] || n2.Devices[0].Devices[2].Healthy {
		t.Errorf("round trip changed the model: %+v", n2)
	}
}

func TestParseErrors(t *testing.T) {
	base := "apiVersion: gpunode.io/v1\nkind: Node\n"
	for _, tc := range []struct{ name, src, want string }{
		{"kind", "apiVersion: gpunode.io/v1\nkind: Pod\nnumaNodes: [{id: 0, memory: 1Gi}]\n", "kind"},
		{"unknown field", base + "numaNodes: [{id: 0, memory: 1Gi, bogus: 1}]\n", "unknown field"},
		{"no numa", base + "numaNodes: []\n", "at least one NUMA node"},
		{"numa id 64", base + "numaNodes: [{id: 64, memory: 1Gi}]\n", "numaNodes[0].id: 64 is out of range 0..63"},
		{"dup numa", base + "numaNodes: [{id: 0, memory: 1Gi}, {id: 0, memory: 1Gi}]\n", "duplicate NUMA node 0"},
		{"cpu twice", base + "numaNodes: [{id: 0, cpus: 0-3, memory: 1Gi}, {id: 1, cpus: 3-5, memory: 1Gi}]\n", "numaNodes[1].cpus: CPU 3 already belongs to NUMA node 0"},
		{"bad cpuset", base + "numaNodes: [{id: 0, cpus: 3-1, memory: 1Gi}]\n", "numaNodes[0].cpus"},
		{"core unknown cpu", base + "numaNodes: [{id: 0, cpus: 0-3, memory: 1Gi}]\ncores: [\"0,9\"]\n", "cores[0]: CPU 9 is not in any NUMA node"},
		{"core across numa", base + "numaNodes: [{id: 0, cpus: 0-1, memory: 1Gi}, {id: 1, cpus: 2-3, memory: 1Gi}]\ncores: [\"0,2\", \"1\", \"3\"]\n", "different NUMA nodes"},
		{"core missing cpu", base + "numaNodes: [{id: 0, cpus: 0-3, memory: 1Gi}]\ncores: [\"0,1\"]\n", "CPU 2 is in no sibling group"},
		{"device unknown numa", base + "numaNodes: [{id: 0, memory: 1Gi}]\ndevices: {nvidia.com/gpu: [{id: g0, numaNode: 3}]}\n", `devices["nvidia.com/gpu"][0] (g0): NUMA node 3 does not exist`},
		{"device dup", base + "numaNodes: [{id: 0, memory: 1Gi}]\ndevices: {nvidia.com/gpu: [{id: g0}, {id: g0}]}\n", "duplicate device"},
		{"health", base + "numaNodes: [{id: 0, memory: 1Gi}]\ndevices: {nvidia.com/gpu: [{id: g0, health: meh}]}\n", "health"},
		{"distances", base + "numaNodes: [{id: 0, memory: 1Gi, distances: [10, 20]}]\n", "distances: has 2 entries, want 1"},
		{"hugepages", base + "numaNodes: [{id: 0, memory: 1Gi, hugepages: [{pageSize: 1Gi, count: 2}]}]\n", "exceed the node's memory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestIterateMasks(t *testing.T) {
	var got []Mask
	full := IterateMasks([]int{0, 2, 3}, 0, func(m Mask) { got = append(got, m) })
	want := []Mask{MaskOf(0), MaskOf(2), MaskOf(3), MaskOf(0, 2), MaskOf(0, 3), MaskOf(2, 3), MaskOf(0, 2, 3)}
	if !full || len(got) != len(want) {
		t.Fatalf("got %v (full=%v)", got, full)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("mask %d = %v, want %v", i, got[i], want[i])
		}
	}
	ids := make([]int, 40)
	for i := range ids {
		ids[i] = i
	}
	count, sawFull := 0, false
	full = IterateMasks(ids, 1000, func(m Mask) {
		count++
		if m.Count() == 40 {
			sawFull = true
		}
		if m.Count() > 2 && m.Count() != 40 {
			t.Fatalf("unexpected mask size %d", m.Count())
		}
	})
	if full || !sawFull || count != 40+780+1 {
		t.Fatalf("truncated enumeration: full=%v sawFull=%v count=%d", full, sawFull, count)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("apiVersion: gpunode.io/v1\nkind: Node\nnumaNodes: [{id: 0, cpus: 0-3, memory: 1Gi}]\ncores: [\"0,1\",\"2,3\"]\n"))
	f.Add([]byte("apiVersion: gpunode.io/v1\nkind: Node\nnumaNodes: [{id: 0, memory: 1Gi}]\ndevices: {a/b: [{id: x, numaNodes: [0]}]}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := Parse(b)
		if err != nil {
			return
		}
		if err := n.Validate(); err != nil {
			t.Fatalf("Parse accepted a node that does not validate: %v", err)
		}
		if _, err := n.ToFile().Build(); err != nil {
			t.Fatalf("round trip failed: %v", err)
		}
	})
}
