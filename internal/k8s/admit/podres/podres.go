// Package podres holds the pod helpers kubelet's resource managers share:
// API-server defaulting of requests from limits, the QoS class (as
// pkg/apis/core/v1/helper/qos), restartable (sidecar) init containers, and
// effective pod requests (init, sidecar and app containers, as
// k8s.io/component-helpers/resource).
package podres

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Default applies the API server's defaulting that kubelet relies on: a
// container limit without a request sets the request to the limit.
func Default(pod *v1.Pod) {
	def := func(cs []v1.Container) {
		for i := range cs {
			r := &cs[i].Resources
			for name, lim := range r.Limits {
				if _, ok := r.Requests[name]; !ok {
					if r.Requests == nil {
						r.Requests = v1.ResourceList{}
					}
					r.Requests[name] = lim.DeepCopy()
				}
			}
		}
	}
	def(pod.Spec.InitContainers)
	def(pod.Spec.Containers)
}

// IsRestartableInitContainer reports whether c is a sidecar (an init
// container with restartPolicy Always).
func IsRestartableInitContainer(c *v1.Container) bool {
	return c != nil && c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// IsPodLevelResourcesSet reports whether the pod sets pod-level cpu or memory
// requests or limits (spec.resources).
func IsPodLevelResourcesSet(pod *v1.Pod) bool {
	if pod.Spec.Resources == nil {
		return false
	}
	for _, l := range []v1.ResourceList{pod.Spec.Resources.Requests, pod.Spec.Resources.Limits} {
		for name := range l {
			if name == v1.ResourceCPU || name == v1.ResourceMemory {
				return true
			}
		}
	}
	return false
}

// QOS returns the pod's QoS class: status.qosClass when set, else computed
// from the containers (init and app) as kubelet's ComputePodQOS with
// PodLevelResources enabled.
func QOS(pod *v1.Pod) v1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	if IsPodLevelResourcesSet(pod) {
		return requirementsQOS(pod.Spec.Resources)
	}
	var q v1.PodQOSClass
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			cq := requirementsQOS(&cs[i].Resources)
			if cq == v1.PodQOSBurstable {
				return cq
			}
			if q == "" {
				q = cq
			} else if q != cq {
				return v1.PodQOSBurstable
			}
		}
	}
	if q == "" {
		q = v1.PodQOSBestEffort
	}
	return q
}

func requirementsQOS(r *v1.ResourceRequirements) v1.PodQOSClass {
	if len(r.Requests) == 0 && len(r.Limits) == 0 {
		return v1.PodQOSBestEffort
	}
	var q v1.PodQOSClass
	for _, res := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		req, lim := r.Requests[res], r.Limits[res]
		var rq v1.PodQOSClass
		switch {
		case !req.Equal(lim):
			rq = v1.PodQOSBurstable
		case req.IsZero():
			rq = v1.PodQOSBestEffort
		default:
			rq = v1.PodQOSGuaranteed
		}
		if rq == v1.PodQOSBurstable {
			return rq
		}
		if q == "" {
			q = rq
		} else if q != rq {
			return v1.PodQOSBurstable
		}
	}
	return q
}

// PodRequests returns the pod's effective requests (or limits when useLimits)
// per resource, as kubelet and the scheduler compute them:
// init = max over non-restartable init containers of (sidecars so far + its
// request); sidecars = sum of restartable init containers; pod = max(init,
// sum(app) + sidecars). Pod overhead is not included.
func PodRequests(pod *v1.Pod, useLimits bool) v1.ResourceList {
	get := func(c *v1.Container) v1.ResourceList {
		if useLimits {
			return c.Resources.Limits
		}
		return c.Resources.Requests
	}
	app := v1.ResourceList{}
	for i := range pod.Spec.Containers {
		addTo(app, get(&pod.Spec.Containers[i]))
	}
	sidecars := v1.ResourceList{}
	initMax := v1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if IsRestartableInitContainer(c) {
			addTo(sidecars, get(c))
			addTo(app, get(c))
			continue
		}
		tmp := v1.ResourceList{}
		addTo(tmp, get(c))
		addTo(tmp, sidecars)
		maxTo(initMax, tmp)
	}
	maxTo(app, initMax)
	return app
}

func addTo(dst, src v1.ResourceList) {
	for k, v := range src {
		q := dst[k]
		q.Add(v)
		dst[k] = q
	}
}

func maxTo(dst, src v1.ResourceList) {
	for k, v := range src {
		if q, ok := dst[k]; !ok || v.Cmp(q) > 0 {
			dst[k] = v.DeepCopy()
		}
	}
}

// Quantity returns list[name] or zero.
func Quantity(list v1.ResourceList, name v1.ResourceName) resource.Quantity {
	return list[name]
}
