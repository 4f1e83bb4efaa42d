package kubelet_test

// End-to-end differential test (k8sadmit): gpunode's admission simulator
// (k8s/admit: Topology Manager merge and scopes with the CPU and Memory
// managers) against kubelet v1.37.2's topologymanager.Manager driving the
// upstream CPU Manager static policy and Memory Manager Static policy, on
// random machines, policies, scopes, CPU options and pod sequences. Per pod
// it compares the admission decision, reason and message, the merged hints
// and every container's CPU set and memory blocks; state carries over.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	cadvisorapi "github.com/google/cadvisor/lib/model"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/features"
	upcpu "k8s.io/kubernetes/pkg/kubelet/cm/cpumanager"
	upcpustate "k8s.io/kubernetes/pkg/kubelet/cm/cpumanager/state"
	upmem "k8s.io/kubernetes/pkg/kubelet/cm/memorymanager"
	upmemstate "k8s.io/kubernetes/pkg/kubelet/cm/memorymanager/state"
	uptm "k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"
	"k8s.io/kubernetes/pkg/kubelet/lifecycle"
	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/k8s/admit"
	"github.com/gpunode/gpunode/internal/k8s/kubeletcfg"
	"github.com/gpunode/gpunode/internal/k8s/node"
)

// cpuProvider adapts the upstream CPU policy and its state to a HintProvider.
type cpuProvider struct {
	p upcpu.Policy
	s upcpustate.State
}

func (c *cpuProvider) GetTopologyHints(l klog.Logger, pod *v1.Pod, ct *v1.Container, op lifecycle.Operation) map[string][]uptm.TopologyHint {
	return c.p.GetTopologyHints(l, c.s, pod, ct, op)
}
func (c *cpuProvider) GetPodTopologyHints(l klog.Logger, pod *v1.Pod, op lifecycle.Operation) map[string][]uptm.TopologyHint {
	return c.p.GetPodTopologyHints(l, c.s, pod, op)
}
func (c *cpuProvider) AllocatePod(l klog.Logger, pod *v1.Pod, op lifecycle.Operation) error {
	return c.p.AllocatePod(l, c.s, pod, op)
}
func (c *cpuProvider) Allocate(ctx context.Context, pod *v1.Pod, ct *v1.Container, op lifecycle.Operation) error {
	return c.p.Allocate(klog.FromContext(ctx), c.s, pod, ct, op)
}

type memProvider struct {
	p upmem.Policy
	s upmemstate.State
}

func (m *memProvider) GetTopologyHints(l klog.Logger, pod *v1.Pod, ct *v1.Container, op lifecycle.Operation) map[string][]uptm.TopologyHint {
	return m.p.GetTopologyHints(l, m.s, pod, ct, op)
}
func (m *memProvider) GetPodTopologyHints(l klog.Logger, pod *v1.Pod, op lifecycle.Operation) map[string][]uptm.TopologyHint {
	return m.p.GetPodTopologyHints(l, m.s, pod, op)
}
func (m *memProvider) AllocatePod(l klog.Logger, pod *v1.Pod, op lifecycle.Operation) error {
	return m.p.AllocatePod(l, m.s, pod, op)
}
func (m *memProvider) Allocate(ctx context.Context, pod *v1.Pod, ct *v1.Container, op lifecycle.Operation) error {
	return m.p.Allocate(ctx, m.s, pod, ct, op)
}

// storeRef lets the policies reach the manager created after them.
type storeRef struct{ m uptm.Manager }

func (s *storeRef) GetAffinity(l klog.Logger, pod, c string) uptm.TopologyHint {
	return s.m.GetAffinity(l, pod, c)
}
func (s *storeRef) GetPolicy() uptm.Policy { return s.m.GetPolicy() }
func (s *storeRef) Name() string           { return s.m.Name() }

func TestAdmitEndToEndDifferential(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.CPUManagerPolicyAlphaOptions, true)
	logger := logr.Discard()
	ctx := klog.NewContext(context.Background(), logger)
	n := admitCases(t, 10000)
	counts := map[string]int{}
	named := namedMachines(t)
	var namedNames []string
	for k := range named {
		namedNames = append(namedNames, k)
	}
	sort.Strings(namedNames)
	var namedList []*node.Node
	for _, k := range namedNames {
		namedList = append(namedList, named[k])
	}
	for i := admitFrom(); i < n; i++ {
		seed := uint64(i)
		r := rand.New(rand.NewPCG(seed, 0xe2e))
		spec := randomMachine(r)
		mem := make([]int, spec.numa)
		for k := range mem {
			mem[k] = 4 + r.IntN(29)
		}
		var tmOpts map[string]string
		if r.IntN(3) == 0 {
			spec.distances = randomDistances(r, spec.numa)
			tmOpts = map[string]string{"prefer-closest-numa-nodes": "true"}
		}
		nd := mustNode(t, spec.build(mem, nil, nil))
		machine := fmt.Sprintf("%+v", spec)
		if i%10 == 9 {
			// Every tenth case runs on one of kubelet's named test machines.
			nd, machine = namedList[(i/10)%len(namedList)], namedNames[(i/10)%len(namedList)]
			tmOpts = nil
		}
		policy := []string{"none", "best-effort", "restricted", "single-numa-node"}[r.IntN(4)]
		scope := []string{"container", "pod"}[r.IntN(2)]
		opts := cpuOptionSets[r.IntN(len(cpuOptionSets))]
		if policy == "single-numa-node" && opts["align-by-socket"] == "true" {
			opts = map[string]string{}
		}
		all := nd.AllCPUs().List()
		if len(all) < 2 {
			continue
		}
		reservedCPUs := cpuset.New(all[r.IntN(len(all))])
		// reservedMemory per NUMA node; the sum must match systemReserved +
		// eviction (100Mi). Each node reserves at least 100Mi so that
		// systemReserved is not negative (kubelet refuses to start then).
		upReserved := map[int]map[v1.ResourceName]uint64{}
		kc := &kubeletcfg.KubeletConfiguration{
			CPUManagerPolicy: "static", CPUManagerPolicyOptions: opts, ReservedSystemCPUs: reservedCPUs.String(),
			MemoryManagerPolicy: "Static", TopologyManagerPolicy: policy, TopologyManagerScope: scope, TopologyManagerPolicyOptions: tmOpts,
			EvictionHard: map[string]string{"memory.available": "100Mi"},
			FeatureGates: map[string]bool{"CPUManagerPolicyAlphaOptions": true},
		}
		var totalMi int64
		for _, nn := range nd.NUMANodes {
			mi := int64(100 + r.IntN(600))
			totalMi += mi
			q := *resource.NewQuantity(mi<<20, resource.BinarySI)
			kc.ReservedMemory = append(kc.ReservedMemory, kubeletcfg.MemoryReservation{NumaNode: int32(nn.ID), Limits: v1.ResourceList{v1.ResourceMemory: q}})
			upReserved[nn.ID] = map[v1.ResourceName]uint64{v1.ResourceMemory: uint64(mi << 20)}
		}
		kc.SystemReserved = map[string]string{"memory": fmt.Sprintf("%dMi", totalMi-100)}
		name := fmt.Sprintf("case %d (seed %d, %s, %s/%s, opts %v, topology options %v)", i, seed, machine, policy, scope, opts, tmOpts)

		sim, myErr := admit.New(nd, kc, admit.Options{})

		mi := &cadvisorapi.MachineInfo{}
		for _, nn := range nd.NUMANodes {
			cn := cadvisorapi.Node{Id: nn.ID, Memory: nn.MemoryBytes}
			for _, d := range nn.Distances {
				cn.Distances = append(cn.Distances, uint64(d))
			}
			mi.Topology = append(mi.Topology, cn)
		}
		ref := &storeRef{}
		tm, err := uptm.NewManager(logger, mi.Topology, policy, scope, tmOpts)
		if err != nil {
			t.Fatalf("%s: topology manager: %v", name, err)
		}
		ref.m = tm
		cpuP, upErr := upcpu.NewStaticPolicy(logger, upstreamTopology(nd), 1, reservedCPUs, ref, opts)
		if (upErr == nil) != (myErr == nil) {
			t.Fatalf("%s: start: upstream %v, gpunode %v", name, upErr, myErr)
		}
		if upErr != nil {
			continue
		}
		cpuS := upcpustate.NewMemoryState(logger)
		if err := cpuP.Start(logger, cpuS); err != nil {
			t.Fatal(err)
		}
		memP, err := upmem.NewPolicyStatic(logger, mi, upReserved, ref)
		if err != nil {
			t.Fatal(err)
		}
		memS := upmemstate.NewMemoryState(logger)
		if err := memP.Start(logger, memS); err != nil {
			t.Fatal(err)
		}
		tm.AddHintProvider(logger, &cpuProvider{cpuP, cpuS})
		tm.AddHintProvider(logger, &memProvider{memP, memS})

		for p := 0; p < 1+r.IntN(4); p++ {
			cpu := func() string {
				if r.IntN(8) == 0 {
					return "500m"
				}
				return fmt.Sprint(1 + r.IntN(1+len(all)/3))
			}
			memQ := func() string { return fmt.Sprintf("%dGi", 1+r.IntN(12)) }
			pod := randomPod(r, fmt.Sprintf("pod%d", p), r.IntN(6) != 0, r.IntN(2), r.IntN(2), 1+r.IntN(2), cpu, memQ, func() v1.ResourceList { return nil })
			res := sim.Admit(pod.DeepCopy())
			up := tm.Admit(ctx, &lifecycle.PodAdmitAttributes{Pod: pod, Operation: lifecycle.AddOperation})
			label := fmt.Sprintf("%s: pod %s", name, pod.Name)
			if os.Getenv("GPUNODE_ADMIT_DEBUG") != "" {
				for _, c := range append(append([]v1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
					t.Logf("%s container %s restart=%v req=%v lim=%v", pod.Name, c.Name, c.RestartPolicy != nil, c.Resources.Requests, c.Resources.Limits)
				}
				t.Logf("gpunode: %+v", res)
				t.Logf("upstream: %+v", up)
				for _, nn := range nd.NUMANodes {
					t.Logf("numa %d upstream %+v %+v", nn.ID, *memS.GetMachineState()[nn.ID], *memS.GetMachineState()[nn.ID].MemoryMap["memory"])
				}
			}
			if strings.HasPrefix(res.Reason, "OutOf") {
				// kubelet's predicate handler rejects after the resource
				// managers admitted the pod; kubelet then frees what they
				// allocated.
				if !up.Admit {
					t.Fatalf("%s: gpunode %s, upstream resource managers rejected (%s: %s)", label, res.Reason, up.Reason, up.Message)
				}
				release(logger, pod, cpuP, cpuS, memP, memS)
				counts["OutOf"]++
				continue
			}
			if up.Admit != res.Admitted || up.Reason != res.Reason || up.Message != res.Message {
				t.Fatalf("%s: upstream admit=%v %s %q, gpunode admit=%v %s %q", label, up.Admit, up.Reason, up.Message, res.Admitted, res.Reason, res.Message)
			}
			if !up.Admit {
				release(logger, pod, cpuP, cpuS, memP, memS)
				counts["rejected "+up.Reason]++
				continue
			}
			counts["admitted"]++
			for _, c := range res.Containers {
				if policy != "none" {
					uh := tm.GetAffinity(logger, string(pod.UID), c.Name)
					if got, want := fmt.Sprint(c.MergedHint), fmt.Sprint(outHint(uh)); got != want {
						t.Fatalf("%s: merged hint of %s: upstream %s, gpunode %s", label, c.Name, want, got)
					}
				}
				want, _ := cpuS.GetCPUSet(string(pod.UID), c.Name)
				got, _ := cpuset.Parse(c.CPUs)
				if !want.Equals(got) {
					t.Fatalf("%s: CPUs of %s: upstream %s, gpunode %s", label, c.Name, want, got)
				}
				var mb []string
				for _, b := range c.Memory {
					mb = append(mb, fmt.Sprintf("%s:%v:%d", b.Type, b.NUMANodes, b.Bytes))
				}
				if w, g := blocksString(memS.GetMemoryBlocks(string(pod.UID), c.Name)), strings.Join(mb, " "); w != g {
					t.Fatalf("%s: memory of %s: upstream %s, gpunode %s", label, c.Name, w, g)
				}
			}
		}
	}
	t.Logf("outcomes: %v", counts)
}

func outHint(h uptm.TopologyHint) *admit.HintOut {
	o := &admit.HintOut{Preferred: h.Preferred}
	if h.NUMANodeAffinity != nil {
		o.NUMANodes = h.NUMANodeAffinity.GetBits()
	}
	return o
}

func release(logger klog.Logger, pod *v1.Pod, cpuP upcpu.Policy, cpuS upcpustate.State, memP upmem.Policy, memS upmemstate.State) {
	for _, c := range append(append([]v1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
		_ = cpuP.RemoveContainer(logger, cpuS, string(pod.UID), c.Name)
		memP.RemoveContainer(logger, memS, string(pod.UID), c.Name)
	}
}

var _ = node.Hint{}
