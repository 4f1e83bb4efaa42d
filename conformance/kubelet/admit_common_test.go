package kubelet_test

// Shared helpers of the admission differential tests (k8sadmit): random
// machines in gpunode's node model and their upstream (kubelet v1.37.2)
// counterparts.

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	upcputopo "k8s.io/kubernetes/pkg/kubelet/cm/cpumanager/topology"
	uptm "k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"
	upbitmask "k8s.io/kubernetes/pkg/kubelet/cm/topologymanager/bitmask"

	"github.com/gpunode/gpunode/internal/k8s/cpumanager"
	"github.com/gpunode/gpunode/internal/k8s/node"
)

// admitCases returns how many random cases a differential test runs: def,
// or run.sh's -cases, or GPUNODE_ADMIT_CASES (-short divides by 10).
func admitCases(t *testing.T, def int) int {
	if v, err := strconv.Atoi(os.Getenv("GPUNODE_ADMIT_CASES")); err == nil && v > 0 {
		return v
	}
	// run.sh passes -cases=N to the whole suite (the flag is defined by the
	// topology tests in package kubelet of the same test binary).
	if f := flag.Lookup("cases"); f != nil {
		if v, err := strconv.Atoi(f.Value.String()); err == nil && v > 0 {
			def = v
		}
	}
	if testing.Short() {
		return def / 10
	}
	return def
}

// admitFrom is the first case to run (GPUNODE_ADMIT_FROM, to replay a
// failing case).
func admitFrom() int {
	v, _ := strconv.Atoi(os.Getenv("GPUNODE_ADMIT_FROM"))
	return v
}

// machineSpec describes a random machine.
type machineSpec struct {
	numa, coresPerNUMA, threads   int
	socketsPerNUMA, numaPerSocket int // one of them is 1
	coresPerUncore                int // 0 = uncore per socket
	interleaved                   bool
	// distances, when set, is the NUMA distance matrix written to the node
	// file.
	distances [][]int
}

func randomMachine(r *rand.Rand) machineSpec {
	m := machineSpec{numa: 1 + r.IntN(8), coresPerNUMA: 1 + r.IntN(6), threads: 1 + r.IntN(2), socketsPerNUMA: 1, numaPerSocket: 1}
	switch r.IntN(4) {
	case 0:
		if m.numa%2 == 0 {
			m.numaPerSocket = 2
		}
	case 1:
		if m.coresPerNUMA%2 == 0 {
			m.socketsPerNUMA = 2
		}
	}
	if r.IntN(3) == 0 {
		m.coresPerUncore = 1 + r.IntN(3)
	}
	m.interleaved = r.IntN(2) == 0
	return m
}

// build returns the node file (YAML) of the machine; memoryGi per NUMA node.
func (m machineSpec) build(memoryGi []int, hugepages1Gi []int, gpus []int) string {
	cores := m.numa * m.coresPerNUMA
	type cpu struct{ id, core, numa, socket, uncore int }
	var cpus []cpu
	for c := 0; c < cores; c++ {
		numa := c / m.coresPerNUMA
		socket := numa / m.numaPerSocket
		if m.socketsPerNUMA == 2 {
			socket = numa*2 + (c%m.coresPerNUMA)/(m.coresPerNUMA/2)
		}
		uncore := socket
		if m.coresPerUncore > 0 {
			uncore = 1000 + c/m.coresPerUncore
			// keep uncore caches within one socket and NUMA node
			uncore = 1000 + numa*100 + (c%m.coresPerNUMA)/m.coresPerUncore
			if m.socketsPerNUMA == 2 {
				uncore = 1000 + socket*100 + (c%(m.coresPerNUMA/2))/m.coresPerUncore
			}
		}
		for t := 0; t < m.threads; t++ {
			id := c*m.threads + t
			if m.interleaved {
				id = c + t*cores
			}
			cpus = append(cpus, cpu{id: id, core: c, numa: numa, socket: socket, uncore: uncore})
		}
	}
	var b strings.Builder
	b.WriteString("apiVersion: gpunode.io/v1\nkind: Node\nnumaNodes:\n")
	for n := 0; n < m.numa; n++ {
		var ids []string
		for _, c := range cpus {
			if c.numa == n {
				ids = append(ids, strconv.Itoa(c.id))
			}
		}
		mem := 64
		if memoryGi != nil {
			mem = memoryGi[n]
		}
		fmt.Fprintf(&b, "- id: %d\n  cpus: \"%s\"\n  memory: %dGi\n", n, strings.Join(ids, ","), mem)
		if m.distances != nil {
			var row []string
			for _, d := range m.distances[n] {
				row = append(row, strconv.Itoa(d))
			}
			fmt.Fprintf(&b, "  distances: [%s]\n", strings.Join(row, ", "))
		}
		if hugepages1Gi != nil {
			fmt.Fprintf(&b, "  hugepages: [{pageSize: 1Gi, count: %d}]\n", hugepages1Gi[n])
		}
	}
	group := func(key func(cpu) int) map[int][]string {
		out := map[int][]string{}
		for _, c := range cpus {
			out[key(c)] = append(out[key(c)], strconv.Itoa(c.id))
		}
		return out
	}
	keys := func(m map[int][]string) []int {
		var out []int
		for k := range m {
			out = append(out, k)
		}
		sort.Ints(out)
		return out
	}
	if m.threads > 1 {
		b.WriteString("cores:\n")
		g := group(func(c cpu) int { return c.core })
		for _, k := range keys(g) {
			fmt.Fprintf(&b, "- \"%s\"\n", strings.Join(g[k], ","))
		}
	}
	b.WriteString("sockets:\n")
	g := group(func(c cpu) int { return c.socket })
	for _, k := range keys(g) {
		fmt.Fprintf(&b, "- {id: %d, cpus: \"%s\"}\n", k, strings.Join(g[k], ","))
	}
	b.WriteString("uncoreCaches:\n")
	g = group(func(c cpu) int { return c.uncore })
	for _, k := range keys(g) {
		fmt.Fprintf(&b, "- {id: %d, cpus: \"%s\"}\n", k, strings.Join(g[k], ","))
	}
	if len(gpus) > 0 {
		b.WriteString("devices:\n  nvidia.com/gpu:\n")
		for i, n := range gpus {
			if n < 0 {
				fmt.Fprintf(&b, "  - {id: gpu%d}\n", i)
			} else {
				fmt.Fprintf(&b, "  - {id: gpu%d, numaNode: %d}\n", i, n)
			}
		}
	}
	return b.String()
}

func mustNode(t testing.TB, src string) *node.Node {
	t.Helper()
	n, err := node.Parse([]byte(src))
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	return n
}

// upstreamTopology converts gpunode's CPU topology to kubelet's (same fields).
func upstreamTopology(n *node.Node) *upcputopo.CPUTopology {
	mine := cpumanager.FromNode(n)
	d := upcputopo.CPUDetails{}
	for id, info := range mine.CPUDetails {
		d[id] = upcputopo.CPUInfo{NUMANodeID: info.NUMANodeID, SocketID: info.SocketID, CoreID: info.CoreID, UncoreCacheID: info.UncoreCacheID}
	}
	return &upcputopo.CPUTopology{NumCPUs: mine.NumCPUs, NumCores: mine.NumCores, NumUncoreCache: mine.NumUncoreCache, NumSockets: mine.NumSockets, NumNUMANodes: mine.NumNUMANodes, CPUDetails: d}
}

// fakeStore is a topologymanager.Store returning a fixed hint.
type fakeStore struct {
	hint   uptm.TopologyHint
	policy string
}

func (f *fakeStore) GetAffinity(klog.Logger, string, string) uptm.TopologyHint { return f.hint }
func (f *fakeStore) GetPolicy() uptm.Policy                                    { return fakePolicy(f.policy) }
func (f *fakeStore) Name() string                                              { return "fake" }

type fakePolicy string

func (p fakePolicy) Name() string { return string(p) }
func (p fakePolicy) Merge(klog.Logger, []map[string][]uptm.TopologyHint) (uptm.TopologyHint, bool) {
	return uptm.TopologyHint{}, true
}

func upHint(h node.Hint) uptm.TopologyHint {
	out := uptm.TopologyHint{Preferred: h.Preferred}
	if h.Affinity != nil {
		out.NUMANodeAffinity, _ = upbitmask.NewBitMask(h.Affinity.Bits()...)
	}
	return out
}

// hintSet renders hints as a sorted, comparable string.
func hintSetMine(hs []node.Hint) string {
	if hs == nil {
		return "nil"
	}
	var parts []string
	for _, h := range hs {
		parts = append(parts, h.String())
	}
	sort.Strings(parts)
	return "[" + strings.Join(parts, " ") + "]"
}

func hintSetUp(hs []uptm.TopologyHint) string {
	if hs == nil {
		return "nil"
	}
	var parts []string
	for _, h := range hs {
		var nh node.Hint
		nh.Preferred = h.Preferred
		if h.NUMANodeAffinity != nil {
			m := node.MaskOf(h.NUMANodeAffinity.GetBits()...)
			nh.Affinity = &m
		}
		parts = append(parts, nh.String())
	}
	sort.Strings(parts)
	return "[" + strings.Join(parts, " ") + "]"
}

func mapsMine(m map[string][]node.Hint) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = hintSetMine(v)
	}
	return out
}

func mapsUp(m map[string][]uptm.TopologyHint) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = hintSetUp(v)
	}
	return out
}

func sameMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// randomPod returns a pod whose containers request the given CPUs and memory;
// guaranteed decides requests == limits for every container.
func randomPod(r *rand.Rand, uid string, guaranteed bool, nInit, nSidecar, nApp int, cpu func() string, mem func() string, extra func() v1.ResourceList) *v1.Pod {
	p := &v1.Pod{}
	p.Name, p.UID = uid, types.UID(uid)
	always := v1.ContainerRestartPolicyAlways
	mk := func(name string) v1.Container {
		req := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu()), v1.ResourceMemory: resource.MustParse(mem())}
		for k, v := range extra() {
			req[k] = v
		}
		lim := req.DeepCopy()
		if !guaranteed {
			lim[v1.ResourceCPU] = resource.MustParse("100")
		}
		return v1.Container{Name: name, Resources: v1.ResourceRequirements{Requests: req, Limits: lim}}
	}
	// regular init containers and sidecars interleaved
	for i := 0; i < nInit+nSidecar; i++ {
		c := mk(fmt.Sprintf("init%d", i))
		if i >= nInit || r.IntN(2) == 0 && nSidecar > 0 && i < nSidecar {
			c.RestartPolicy = &always
		}
		p.Spec.InitContainers = append(p.Spec.InitContainers, c)
	}
	for i := 0; i < nApp; i++ {
		p.Spec.Containers = append(p.Spec.Containers, mk(fmt.Sprintf("app%d", i)))
	}
	return p
}

// randomDistances returns a symmetric NUMA distance matrix (10 on the
// diagonal) with a few distinct values, so that ties and non-ties both occur.
func randomDistances(r *rand.Rand, n int) [][]int {
	d := make([][]int, n)
	for i := range d {
		d[i] = make([]int, n)
		d[i][i] = 10
	}
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			v := []int{11, 12, 20, 21, 32}[r.IntN(5)]
			d[i][j], d[j][i] = v, v
		}
	}
	return d
}
