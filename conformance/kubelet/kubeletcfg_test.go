package kubelet

import (
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/go-logr/logr"
	cadvisorapi "github.com/google/cadvisor/lib/model"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	"k8s.io/kubernetes/pkg/kubelet/cm/cpumanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/memorymanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"
	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/k8s/kubeletcfg"
	"github.com/gpunode/gpunode/internal/k8s/node"
)

// machineInfo turns a gpunode node model into what cAdvisor reports.
func machineInfo(n *node.Node) *cadvisorapi.MachineInfo {
	mi := &cadvisorapi.MachineInfo{NumCores: len(n.CPUs)}
	sockets := map[int]bool{}
	for _, nn := range n.NUMANodes {
		cn := cadvisorapi.Node{Id: nn.ID, Memory: nn.MemoryBytes}
		for _, d := range nn.Distances {
			cn.Distances = append(cn.Distances, uint64(d))
		}
		for _, hp := range nn.HugePages {
			cn.HugePages = append(cn.HugePages, cadvisorapi.HugePagesInfo{PageSize: hp.PageSizeBytes / 1024, NumPages: hp.Count})
		}
		cores := map[int]*cadvisorapi.Core{}
		var ids []int
		for _, c := range n.CPUs {
			if c.NUMANode != nn.ID {
				continue
			}
			sockets[c.Socket] = true
			if cores[c.Core] == nil {
				cores[c.Core] = &cadvisorapi.Core{Id: c.Core, SocketID: c.Socket,
					UncoreCaches: []cadvisorapi.Cache{{Id: c.Uncore, Level: 3, Type: "Unified"}}}
				ids = append(ids, c.Core)
			}
			cores[c.Core].Threads = append(cores[c.Core].Threads, c.ID)
		}
		sort.Ints(ids)
		for _, id := range ids {
			cn.Cores = append(cn.Cores, *cores[id])
		}
		mi.Topology = append(mi.Topology, cn)
		mi.MemoryCapacity += nn.MemoryBytes
	}
	mi.NumSockets = len(sockets)
	return mi
}

// upstreamStartup runs kubelet's resource-manager constructors (Topology,
// CPU, Memory Manager, in NewContainerManager's order) on c and n and
// returns their errors by gpunode lint stage.
func upstreamStartup(t *testing.T, c *kubeletcfg.Config, n *node.Node) map[string]error {
	logger := logr.Discard()
	kc := c.KC
	gates := map[featuregate.Feature]bool{}
	for k, v := range kc.FeatureGates {
		gates[featuregate.Feature(k)] = v
	}
	featuregatetesting.SetFeatureGatesDuringTest(t, utilfeature.DefaultFeatureGate, gates)
	mi := machineInfo(n)
	out := map[string]error{}
	_, out[kubeletcfg.StageTopology] = topologymanager.NewManager(logger, mi.Topology, kc.TopologyManagerPolicy, kc.TopologyManagerScope, kc.TopologyManagerPolicyOptions)

	nar, ok := kubeletcfg.NodeAllocatableReservation(c, n)
	if !ok {
		t.Fatalf("reservation not computable")
	}
	var specific cpuset.CPUSet
	if kc.ReservedSystemCPUs != "" {
		specific, _ = cpuset.Parse(kc.ReservedSystemCPUs)
	}
	// The store the CPU Manager sees: a fake manager with the configured policy.
	var policy topologymanager.Policy = topologymanager.NewNonePolicy()
	info := &topologymanager.NUMAInfo{Nodes: n.NUMAIDs()}
	switch kc.TopologyManagerPolicy {
	case topologymanager.PolicySingleNumaNode:
		policy = topologymanager.NewSingleNumaNodePolicy(info, topologymanager.PolicyOptions{})
	case topologymanager.PolicyRestricted:
		policy = topologymanager.NewRestrictedPolicy(info, topologymanager.PolicyOptions{})
	case topologymanager.PolicyBestEffort:
		policy = topologymanager.NewBestEffortPolicy(info, topologymanager.PolicyOptions{})
	}
	store := topologymanager.NewFakeManagerWithPolicy(logger, policy)
	_, out[kubeletcfg.StageCPU] = cpumanager.NewManager(logger, kc.CPUManagerPolicy, kc.CPUManagerPolicyOptions, 10*time.Second, mi, specific, nar, t.TempDir(), store)

	var reserved []kubeletconfig.MemoryReservation
	for _, r := range kc.ReservedMemory {
		reserved = append(reserved, kubeletconfig.MemoryReservation{NumaNode: r.NumaNode, Limits: r.Limits})
	}
	_, out[kubeletcfg.StageMemory] = memorymanager.NewManager(logger, kc.MemoryManagerPolicy, mi, nar, reserved, t.TempDir(), store)
	return out
}

// TestLintMatchesKubeletStartup checks gpunode's lint against kubelet's own
// constructors: when kubelet fails, its message is among gpunode's errors of
// that stage; when it starts, gpunode reports no error there.
func TestLintMatchesKubeletStartup(t *testing.T) {
	nodes := map[string]*node.Node{}
	for _, f := range []string{"node-2numa-smt", "node-4numa-1socket", "node-2socket-1numa"} {
		n, err := node.Load("testdata/"+f+".yaml", 0)
		if err != nil {
			t.Fatal(err)
		}
		nodes[f] = n
	}
	const static = "cpuManagerPolicy: static\nreservedSystemCPUs: \"0,16\"\n"
	configs := []string{
		"",
		"cpuManagerPolicy: static\n",
		"cpuManagerPolicy: static\nkubeReserved: {cpu: \"0\"}\n",
		"cpuManagerPolicy: static\nkubeReserved: {cpu: 1500m}\n",
		"cpuManagerPolicy: static\nsystemReserved: {cpu: \"40\"}\n",
		"cpuManagerPolicy: static\nreservedSystemCPUs: \"0\"\n",
		static,
		"cpuManagerPolicy: Static\n",
		"cpuManagerPolicyOptions: {full-pcpus-only: \"true\"}\n",
		static + "cpuManagerPolicyOptions: {full-pcpus-only: \"true\"}\n",
		static + "cpuManagerPolicyOptions: {full-pcpus-only: \"on\"}\n",
		static + "cpuManagerPolicyOptions: {pin: \"true\"}\n",
		static + "cpuManagerPolicyOptions: {align-by-socket: \"true\"}\n",
		static + "featureGates: {CPUManagerPolicyAlphaOptions: true}\ncpuManagerPolicyOptions: {align-by-socket: \"true\"}\n",
		static + "featureGates: {CPUManagerPolicyAlphaOptions: true}\ntopologyManagerPolicy: single-numa-node\ncpuManagerPolicyOptions: {align-by-socket: \"true\"}\n",
		static + "featureGates: {CPUManagerPolicyAlphaOptions: true}\ncpuManagerPolicyOptions: {distribute-cpus-across-cores: \"true\", full-pcpus-only: \"true\"}\n",
		static + "featureGates: {CPUManagerPolicyAlphaOptions: true}\ncpuManagerPolicyOptions: {distribute-cpus-across-cores: \"true\", distribute-cpus-across-numa: \"true\"}\n",
		static + "cpuManagerPolicyOptions: {prefer-align-cpus-by-uncorecache: \"true\", distribute-cpus-across-numa: \"true\"}\n",
		static + "featureGates: {CPUManagerPolicyBetaOptions: false}\ncpuManagerPolicyOptions: {distribute-cpus-across-numa: \"true\"}\n",
		static + "cpuManagerPolicyOptions: {strict-cpu-reservation: \"true\", prefer-align-cpus-by-uncorecache: \"true\"}\n",
		"topologyManagerPolicy: restricted\n",
		"topologyManagerPolicy: restricted\ntopologyManagerScope: pod\n",
		"topologyManagerPolicy: best-effort\ntopologyManagerPolicyOptions: {prefer-closest-numa-nodes: \"true\"}\n",
		"topologyManagerPolicy: best-effort\ntopologyManagerPolicyOptions: {max-allowable-numa-nodes: \"6\"}\n",
		"topologyManagerPolicy: best-effort\ntopologyManagerPolicyOptions: {max-allowable-numa-nodes: \"x\"}\n",
		"topologyManagerPolicy: best-effort\ntopologyManagerPolicyOptions: {nope: \"1\"}\n",
		"topologyManagerPolicy: none\ntopologyManagerPolicyOptions: {nope: \"1\"}\n",
		"memoryManagerPolicy: Static\n",
		"memoryManagerPolicy: static\n",
		"memoryManagerPolicy: Static\nreservedMemory: [{numaNode: 0, limits: {memory: 100Mi}}]\n",
		"memoryManagerPolicy: Static\nreservedMemory: [{numaNode: 0, limits: {memory: 50Mi}}, {numaNode: 1, limits: {memory: 50Mi}}]\n",
		"memoryManagerPolicy: Static\nreservedMemory: [{numaNode: 7, limits: {memory: 100Mi}}]\n",
		"memoryManagerPolicy: Static\nreservedMemory: [{numaNode: 0, limits: {memory: 100Mi, hugepages-2Mi: 2Mi}}]\n",
		"memoryManagerPolicy: Static\nkubeReserved: {memory: 1Gi}\nsystemReserved: {memory: 1Gi}\nreservedMemory: [{numaNode: 0, limits: {memory: 2Gi}}]\n",
		"memoryManagerPolicy: Static\nkubeReserved: {memory: 1Gi}\nsystemReserved: {memory: 1Gi}\nreservedMemory: [{numaNode: 0, limits: {memory: 2148Mi}}]\n",
		"memoryManagerPolicy: Static\nevictionHard: {memory.available: 1%}\nreservedMemory: [{numaNode: 0, limits: {memory: \"343597383\"}}]\n",
		"memoryManagerPolicy: Static\nevictionHard: {memory.available: 1%}\nreservedMemory: [{numaNode: 0, limits: {memory: 1Gi}}]\n",
		"memoryManagerPolicy: Static\nevictionHard: {nodefs.available: 10%}\n",
		"memoryManagerPolicy: Static\nevictionHard: {nodefs.available: 10%}\nmergeDefaultEvictionSettings: true\nreservedMemory: [{numaNode: 0, limits: {memory: 100Mi}}]\n",
	}
	checked := 0
	for _, nodeName := range []string{"node-2numa-smt", "node-4numa-1socket", "node-2socket-1numa"} {
		n := nodes[nodeName]
		for ci, body := range configs {
			t.Run(fmt.Sprintf("%s/%d", nodeName, ci), func(t *testing.T) {
				c, err := kubeletcfg.Parse([]byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"+body), "kc.yaml")
				if err != nil {
					t.Fatal(err)
				}
				r := kubeletcfg.Lint(c, n)
				mine := map[string][]string{}
				for _, f := range r.Findings {
					if f.Severity == kubeletcfg.SeverityError {
						mine[f.Stage] = append(mine[f.Stage], f.Message)
					}
				}
				if len(mine[kubeletcfg.StageStartup]) > 0 || len(mine[kubeletcfg.StageValidation]) > 0 {
					t.Skipf("kubelet stops before the managers: %v", mine)
				}
				up := upstreamStartup(t, c, n)
				for _, stage := range []string{kubeletcfg.StageTopology, kubeletcfg.StageCPU, kubeletcfg.StageMemory} {
					err := up[stage]
					if stage == kubeletcfg.StageCPU && err == nil && len(mine[stage]) == 0 {
						continue
					}
					switch {
					case err == nil && len(mine[stage]) > 0:
						t.Errorf("%s: kubelet starts, gpunode reports %q", stage, mine[stage])
					case err != nil && !slices.Contains(mine[stage], err.Error()):
						t.Errorf("%s: kubelet fails with %q, gpunode reports %q", stage, err, mine[stage])
					}
				}
				checked++
			})
		}
	}
	if checked < len(configs) {
		t.Errorf("only %d combinations checked", checked)
	}
}
