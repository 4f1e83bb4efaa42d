package place

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/goldenfile"
	"github.com/gpunode/gpunode/internal/k8s/objects"
	"github.com/gpunode/gpunode/internal/output"
)

var update = flag.Bool("update", false, "rewrite golden files")

// goldenCase is one directory of testdata: its input files and flags.
type goldenCase struct {
	dir, nodes, pods, topology, workload string
	levels                               []string
	fits                                 bool
	domain                               DomainRef
}

func goldenCases() []goldenCase {
	return []goldenCase{
		{dir: "seed-5.7.1-podgroup", fits: true, domain: DomainRef{"topology.kubernetes.io/rack", "rack-b"}},
		{dir: "podgroup-nofit", nodes: "seed-5.7.1-podgroup/nodes.yaml", pods: "seed-5.7.1-podgroup/pods.yaml",
			levels: []string{"topology.kubernetes.io/zone", "topology.kubernetes.io/rack"}, fits: false, domain: DomainRef{"topology.kubernetes.io/rack", "rack-b"}},
		{dir: "seed-5.7.2-kai", topology: "topology.yaml", fits: true, domain: DomainRef{"cloud.provider.com/topology-rack", "rack-2"}},
		{dir: "seed-5.7.3-volcano", topology: "topology.yaml", fits: true, domain: DomainRef{"tier-1", "s1"}},
		{dir: "volcano-tasks", topology: "topology.yaml", fits: true, domain: DomainRef{"tier-2", "spine"}},
		{dir: "kueue-nofit", topology: "topology.yaml", fits: false, domain: DomainRef{"example.com/rack", "r1"}},
		// 80+40+40 one-CPU pods on two nodes of 110: fits only as 40+40+30 and
		// 40+0+10, count vectors the old per-node enumeration budget dropped
		{dir: "volcano-80-40-40", levels: []string{"kubernetes.io/hostname"}, fits: true, domain: DomainRef{"cluster", "cluster"}},
		{dir: "levels-plain", levels: []string{"topology.kubernetes.io/zone", "example.com/rack"}, fits: true, domain: DomainRef{"example.com/rack", "r2"}},
	}
}

func (gc goldenCase) path(name, def string) string {
	if name == "" {
		name = def
	}
	if strings.Contains(name, "/") {
		return filepath.Join("testdata", name)
	}
	return filepath.Join("testdata", gc.dir, name)
}

func loadCase(t testing.TB, gc goldenCase) Input {
	t.Helper()
	read := func(p string) []byte {
		b, err := objects.ReadFile(p, 0)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var in Input
	var err error
	p := gc.path(gc.nodes, "nodes.yaml")
	if in.Nodes, err = objects.DecodeNodes(p, read(p)); err != nil {
		t.Fatal(err)
	}
	p = gc.path(gc.pods, "pods.yaml")
	if in.Pods, err = objects.DecodePods(p, read(p)); err != nil {
		t.Fatal(err)
	}
	if gc.topology != "" {
		p = gc.path(gc.topology, "")
		if in.Topology, err = objects.LoadTopology(p, read(p)); err != nil {
			t.Fatal(err)
		}
	}
	p = gc.path(gc.workload, "workload.yaml")
	if in.Workload, err = objects.LoadWorkload(p, read(p)); err != nil {
		t.Fatal(err)
	}
	in.Levels = gc.levels
	return in
}

func TestGolden(t *testing.T) {
	for _, gc := range goldenCases() {
		t.Run(gc.dir, func(t *testing.T) {
			rep, err := Run(context.Background(), loadCase(t, gc))
			if err != nil {
				t.Fatal(err)
			}
			if rep.Fits != gc.fits || rep.Domain != gc.domain {
				t.Errorf("fits %v domain %+v, want %v %+v", rep.Fits, rep.Domain, gc.fits, gc.domain)
			}
			checkPlacement(t, rep)
			var tb, jb bytes.Buffer
			if err := output.Write(&tb, output.Table, rep, output.Options{}); err != nil {
				t.Fatal(err)
			}
			if err := output.Write(&jb, output.JSON, rep, output.Options{}); err != nil {
				t.Fatal(err)
			}
			goldenfile.Check(t, filepath.Join("testdata", gc.dir, "want.txt"), tb.Bytes(), *update)
			goldenfile.Check(t, filepath.Join("testdata", gc.dir, "want.json"), jb.Bytes(), *update)
			var m map[string]any
			if err := json.Unmarshal(jb.Bytes(), &m); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"schemaVersion", "fits", "domain", "placements", "explain"} {
				if _, ok := m[k]; !ok {
					t.Errorf("JSON lacks %q", k)
				}
			}
		})
	}
}

// checkPlacement: every pod placed once when the gang fits, none otherwise.
func checkPlacement(t *testing.T, rep *Report) {
	t.Helper()
	if !rep.Fits {
		if len(rep.Placements) != 0 {
			t.Errorf("does not fit but has %d placements", len(rep.Placements))
		}
		return
	}
	if len(rep.Placements) != rep.Explain.Pods {
		t.Errorf("%d placements for %d pods", len(rep.Placements), rep.Explain.Pods)
	}
	seen := map[string]bool{}
	for _, p := range rep.Placements {
		if seen[p.Pod] || p.Node == "" {
			t.Errorf("bad placement %+v", p)
		}
		seen[p.Pod] = true
	}
}

// TestNoHeadersListsEveryPlacement: --no-headers is for scripts, which
// read every row as a placement: all of them are listed, with no "... and
// N more" row, at, below and above MaxListed; the table for people stops
// at MaxListed.
func TestNoHeadersListsEveryPlacement(t *testing.T) {
	for _, n := range []int{MaxListed - 1, MaxListed, MaxListed + 1, 3 * MaxListed} {
		r := &Report{Fits: true}
		for i := range n {
			r.Placements = append(r.Placements, Placement{Pod: fmt.Sprintf("p%d", i), Task: "w", Node: fmt.Sprintf("n%d", i)})
		}
		var b bytes.Buffer
		if err := r.WriteTable(&b, output.Options{NoHeaders: true}); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
		if len(lines) != n || strings.Contains(b.String(), "more") || !strings.HasPrefix(lines[n-1], fmt.Sprintf("p%d ", n-1)) {
			t.Errorf("%d placements: %d rows:\n%s", n, len(lines), b.String())
		}
		b.Reset()
		if err := r.WriteTable(&b, output.Options{}); err != nil {
			t.Fatal(err)
		}
		if more := strings.Contains(b.String(), fmt.Sprintf("... and %d more", n-MaxListed)); more != (n > MaxListed) {
			t.Errorf("%d placements, for people: 'and more' line %v:\n%s", n, more, b.String())
		}
	}
}
