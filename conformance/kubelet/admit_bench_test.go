package kubelet_test

// Benchmarks (k8sadmit): one Guaranteed pod (CPUs + memory) admitted on an
// 8-NUMA-node machine by kubelet v1.37.2's Topology Manager with its CPU and
// Memory managers, and by gpunode's simulator, in the same run. Larger
// machines (GB200's 36 NUMA nodes, 64) are benchmarked in the product
// (internal/k8s/admit): kubelet's memory manager enumerates all 2^N NUMA
// masks there and does not finish.

import (
	"context"
	"fmt"
	"testing"

	"github.com/go-logr/logr"
	cadvisorapi "github.com/google/cadvisor/lib/model"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
	upcpu "k8s.io/kubernetes/pkg/kubelet/cm/cpumanager"
	upcpustate "k8s.io/kubernetes/pkg/kubelet/cm/cpumanager/state"
	upmem "k8s.io/kubernetes/pkg/kubelet/cm/memorymanager"
	upmemstate "k8s.io/kubernetes/pkg/kubelet/cm/memorymanager/state"
	uptm "k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"
	"k8s.io/kubernetes/pkg/kubelet/lifecycle"
	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/k8s/admit"
	"github.com/gpunode/gpunode/internal/k8s/kubeletcfg"
)

func benchMachine(b *testing.B) (string, *v1.Pod) {
	spec := machineSpec{numa: 8, coresPerNUMA: 8, threads: 2, socketsPerNUMA: 1, numaPerSocket: 4, interleaved: true}
	mem := make([]int, 8)
	for i := range mem {
		mem[i] = 64
	}
	src := spec.build(mem, nil, nil)
	rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse("24"), v1.ResourceMemory: resource.MustParse("96Gi")}
	pod := &v1.Pod{}
	pod.Name, pod.UID = "bench", "bench"
	pod.Spec.Containers = []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{Requests: rl, Limits: rl}}}
	return src, pod
}

func BenchmarkAdmit8NUMA(b *testing.B) {
	src, pod := benchMachine(b)
	nd := mustNode(b, src)
	for _, policy := range []string{"best-effort", "restricted"} {
		b.Run("upstream/"+policy, func(b *testing.B) {
			logger := logr.Discard()
			ctx := klog.NewContext(context.Background(), logger)
			mi := &cadvisorapi.MachineInfo{}
			reserved := map[int]map[v1.ResourceName]uint64{}
			for _, nn := range nd.NUMANodes {
				mi.Topology = append(mi.Topology, cadvisorapi.Node{Id: nn.ID, Memory: nn.MemoryBytes})
				reserved[nn.ID] = map[v1.ResourceName]uint64{v1.ResourceMemory: 128 << 20}
			}
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				tm, err := uptm.NewManager(logger, mi.Topology, policy, "container", nil)
				if err != nil {
					b.Fatal(err)
				}
				ref := &storeRef{m: tm}
				cpuP, err := upcpu.NewStaticPolicy(logger, upstreamTopology(nd), 2, cpuset.New(), ref, nil)
				if err != nil {
					b.Fatal(err)
				}
				cpuS := upcpustate.NewMemoryState(logger)
				_ = cpuP.Start(logger, cpuS)
				memP, err := upmem.NewPolicyStatic(logger, mi, reserved, ref)
				if err != nil {
					b.Fatal(err)
				}
				memS := upmemstate.NewMemoryState(logger)
				_ = memP.Start(logger, memS)
				tm.AddHintProvider(logger, &cpuProvider{cpuP, cpuS})
				tm.AddHintProvider(logger, &memProvider{memP, memS})
				p := pod.DeepCopy()
				b.StartTimer()
				if res := tm.Admit(ctx, &lifecycle.PodAdmitAttributes{Pod: p, Operation: lifecycle.AddOperation}); !res.Admit {
					b.Fatalf("rejected: %s", res.Message)
				}
			}
		})
		b.Run("gpunode/"+policy, func(b *testing.B) {
			kc := &kubeletcfg.KubeletConfiguration{
				CPUManagerPolicy: "static", KubeReserved: map[string]string{"cpu": "2"},
				MemoryManagerPolicy: "Static", SystemReserved: map[string]string{"memory": fmt.Sprintf("%dMi", 8*128-100)},
				EvictionHard:          map[string]string{"memory.available": "100Mi"},
				TopologyManagerPolicy: policy, TopologyManagerScope: "container",
			}
			for _, nn := range nd.NUMANodes {
				kc.ReservedMemory = append(kc.ReservedMemory, kubeletcfg.MemoryReservation{NumaNode: int32(nn.ID), Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("128Mi")}})
			}
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				sim, err := admit.New(nd, kc, admit.Options{})
				if err != nil {
					b.Fatal(err)
				}
				p := pod.DeepCopy()
				b.StartTimer()
				if res := sim.Admit(p); !res.Admitted {
					b.Fatalf("rejected: %s %s", res.Reason, res.Message)
				}
			}
		})
	}
}
