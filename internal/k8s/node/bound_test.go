package node

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/sysfmt"
)

// A node file naming absurd CPU ranges is refused, naming the field, before
// kubelet's parser allocates an entry per id (issue 10, defect 8: "0-999999999"
// grew k8s admit to 11.7 GB).
func TestBuildBoundsCPUListsBeforeAllocating(t *testing.T) {
	huge12K := strings.TrimSuffix(strings.Repeat("0-65535,", 12<<10/8), ",")
	for _, tc := range []struct{ name, yaml, field string }{
		{"numa cpus", "numaNodes:\n- id: 0\n  cpus: \"0-999999\"\n  memory: 1Gi\n", "numaNodes[0].cpus"},
		{"numa cpus 1e9", "numaNodes:\n- id: 0\n  cpus: \"0-999999999\"\n  memory: 1Gi\n", "numaNodes[0].cpus"},
		{"numa cpus 12 KB", "numaNodes:\n- id: 0\n  cpus: \"" + huge12K + "\"\n  memory: 1Gi\n", "numaNodes[0].cpus"},
		{"cores", "numaNodes:\n- id: 0\n  cpus: \"0-3\"\n  memory: 1Gi\ncores: [\"0-999999\"]\n", "cores[0]"},
		{"sockets", "numaNodes:\n- id: 0\n  cpus: \"0-3\"\n  memory: 1Gi\nsockets:\n- id: 0\n  cpus: \"0-999999\"\n", "sockets[0].cpus"},
	} {
		doc := []byte("apiVersion: gpunode.io/v1\nkind: Node\n" + tc.yaml)
		var err error
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err = Parse(doc)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, sysfmt.ErrCPUListBound) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: %v; want a bound error naming %s", tc.name, err, tc.field)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 4<<20 {
			t.Errorf("%s: %d bytes allocated; want < 4 MiB", tc.name, got)
		}
	}
}

// Load's errors name the file and the line of the field.
func TestLoadErrorNamesLine(t *testing.T) {
	p := t.TempDir() + "/node.yaml"
	doc := "apiVersion: gpunode.io/v1\nkind: Node\nnumaNodes:\n- id: 0\n  cpus: \"0-3\"\n  memory: 1Gi\n- id: 1\n  cpus: \"3-5\"\n  memory: 1Gi\n"
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(p, 0)
	if want := "node file " + p + ":8: numaNodes[1].cpus: CPU 3 already belongs to NUMA node 0"; err == nil || err.Error() != want {
		t.Errorf("Load: %v\nwant %s", err, want)
	}
}
