package podresourcestest

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	api "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// DGXUUID is GPU i's UUID in the dgx-h100 fixture's fake GPU file.
func DGXUUID(i int) string { return "GPU-5b1a3c2e-7d4f-4e8a-9c1b-0000a0b1000" + strconv.Itoa(i) }

// Container ids of the scenario's cgroups.
const (
	NotebookID  = "4f3c2b1a0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b"
	PauseID     = "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a0f9e8d"
	NotebookUID = "7c0ffee0-1234-4d2e-9a7e-00000000beef"
)

// DGXH100 is a kubelet on the dgx-h100 fixture (GPUs 0-3 on NUMA node 0,
// 4-7 on node 1; CPUs 0-55,112-167 on node 0) with the static CPU and
// Static memory managers, and the pods it runs:
//
//   - ml/train-0: container trainer holds GPUs 0-3 with CPUs 0-31 and
//     memory on node 0 (aligned); its sidecar loader holds no GPU;
//   - ml/infer-7: container server holds GPU 4 (node 1) with CPUs 32-39
//     and memory on node 0 (misaligned: admitted under topologyManagerPolicy
//     none);
//   - research/notebook-2: a Burstable pod, so no exclusive CPUs, holding a
//     time-sliced share of GPU 5; its cgroup (written under root, cgroup v2
//     with the systemd driver) is the shared pool;
//   - kube-system/nvidia-device-plugin: no GPU.
func DGXH100(t testing.TB, root string) *Kubelet {
	t.Helper()
	topo := func(n int64) *api.TopologyInfo { return &api.TopologyInfo{Nodes: []*api.NUMANode{{ID: n}}} }
	ids := func(a, b int64) []int64 {
		var v []int64
		for i := a; i <= b; i++ {
			v = append(v, i)
		}
		return v
	}
	mem := func(size uint64, n int64) []*api.ContainerMemory {
		return []*api.ContainerMemory{{MemoryType: "memory", Size: size, Topology: topo(n)}}
	}
	pod := "/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod7c0ffee0_1234_4d2e_9a7e_00000000beef.slice"
	for _, id := range []string{NotebookID, PauseID} {
		dir := filepath.Join(root, pod, "cri-containerd-"+id+".scope")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, v := range map[string]string{"cpuset.cpus.effective": "40-223\n", "cpuset.mems.effective": "0-1\n"} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	logs := filepath.Join(root, "/var/log/containers")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(logs, "notebook-2_research_jupyter-"+NotebookID+".log"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var all []*api.ContainerDevices
	for i := range 8 {
		all = append(all, &api.ContainerDevices{ResourceName: "nvidia.com/gpu", DeviceIds: []string{DGXUUID(i)}, Topology: topo(int64(i / 4))})
	}
	return &Kubelet{
		Pods: []*api.PodResources{
			{Namespace: "kube-system", Name: "nvidia-device-plugin", Containers: []*api.ContainerResources{{Name: "plugin"}}},
			{Namespace: "ml", Name: "train-0", Containers: []*api.ContainerResources{
				{Name: "trainer", Devices: []*api.ContainerDevices{{ResourceName: "nvidia.com/gpu",
					DeviceIds: []string{DGXUUID(0), DGXUUID(1), DGXUUID(2), DGXUUID(3)}, Topology: topo(0)}},
					CpuIds: ids(0, 31), Memory: mem(256<<30, 0)},
				{Name: "loader", CpuIds: ids(112, 115), Memory: mem(8<<30, 0)},
			}},
			{Namespace: "ml", Name: "infer-7", Containers: []*api.ContainerResources{
				{Name: "server", Devices: []*api.ContainerDevices{{ResourceName: "nvidia.com/gpu", DeviceIds: []string{DGXUUID(4)}, Topology: topo(1)}},
					CpuIds: ids(32, 39), Memory: mem(64<<30, 0)},
			}},
			{Namespace: "research", Name: "notebook-2", Containers: []*api.ContainerResources{
				{Name: "jupyter", Devices: []*api.ContainerDevices{{ResourceName: "nvidia.com/gpu.shared", DeviceIds: []string{DGXUUID(5) + "::1"}, Topology: topo(1)}}},
			}},
		},
		Allocatable: &api.AllocatableResourcesResponse{Devices: all, CpuIds: append(ids(1, 111), ids(113, 223)...)},
	}
}
