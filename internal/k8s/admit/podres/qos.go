package podres

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// The QoS class follows the rules kubernetes.io documents under "Pod Quality
// of Service Classes", as kubelet v1.37 applies them with PodLevelResources
// and PodLevelResourcesFixKubeletQOSClass on (their defaults):
//
//   - status.qosClass, once the API server has set it, is final;
//   - a pod that sets pod-level requests or limits (spec.resources) for a
//     resource that may be set there is classified from spec.resources alone;
//   - otherwise every container counts, init containers and sidecars
//     included. Only cpu and memory matter: Guaranteed when each container
//     asks for both with request equal to limit, BestEffort when no container
//     asks for either, Burstable in every other case.
//
// An unset request or limit reads as zero, so "requests.cpu: 0" is the same
// as leaving cpu out.

// pairState is how one requirements block sets one of cpu and memory.
type pairState int

const (
	pairUnset  pairState = iota // neither request nor limit (or both zero)
	pairPinned                  // request equal to limit, not zero
	pairLoose                   // request and limit differ
)

// qosTally counts the (block, cpu|memory) pairs of a pod by state.
type qosTally [3]int

func (t *qosTally) observe(r *v1.ResourceRequirements) {
	t.count(r.Requests[v1.ResourceCPU], r.Limits[v1.ResourceCPU])
	t.count(r.Requests[v1.ResourceMemory], r.Limits[v1.ResourceMemory])
}

func (t *qosTally) count(req, lim resource.Quantity) {
	switch {
	case req.Cmp(lim) != 0:
		t[pairLoose]++
	case lim.IsZero():
		t[pairUnset]++
	default:
		t[pairPinned]++
	}
}

func (t *qosTally) observeContainers(cs []v1.Container) {
	for i := range cs {
		t.observe(&cs[i].Resources)
	}
}

// class: Guaranteed needs every pair pinned, BestEffort every pair unset
// (a pod without blocks is BestEffort); anything else is Burstable.
func (t qosTally) class() v1.PodQOSClass {
	mixed := t[pairPinned] > 0 && t[pairUnset] > 0
	switch {
	case t[pairLoose] > 0 || mixed:
		return v1.PodQOSBurstable
	case t[pairPinned] > 0:
		return v1.PodQOSGuaranteed
	}
	return v1.PodQOSBestEffort
}

// QOS returns the pod's QoS class (see the rules above).
func QOS(pod *v1.Pod) v1.PodQOSClass {
	var t qosTally
	switch {
	case pod.Status.QOSClass != "":
		return pod.Status.QOSClass
	case IsPodLevelResourcesSet(pod):
		t.observe(pod.Spec.Resources)
	default:
		t.observeContainers(pod.Spec.InitContainers)
		t.observeContainers(pod.Spec.Containers)
	}
	return t.class()
}

// IsPodLevelResourcesSet reports whether spec.resources requests or limits
// a resource that may be set at pod level (cpu, memory, hugepages-<size>).
// It is the component-helpers function kubelet itself calls.
func IsPodLevelResourcesSet(pod *v1.Pod) bool {
	return resourcehelper.IsPodLevelResourcesSet(pod)
}
