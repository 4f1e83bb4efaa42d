package devicemanager

import (
	"sort"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpunode/gpunode/internal/k8s/node"
)

func testNode(t *testing.T, devices string) *node.Node {
	t.Helper()
	src := "apiVersion: gpunode.io/v1\nkind: Node\nnumaNodes:\n- {id: 0, cpus: 0-3, memory: 8Gi}\n- {id: 1, cpus: 4-7, memory: 8Gi}\n- {id: 2, cpus: 8-11, memory: 8Gi}\n- {id: 3, cpus: 12-15, memory: 8Gi}\ndevices:\n  nvidia.com/gpu:\n" + devices
	n, err := node.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func gpuPod(uid string, gpus int64) (*v1.Pod, *v1.Container) {
	p := &v1.Pod{}
	p.UID = types.UID(uid)
	rl := v1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI)}
	p.Spec.Containers = []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: rl, Limits: rl}}}
	return p, &p.Spec.Containers[0]
}

func render(hs []node.Hint) string {
	if hs == nil {
		return "nil"
	}
	var out []string
	for _, h := range hs {
		out = append(out, h.String())
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func TestHints(t *testing.T) {
	for _, tc := range []struct {
		name, devices string
		request       int64
		want          string
	}{
		{"one per node, 1 device", "  - {id: a, numaNode: 0}\n  - {id: b, numaNode: 1}\n", 1, "{0,1} {0} preferred {1} preferred"},
		{"two devices on node 0 and 1", "  - {id: a, numaNode: 0}\n  - {id: b, numaNode: 1}\n", 2, "{0,1} preferred"},
		{"not enough devices", "  - {id: a, numaNode: 0}\n", 2, ""},
		{"no topology at all", "  - {id: a}\n  - {id: b}\n", 1, "nil"},
		{"unhealthy device does not count as available but counts for min size", "  - {id: a, numaNode: 0, health: Unhealthy}\n  - {id: b, numaNode: 2}\n  - {id: c, numaNode: 2}\n", 1, "{0,2} {2} preferred"},
		{"multi-NUMA device", "  - {id: a, numaNodes: [0, 1]}\n  - {id: b, numaNode: 3}\n", 1, "{0,1,3} {0,1} {0,3} {0} preferred {1,3} {1} preferred {3} preferred"},
		{"nil-topology device never counts toward a mask", "  - {id: a, numaNode: 0}\n  - {id: b}\n", 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := New(testNode(t, tc.devices))
			pod, c := gpuPod("p", tc.request)
			h := m.ContainerHints(pod, c)
			got, ok := h["nvidia.com/gpu"]
			if !ok {
				t.Fatalf("no hints for nvidia.com/gpu: %v", h)
			}
			if r := render(got); r != tc.want {
				t.Errorf("hints = %q, want %q", r, tc.want)
			}
		})
	}
}

func TestAllocateAlignedFirst(t *testing.T) {
	devs := "  - {id: a, numaNode: 0}\n  - {id: b, numaNode: 1}\n  - {id: c, numaNode: 1}\n  - {id: d}\n  - {id: e, numaNode: 2, health: Unhealthy}\n"
	m := New(testNode(t, devs))
	pod, c := gpuPod("p1", 2)
	one := node.MaskOf(1)
	got, err := m.Allocate(pod, c, &one)
	if err != nil {
		t.Fatal(err)
	}
	if g := strings.Join(got["nvidia.com/gpu"], ","); g != "b,c" {
		t.Errorf("aligned allocation = %s, want b,c", g)
	}
	// 2 more: node 0 is not in the affinity {1}; the NUMA-less device comes last.
	pod2, c2 := gpuPod("p2", 2)
	got, err = m.Allocate(pod2, c2, &one)
	if err != nil {
		t.Fatal(err)
	}
	if g := strings.Join(got["nvidia.com/gpu"], ","); g != "a,d" {
		t.Errorf("fallback allocation = %s, want a,d", g)
	}
	pod3, c3 := gpuPod("p3", 1)
	if _, err := m.Allocate(pod3, c3, nil); err == nil || err.Error() != "requested number of devices unavailable for nvidia.com/gpu. Requested: 1, Available: 0" {
		t.Errorf("err = %v", err)
	}
	if av := m.Available("nvidia.com/gpu"); len(av) != 0 {
		t.Errorf("available = %v", av)
	}
}

func TestInitContainerDevicesAreReused(t *testing.T) {
	m := New(testNode(t, "  - {id: a, numaNode: 0}\n  - {id: b, numaNode: 1}\n"))
	p := &v1.Pod{}
	p.UID = "p"
	rl := v1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
	p.Spec.InitContainers = []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{Requests: rl, Limits: rl}}}
	p.Spec.Containers = []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{Requests: rl, Limits: rl}}}
	got1, err := m.Allocate(p, &p.Spec.InitContainers[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	got2, err := m.Allocate(p, &p.Spec.Containers[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	if got1["nvidia.com/gpu"][0] != got2["nvidia.com/gpu"][0] {
		t.Errorf("app did not reuse the init container's device: %v %v", got1, got2)
	}
	if len(m.Available("nvidia.com/gpu")) != 1 {
		t.Errorf("available = %v", m.Available("nvidia.com/gpu"))
	}
}
