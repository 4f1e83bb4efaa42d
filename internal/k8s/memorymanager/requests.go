package memorymanager

import (
	"errors"
	"iter"

	v1 "k8s.io/api/core/v1"

	"github.com/gpunode/gpunode/internal/k8s/admit/podres"
)

// role is how a container of a pod runs.
type role int

const (
	roleInit    role = iota // regular init container: runs to completion, alone
	roleSidecar             // restartable init container: runs until the pod ends
	roleApp                 // app container
)

// containersOf yields the pod's containers in start order with their role.
func containersOf(pod *v1.Pod) iter.Seq2[role, *v1.Container] {
	return func(yield func(role, *v1.Container) bool) {
		for i := range pod.Spec.InitContainers {
			c := &pod.Spec.InitContainers[i]
			r := roleInit
			if podres.IsRestartableInitContainer(c) {
				r = roleSidecar
			}
			if !yield(r, c) {
				return
			}
		}
		for i := range pod.Spec.Containers {
			if !yield(roleApp, &pod.Spec.Containers[i]) {
				return
			}
		}
	}
}

// ContainerRequests returns the container's memory and hugepages requests in
// bytes (other resources left out). A quantity beyond int64 is kubelet's
// error.
func ContainerRequests(c *v1.Container) (map[v1.ResourceName]uint64, error) {
	return inBytes(c.Resources.Requests, isMemoryKind, quoteNotInt64)
}

// inBytes converts the entries of rl that keep accepts; a value that is no
// int64 fails with message.
func inBytes(rl v1.ResourceList, keep func(v1.ResourceName) bool, message string) (map[v1.ResourceName]uint64, error) {
	out := make(map[v1.ResourceName]uint64, len(rl))
	for name, q := range rl {
		if !keep(name) {
			continue
		}
		switch b, exact := q.AsInt64(); {
		case exact:
			out[name] = uint64(b)
		default:
			return nil, errors.New(message)
		}
	}
	return out, nil
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
	need := map[v1.ResourceName]podNeed{}
	for r, c := range containersOf(pod) {
		asks, err := ContainerRequests(c)
		if err != nil {
			return nil, err
		}
		for name, b := range asks {
			e := need[name]
			switch r {
			case roleSidecar:
				e.sidecars += b
			case roleInit:
				e.initPeak = max(e.initPeak, e.sidecars+b)
			default:
				e.apps, e.byApps = e.apps+b, true
			}
			need[name] = e
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
