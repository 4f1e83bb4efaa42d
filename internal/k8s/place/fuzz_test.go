package place

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpunode/gpunode/internal/k8s/objects"
)

// FuzzRun: any workload and topology that load either place (with a valid
// placement) or fail as bad input; nothing panics.
func FuzzRun(f *testing.F) {
	for _, gc := range goldenCases() {
		w, _ := os.ReadFile(gc.path(gc.workload, "workload.yaml"))
		var tp []byte
		if gc.topology != "" {
			tp, _ = os.ReadFile(gc.path(gc.topology, ""))
		}
		f.Add(w, tp)
	}
	nb, err := os.ReadFile(filepath.Join("testdata", "volcano-tasks", "nodes.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	pb, _ := os.ReadFile(filepath.Join("testdata", "volcano-tasks", "pods.yaml"))
	nodes, err := objects.DecodeNodes("n", nb)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, wb, tb []byte) {
		pods, err := objects.DecodePods("p", pb)
		if err != nil {
			t.Fatal(err)
		}
		in := Input{Nodes: nodes, Pods: pods}
		if in.Workload, err = objects.LoadWorkload("w", wb); err != nil {
			return
		}
		if len(tb) > 0 {
			if in.Topology, err = objects.LoadTopology("t", tb); err != nil {
				return
			}
		}
		rep, err := Run(context.Background(), in)
		var oe *objects.Error
		if err != nil {
			if !errors.As(err, &oe) {
				t.Fatalf("error %v (%T) is not an *objects.Error", err, err)
			}
			return
		}
		if rep.Fits && len(rep.Placements) != rep.Explain.Pods || !rep.Fits && len(rep.Placements) != 0 {
			t.Fatalf("fits %v with %d placements for %d pods", rep.Fits, len(rep.Placements), rep.Explain.Pods)
		}
		// Each pod placed once, on a node of the input.
		known := map[string]bool{}
		for _, n := range nodes {
			known[n.Name] = true
		}
		placed := map[string]bool{}
		for _, p := range rep.Placements {
			if !known[p.Node] || p.Pod == "" || placed[p.Pod] {
				t.Fatalf("placement %+v: unknown node, no pod, or the pod twice (%v)", p, rep.Placements)
			}
			placed[p.Pod] = true
		}
	})
}
