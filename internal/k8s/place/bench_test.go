package place

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"

	"github.com/gpunode/gpunode/internal/k8s/objects"
	"github.com/gpunode/gpunode/internal/testhost"
)

var (
	benchClusterDir    = flag.String("bench-cluster", "", "write the generated 10,240-node cluster (nodes.json, pods.json, workload.yaml) to this directory")
	benchClusterBlocks = flag.Int("bench-blocks", 20, "blocks of 16 racks x 32 nodes in the -bench-cluster cluster (2: 1,024 nodes, 20: 10,240, 100: 51,200)")
)

// Levels of the generated clusters, outermost first.
var benchLevels = []string{"example.com/block", "example.com/rack", "kubernetes.io/hostname"}

// genCluster builds blocks x racks x per H100-shaped nodes (8 GPUs), a few
// cordoned, tainted or not Ready, every one with two DaemonSet pods, and
// training pods on about 80% of them (60% full, 20% half).
func genCluster(blocks, racks, per int, seed int64) ([]*v1.Node, []*v1.Pod) {
	r := rand.New(rand.NewSource(seed))
	q := resource.MustParse
	var nodes []*v1.Node
	var pods []*v1.Pod
	for b := 0; b < blocks; b++ {
		for k := 0; k < racks; k++ {
			for i := 0; i < per; i++ {
				name := fmt.Sprintf("gpu-b%02d-r%02d-n%02d", b, k, i)
				alloc := v1.ResourceList{v1.ResourceCPU: q("190"), v1.ResourceMemory: q("1900Gi"), ResourceGPU: q("8"),
					v1.ResourcePods: q("110"), v1.ResourceEphemeralStorage: q("3500Gi"), "rdma/ib": q("8")}
				n := &v1.Node{
					TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
					ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
						"example.com/block": fmt.Sprintf("block-%02d", b), "example.com/rack": fmt.Sprintf("block-%02d-rack-%02d", b, k),
						"kubernetes.io/hostname": name, "kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux",
						"node.kubernetes.io/instance-type": "p5.48xlarge", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
						"topology.kubernetes.io/zone": fmt.Sprintf("zone-%d", b%4),
					}},
					Status: v1.NodeStatus{Capacity: alloc, Allocatable: alloc, Conditions: []v1.NodeCondition{
						{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse, Reason: "KubeletHasSufficientMemory"},
						{Type: v1.NodeDiskPressure, Status: v1.ConditionFalse, Reason: "KubeletHasNoDiskPressure"},
						{Type: v1.NodePIDPressure, Status: v1.ConditionFalse, Reason: "KubeletHasSufficientPID"},
						{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady"},
					}, NodeInfo: v1.NodeSystemInfo{KubeletVersion: "v1.37.2", ContainerRuntimeVersion: "containerd://2.1.0", OSImage: "Ubuntu 24.04 LTS", Architecture: "amd64"}},
				}
				switch x := r.Intn(1000); {
				case x < 5:
					n.Spec.Unschedulable = true
				case x < 10:
					n.Spec.Taints = []v1.Taint{{Key: "nvidia.com/gpu-health", Value: "xid-79", Effect: v1.TaintEffectNoSchedule}}
				case x < 13:
					n.Status.Conditions[3].Status = v1.ConditionFalse
				}
				nodes = append(nodes, n)
				for _, ds := range []string{"nvidia-device-plugin", "node-exporter"} {
					pods = append(pods, benchPod(ds+"-"+name, "kube-system", name, "100m", "200Mi", 0))
				}
				switch x := r.Intn(10); {
				case x < 6:
					pods = append(pods, benchPod(fmt.Sprintf("train-%d-%s", r.Intn(50), name), "ml", name, "180", "1500Gi", 8))
				case x < 8:
					pods = append(pods, benchPod(fmt.Sprintf("infer-%d-%s", r.Intn(50), name), "ml", name, "90", "700Gi", 4))
				}
			}
		}
	}
	return nodes, pods
}

func benchPod(name, ns, node, cpu, mem string, gpu int) *v1.Pod {
	c := v1.Container{Name: "main", Image: "registry.example.com/" + ns + ":1", Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}}}
	if gpu > 0 {
		c.Resources.Limits = v1.ResourceList{ResourceGPU: *resource.NewQuantity(int64(gpu), resource.DecimalSI)}
	}
	return &v1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": ns}},
		Spec:       v1.PodSpec{NodeName: node, Containers: []v1.Container{c}, RestartPolicy: v1.RestartPolicyAlways},
		Status:     v1.PodStatus{Phase: v1.PodRunning, QOSClass: v1.PodQOSBurstable},
	}
}

func benchGang(pods, gpus int, required string, levels []string) *Gang {
	names := make([]string, pods)
	for i := range names {
		names[i] = fmt.Sprintf("train-%d", i)
	}
	tmpl := v1.PodTemplateSpec{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "w", Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("40"), v1.ResourceMemory: resource.MustParse("400Gi")},
		Limits:   v1.ResourceList{ResourceGPU: *resource.NewQuantity(int64(gpus), resource.DecimalSI)},
	}}}}}
	g := &Gang{Workload: "bench", Style: StyleLevels, Tasks: []*Task{newTask("", pods, names, &tmpl)}, Required: -1, Preferred: -1}
	for i, l := range levels {
		if l == required {
			g.Required, g.RequiredKey = i, l
		}
	}
	return g
}

// placeParsed is the in-process work after parsing: free resources, the
// domains, the search and the report.
func placeParsed(b *testing.B, nodes []*objects.Node, pods []*objects.Pod, g *Gang) *Report {
	c := NewCluster(nodes, pods, GangResources(g.Tasks))
	rep, err := Place(context.Background(), c, LabelTopology(c, benchLevels), g)
	if err != nil {
		b.Fatal(err)
	}
	return rep
}

// BenchmarkPlace10k is the target: 20 blocks x 16 racks x 32 nodes,
// a 1,024-pod x 4-GPU gang, input parsed (<= 50 ms).
func BenchmarkPlace10k(b *testing.B) {
	nodes, pods := genPlanner(20, 16, 32, 1)
	for _, req := range []string{"", "example.com/block"} {
		name := "anywhere"
		if req != "" {
			name = "required-block"
		}
		b.Run(name, func(b *testing.B) {
			var rep *Report
			start := testhost.CPUTime()
			for i := 0; i < b.N; i++ {
				rep = placeParsed(b, nodes, pods, benchGang(1024, 4, req, benchLevels))
			}
			testhost.ReportCPU(b, start)
			b.ReportMetric(float64(len(rep.Placements)), "placed")
		})
	}
}

// BenchmarkPlace10kTwoTasks: a launcher (1 pod, no GPU) plus 1,023 workers
// x 4 GPUs, and 512 + 512 workers of two GPU sizes: the exact multi-task
// search on 10,240 nodes.
func BenchmarkPlace10kTwoTasks(b *testing.B) {
	nodes, pods := genPlanner(20, 16, 32, 1)
	mk := func(name string, n int, cpu string, gpus int) *Task {
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("%s-%d", name, i)
		}
		c := v1.Container{Name: "c", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}
		if gpus > 0 {
			c.Resources.Limits = v1.ResourceList{ResourceGPU: *resource.NewQuantity(int64(gpus), resource.DecimalSI)}
		}
		return newTask(name, n, names, &v1.PodTemplateSpec{Spec: v1.PodSpec{Containers: []v1.Container{c}}})
	}
	for _, tc := range []struct {
		name  string
		tasks func() []*Task
	}{
		{"launcher+1023x4gpu", func() []*Task { return []*Task{mk("launcher", 1, "8", 0), mk("worker", 1023, "40", 4)} }},
		{"512x2gpu+512x4gpu", func() []*Task { return []*Task{mk("small", 512, "20", 2), mk("big", 512, "40", 4)} }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var rep *Report
			start := testhost.CPUTime()
			for i := 0; i < b.N; i++ {
				g := &Gang{Workload: "bench", Style: StyleVolcano, Tasks: tc.tasks(), Required: -1, Preferred: -1}
				rep = placeParsed(b, nodes, pods, g)
			}
			testhost.ReportCPU(b, start)
			b.ReportMetric(float64(len(rep.Placements)), "placed")
		})
	}
}

// BenchmarkPlaceScale: cost against nodes (1k, 10k, 50k) and gang size.
func BenchmarkPlaceScale(b *testing.B) {
	for _, blocks := range []int{2, 20, 100} {
		nodes, pods := genPlanner(blocks, 16, 32, 1)
		for _, gang := range []int{64, 1024, 4096} {
			b.Run(fmt.Sprintf("nodes=%d/gang=%d", len(nodes), gang), func(b *testing.B) {
				var rep *Report
				start := testhost.CPUTime()
				for i := 0; i < b.N; i++ {
					rep = placeParsed(b, nodes, pods, benchGang(gang, 4, "", benchLevels))
				}
				testhost.ReportCPU(b, start)
				b.ReportMetric(float64(len(rep.Placements)), "placed")
			})
		}
	}
}

// BenchmarkSearchOnly: the search and report on a built cluster model.
func BenchmarkSearchOnly(b *testing.B) {
	nodes, pods := genPlanner(20, 16, 32, 1)
	g := benchGang(1024, 4, "", benchLevels)
	c := NewCluster(nodes, pods, GangResources(g.Tasks))
	topo := LabelTopology(c, benchLevels)
	b.ResetTimer()
	start := testhost.CPUTime()
	for i := 0; i < b.N; i++ {
		if _, err := Place(context.Background(), c, topo, g); err != nil {
			b.Fatal(err)
		}
	}
	testhost.ReportCPU(b, start)
}

// TestWriteBenchCluster writes the benchmark cluster as kubectl would export
// it, for timing the whole process (scripts/measure.sh).
func TestWriteBenchCluster(t *testing.T) {
	if *benchClusterDir == "" {
		t.Skip("-bench-cluster DIR not given")
	}
	nodes, pods := genCluster(*benchClusterBlocks, 16, 32, 1)
	write := func(name string, items any) {
		b, err := json.MarshalIndent(map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]string{"resourceVersion": ""}, "items": items}, "", "    ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(*benchClusterDir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("nodes.json", nodes)
	write("pods.json", pods)
	job := `apiVersion: batch/v1
kind: Job
metadata:
  name: train
  annotations:
    kai.scheduler/topology: bench
spec:
  parallelism: 1024
  completionMode: Indexed
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: w
        image: trainer
        resources:
          requests: {cpu: "40", memory: 400Gi}
          limits: {nvidia.com/gpu: "4"}
`
	topo := "apiVersion: kai.scheduler/v1alpha1\nkind: Topology\nmetadata: {name: bench}\nspec:\n  levels:\n  - nodeLabel: example.com/block\n  - nodeLabel: example.com/rack\n  - nodeLabel: kubernetes.io/hostname\n"
	if err := os.WriteFile(filepath.Join(*benchClusterDir, "workload.yaml"), []byte(job), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(*benchClusterDir, "topology.yaml"), []byte(topo), 0o644); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkLoadCluster: decoding kubectl-style JSON exports of the
// generated clusters (1,024, 10,240 and 51,200 nodes, with their pods)
// through objects.DecodeNodes/DecodePods (the typed decode into the
// planner Node and Pod), against the
// anchor of the same run: sigs.k8s.io/json's strict decode of the whole
// v1.NodeList/PodList (what the loaders did before).
func BenchmarkLoadCluster(b *testing.B) {
	for _, blocks := range []int{2, 20, 100} {
		nodes, pods := genCluster(blocks, 16, 32, 1)
		list := func(items any) []byte {
			out, err := json.MarshalIndent(map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]string{"resourceVersion": ""}, "items": items}, "", "    ")
			if err != nil {
				b.Fatal(err)
			}
			return out
		}
		nb, pb := list(nodes), list(pods)
		b.Run(fmt.Sprintf("nodes=%d/typed", len(nodes)), func(b *testing.B) {
			b.SetBytes(int64(len(nb) + len(pb)))
			start := testhost.CPUTime()
			for i := 0; i < b.N; i++ {
				if _, err := objects.DecodeNodes("nodes.json", nb); err != nil {
					b.Fatal(err)
				}
				if _, err := objects.DecodePods("pods.json", pb); err != nil {
					b.Fatal(err)
				}
			}
			testhost.ReportCPU(b, start)
		})
		b.Run(fmt.Sprintf("nodes=%d/strict-full", len(nodes)), func(b *testing.B) {
			b.SetBytes(int64(len(nb) + len(pb)))
			start := testhost.CPUTime()
			for i := 0; i < b.N; i++ {
				var nl v1.NodeList
				var pl v1.PodList
				for _, x := range []struct {
					data []byte
					v    any
				}{{nb, &nl}, {pb, &pl}} {
					if _, err := sigsjson.UnmarshalStrict(x.data, x.v, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields); err != nil {
						b.Fatal(err)
					}
				}
			}
			testhost.ReportCPU(b, start)
		})
	}
}

// plannerNodes and plannerPods are generated v1 objects as the loaders
// give them.
func plannerNodes(in []*v1.Node) []*objects.Node {
	out := make([]*objects.Node, len(in))
	for i, n := range in {
		out[i] = objects.NodeFromV1(n)
	}
	return out
}

func plannerPods(in []*v1.Pod) []*objects.Pod {
	if in == nil {
		return nil
	}
	out := make([]*objects.Pod, len(in))
	for i, p := range in {
		out[i] = objects.PodFromV1(p)
	}
	return out
}

// genPlanner is genCluster as the loaders give it.
func genPlanner(blocks, racks, per int, seed int64) ([]*objects.Node, []*objects.Pod) {
	nodes, pods := genCluster(blocks, racks, per, seed)
	return plannerNodes(nodes), plannerPods(pods)
}
