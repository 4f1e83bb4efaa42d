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
	initPeak := v1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if IsRestartableInitContainer(c) {
			addTo(sidecars, get(c))
			addTo(app, get(c))
			continue
		}
		// While c runs it holds its own request and every sidecar
		// started before it.
		own := get(c)
		for name := range union(own, sidecars) {
			var need resource.Quantity
			need.Add(own[name])
			need.Add(sidecars[name])
			atLeast(initPeak, name, need)
		}
	}
	for name, q := range initPeak {
		atLeast(app, name, q)
	}
	return app
}

func addTo(dst, src v1.ResourceList) {
	for k, v := range src {
		q := dst[k]
		q.Add(v)
		dst[k] = q
	}
}

// union yields every resource name either list holds, once.
func union(a, b v1.ResourceList) map[v1.ResourceName]struct{} {
	names := make(map[v1.ResourceName]struct{}, len(a)+len(b))
	for n := range a {
		names[n] = struct{}{}
	}
	for n := range b {
		names[n] = struct{}{}
	}
	return names
}

// atLeast raises list[name] to q when the list holds less (or none); an
// equal quantity already there is kept with its own format.
func atLeast(list v1.ResourceList, name v1.ResourceName, q resource.Quantity) {
	if have, ok := list[name]; ok && have.Cmp(q) >= 0 {
		return
	}
	list[name] = q.DeepCopy()
}

// Quantity returns list[name] or zero.
func Quantity(list v1.ResourceList, name v1.ResourceName) resource.Quantity {
	return list[name]
}
