package place

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// cpuNode is a Ready node with cpus CPUs and pods pod slots free.
func cpuNode(name string, cpus, pods int) *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
		Status: v1.NodeStatus{
			Allocatable: v1.ResourceList{v1.ResourceCPU: quantity(fmt.Sprint(cpus)), v1.ResourcePods: quantity(fmt.Sprint(pods))},
			Conditions:  []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}},
		},
	}
}

// placeCounts places one-CPU tasks of the given sizes on nodes of
// (cpus, pods) and checks the placement when it fits.
func placeCounts(t *testing.T, counts, cpus []int, nodes [][2]int) *Report {
	t.Helper()
	var ts []otask
	for k, c := range counts {
		ts = append(ts, otask{count: c, cpu: cpus[k]})
	}
	var vs []*v1.Node
	for i, n := range nodes {
		vs = append(vs, cpuNode(fmt.Sprintf("n%d", i), n[0], n[1]))
	}
	g := gangOf(ts)
	c := NewCluster(plannerNodes(vs), plannerPods(nil), GangResources(g.Tasks))
	rep, err := Place(context.Background(), c, LabelTopology(c, []string{"kubernetes.io/hostname"}), g)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Fits {
		pods, cpu := map[string]int{}, map[string]int{}
		for _, p := range rep.Placements {
			var k int
			fmt.Sscanf(p.Task, "t%d", &k)
			pods[p.Node]++
			cpu[p.Node] += cpus[k]
		}
		for i, n := range nodes {
			name := fmt.Sprintf("n%d", i)
			if cpu[name] > n[0] || pods[name] > n[1] {
				t.Fatalf("%v on %v: node %s holds %d pods, %d CPUs", counts, nodes, name, pods[name], cpu[name])
			}
		}
		if len(rep.Placements) != sumInts(counts) {
			t.Fatalf("%v: %d placements", counts, len(rep.Placements))
		}
	}
	return rep
}

// The cases the old enumeration budget (1<<16 count vectors per node) lost:
// with three or more tasks and over 40 pods per node it stopped before the
// large vectors and said "does not fit".
func TestPlaceThreeAndFourTasksExact(t *testing.T) {
	two := [][2]int{{110, 110}, {110, 110}}
	for _, tc := range []struct {
		counts []int
		nodes  [][2]int
		want   string
	}{
		{[]int{80, 40, 40}, two, "fits"},          // 40+40+30 and 40+0+10: the Volcano Job
		{[]int{80, 40, 40, 40}, two, "fits"},      // 200 of 220 slots
		{[]int{100, 60, 60}, two, "fits"},         // exactly full: every slot used
		{[]int{100, 60, 61}, two, "does-not-fit"}, // one pod over
		{[]int{110, 55, 55}, two, "fits"},
		{[]int{109, 55, 56}, two, "fits"},    // exactly full, every task split
		{[]int{60, 60, 60, 40}, two, "fits"}, // exactly full with four tasks
		{[]int{60, 60, 60, 41}, two, "does-not-fit"},
		{[]int{30, 30, 30}, [][2]int{{110, 45}, {110, 45}}, "fits"},         // pod slots bind, exactly full
		{[]int{30, 30, 31}, [][2]int{{110, 45}, {110, 45}}, "does-not-fit"}, // one pod over the slots
	} {
		name := fmt.Sprint(tc.counts, tc.nodes)
		t.Run(name, func(t *testing.T) {
			cpus := make([]int, len(tc.counts))
			for k := range cpus {
				cpus[k] = 1
			}
			var ons []onodeCap
			for _, n := range tc.nodes {
				ons = append(ons, onodeCap{cpu: n[0], pods: n[1]})
			}
			want := "does-not-fit"
			if capFeasible(ons, tc.counts, cpus) {
				want = "fits"
			}
			if want != tc.want {
				t.Fatalf("the oracle says %q, the table %q", want, tc.want)
			}
			rep := placeCounts(t, tc.counts, cpus, tc.nodes)
			if rep.Verdict != want {
				t.Fatalf("verdict %q (fits %v), oracle %q; notes %v", rep.Verdict, rep.Fits, want, rep.Explain.Notes)
			}
			if rep.Fits != (want == "fits") {
				t.Fatalf("fits %v with verdict %q", rep.Fits, rep.Verdict)
			}
		})
	}
}

// onodeCap is a node of the capacity oracle: cpu CPUs and pods slots.
type onodeCap struct{ cpu, pods int }

// holdsCap says whether node n holds take[k] pods of task k, pod k
// needing cpus[k] CPUs.
func holdsCap(n onodeCap, take, cpus []int) bool {
	c, p := 0, 0
	for k, x := range take {
		c += x * cpus[k]
		p += x
	}
	return c <= n.cpu && p <= n.pods
}

// capFeasible decides whether two nodes hold every pod of every task by
// trying every split of the pods between them (what the first node takes
// decides what the second must hold).
func capFeasible(nodes []onodeCap, counts, cpus []int) bool {
	if len(nodes) != 2 {
		panic("capFeasible: two nodes")
	}
	take := make([]int, len(counts))
	rest := make([]int, len(counts))
	var rec func(k int) bool
	rec = func(k int) bool {
		if k == len(counts) {
			for i := range counts {
				rest[i] = counts[i] - take[i]
			}
			return holdsCap(nodes[0], take, cpus) && holdsCap(nodes[1], rest, cpus)
		}
		for x := 0; x <= counts[k]; x++ {
			take[k] = x
			if !holdsCap(nodes[0], take[:k+1], cpus[:k+1]) {
				break
			}
			if rec(k + 1) {
				return true
			}
		}
		take[k] = 0
		return false
	}
	return rec(0)
}

// bruteMaximal lists every count vector node n holds (each at most lim),
// and keeps the maximal ones, by the definition.
func bruteMaximal(n *Node, tasks []*Task, lim []int) [][]int {
	var all [][]int
	cur := make([]int, len(tasks))
	var rec func(ti int)
	rec = func(ti int) {
		if ti == len(tasks) {
			pods := 0
			used := make([]int64, len(n.Free))
			for k, c := range cur {
				pods += c
				for r, q := range tasks[k].req {
					used[r] += int64(c) * q
				}
			}
			if int64(pods) > n.FreePods {
				return
			}
			for r := range used {
				if used[r] > 0 && used[r] > n.Free[r] {
					return
				}
			}
			all = append(all, append([]int(nil), cur...))
			return
		}
		for k := 0; k <= lim[ti]; k++ {
			cur[ti] = k
			rec(ti + 1)
		}
		cur[ti] = 0
	}
	rec(0)
	var out [][]int
	for i, v := range all {
		dominated := false
		for j, w := range all {
			if i == j {
				continue
			}
			ge, gt := true, false
			for k := range v {
				if w[k] < v[k] {
					ge = false
					break
				}
				if w[k] > v[k] {
					gt = true
				}
			}
			if ge && gt {
				dominated = true
				break
			}
		}
		if !dominated {
			out = append(out, v)
		}
	}
	return out
}

func vecKeys(vs [][]int) []string {
	var out []string
	for _, v := range vs {
		out = append(out, fmt.Sprint(v))
	}
	sort.Strings(out)
	return out
}

// maximalCounts against the definition on random nodes and tasks: two to
// four tasks of CPU, GPU and memory-like requests, pod slots that bind or
// not, and limits below and above what the node holds.
func TestMaximalCountsMatchesDefinition(t *testing.T) {
	r := rand.New(rand.NewSource(30))
	for c := 0; c < 400; c++ {
		T := 2 + r.Intn(3)
		var ts []otask
		for i := 0; i < T; i++ {
			ts = append(ts, otask{count: 1 + r.Intn(7), gpu: r.Intn(3), cpu: r.Intn(4)})
		}
		g := gangOf(ts)
		node := &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"kubernetes.io/hostname": "n"}},
			Status: v1.NodeStatus{
				Allocatable: v1.ResourceList{v1.ResourceCPU: quantity(fmt.Sprint(r.Intn(13))), ResourceGPU: quantity(fmt.Sprint(r.Intn(9))), v1.ResourcePods: quantity(fmt.Sprint(r.Intn(12)))},
				Conditions:  []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}},
			},
		}
		cl := NewCluster(plannerNodes([]*v1.Node{node}), nil, GangResources(g.Tasks))
		e := newEngine(cl, LabelTopology(cl, []string{"kubernetes.io/hostname"}), g)
		demand := make([]int, T)
		lim := make([]int, T)
		for ti := range demand {
			demand[ti] = r.Intn(8)
			lim[ti] = min(int(e.fits[ti][0]), demand[ti])
		}
		got := e.maximalCounts(0, demand, map[string]countSet{})
		if !got.complete {
			t.Fatalf("case %d: incomplete", c)
		}
		want := bruteMaximal(&cl.Nodes[0], g.Tasks, lim)
		if strings.Join(vecKeys(got.vecs), " ") != strings.Join(vecKeys(want), " ") {
			t.Fatalf("case %d (tasks %+v, free %v pods %d, lim %v):\n got  %v\n want %v", c, ts, cl.Nodes[0].Free, cl.Nodes[0].FreePods, lim, vecKeys(got.vecs), vecKeys(want))
		}
	}
}

// The bound on the count walk: at the bound the node's vectors are
// complete, one point below it they are not, and a search that meets an
// incomplete node is undecided, never "does not fit".
func TestCountBoundIsUndecided(t *testing.T) {
	counts := []int{40, 40, 40}
	g := gangOf([]otask{{count: 40, cpu: 1}, {count: 40, cpu: 1}, {count: 40, cpu: 1}})
	nodes := []*v1.Node{cpuNode("n0", 110, 110), cpuNode("n1", 110, 110)}
	cl := NewCluster(plannerNodes(nodes), plannerPods(nil), GangResources(g.Tasks))
	topo := LabelTopology(cl, []string{"kubernetes.io/hostname"})
	// the walk visits 1 + 41 + 41*41 points (root, first task, prefixes)
	visits := 1 + 41 + 41*41
	e := newEngine(cl, topo, g)
	e.maxPoints = visits
	if cs := e.maximalCounts(0, counts, map[string]countSet{}); !cs.complete || len(cs.vecs) == 0 {
		t.Fatalf("at the bound (%d points): complete %v, %d vectors", visits, cs.complete, len(cs.vecs))
	}
	e.maxPoints = visits - 1
	if cs := e.maximalCounts(0, counts, map[string]countSet{}); cs.complete {
		t.Fatalf("one below the bound (%d points): complete", visits-1)
	}
	// 120 pods on two nodes of 110: with the walk cut short the exact search
	// gives up, and the greedy fill still proves the fit
	e = newEngine(cl, topo, g)
	e.maxPoints = visits - 1
	rep, err := e.report(context.Background())
	if err != nil || rep.Verdict != "fits" || len(rep.Explain.Notes) != 0 {
		t.Fatalf("greedy after an undecided search: %v verdict %q notes %v", err, rep.Verdict, rep.Explain.Notes)
	}
	// 61 two-CPU pods on two nodes of 61 CPUs: 122 CPUs are enough in sum,
	// but each node holds 30 pods. Decided, it does not fit; cut short, it is
	// undecided, never "does not fit"
	g = gangOf([]otask{{count: 21, cpu: 2}, {count: 20, cpu: 2}, {count: 20, cpu: 2}})
	cl = NewCluster(plannerNodes([]*v1.Node{cpuNode("n0", 61, 110), cpuNode("n1", 61, 110)}), nil, GangResources(g.Tasks))
	topo = LabelTopology(cl, []string{"kubernetes.io/hostname"})
	if rep, _ = newEngine(cl, topo, g).report(context.Background()); rep.Verdict != "does-not-fit" {
		t.Fatalf("decided: verdict %q", rep.Verdict)
	}
	for _, cut := range []func(*engine){func(e *engine) { e.maxPoints = 10 }, func(e *engine) { e.maxSteps = 10 }} {
		e = newEngine(cl, topo, g)
		cut(e)
		rep, err = e.report(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if rep.Verdict != "undecided" || rep.Fits {
			t.Fatalf("verdict %q fits %v, want undecided", rep.Verdict, rep.Fits)
		}
		if notes := strings.Join(rep.Explain.Notes, "\n"); !strings.Contains(notes, "UNDECIDED") || strings.Contains(notes, "not all of them together") {
			t.Fatalf("notes %v", rep.Explain.Notes)
		}
	}
}

// Random three- and four-task cases with up to 110 pods per node against
// the capacity oracle.
func TestPlaceManyPodsAgainstOracle(t *testing.T) {
	r := rand.New(rand.NewSource(110))
	fits, nofit := 0, 0
	for c := 0; c < 60; c++ {
		T := 3 + r.Intn(2)
		var counts, cpus []int
		for i := 0; i < T; i++ {
			if T == 3 {
				counts = append(counts, 1+r.Intn(80))
			} else {
				counts = append(counts, 1+r.Intn(30))
			}
			cpus = append(cpus, 1+r.Intn(2))
		}
		var nodes [][2]int
		var ons []onodeCap
		for i := 0; i < 2; i++ {
			n := [2]int{40 + r.Intn(71), 40 + r.Intn(71)}
			nodes = append(nodes, n)
			ons = append(ons, onodeCap{cpu: n[0], pods: n[1]})
		}
		want := "does-not-fit"
		if capFeasible(ons, counts, cpus) {
			want = "fits"
			fits++
		} else {
			nofit++
		}
		if rep := placeCounts(t, counts, cpus, nodes); rep.Verdict != want {
			t.Fatalf("%v on %v: verdict %q, oracle %q (notes %v)", counts, nodes, rep.Verdict, want, rep.Explain.Notes)
		}
	}
	if fits < 10 || nofit < 10 {
		t.Fatalf("one-sided cases: %d fit, %d not", fits, nofit)
	}
}
