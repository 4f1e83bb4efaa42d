package cluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

const (
	labelRack = "topology.kubernetes.io/rack"
	labelZone = "topology.kubernetes.io/zone"
	labelCase = "conformance.gpunode.io/case"
	resGPU    = corev1.ResourceName("nvidia.com/gpu")
)

// nodeSpec is one generated node.
type nodeSpec struct {
	name          string
	labels        map[string]string
	cpu, gpu      int64 // allocatable (cores, devices)
	memGi         int64
	pods          int64
	unschedulable bool
	taint         bool
}

func (n nodeSpec) object() *corev1.Node {
	alloc := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(n.cpu, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(n.memGi<<30, resource.BinarySI),
		corev1.ResourcePods:   *resource.NewQuantity(n.pods, resource.DecimalSI),
	}
	if n.gpu > 0 {
		alloc[resGPU] = *resource.NewQuantity(n.gpu, resource.DecimalSI)
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: n.labels},
		Spec:       corev1.NodeSpec{Unschedulable: n.unschedulable},
		Status: corev1.NodeStatus{
			Capacity: alloc, Allocatable: alloc,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
				LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(), Reason: "KubeletReady"}},
		},
	}
	if n.taint {
		node.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "other", Effect: corev1.TaintEffectNoSchedule}}
	}
	return node
}

// createNodes creates nodes with a few workers (the status is kept on
// create, as a kubelet's registration does).
func createNodes(ctx context.Context, c kubernetes.Interface, nodes []*corev1.Node, workers int) error {
	ch := make(chan *corev1.Node)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range ch {
				if _, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("create node %s: %w", n.Name, err)
					for range ch {
					}
					return
				}
			}
		}()
	}
	for _, n := range nodes {
		ch <- n
	}
	close(ch)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// createPods creates pods concurrently.
func createPods(ctx context.Context, c kubernetes.Interface, pods []*corev1.Pod, workers int) error {
	ch := make(chan *corev1.Pod)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range ch {
				if _, err := c.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("create pod %s: %w", p.Name, err)
					for range ch {
					}
					return
				}
			}
		}()
	}
	for _, p := range pods {
		ch <- p
	}
	close(ch)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

func requests(cpu, gpu int64) corev1.ResourceList {
	r := corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(cpu, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(1<<30, resource.BinarySI)}
	if gpu > 0 {
		r[resGPU] = *resource.NewQuantity(gpu, resource.DecimalSI)
	}
	return r
}

// boundPod is a running pod already on a node (created bound: spec.nodeName
// set, as the scheduler's binding leaves it).
func boundPod(ns, name, node string, cpu, gpu int64) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: requests(cpu, gpu), Limits: gpuLimit(gpu)}}}},
	}
}

func gpuLimit(gpu int64) corev1.ResourceList {
	if gpu == 0 {
		return nil
	}
	return corev1.ResourceList{resGPU: *resource.NewQuantity(gpu, resource.DecimalSI)}
}

// outcome is what the scheduler did with a set of pods.
type outcome struct {
	nodes         map[string]string // pod -> node
	unschedulable int
	timedOut      bool
	elapsed       time.Duration
	message       string // the scheduler's message on one unschedulable pod
}

// waitScheduled polls the pods until every one is bound or marked
// unschedulable (PodScheduled=False, reason Unschedulable), or the timeout
// passes.
func waitScheduled(ctx context.Context, c kubernetes.Interface, ns string, names []string, timeout time.Duration) (outcome, error) {
	start := time.Now()
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	for {
		pl, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return outcome{}, err
		}
		o := outcome{nodes: map[string]string{}}
		for i := range pl.Items {
			p := &pl.Items[i]
			if !want[p.Name] {
				continue
			}
			if p.Spec.NodeName != "" {
				o.nodes[p.Name] = p.Spec.NodeName
				continue
			}
			for _, cond := range p.Status.Conditions {
				// Unschedulable, not SchedulingGated (a gated pod is
				// PodScheduled=False too).
				if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
					o.unschedulable++
					o.message = cond.Message
				}
			}
		}
		o.elapsed = time.Since(start)
		if len(o.nodes) == len(names) || (o.unschedulable > 0 && len(o.nodes)+o.unschedulable == len(names)) {
			return o, nil
		}
		if o.elapsed > timeout {
			o.timedOut = true
			return o, nil
		}
		select {
		case <-ctx.Done():
			return o, ctx.Err()
		case <-time.After(25 * time.Millisecond):
		}
	}
}
