package kubelet_test

// Differential test: gpunode's QoS class (podres.QOS) against kubelet
// v1.37.2's qos.GetPodQOS on random pods, with kubelet's default feature
// gates (pod-level resources on).

import (
	"fmt"
	"math/rand/v2"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	"k8s.io/kubernetes/pkg/apis/core/v1/helper/qos"
	"k8s.io/kubernetes/pkg/features"
	"sigs.k8s.io/yaml"

	"github.com/gpunode/gpunode/internal/k8s/admit/podres"
)

// qosQuantities mixes spellings of equal amounts ("1" and "1000m", "1Gi"
// and "1024Mi") with zero and negative ones.
var qosQuantities = []string{"0", "1", "1000m", "2", "500m", "1Gi", "1024Mi", "64Mi", "-1", "0m"}

var qosResources = []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceCPU, v1.ResourceMemory,
	"nvidia.com/gpu", "hugepages-2Mi", "hugepages-1Gi", v1.ResourceEphemeralStorage}

// randomRequirements sets each of a few resources as: absent, request only,
// limit only, equal request and limit, or two independent values.
func randomRequirements(r *rand.Rand, names []v1.ResourceName) v1.ResourceRequirements {
	var rr v1.ResourceRequirements
	q := func() resource.Quantity { return resource.MustParse(qosQuantities[r.IntN(len(qosQuantities))]) }
	put := func(l *v1.ResourceList, name v1.ResourceName, v resource.Quantity) {
		if *l == nil {
			*l = v1.ResourceList{}
		}
		(*l)[name] = v
	}
	for _, name := range names {
		switch r.IntN(6) {
		case 0, 1:
		case 2:
			put(&rr.Requests, name, q())
		case 3:
			put(&rr.Limits, name, q())
		case 4:
			v := q()
			put(&rr.Requests, name, v)
			put(&rr.Limits, name, v.DeepCopy())
		default:
			put(&rr.Requests, name, q())
			put(&rr.Limits, name, q())
		}
	}
	if r.IntN(10) == 0 { // an empty, non-nil map
		rr.Requests = v1.ResourceList{}
	}
	return rr
}

func randomQOSPod(r *rand.Rand) *v1.Pod {
	pick := func(k int) []v1.ResourceName {
		out := make([]v1.ResourceName, 0, k)
		for range k {
			out = append(out, qosResources[r.IntN(len(qosResources))])
		}
		return out
	}
	pod := &v1.Pod{}
	for i := range r.IntN(3) {
		c := v1.Container{Name: fmt.Sprintf("init%d", i), Resources: randomRequirements(r, pick(r.IntN(4)))}
		if r.IntN(3) == 0 {
			always := v1.ContainerRestartPolicyAlways
			c.RestartPolicy = &always
		}
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
	}
	// Guaranteed and best-effort pods need every container alike: often
	// reuse one container's resources so that they occur.
	var template *v1.ResourceRequirements
	for i := range r.IntN(5) {
		c := v1.Container{Name: fmt.Sprintf("c%d", i)}
		if template == nil && r.IntN(4) == 0 { // cpu and memory pinned
			cpu, mem := qosQuantities[1+r.IntN(4)], qosQuantities[5+r.IntN(3)]
			pinned := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
			template = &v1.ResourceRequirements{Requests: pinned, Limits: pinned.DeepCopy()}
		}
		if template != nil && r.IntN(4) != 0 {
			c.Resources = *template.DeepCopy()
		} else {
			c.Resources = randomRequirements(r, pick(1+r.IntN(3)))
			template = &c.Resources
		}
		pod.Spec.Containers = append(pod.Spec.Containers, c)
	}
	switch r.IntN(6) {
	case 0:
		pod.Spec.Resources = &v1.ResourceRequirements{}
	case 1:
		rr := randomRequirements(r, pick(1+r.IntN(3)))
		pod.Spec.Resources = &rr
	case 2:
		rr := randomRequirements(r, []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory})
		pod.Spec.Resources = &rr
	}
	if r.IntN(12) == 0 {
		pod.Status.QOSClass = []v1.PodQOSClass{v1.PodQOSGuaranteed, v1.PodQOSBurstable, v1.PodQOSBestEffort}[r.IntN(3)]
	}
	return pod
}

func TestQOSDifferential(t *testing.T) {
	for _, gate := range []featuregate.Feature{features.PodLevelResources, features.PodLevelResourcesFixKubeletQOSClass} {
		if !utilfeature.DefaultFeatureGate.Enabled(gate) {
			t.Fatalf("feature gate %s is off; gpunode follows kubelet's defaults, where it is on", gate)
		}
	}
	n := admitCases(t, 10000)
	r := rand.New(rand.NewPCG(uint64(n), 0x905))
	seen := map[v1.PodQOSClass]int{}
	podLevel := 0
	for i := range n {
		pod := randomQOSPod(r)
		want := qos.GetPodQOS(pod)
		if got := podres.QOS(pod); got != want {
			b, _ := yaml.Marshal(pod)
			t.Fatalf("case %d: gpunode %s, kubelet %s\n%s", i, got, want, b)
		}
		if pod.Status.QOSClass == "" {
			seen[want]++
		}
		if podres.IsPodLevelResourcesSet(pod) {
			podLevel++
		}
	}
	for _, c := range []v1.PodQOSClass{v1.PodQOSGuaranteed, v1.PodQOSBurstable, v1.PodQOSBestEffort} {
		if seen[c] == 0 {
			t.Fatalf("no computed %s pod in %d cases (%v)", c, n, seen)
		}
	}
	if podLevel == 0 {
		t.Fatalf("no pod with pod-level resources in %d cases", n)
	}
	t.Logf("%d pods: computed classes %v, %d classified at pod level", n, seen, podLevel)
}
