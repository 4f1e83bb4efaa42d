package kubelet

// podresources_test.go: kubelet's own PodResources v1 server
// (k8s.io/kubernetes/pkg/kubelet/apis/podresources, NewV1PodResourcesServer)
// fed by fake providers serves on a unix socket under a test root, and
// gpunode's reader (internal/podresources) reads it: what gpunode
// decodes is exactly what kubelet's server answers in process, and the
// verdicts are gpunode's on that answer.

import (
	"context"
	"strconv"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	podresourcesapi "k8s.io/kubelet/pkg/apis/podresources/v1"
	uppodresources "k8s.io/kubernetes/pkg/kubelet/apis/podresources"

	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/podresources"
	"github.com/gpunode/gpunode/internal/podresources/podresourcestest"
	"github.com/gpunode/gpunode/internal/topo"
)

// fakeKubeletState is what kubelet's managers would hold: pods, and per
// pod UID and container the devices, CPUs and memory blocks.
type fakeKubeletState struct {
	pods    []*v1.Pod
	devices map[string][]*podresourcesapi.ContainerDevices // uid/container
	cpus    map[string][]int64
	memory  map[string][]*podresourcesapi.ContainerMemory
	alloc   []*podresourcesapi.ContainerDevices
}

func key(uid, ctr string) string { return uid + "/" + ctr }

// PodsProvider.
func (f *fakeKubeletState) GetActivePods() []*v1.Pod { return f.pods }
func (f *fakeKubeletState) GetPods() []*v1.Pod       { return f.pods }
func (f *fakeKubeletState) GetPodByName(ns, name string) (*v1.Pod, bool) {
	for _, p := range f.pods {
		if p.Namespace == ns && p.Name == name {
			return p, true
		}
	}
	return nil, false
}

// DevicesProvider.
func (f *fakeKubeletState) UpdateAllocatedDevices(klog.Logger) {}
func (f *fakeKubeletState) GetDevices(uid, ctr string) []*podresourcesapi.ContainerDevices {
	return f.devices[key(uid, ctr)]
}
func (f *fakeKubeletState) GetAllocatableDevices(klog.Logger) []*podresourcesapi.ContainerDevices {
	return f.alloc
}

// CPUsProvider.
func (f *fakeKubeletState) GetCPUs(p *v1.Pod, c *v1.Container) []int64 {
	return f.cpus[key(string(p.UID), c.Name)]
}
func (f *fakeKubeletState) GetPodCPUs(string) []int64 { return nil }
func (f *fakeKubeletState) GetAllocatableCPUs() []int64 {
	return cpuRange(1, 223)
}

// MemoryProvider.
func (f *fakeKubeletState) GetMemory(_ klog.Logger, p *v1.Pod, c *v1.Container) []*podresourcesapi.ContainerMemory {
	return f.memory[key(string(p.UID), c.Name)]
}
func (f *fakeKubeletState) GetPodMemory(klog.Logger, string) []*podresourcesapi.ContainerMemory {
	return nil
}
func (f *fakeKubeletState) GetAllocatableMemory(klog.Logger) []*podresourcesapi.ContainerMemory {
	return []*podresourcesapi.ContainerMemory{memBlock(1<<40, 0), memBlock(1<<40, 1)}
}

// DynamicResourcesProvider.
func (f *fakeKubeletState) GetDynamicResources(klog.Logger, *v1.Pod, *v1.Container) []*podresourcesapi.DynamicResource {
	return nil
}

func cpuRange(a, b int64) []int64 {
	var v []int64
	for i := a; i <= b; i++ {
		v = append(v, i)
	}
	return v
}

func numa(n int64) *podresourcesapi.TopologyInfo {
	return &podresourcesapi.TopologyInfo{Nodes: []*podresourcesapi.NUMANode{{ID: n}}}
}

func memBlock(size uint64, n int64) *podresourcesapi.ContainerMemory {
	return &podresourcesapi.ContainerMemory{MemoryType: "memory", Size: size, Topology: numa(n)}
}

func dgxUUID(i int) string { return "GPU-5b1a3c2e-7d4f-4e8a-9c1b-0000a0b1000" + strconv.Itoa(i) }

func testPod(ns, name, uid string, init []string, ctrs ...string) *v1.Pod {
	p := &v1.Pod{}
	p.Namespace, p.Name, p.UID = ns, name, types.UID(uid)
	always := v1.ContainerRestartPolicyAlways
	for _, c := range init {
		p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: c, RestartPolicy: &always})
	}
	p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: "setup"}) // not restartable: kubelet leaves it out
	for _, c := range ctrs {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: c})
	}
	return p
}

// dgxKubelet: on dgx-h100 (GPUs 0-3 on NUMA 0, 4-7 on NUMA 1), a training
// pod aligned on node 0 with a sidecar, an inference pod whose GPU is on
// node 1 and whose CPUs and memory are on node 0, a time-sliced share, a
// MIG-style id the node does not have, placed by kubelet's topology only.
func dgxKubelet() *fakeKubeletState {
	f := &fakeKubeletState{
		pods: []*v1.Pod{
			testPod("ml", "train-0", "u-train", []string{"loader"}, "trainer"),
			testPod("ml", "infer-7", "u-infer", nil, "server"),
			testPod("research", "notebook-2", "u-nb", nil, "jupyter"),
			testPod("research", "mig-0", "u-mig", nil, "worker"),
		},
		devices: map[string][]*podresourcesapi.ContainerDevices{
			key("u-train", "trainer"): {{ResourceName: "nvidia.com/gpu", DeviceIds: []string{dgxUUID(0), dgxUUID(1), dgxUUID(2), dgxUUID(3)}, Topology: numa(0)}},
			key("u-infer", "server"):  {{ResourceName: "nvidia.com/gpu", DeviceIds: []string{dgxUUID(4)}, Topology: numa(1)}},
			key("u-nb", "jupyter"):    {{ResourceName: "nvidia.com/gpu.shared", DeviceIds: []string{dgxUUID(5) + "::2"}, Topology: numa(1)}},
			key("u-mig", "worker"):    {{ResourceName: "nvidia.com/mig-1g.10gb", DeviceIds: []string{"MIG-4a0b1c2d-0000-5e6f-8a9b-0c1d2e3f4a5b"}, Topology: numa(1)}},
		},
		cpus: map[string][]int64{
			key("u-train", "trainer"): cpuRange(0, 31),
			key("u-train", "loader"):  cpuRange(112, 115),
			key("u-infer", "server"):  cpuRange(32, 39),
			key("u-nb", "jupyter"):    cpuRange(60, 63),
			key("u-mig", "worker"):    cpuRange(64, 65),
		},
		memory: map[string][]*podresourcesapi.ContainerMemory{
			key("u-train", "trainer"): {memBlock(256<<30, 0)},
			key("u-train", "loader"):  {memBlock(8<<30, 0)},
			key("u-infer", "server"):  {memBlock(64<<30, 0)},
			key("u-nb", "jupyter"):    {memBlock(8<<30, 1)},
			key("u-mig", "worker"):    {memBlock(8<<30, 1)},
		},
	}
	for i := range 8 {
		f.alloc = append(f.alloc, &podresourcesapi.ContainerDevices{ResourceName: "nvidia.com/gpu", DeviceIds: []string{dgxUUID(i)}, Topology: numa(int64(i / 4))})
	}
	return f
}

func TestPodResourcesFromKubeletServer(t *testing.T) {
	ctx := context.Background()
	f := dgxKubelet()
	srv := uppodresources.NewV1PodResourcesServer(ctx, uppodresources.PodResourcesProviders{
		Pods: f, Devices: f, Cpus: f, Memory: f, DynamicResources: f})
	root := t.TempDir()
	podresourcestest.Serve(t, root, podresources.DefaultSocket, srv)

	fs, err := hostfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	res, err := podresources.Read(ctx, fs, "", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}

	// What gpunode decoded is what kubelet's server answers.
	list, err := srv.List(ctx, &podresourcesapi.ListPodResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := (&podresourcesapi.ListPodResourcesResponse{PodResources: res.Pods}); !proto.Equal(got, list) {
		t.Errorf("List read over the socket differs from kubelet's answer:\n%v\n%v", got, list)
	}
	alloc, err := srv.GetAllocatableResources(ctx, &podresourcesapi.AllocatableResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(res.Allocatable, alloc) || res.AllocatableErr != "" {
		t.Errorf("GetAllocatableResources differs: %v (%s)", res.Allocatable, res.AllocatableErr)
	}

	// gpunode's verdicts on kubelet's answer, against the fixture's topology.
	hf, err := hostfs.New("../../testdata/hosts/dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	tp, err := topo.Discover(ctx, hf)
	if err != nil {
		t.Fatal(err)
	}
	b, err := gpu.OpenFake(hf, gpu.FakeFile)
	if err != nil {
		t.Fatal(err)
	}
	st, err := b.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := podresources.Analyze(res, podresources.Options{Topo: tp, GPUs: podresources.HostGPUs(tp, &st), Host: fs})
	want := map[string]struct {
		status  check.Status
		current string
	}{
		"ml/train-0/trainer":          {check.OK, "GPUs 0,1,2,3 on NUMA 0; CPUs 0-31 on NUMA 0; memory on NUMA 0"},
		"ml/infer-7/server":           {check.Drift, "GPU 4 on NUMA 1; CPUs 32-39 on NUMA 0; memory on NUMA 0"},
		"research/notebook-2/jupyter": {check.OK, "GPU 5#2 on NUMA 1; CPUs 60-63 on NUMA 1; memory on NUMA 1"},
		"research/mig-0/worker":       {check.OK, "GPU MIG-4a0b1c2d-0000-5e6f-8a9b-0c1d2e3f4a5b on NUMA 1; CPUs 64-65 on NUMA 1; memory on NUMA 1"},
	}
	if len(r.Checks) != len(want) {
		t.Fatalf("%d checks, want %d: %+v", len(r.Checks), len(want), r.Checks)
	}
	for _, c := range r.Checks {
		w, ok := want[c.Subject]
		if !ok || c.ID != "k8s.pod.numa" || c.Status != w.status || c.Current != w.current {
			t.Errorf("%s %s: %s %q, want %s %q", c.ID, c.Subject, c.Status, c.Current, w.status, w.current)
		}
	}
	// kubelet lists restartable init containers (sidecars) and leaves the
	// others out; gpunode shows what kubelet lists.
	for _, p := range r.Pods {
		if p.Name != "train-0" {
			continue
		}
		var names []string
		for _, c := range p.Containers {
			names = append(names, c.Name)
		}
		if len(names) != 2 || names[0] != "loader" || names[1] != "trainer" {
			t.Errorf("train-0 containers %v, want [loader trainer]", names)
		}
	}
}
