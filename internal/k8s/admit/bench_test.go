package admit

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpunode/gpunode/internal/k8s/kubeletcfg"
	"github.com/gpunode/gpunode/internal/k8s/node"
	"github.com/gpunode/gpunode/internal/testhost"
)

// gb200Node is shaped like a GB200 compute tray as Linux shows it: 2 Grace
// NUMA nodes with 72 CPUs and 480Gi each, and 34 CPU-less NUMA nodes (GPU
// memory and spare), 4 GPUs attached to the Grace nodes.
func gb200Node(b testing.TB) *node.Node {
	var s strings.Builder
	s.WriteString("apiVersion: gpunode.io/v1\nkind: Node\nname: gb200\nnumaNodes:\n")
	for i := 0; i < 36; i++ {
		switch {
		case i < 2:
			fmt.Fprintf(&s, "- {id: %d, cpus: \"%d-%d\", memory: 480Gi}\n", i, i*72, i*72+71)
		case i < 6:
			fmt.Fprintf(&s, "- {id: %d, memory: 186Gi}\n", i)
		default:
			fmt.Fprintf(&s, "- {id: %d, memory: 0}\n", i)
		}
	}
	s.WriteString("devices:\n  nvidia.com/gpu:\n")
	for g := 0; g < 4; g++ {
		fmt.Fprintf(&s, "  - {id: gpu%d, numaNode: %d}\n", g, g/2)
	}
	n, err := node.Parse([]byte(s.String()))
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// wideNode has 64 NUMA nodes with 4 CPUs and 16Gi each and one GPU on every
// eighth node.
func wideNode(b testing.TB) *node.Node {
	var s strings.Builder
	s.WriteString("apiVersion: gpunode.io/v1\nkind: Node\nname: wide64\nnumaNodes:\n")
	for i := 0; i < 64; i++ {
		fmt.Fprintf(&s, "- {id: %d, cpus: \"%d-%d\", memory: 16Gi}\n", i, i*4, i*4+3)
	}
	s.WriteString("devices:\n  nvidia.com/gpu:\n")
	for g := 0; g < 8; g++ {
		fmt.Fprintf(&s, "  - {id: gpu%d, numaNode: %d}\n", g, g*8)
	}
	n, err := node.Parse([]byte(s.String()))
	if err != nil {
		b.Fatal(err)
	}
	return n
}

func benchKC(numa int, policy string) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cpuManagerPolicy: static
reservedSystemCPUs: "0-1"
memoryManagerPolicy: Static
systemReserved: {memory: 1Gi}
evictionHard: {memory.available: 100Mi}
reservedMemory:
- {numaNode: 0, limits: {memory: 1124Mi}}
topologyManagerPolicy: %s
topologyManagerScope: container
topologyManagerPolicyOptions: {max-allowable-numa-nodes: "%d"}
`, policy, numa)
}

func guaranteed(name, cpu, mem string, gpus int) *v1.Pod {
	rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
	if gpus > 0 {
		rl["nvidia.com/gpu"] = *resource.NewQuantity(int64(gpus), resource.DecimalSI)
	}
	p := &v1.Pod{}
	p.Name, p.UID = name, types.UID("uid-"+name)
	p.Spec.Containers = []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{Requests: rl, Limits: rl.DeepCopy()}}}
	return p
}

func benchAdmit(b *testing.B, n *node.Node, numa int, policy string, pod *v1.Pod) {
	c, err := kubeletcfg.Parse([]byte(benchKC(numa, policy)), "kc")
	if err != nil {
		b.Fatal(err)
	}
	sim, err := New(n, &c.KC, Options{})
	if err != nil {
		b.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	var res PodResult
	start := testhost.CPUTime()
	for i := 0; i < b.N; i++ {
		s := *sim
		s.used = v1.ResourceList{}
		res = s.Admit(pod)
	}
	b.StopTimer()
	// CPU per admission: other processes on a shared machine inflate wall
	// time, not this.
	b.ReportMetric(float64(testhost.CPUTime()-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
	runtime.ReadMemStats(&after)
	if !res.Admitted {
		b.Fatalf("pod rejected: %s %s %v", res.Reason, res.Message, res.Explanation)
	}
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N), "alloc-bytes/admit")
	b.ReportMetric(float64(after.HeapInuse), "heap-inuse-bytes")
}

func BenchmarkAdmitGB200(b *testing.B) {
	for _, policy := range []string{"best-effort", "restricted", "single-numa-node"} {
		b.Run(policy, func(b *testing.B) {
			benchAdmit(b, gb200Node(b), 36, policy, guaranteed("trainer", "32", "128Gi", 2))
		})
	}
}

func BenchmarkAdmit64NUMA(b *testing.B) {
	for _, policy := range []string{"best-effort", "restricted", "single-numa-node"} {
		b.Run(policy, func(b *testing.B) {
			benchAdmit(b, wideNode(b), 64, policy, guaranteed("trainer", "4", "8Gi", 1))
		})
	}
}

// BenchmarkAdmit16NUMA: 16 NUMA nodes, every NUMA mask enumerated (2^16-1 per
// resource), as kubelet would.
func BenchmarkAdmit16NUMA(b *testing.B) {
	var s strings.Builder
	s.WriteString("apiVersion: gpunode.io/v1\nkind: Node\nname: n16\nnumaNodes:\n")
	for i := 0; i < 16; i++ {
		fmt.Fprintf(&s, "- {id: %d, cpus: \"%d-%d\", memory: 64Gi}\n", i, i*8, i*8+7)
	}
	s.WriteString("devices:\n  nvidia.com/gpu:\n")
	for g := 0; g < 8; g++ {
		fmt.Fprintf(&s, "  - {id: gpu%d, numaNode: %d}\n", g, g*2)
	}
	n, err := node.Parse([]byte(s.String()))
	if err != nil {
		b.Fatal(err)
	}
	for _, policy := range []string{"best-effort", "single-numa-node"} {
		b.Run(policy, func(b *testing.B) {
			benchAdmit(b, n, 16, policy, guaranteed("trainer", "8", "32Gi", 1))
		})
	}
}
