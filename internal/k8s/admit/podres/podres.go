// Package podres holds the pod helpers kubelet's resource managers share:
// API-server defaulting of requests from limits, the QoS class (qos.go),
// restartable (sidecar) init containers, and
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
