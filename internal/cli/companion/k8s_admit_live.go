package companion

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpunode/gpunode/internal/cli"
	"github.com/gpunode/gpunode/internal/k8s/cluster"
	"github.com/gpunode/gpunode/internal/k8s/node"
	"github.com/gpunode/gpunode/internal/topo"
)

// The NUMA sources of a live node (the admit report's node.numaSource).
const (
	numaSourceAgentTopo = "agent-topo"
	numaSourceNFD       = "nfd-labels"
)

// nfdNUMALabel is the agent's NFD label with the node's NUMA node count
// (agent.NFDPrefix + "numa.nodes", internal/agent/nfd.go).
const nfdNUMALabel = "gpunode.io/numa.nodes"

// nodeArgIsFile says whether --node's value names a node file (kept as
// before: a path, a .yaml/.yml/.json name, or an existing file) rather
// than a Node in the cluster.
func nodeArgIsFile(v string) bool {
	if strings.ContainsAny(v, `/\`) {
		return true
	}
	switch strings.ToLower(filepath.Ext(v)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	fi, err := os.Stat(v)
	return err == nil && fi.Mode().IsRegular()
}

// liveNode is a Node read from the cluster for 'k8s admit --node NAME'.
type liveNode struct {
	model       *node.Node
	source      string
	allocatable map[string]string
	bound       []*v1.Pod
}

// k8sLiveNode reads the Node NAME, its bound non-terminal pods and its
// NUMA layout: the gpunode agent's /topo (through pods/proxy) when the
// agent runs there, else the agent's NFD label gpunode.io/numa.nodes with
// the Node's capacity split evenly.
func (a *app) k8sLiveNode(cmd *cobra.Command, name string) (*liveNode, error) {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return nil, cli.Usagef("--node %q: not a node file (no such file) and not a Node name: %s", name, strings.Join(errs, "; "))
	}
	ctx := cmd.Context()
	c, err := a.k8sCluster(cmd)
	if err != nil {
		return nil, err
	}
	n, err := c.Node(ctx, name)
	if err != nil {
		return nil, clusterErr(err)
	}
	pods, err := c.BoundPods(ctx, name)
	if err != nil {
		return nil, clusterErr(err)
	}
	ln := &liveNode{bound: pods, allocatable: map[string]string{}}
	for r, q := range n.Status.Allocatable {
		ln.allocatable[string(r)] = q.String()
	}
	var topoErr string
	if ap := cluster.AgentPod(pods); ap == nil {
		topoErr = "no running gpunode agent pod (app.kubernetes.io/name=gpunode, app.kubernetes.io/component=agent) on the node"
	} else if b, err := c.AgentTopo(ctx, ap); err != nil {
		topoErr = err.Error()
	} else if m, err := modelFromTopo(b, a.MaxInputBytes); err != nil {
		topoErr = fmt.Sprintf("agent %s/%s /topo: %v", ap.Namespace, ap.Name, err)
	} else {
		m.Name = name
		ln.model, ln.source = m, numaSourceAgentTopo
	}
	if ln.model == nil {
		v, ok := n.Labels[nfdNUMALabel]
		if !ok {
			return nil, cli.Usagef("node %q: no NUMA layout: %s, and no %s label (the agent's NFD features); give the node as a file (--node-file NODE.yaml, see 'gpunode k8s admit --help'), or run the gpunode agent on the node (deploy/daemonset.yaml)", name, topoErr, nfdNUMALabel)
		}
		m, err := modelFromNFD(n, v)
		if err != nil {
			return nil, cli.Usagef("node %q: %v", name, err)
		}
		a.notef("node %s: agent /topo not used (%s); NUMA layout from the NFD label %s=%s, CPUs, memory and devices split evenly", name, topoErr, nfdNUMALabel, v)
		ln.model, ln.source = m, numaSourceNFD
	}
	capDevices(ln.model, n)
	a.notef("node %s and %d bound pods from %s; NUMA layout: %s", name, len(pods), c.Server(), ln.source)
	return ln, nil
}

// modelFromTopo decodes the agent's /topo (a topo.Topology).
func modelFromTopo(b []byte, limit int64) (*node.Node, error) {
	if limit > 0 && int64(len(b)) > limit {
		return nil, fmt.Errorf("%d bytes, over --max-input-bytes %d", len(b), limit)
	}
	var t topo.Topology
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("not a topology: %w", err)
	}
	if len(t.CPUs) == 0 {
		return nil, fmt.Errorf("no CPUs in the topology")
	}
	return node.FromTopology(&t)
}

// modelFromNFD splits the Node's capacity (allocatable where capacity is
// not set) evenly over the NUMA nodes the label names.
func modelFromNFD(n *v1.Node, label string) (*node.Node, error) {
	numa, err := strconv.Atoi(label)
	if err != nil {
		return nil, fmt.Errorf("label %s=%q: not a number", nfdNUMALabel, label)
	}
	get := func(r v1.ResourceName) (int64, bool) {
		if q, ok := n.Status.Capacity[r]; ok {
			return q.Value(), true
		}
		if q, ok := n.Status.Allocatable[r]; ok {
			return q.Value(), true
		}
		return 0, false
	}
	cpus, ok := get(v1.ResourceCPU)
	if !ok {
		return nil, fmt.Errorf("status.capacity has no cpu")
	}
	mem, _ := get(v1.ResourceMemory)
	devices := map[string]int{}
	if g, ok := get(node.GPUResource); ok {
		devices[node.GPUResource] = int(g)
	}
	if cpus > node.MaxSplitCPUs {
		cpus = node.MaxSplitCPUs + 1 // refused by EvenSplit with the bound
	}
	m, err := node.EvenSplit(n.Name, numa, int(cpus), uint64(max(mem, 0)), devices)
	if err != nil {
		return nil, fmt.Errorf("label %s=%s with the Node's capacity: %w", nfdNUMALabel, label, err)
	}
	return m, nil
}

// capDevices marks the devices beyond the Node's allocatable count of
// their resource unhealthy (kubelet's allocatable counts healthy devices).
func capDevices(m *node.Node, n *v1.Node) {
	for i := range m.Devices {
		dr := &m.Devices[i]
		q, ok := n.Status.Allocatable[v1.ResourceName(dr.Name)]
		if !ok {
			continue
		}
		healthy := int64(0)
		for j := range dr.Devices {
			if dr.Devices[j].Healthy {
				if healthy >= q.Value() {
					dr.Devices[j].Healthy = false
					continue
				}
				healthy++
			}
		}
	}
}
