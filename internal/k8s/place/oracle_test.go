package place

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The oracle below decides fit by exhaustive search over every per-node
// split of every task's pods (memoised on the node and what is left), from
// the generator's own numbers, not from the engine's model.

type onode struct {
	name, block, rack string
	gpu, cpu          int // free
	cordoned          bool
}

type otask struct{ count, gpu, cpu int }

func (n onode) holds(a, b int, ts []otask) bool {
	g, c := 0, 0
	k := []int{a, b}
	for i, t := range ts {
		g += k[i] * t.gpu
		c += k[i] * t.cpu
	}
	if a == 0 && b == 0 {
		return true
	}
	return !n.cordoned && g <= n.gpu && c <= n.cpu
}

// feasible: can the nodes take every pod of ts?
func oracleFeasible(nodes []onode, ts []otask) bool {
	c2 := 0
	if len(ts) > 1 {
		c2 = ts[1].count
	}
	memo := map[[3]int]bool{}
	var rec func(i, r1, r2 int) bool
	rec = func(i, r1, r2 int) bool {
		if r1 == 0 && r2 == 0 {
			return true
		}
		if i == len(nodes) {
			return false
		}
		key := [3]int{i, r1, r2}
		if v, ok := memo[key]; ok {
			return v
		}
		ok := false
		for a := 0; a <= r1 && !ok; a++ {
			for b := 0; b <= r2 && !ok; b++ {
				if nodes[i].holds(a, b, ts) && rec(i+1, r1-a, r2-b) {
					ok = true
				}
			}
		}
		memo[key] = ok
		return ok
	}
	return rec(0, ts[0].count, c2)
}

// oracleKey is the documented best-fit key: gang pods the domain's nodes can
// take (per task at most its count per node), then primary resource left.
func oracleKey(nodes []onode, ts []otask) (int, int) {
	total, free, need := 0, 0, 0
	gpuPrimary := false
	for _, t := range ts {
		if t.gpu > 0 {
			gpuPrimary = true
		}
	}
	for _, n := range nodes {
		usable := false
		for ti, t := range ts {
			k := 0
			for k < t.count {
				a, b := k+1, 0
				if ti == 1 {
					a, b = 0, k+1
				}
				if !n.holds(a, b, ts) {
					break
				}
				k++
			}
			total += k
			if k > 0 {
				usable = true
			}
		}
		if usable {
			if gpuPrimary {
				free += n.gpu
			} else {
				free += n.cpu * 1000
			}
		}
	}
	for _, t := range ts {
		if gpuPrimary {
			need += t.count * t.gpu
		} else {
			need += t.count * t.cpu * 1000
		}
	}
	return total, free - need
}

type oracleAnswer struct {
	fits   bool
	domain DomainRef
}

func oracle(nodes []onode, ts []otask, required int) oracleAnswer {
	levels := []string{"block", "rack", "kubernetes.io/hostname"}
	group := func(l int) map[string][]onode {
		m := map[string][]onode{}
		for _, n := range nodes {
			k := []string{n.block, n.rack, n.name}[l]
			m[k] = append(m[k], n)
		}
		return m
	}
	lo := 0
	if required >= 0 {
		lo = required
	}
	for l := 2; l >= lo; l-- {
		var names []string
		g := group(l)
		for k := range g {
			names = append(names, k)
		}
		sort.Strings(names)
		best := ""
		var bt, bf int
		for _, k := range names {
			if !oracleFeasible(g[k], ts) {
				continue
			}
			t, f := oracleKey(g[k], ts)
			if best == "" || t < bt || t == bt && f < bf {
				best, bt, bf = k, t, f
			}
		}
		if best != "" {
			return oracleAnswer{true, DomainRef{levels[l], best}}
		}
	}
	if required < 0 && oracleFeasible(nodes, ts) {
		return oracleAnswer{true, DomainRef{ClusterLevel, ClusterLevel}}
	}
	return oracleAnswer{fits: false}
}

func quantity(s string) resource.Quantity { return resource.MustParse(s) }

func randomCase(r *rand.Rand) ([]onode, []otask, []*v1.Node, []*v1.Pod) {
	var ns []onode
	blocks := 1 + r.Intn(2)
	for b := 0; b < blocks; b++ {
		racks := 1 + r.Intn(2)
		for k := 0; k < racks; k++ {
			per := 1 + r.Intn(3)
			for i := 0; i < per; i++ {
				ns = append(ns, onode{name: fmt.Sprintf("n%d%d%d", b, k, i), block: fmt.Sprintf("b%d", b), rack: fmt.Sprintf("b%dr%d", b, k),
					gpu: r.Intn(9), cpu: r.Intn(17), cordoned: r.Intn(8) == 0})
			}
		}
	}
	var ts []otask
	for i := 0; i < 1+r.Intn(2); i++ {
		ts = append(ts, otask{count: 1 + r.Intn(5), gpu: r.Intn(4), cpu: 1 + r.Intn(6)})
	}
	var nodes []*v1.Node
	var pods []*v1.Pod
	for _, n := range ns {
		nodes = append(nodes, &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{"block": n.block, "rack": n.rack, "kubernetes.io/hostname": n.name}},
			Spec:       v1.NodeSpec{Unschedulable: n.cordoned},
			Status: v1.NodeStatus{
				Allocatable: v1.ResourceList{v1.ResourceCPU: quantity("16"), ResourceGPU: quantity("8"), v1.ResourcePods: quantity("110")},
				Conditions:  []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}},
			},
		})
		pods = append(pods, &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "busy-" + n.name, Namespace: "default"},
			Spec: v1.PodSpec{NodeName: n.name, Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: quantity(fmt.Sprint(16 - n.cpu))},
				Limits:   v1.ResourceList{ResourceGPU: quantity(fmt.Sprint(8 - n.gpu))},
			}}}},
			Status: v1.PodStatus{Phase: v1.PodRunning},
		})
	}
	return ns, ts, nodes, pods
}

func gangOf(ts []otask) *Gang {
	g := &Gang{Workload: "test", Required: -1, Preferred: -1}
	for i, t := range ts {
		req := v1.ResourceList{v1.ResourceCPU: quantity(fmt.Sprint(t.cpu))}
		if t.gpu > 0 {
			req[ResourceGPU] = quantity(fmt.Sprint(t.gpu))
		}
		tmpl := v1.PodTemplateSpec{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: req}}}}}
		var names []string
		for k := 0; k < t.count; k++ {
			names = append(names, fmt.Sprintf("t%d-%d", i, k))
		}
		g.Tasks = append(g.Tasks, newTask(fmt.Sprintf("t%d", i), t.count, names, &tmpl))
	}
	return g
}

func TestAgainstBruteForce(t *testing.T) {
	r := rand.New(rand.NewSource(15))
	levels := []string{"block", "rack", "kubernetes.io/hostname"}
	fitsSeen, multi := 0, 0
	for i := 0; i < 600; i++ {
		ns, ts, nodes, pods := randomCase(r)
		required := r.Intn(4) - 1 // -1 none, 0 block, 1 rack, 2 hostname
		want := oracle(ns, ts, required)
		g := gangOf(ts)
		c := NewCluster(plannerNodes(nodes), plannerPods(pods), GangResources(g.Tasks))
		topo := LabelTopology(c, levels)
		if required >= 0 {
			g.Required, g.RequiredKey = required, levels[required]
		}
		rep, err := Place(context.Background(), c, topo, g)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Fits != want.fits || want.fits && rep.Domain != want.domain {
			t.Fatalf("case %d (required %d, tasks %+v, nodes %+v): got fits=%v %+v, oracle fits=%v %+v", i, required, ts, ns, rep.Fits, rep.Domain, want.fits, want.domain)
		}
		if !rep.Fits {
			continue
		}
		fitsSeen++
		if len(ts) > 1 {
			multi++
		}
		// the placement itself is valid: counts, domain, resources
		byName := map[string]onode{}
		for _, n := range ns {
			byName[n.name] = n
		}
		used := map[string][2]int{}
		count := map[string]int{}
		for _, p := range rep.Placements {
			n := byName[p.Node]
			var dom string
			switch rep.Domain.Level {
			case "block":
				dom = n.block
			case "rack":
				dom = n.rack
			case "kubernetes.io/hostname":
				dom = n.name
			default:
				dom = ClusterLevel
			}
			if dom != rep.Domain.Name {
				t.Fatalf("case %d: pod %s on %s outside %+v", i, p.Pod, p.Node, rep.Domain)
			}
			ti := 0
			if p.Task == "t1" {
				ti = 1
			}
			u := used[p.Node]
			u[ti]++
			used[p.Node] = u
			count[p.Task]++
		}
		for node, u := range used {
			if !byName[node].holds(u[0], u[1], ts) {
				t.Fatalf("case %d: node %s overcommitted with %v", i, node, u)
			}
		}
		for ti, tk := range ts {
			if count[fmt.Sprintf("t%d", ti)] != tk.count {
				t.Fatalf("case %d: task %d placed %d of %d", i, ti, count[fmt.Sprintf("t%d", ti)], tk.count)
			}
		}
	}
	if fitsSeen < 100 || multi < 30 {
		t.Errorf("random cases too one-sided: %d fit, %d of them multi-task", fitsSeen, multi)
	}
}

// paretoGeneral is the quadratic definition, for checking paretoMin2.
func paretoGeneral(in [][]int) map[[2]int]bool {
	out := map[[2]int]bool{}
	for i, v := range in {
		dominated := false
		for j, w := range in {
			if j != i && w[0] <= v[0] && w[1] <= v[1] && (w[0] < v[0] || w[1] < v[1] || j < i) {
				dominated = true
				break
			}
		}
		if !dominated {
			out[[2]int{v[0], v[1]}] = true
		}
	}
	return out
}

func TestParetoMin2(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for c := 0; c < 2000; c++ {
		var in [][]int
		for k := r.Intn(12); k >= 0; k-- {
			in = append(in, []int{r.Intn(6), r.Intn(6)})
		}
		want := paretoGeneral(in)
		got := paretoMin(append([][]int(nil), in...), func(v []int) []int { return v })
		if len(got) != len(want) {
			t.Fatalf("%v: got %v, want %v", in, got, want)
		}
		for _, v := range got {
			if !want[[2]int{v[0], v[1]}] {
				t.Fatalf("%v: got %v, want %v", in, got, want)
			}
		}
	}
}
