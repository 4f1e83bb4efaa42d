package podresources

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	api "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpunode/gpunode/internal/check"
)

const (
	uidA = "3f1c2b4a-0000-4d2e-9a7e-000000000001"
	uidB = "3f1c2b4a-0000-4d2e-9a7e-000000000002"
	idA  = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"
	idB  = "b1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"
	idP  = "c1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90" // a pause container
)

// cgroupTree writes container cgroups (host dir -> "cpus|mems") and log
// names under root.
func cgroupTree(t *testing.T, root string, cgroups map[string]string, logs ...string) {
	t.Helper()
	for dir, v := range cgroups {
		cpus, mems, _ := strings.Cut(v, "|")
		p := filepath.Join(root, dir)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		names := [2]string{"cpuset.cpus.effective", "cpuset.mems.effective"}
		if strings.HasPrefix(dir, "/sys/fs/cgroup/cpuset/") {
			names = [2]string{"cpuset.effective_cpus", "cpuset.effective_mems"}
		}
		os.WriteFile(filepath.Join(p, names[0]), []byte(cpus+"\n"), 0o644)
		os.WriteFile(filepath.Join(p, names[1]), []byte(mems+"\n"), 0o644)
		os.WriteFile(filepath.Join(p, "cgroup.procs"), nil, 0o644)
	}
	for _, l := range logs {
		p := filepath.Join(root, l)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func systemdPod(qos, uid string) string {
	u := strings.ReplaceAll(uid, "-", "_")
	if qos == "" {
		return "/sys/fs/cgroup/kubepods.slice/kubepods-pod" + u + ".slice"
	}
	return "/sys/fs/cgroup/kubepods.slice/kubepods-" + qos + ".slice/kubepods-" + qos + "-pod" + u + ".slice"
}

func gpuPod(name string, gpu int) *api.PodResources {
	return pod("ml", name, &api.ContainerResources{Name: "c",
		Devices: []*api.ContainerDevices{gpus("nvidia.com/gpu", nil, uuid(gpu))}})
}

// CPU manager none: no cpu_ids, every container in the shared pool. The
// cpuset is the same everywhere, so it is known without naming the cgroup.
func TestCPUManagerNoneSharedPool(t *testing.T) {
	n := dgx(t)
	root := t.TempDir()
	cgroupTree(t, root, map[string]string{
		systemdPod("burstable", uidA) + "/cri-containerd-" + idA + ".scope":  "0-223|0-1",
		systemdPod("burstable", uidA) + "/cri-containerd-" + idP + ".scope":  "0-223|0-1",
		systemdPod("besteffort", uidB) + "/cri-containerd-" + idB + ".scope": "0-223|0-1",
	})
	r := read(t, n, root, &fakeKubelet{Pods: []*api.PodResources{gpuPod("a", 0)}})
	c := only(t, r, "ml/a/c")
	if c.Status != check.OK || c.Current != "GPU 0 on NUMA 0; CPUs 0-223 on NUMA 0,1; memory on NUMA 0,1" {
		t.Errorf("%s %q", c.Status, c.Current)
	}
	if !strings.Contains(c.Detail, "shared pool") {
		t.Errorf("detail %q does not say the CPUs are shared", c.Detail)
	}
	ctr := r.Pods[0].Containers[0]
	if ctr.CPUSource != SourceSharedPool || ctr.MemorySource != SourceSharedPool || ctr.CPUsExclusive {
		t.Errorf("sources %+v", ctr)
	}
}

// A runtime plugin (NRI) pinned the container where kubelet did not: the
// cgroup, found through kubelet's container log name, has the truth.
func TestCgroupFoundByContainerLog(t *testing.T) {
	n := dgx(t)
	root := t.TempDir()
	dirA := systemdPod("burstable", uidA) + "/cri-containerd-" + idA + ".scope"
	cgroupTree(t, root, map[string]string{
		dirA: "56-111|1",
		systemdPod("burstable", uidA) + "/cri-containerd-" + idP + ".scope": "0-223|0-1",
		systemdPod("", uidB) + "/crio-" + idB + ".scope":                    "0-55|0",
	},
		"/var/log/containers/a_ml_c-"+idA+".log",
		"/var/log/containers/b_ml_c-"+idB+".log",
		"/var/log/containers/old_ml_c-"+strings.Repeat("d", 64)+".log", // a container whose cgroup is gone
	)
	r := read(t, n, root, &fakeKubelet{Pods: []*api.PodResources{gpuPod("a", 0), gpuPod("b", 1), gpuPod("old", 2)}})
	c := only(t, r, "ml/a/c")
	if c.Status != check.Drift || c.Current != "GPU 0 on NUMA 0; CPUs 56-111 on NUMA 1; memory on NUMA 1" {
		t.Errorf("a: %s %q", c.Status, c.Current)
	}
	for _, p := range r.Pods {
		if p.Name == "a" {
			if ctr := p.Containers[0]; ctr.Cgroup != dirA || ctr.CPUSource != SourceCgroup {
				t.Errorf("cgroup %q source %s", ctr.Cgroup, ctr.CPUSource)
			}
		}
	}
	if c := only(t, r, "ml/b/c"); c.Status != check.OK || c.Current != "GPU 1 on NUMA 0; CPUs 0-55 on NUMA 0; memory on NUMA 0" {
		t.Errorf("b (CRI-O, Guaranteed): %s %q", c.Status, c.Current)
	}
	// old's cgroup is gone and the cpusets differ: undecided, and said so.
	c = only(t, r, "ml/old/c")
	if c.Status != check.Error || !strings.Contains(c.Detail, "/var/log/containers") || !strings.Contains(c.Detail, "different cpusets") {
		t.Errorf("old: %s %q", c.Status, c.Detail)
	}
}

// Without log names and with differing cpusets nothing is guessed.
func TestAmbiguousCgroupsAreAnError(t *testing.T) {
	n := dgx(t)
	root := t.TempDir()
	cgroupTree(t, root, map[string]string{
		systemdPod("burstable", uidA) + "/cri-containerd-" + idA + ".scope": "56-111|1",
		systemdPod("burstable", uidB) + "/cri-containerd-" + idB + ".scope": "0-55|0",
	})
	r := read(t, n, root, &fakeKubelet{Pods: []*api.PodResources{gpuPod("a", 0)}})
	if c := only(t, r, "ml/a/c"); c.Status != check.Error || c.Current != "GPU 0 on NUMA 0; CPUs unknown; memory unknown" {
		t.Errorf("%s %q", c.Status, c.Current)
	}
}

// With exclusive CPUs from the API, the shared pool is the one cpuset the
// other containers have; memory (no Memory Manager) from the cgroups.
func TestExclusiveCPUsLeaveTheSharedPool(t *testing.T) {
	n := dgx(t)
	root := t.TempDir()
	cgroupTree(t, root, map[string]string{
		systemdPod("", uidA) + "/cri-containerd-" + idA + ".scope":          "60-63|0-1",
		systemdPod("burstable", uidB) + "/cri-containerd-" + idB + ".scope": "0-59,64-223|0-1",
	})
	k := &fakeKubelet{Pods: []*api.PodResources{
		pod("ml", "x", &api.ContainerResources{Name: "c", CpuIds: cpus(60, 63),
			Devices: []*api.ContainerDevices{gpus("nvidia.com/gpu", nil, uuid(0))}}),
		gpuPod("y", 4),
	}}
	r := read(t, n, root, k)
	if c := only(t, r, "ml/x/c"); c.Status != check.Drift || c.Current != "GPU 0 on NUMA 0; CPUs 60-63 on NUMA 1; memory on NUMA 0,1" {
		t.Errorf("x: %s %q", c.Status, c.Current)
	}
	if c := only(t, r, "ml/y/c"); c.Status != check.OK || c.Current != "GPU 4 on NUMA 1; CPUs 0-59,64-223 on NUMA 0,1; memory on NUMA 0,1" {
		t.Errorf("y: %s %q", c.Status, c.Current)
	}
}

// cgroupfs driver (kubepods/burstable/pod<uid>/<id>) joined through
// /var/log/pods; and cgroup v1's cpuset hierarchy.
func TestCgroupfsAndV1Layouts(t *testing.T) {
	for _, tc := range []struct{ name, base string }{
		{"cgroupfs", "/sys/fs/cgroup/kubepods"},
		{"v1", "/sys/fs/cgroup/cpuset/kubepods"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := dgx(t)
			root := t.TempDir()
			cgroupTree(t, root, map[string]string{
				tc.base + "/burstable/pod" + uidA + "/" + idA: "56-59|1",
				tc.base + "/burstable/pod" + uidB + "/" + idB: "0-3|0",
			}, "/var/log/pods/ml_a_"+uidA+"/c/0.log")
			r := read(t, n, root, &fakeKubelet{Pods: []*api.PodResources{gpuPod("a", 0)}})
			c := only(t, r, "ml/a/c")
			if c.Status != check.Drift || c.Current != "GPU 0 on NUMA 0; CPUs 56-59 on NUMA 1; memory on NUMA 1" {
				t.Errorf("%s %q", c.Status, c.Current)
			}
			if got := r.Pods[0].Containers[0].Cgroup; got != tc.base+"/burstable/pod"+uidA+"/"+idA {
				t.Errorf("cgroup %q", got)
			}
		})
	}
}

func TestCgroupNames(t *testing.T) {
	for _, tc := range []struct {
		in, uid string
		ok      bool
	}{
		{"kubepods-burstable-pod" + strings.ReplaceAll(uidA, "-", "_") + ".slice", uidA, true},
		{"kubepods-pod" + strings.ReplaceAll(uidA, "-", "_") + ".slice", uidA, true},
		{"pod" + uidA, uidA, true},
		{"kubepods-burstable.slice", "", false},
		{"pod", "", false},
		{"podzz", "zz", false},
		{"kubepods-pod.slice", "", false},
	} {
		uid, ok := podUID(tc.in)
		if ok != tc.ok || (ok && uid != tc.uid) {
			t.Errorf("podUID(%q) = %q %v", tc.in, uid, ok)
		}
	}
	for _, tc := range []struct {
		in, id string
		ok     bool
	}{
		{"cri-containerd-" + idA + ".scope", idA, true},
		{"crio-" + idA + ".scope", idA, true},
		{"docker-" + idA + ".scope", idA, true},
		{"crio-conmon-" + idA + ".scope", "", false},
		{idA, idA, true},
		{"cpuset.cpus.effective", "", false},
		{"cgroup.procs", "", false},
		{"init.scope", "", false},
	} {
		id, ok := containerID(tc.in)
		if ok != tc.ok || (ok && id != tc.id) {
			t.Errorf("containerID(%q) = %q %v", tc.in, id, ok)
		}
	}
	for _, tc := range []struct {
		in, key, id string
		ok          bool
	}{
		{"train-0_ml_my-trainer-" + idA + ".log", "ml/train-0/my-trainer", idA, true},
		{"train-0_ml_my-trainer.log", "", "", false},
		{"train-0_ml-" + idA + ".log", "", "", false},
		{"a_b_c-" + idA, "", "", false},
	} {
		k, id, ok := parseContainerLog(tc.in)
		if ok != tc.ok || k != tc.key || id != tc.id {
			t.Errorf("parseContainerLog(%q) = %q %q %v", tc.in, k, id, ok)
		}
	}
}

func FuzzCgroupNames(f *testing.F) {
	for _, s := range []string{"kubepods-burstable-pod1_2.slice", "pod12-ab", "cri-containerd-" + idA + ".scope", "a_b_c-" + idA + ".log"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if uid, ok := podUID(s); ok && !validUID(uid) {
			t.Fatalf("podUID(%q) = %q", s, uid)
		}
		if id, ok := containerID(s); ok && !isHexID(id) {
			t.Fatalf("containerID(%q) = %q", s, id)
		}
		if k, id, ok := parseContainerLog(s); ok && (strings.Count(k, "/") != 2 || !isHexID(id)) {
			t.Fatalf("parseContainerLog(%q) = %q %q", s, k, id)
		}
	})
}
