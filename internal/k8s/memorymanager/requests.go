package memorymanager

import (
	"errors"

	v1 "k8s.io/api/core/v1"

	"github.com/gpunode/gpunode/internal/k8s/admit/podres"
)

// ContainerRequests returns the container's memory and hugepages requests in
// bytes (other resources left out). A quantity beyond int64 is kubelet's
// error.
func ContainerRequests(c *v1.Container) (map[v1.ResourceName]uint64, error) {
	asks := make(map[v1.ResourceName]uint64, 2)
	overflow := false
	for name, q := range c.Resources.Requests {
		if !isMemoryKind(name) {
			continue
		}
		b, ok := q.AsInt64()
		overflow = overflow || !ok
		asks[name] = uint64(b)
	}
	if overflow {
		return nil, errors.New(quoteNotInt64)
	}
	return asks, nil
}

// podNeed accumulates one memory type over a pod's containers.
type podNeed struct {
	initPeak uint64 // the most any regular init container needs while it runs
	sidecars uint64 // sidecars started so far; they run until the pod ends
	apps     uint64 // app containers together
	byApps   bool   // some app container names this type
}

// PodRequests returns what the pod as a whole needs of each memory type
// (kubelet's pod-scope request): a regular init container runs next to the
// sidecars started before it, app containers run next to all sidecars, and
// the pod needs the larger of the two. Types that only init containers ask
// for are left out, as kubelet does.
func PodRequests(pod *v1.Pod) (map[v1.ResourceName]uint64, error) {
	need := map[v1.ResourceName]*podNeed{}
	entry := func(name v1.ResourceName) *podNeed {
		e := need[name]
		if e == nil {
			e = &podNeed{}
			need[name] = e
		}
		return e
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		asks, err := ContainerRequests(c)
		if err != nil {
			return nil, err
		}
		sidecar := podres.IsRestartableInitContainer(c)
		for name, b := range asks {
			e := entry(name)
			if sidecar {
				e.sidecars += b
			} else {
				e.initPeak = max(e.initPeak, e.sidecars+b)
			}
		}
	}
	for i := range pod.Spec.Containers {
		asks, err := ContainerRequests(&pod.Spec.Containers[i])
		if err != nil {
			return nil, err
		}
		for name, b := range asks {
			e := entry(name)
			e.apps += b
			e.byApps = true
		}
	}
	total := make(map[v1.ResourceName]uint64, len(need))
	for name, e := range need {
		if e.byApps {
			total[name] = max(e.initPeak, e.apps+e.sidecars)
		}
	}
	return total, nil
}
