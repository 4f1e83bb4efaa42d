package bind

import (
	"strconv"
	"testing"

	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/topo"
)

// checkPlanProperties is TestPlanGolden's independent check: what every
// plan must satisfy, computed from the topology here, not by the resolver.
func checkPlanProperties(t *testing.T, tp *topo.Topology, req Request, p *Plan) {
	t.Helper()
	var node *topo.NUMANode
	for i := range tp.NUMANodes {
		if tp.NUMANodes[i].ID == p.NUMANode {
			node = &tp.NUMANodes[i]
		}
	}
	if node == nil {
		t.Fatalf("plan's NUMA node %d is not a node of the topology", p.NUMANode)
	}
	// The node's CPUs are the topology's online CPUs of that node.
	online := map[int]bool{}
	cores := map[[2]int]bool{}
	coreOf := map[int][2]int{}
	for _, c := range tp.CPUs {
		online[c.ID] = c.Online
		coreOf[c.ID] = [2]int{c.Socket, c.Core}
	}
	var nodeCPUs []int
	for _, c := range node.CPUs.List() {
		if on, known := online[c]; on || !known {
			nodeCPUs = append(nodeCPUs, c)
		}
	}
	if want := cpuset.New(nodeCPUs...); !p.NodeCPUs.Equals(want) {
		t.Errorf("nodeCPUs %s, topology's node %d has %s", p.NodeCPUs, p.NUMANode, want)
	}
	cpus := p.CPUs.CPUSet
	if cpus.IsEmpty() || !cpus.IsSubsetOf(p.NodeCPUs.CPUSet) {
		t.Errorf("cpus %s not a non-empty subset of the node's %s", p.CPUs, p.NodeCPUs)
	}
	if !cpus.Intersection(req.ExcludeCPUs).IsEmpty() {
		t.Errorf("cpus %s include excluded CPUs %s", p.CPUs, req.ExcludeCPUs)
	}
	if iso := tp.IsolatedCPUs.CPUSet.Union(tp.NohzFullCPUs.CPUSet); !req.IncludeIsolated && (p.Isolation == nil || p.Isolation.Mode != "pipeline" && p.Isolation.Mode != "whole-node") {
		if !cpus.Intersection(iso).IsEmpty() {
			t.Errorf("cpus %s include isolated or nohz_full CPUs %s", p.CPUs, iso)
		}
	}
	for _, c := range cpus.List() {
		cores[coreOf[c]] = true
	}
	if p.Cores != len(cores) {
		t.Errorf("cores %d, the CPUs %s span %d physical cores", p.Cores, p.CPUs, len(cores))
	}
	// A GPU target found by sysfs is on the node the topology gives it.
	if p.Target.Kind == "gpu" && p.NUMASource == "sysfs" {
		for _, g := range tp.GPUs {
			if g.BDF == p.Target.BDF && g.NUMANode != p.NUMANode {
				t.Errorf("GPU %s is on node %d in the topology, the plan says %d", g.BDF, g.NUMANode, p.NUMANode)
			}
		}
	}
	// A share: its cores are at most the usable cores split among the ranks
	// (rounded up), its position among the ranks.
	if s := p.Share; s != nil {
		if n := len(s.Ranks); n < 2 || s.Position < 0 || s.Position >= n || s.Cores*n > s.UsableCores+n || s.Cores != p.Cores && req.CPUsPerRank == 0 {
			t.Errorf("share %+v inconsistent with %d cores", *s, p.Cores)
		}
	}
	env := map[string]string{}
	for _, e := range p.Env {
		env[e.Name] = e.Value
	}
	if env["GPUNODE_CPUS"] != p.CPUs.String() || env["GPUNODE_NUMA_NODE"] != strconv.Itoa(p.NUMANode) {
		t.Errorf("env GPUNODE_CPUS=%q GPUNODE_NUMA_NODE=%q for cpus %s node %d", env["GPUNODE_CPUS"], env["GPUNODE_NUMA_NODE"], p.CPUs, p.NUMANode)
	}
	switch p.Mem.Mode {
	case "none":
		if len(p.Mem.Nodes) != 0 {
			t.Errorf("mem none with nodes %v", p.Mem.Nodes)
		}
	case "preferred", "bind", "interleave":
		if len(p.Mem.Nodes) == 0 {
			t.Errorf("mem %s without nodes", p.Mem.Mode)
		}
		for _, n := range p.Mem.Nodes {
			found := false
			for _, tn := range tp.NUMANodes {
				found = found || tn.ID == n && tn.MemTotalBytes > 0
			}
			if !found {
				t.Errorf("mem node %d has no memory in the topology", n)
			}
		}
	default:
		t.Errorf("mem mode %q", p.Mem.Mode)
	}
}
