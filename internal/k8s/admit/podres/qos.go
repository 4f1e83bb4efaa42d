package podres

import (
	"strings"

	v1 "k8s.io/api/core/v1"
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

// qosTally counts, over every (requirements block, cpu|memory) pair seen,
// how each pair is set.
type qosTally struct {
	pinned int // request == limit > 0
	unset  int // request == limit == 0
	loose  int // request != limit
}

func (t *qosTally) observe(r *v1.ResourceRequirements) {
	for _, name := range [...]v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		req, lim := r.Requests[name], r.Limits[name]
		switch {
		case req.Cmp(lim) != 0:
			t.loose++
		case lim.Sign() == 0:
			t.unset++
		default:
			t.pinned++
		}
	}
}

func (t qosTally) class() v1.PodQOSClass {
	switch {
	case t.loose > 0:
		return v1.PodQOSBurstable
	case t.pinned == 0:
		return v1.PodQOSBestEffort
	case t.unset == 0:
		return v1.PodQOSGuaranteed
	}
	return v1.PodQOSBurstable
}

// QOS returns the pod's QoS class (see the rules above).
func QOS(pod *v1.Pod) v1.PodQOSClass {
	if c := pod.Status.QOSClass; c != "" {
		return c
	}
	var t qosTally
	if IsPodLevelResourcesSet(pod) {
		t.observe(pod.Spec.Resources)
		return t.class()
	}
	for _, group := range [...][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range group {
			t.observe(&group[i].Resources)
		}
	}
	return t.class()
}

// podLevelResource reports whether name may be set in spec.resources: cpu,
// memory and huge pages.
func podLevelResource(name v1.ResourceName) bool {
	return name == v1.ResourceCPU || name == v1.ResourceMemory ||
		strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix)
}

// IsPodLevelResourcesSet reports whether spec.resources requests or limits
// a resource that may be set at pod level (cpu, memory, hugepages-<size>).
func IsPodLevelResourcesSet(pod *v1.Pod) bool {
	pr := pod.Spec.Resources
	if pr == nil {
		return false
	}
	for _, list := range [...]v1.ResourceList{pr.Requests, pr.Limits} {
		for name := range list {
			if podLevelResource(name) {
				return true
			}
		}
	}
	return false
}
