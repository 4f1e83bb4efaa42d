package podres

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func ctr(name string, sidecar bool, req, lim map[string]string) v1.Container {
	c := v1.Container{Name: name}
	if sidecar {
		a := v1.ContainerRestartPolicyAlways
		c.RestartPolicy = &a
	}
	conv := func(m map[string]string) v1.ResourceList {
		if m == nil {
			return nil
		}
		out := v1.ResourceList{}
		for k, v := range m {
			out[v1.ResourceName(k)] = resource.MustParse(v)
		}
		return out
	}
	c.Resources = v1.ResourceRequirements{Requests: conv(req), Limits: conv(lim)}
	return c
}

func TestQOS(t *testing.T) {
	g := map[string]string{"cpu": "1", "memory": "1Gi"}
	for _, tc := range []struct {
		name string
		pod  v1.PodSpec
		want v1.PodQOSClass
	}{
		{"guaranteed", v1.PodSpec{Containers: []v1.Container{ctr("a", false, g, g)}}, v1.PodQOSGuaranteed},
		{"limits only (defaulted)", v1.PodSpec{Containers: []v1.Container{ctr("a", false, nil, g)}}, v1.PodQOSGuaranteed},
		{"best effort with a GPU", v1.PodSpec{Containers: []v1.Container{ctr("a", false, nil, map[string]string{"nvidia.com/gpu": "1"})}}, v1.PodQOSBestEffort},
		{"cpu only is burstable", v1.PodSpec{Containers: []v1.Container{ctr("a", false, map[string]string{"cpu": "1"}, map[string]string{"cpu": "1"})}}, v1.PodQOSBurstable},
		{"init container burstable", v1.PodSpec{InitContainers: []v1.Container{ctr("i", false, map[string]string{"cpu": "1"}, nil)}, Containers: []v1.Container{ctr("a", false, g, g)}}, v1.PodQOSBurstable},
		{"mixed best effort and guaranteed", v1.PodSpec{Containers: []v1.Container{ctr("a", false, g, g), ctr("b", false, nil, nil)}}, v1.PodQOSBurstable},
	} {
		p := &v1.Pod{Spec: tc.pod}
		Default(p)
		if got := QOS(p); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestPodRequests(t *testing.T) {
	r := func(cpu string) map[string]string { return map[string]string{"cpu": cpu} }
	p := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{
			ctr("init1", false, r("4"), nil),
			ctr("side1", true, r("1"), nil),
			ctr("init2", false, r("5"), nil), // runs next to side1: 6
			ctr("side2", true, r("2"), nil),
		},
		Containers: []v1.Container{ctr("a", false, r("1"), nil), ctr("b", false, r("1"), nil)},
	}}
	got := PodRequests(p, false)[v1.ResourceCPU]
	if got.String() != "6" {
		t.Errorf("cpu = %s, want 6 (max(init2 + side1, app + sidecars = 5))", got.String())
	}
	p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("4")
	got = PodRequests(p, false)[v1.ResourceCPU]
	if got.String() != "8" {
		t.Errorf("cpu = %s, want 8 (app 5 + sidecars 3)", got.String())
	}
}

func TestQOSPodLevelAndStatus(t *testing.T) {
	g := map[string]string{"cpu": "2", "memory": "2Gi"}
	guaranteedCtr := []v1.Container{ctr("a", false, g, g)}
	list := func(m map[string]string) v1.ResourceList { return ctr("", false, m, nil).Resources.Requests }
	for _, tc := range []struct {
		name string
		pod  v1.Pod
		want v1.PodQOSClass
	}{
		{"status wins", v1.Pod{Spec: v1.PodSpec{Containers: guaranteedCtr}, Status: v1.PodStatus{QOSClass: v1.PodQOSBestEffort}}, v1.PodQOSBestEffort},
		{"pod level burstable overrides guaranteed containers",
			v1.Pod{Spec: v1.PodSpec{Containers: guaranteedCtr, Resources: &v1.ResourceRequirements{Requests: list(map[string]string{"cpu": "1"})}}}, v1.PodQOSBurstable},
		{"pod level guaranteed",
			v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{ctr("a", false, nil, nil)}, Resources: &v1.ResourceRequirements{Requests: list(g), Limits: list(g)}}}, v1.PodQOSGuaranteed},
		{"pod level huge pages only count as pod level (best effort)",
			v1.Pod{Spec: v1.PodSpec{Containers: guaranteedCtr, Resources: &v1.ResourceRequirements{Limits: list(map[string]string{"hugepages-2Mi": "4Mi"})}}}, v1.PodQOSBestEffort},
		{"pod level with only a GPU falls back to containers",
			v1.Pod{Spec: v1.PodSpec{Containers: guaranteedCtr, Resources: &v1.ResourceRequirements{Limits: list(map[string]string{"nvidia.com/gpu": "1"})}}}, v1.PodQOSGuaranteed},
		{"explicit zero request is unset",
			v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{ctr("a", false, map[string]string{"cpu": "0", "memory": "0"}, nil)}}}, v1.PodQOSBestEffort},
		{"sidecar counts", v1.Pod{Spec: v1.PodSpec{InitContainers: []v1.Container{ctr("s", true, nil, nil)}, Containers: guaranteedCtr}}, v1.PodQOSBurstable},
		{"no containers", v1.Pod{}, v1.PodQOSBestEffort},
	} {
		p := tc.pod
		if got := QOS(&p); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// benchPods is a fixed mix of pod shapes for BenchmarkQOS.
func benchPods() []*v1.Pod {
	g := map[string]string{"cpu": "2", "memory": "4Gi"}
	b := map[string]string{"cpu": "1"}
	return []*v1.Pod{
		{Spec: v1.PodSpec{Containers: []v1.Container{ctr("a", false, g, g), ctr("b", false, g, g), ctr("c", false, g, g)}}},
		{Spec: v1.PodSpec{InitContainers: []v1.Container{ctr("i", false, g, g)}, Containers: []v1.Container{ctr("a", false, g, g), ctr("b", false, b, nil)}}},
		{Spec: v1.PodSpec{Containers: []v1.Container{ctr("a", false, nil, nil), ctr("b", false, nil, map[string]string{"nvidia.com/gpu": "1"})}}},
		{Spec: v1.PodSpec{Containers: []v1.Container{ctr("a", false, nil, nil)}, Resources: &v1.ResourceRequirements{Requests: ctr("", false, g, nil).Resources.Requests, Limits: ctr("", false, g, nil).Resources.Requests}}},
	}
}

func BenchmarkQOS(b *testing.B) {
	pods := benchPods()
	for b.Loop() {
		for _, p := range pods {
			if QOS(p) == "" {
				b.Fatal("no class")
			}
		}
	}
}
