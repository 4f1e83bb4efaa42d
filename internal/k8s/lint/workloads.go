package lint

import (
	"fmt"
	"regexp"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpunode/gpunode/internal/k8s/admit"
	"github.com/gpunode/gpunode/internal/k8s/admit/podres"
	"github.com/gpunode/gpunode/internal/k8s/kubeletcfg"
	"github.com/gpunode/gpunode/internal/k8s/objects"
)

func workloadRules() []Rule {
	return []Rule{
		{ID: "gpu.limits", Severity: SeverityError, Section: "5.2",
			Summary: "extended resources (nvidia.com/gpu, ...) set in limits, integer, requests equal to limits",
			Local:   true, Check: checkGPULimits},
		{ID: "qos.exclusive-cpus", Severity: SeverityWarning, Section: "5.5.1",
			Summary: "pods meant for exclusive CPUs are Guaranteed with integer CPU requests (the static CPU manager pins nothing else)",
			Local:   true, Check: checkExclusiveCPUs},
		{ID: "qos.memory-manager", Severity: SeverityWarning, Section: "5.5.2",
			Summary: "GPU pods are Guaranteed when the Static memory manager is on (it pins memory only for them)",
			Needs:   "--kubelet-config", Local: true, Check: checkMemoryManager},
		{ID: "shm.size", Severity: SeverityWarning, Section: "5.6",
			Summary: "NCCL/DataLoader containers mount a memory-backed /dev/shm emptyDir of at least the stated size (default 1Gi)",
			Local:   true, Check: checkShm},
		{ID: "net.multi-node", Severity: SeverityWarning, Section: "5.6",
			Summary: "multi-pod GPU jobs use hostNetwork, an RDMA/SR-IOV resource, a Multus network or a ComputeDomain channel",
			Check:   checkMultiNode},
		{ID: "topology.single-numa", Severity: SeverityError, Section: "5.5.4",
			Summary: "a pod fits one NUMA node of the node under single-numa-node/restricted (the `k8s admit` simulator)",
			Needs:   "--node-file and --kubelet-config", Local: true, Check: checkSingleNUMA},
	}
}

func checkGPULimits(c *Context, emit Emit) {
	for _, p := range c.Pods {
		for _, ct := range p.Containers() {
			res := &ct.C.Resources
			for _, r := range sortedNames(res.Requests) {
				if !isExtended(r) {
					continue
				}
				req := res.Requests[r]
				lim, ok := res.Limits[r]
				field := fmt.Sprintf("%s.resources.limits[%s]", ct.Path, r)
				switch {
				case !ok:
					emit(p.Obj, field, fmt.Sprintf("container %s requests %s: %s without a limit: extended resources are not overcommitted, the API server rejects a request that is not equal to its limit",
						ct.C.Name, r, req.String()), fmt.Sprintf("set limits[%s]: %s (requests may then be left out: they default to the limit)", r, req.String()))
				case !lim.Equal(req):
					emit(p.Obj, field, fmt.Sprintf("container %s requests %s: %s but limits it to %s: the API server requires them equal",
						ct.C.Name, r, req.String(), lim.String()), fmt.Sprintf("set requests and limits of %s to the same integer", r))
				}
			}
			for _, r := range sortedNames(res.Limits) {
				if !isExtended(r) {
					continue
				}
				lim := res.Limits[r]
				if lim.MilliValue()%1000 != 0 {
					emit(p.Obj, fmt.Sprintf("%s.resources.limits[%s]", ct.Path, r), fmt.Sprintf("container %s limits %s to %s: extended resources are whole devices, the API server rejects a fraction",
						ct.C.Name, r, lim.String()), "use an integer count; share a GPU with time-slicing/MPS replicas, MIG or a DRA GpuConfig instead")
				}
				if lim.Sign() < 0 {
					emit(p.Obj, fmt.Sprintf("%s.resources.limits[%s]", ct.Path, r), fmt.Sprintf("container %s limits %s to %s (negative)", ct.C.Name, r, lim.String()), "use a count of 0 or more")
				}
			}
		}
	}
}

func sortedNames(l v1.ResourceList) []v1.ResourceName {
	out := make([]v1.ResourceName, 0, len(l))
	for r := range l {
		out = append(out, r)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// defaulted returns a copy of the template's pod with the API server's
// defaults (requests from limits) applied.
func defaulted(p *PodRef) *v1.Pod {
	pod := p.Pod().DeepCopy()
	podres.Default(pod)
	if pod.UID == "" {
		pod.UID = types.UID("gpunode-lint-" + p.Obj.ID() + "-" + p.Path)
	}
	return pod
}

func hasCPU(p *PodRef) bool {
	for _, ct := range p.Containers() {
		if _, ok := amount(ct.C, v1.ResourceCPU); ok {
			return true
		}
	}
	return false
}

// whyNotGuaranteed names the first container resource that keeps the pod
// out of the Guaranteed class.
func whyNotGuaranteed(p *PodRef, pod *v1.Pod) (string, string) {
	all := append(append([]v1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...)
	paths := p.Containers()
	for i := range all {
		ct := &all[i]
		for _, r := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
			req, hasReq := ct.Resources.Requests[r]
			lim, hasLim := ct.Resources.Limits[r]
			switch {
			case !hasLim && !hasReq:
				return paths[i].Path + ".resources", fmt.Sprintf("container %s sets no %s", ct.Name, r)
			case !hasLim:
				return paths[i].Path + ".resources.limits", fmt.Sprintf("container %s requests %s %s with no limit", ct.Name, r, req.String())
			case !req.Equal(lim):
				return paths[i].Path + ".resources.requests", fmt.Sprintf("container %s requests %s %s but limits it to %s", ct.Name, r, req.String(), lim.String())
			}
		}
	}
	return p.Path, "the pod-level resources are not equal"
}

func checkExclusiveCPUs(c *Context, emit Emit) {
	static := false
	if c.In.Kubelet != nil {
		if c.In.Kubelet.KC.CPUManagerPolicy != kubeletcfg.CPUPolicyStatic {
			return // no exclusive CPUs on this node at all
		}
		static = true
	}
	for _, p := range c.Pods {
		if !hasCPU(p) || (!static && !usesGPU(p)) {
			continue
		}
		pod := defaulted(p)
		qos := podres.QOS(pod)
		if qos != v1.PodQOSGuaranteed {
			field, why := whyNotGuaranteed(p, pod)
			emit(p.Obj, field, fmt.Sprintf("QoS class %s: %s; the static CPU manager gives exclusive CPUs only to Guaranteed pods (every container's cpu and memory requests equal to limits) with integer CPU requests, so these containers share the pool with everything else", qos, why),
				"set cpu and memory requests equal to limits in every container, with a whole number of CPUs")
			continue
		}
		for i, ct := range pod.Spec.Containers {
			q := ct.Resources.Requests[v1.ResourceCPU]
			if q.MilliValue()%1000 != 0 {
				emit(p.Obj, fmt.Sprintf("%s.containers[%d].resources.requests[cpu]", p.Path, i),
					fmt.Sprintf("QoS class Guaranteed, but container %s asks cpu %s: not an integer, so the static CPU manager leaves it in the shared pool", ct.Name, q.String()),
					fmt.Sprintf("request a whole number of CPUs (e.g. %d)", (q.MilliValue()+999)/1000))
			}
		}
	}
}

func checkMemoryManager(c *Context, emit Emit) {
	if c.In.Kubelet == nil || c.In.Kubelet.KC.MemoryManagerPolicy != kubeletcfg.MemoryPolicyStatic {
		return
	}
	for _, p := range c.Pods {
		if !usesGPU(p) {
			continue
		}
		pod := defaulted(p)
		if qos := podres.QOS(pod); qos != v1.PodQOSGuaranteed {
			field, why := whyNotGuaranteed(p, pod)
			emit(p.Obj, field, fmt.Sprintf("QoS class %s: %s; memoryManagerPolicy is Static in %s, which pins memory (and aligns it with the GPU's NUMA node) only for Guaranteed pods", qos, why, c.In.Kubelet.Name),
				"set cpu and memory requests equal to limits in every container")
		}
	}
}

// ncclHint matches commands, arguments, images and environment names of
// NCCL / PyTorch DataLoader workloads.
var ncclHint = regexp.MustCompile(`(?i)nccl|torchrun|torch\.distributed|deepspeed|accelerate launch|horovodrun|megatron|--nproc[-_]per[-_]node|dataloader`)

func ncclSignal(ct *v1.Container) string {
	for _, s := range append(append([]string{ct.Image}, ct.Command...), ct.Args...) {
		if m := ncclHint.FindString(s); m != "" {
			return fmt.Sprintf("%q", m)
		}
	}
	for _, e := range ct.Env {
		if strings.HasPrefix(e.Name, "NCCL_") {
			return "env " + e.Name
		}
	}
	return ""
}

func checkShm(c *Context, emit Emit) {
	shmMin := c.In.ShmMin
	if shmMin.IsZero() {
		shmMin = resource.MustParse("1Gi")
	}
	for _, p := range c.Pods {
		vols := map[string]*v1.Volume{}
		volIdx := map[string]int{}
		for i := range p.Spec.Volumes {
			vols[p.Spec.Volumes[i].Name] = &p.Spec.Volumes[i]
			volIdx[p.Spec.Volumes[i].Name] = i
		}
		for _, ct := range p.Containers() {
			sig := ncclSignal(ct.C)
			if sig == "" {
				continue
			}
			var mount *v1.VolumeMount
			for i := range ct.C.VolumeMounts {
				if strings.TrimRight(ct.C.VolumeMounts[i].MountPath, "/") == "/dev/shm" {
					mount = &ct.C.VolumeMounts[i]
				}
			}
			if mount == nil {
				emit(p.Obj, ct.Path+".volumeMounts", fmt.Sprintf("container %s looks like an NCCL/DataLoader workload (%s) but mounts nothing at /dev/shm: it gets the runtime's 64Mi default, too small for DataLoader workers and NCCL's shared-memory transport (bus errors, NCCL falls back to slower paths)",
					ct.C.Name, sig), fmt.Sprintf("add a volume {name: dshm, emptyDir: {medium: Memory, sizeLimit: %s}} and mount it at /dev/shm", shmMin.String()))
				continue
			}
			v := vols[mount.Name]
			if v == nil || v.EmptyDir == nil {
				continue // hostPath /dev/shm or another source: the user chose it
			}
			vf := fmt.Sprintf("%s.volumes[%d].emptyDir", p.Path, volIdx[mount.Name])
			if v.EmptyDir.Medium != v1.StorageMediumMemory {
				emit(p.Obj, vf+".medium", fmt.Sprintf("container %s mounts emptyDir %s at /dev/shm without medium: Memory: it is backed by the node's disk, not tmpfs", ct.C.Name, mount.Name),
					"set emptyDir.medium: Memory")
				continue
			}
			if sl := v.EmptyDir.SizeLimit; sl != nil && sl.Cmp(shmMin) < 0 {
				emit(p.Obj, vf+".sizeLimit", fmt.Sprintf("container %s mounts a %s /dev/shm (emptyDir %s), smaller than %s", ct.C.Name, sl.String(), mount.Name, shmMin.String()),
					fmt.Sprintf("raise sizeLimit to at least %s (it counts against the container's memory limit)", shmMin.String()))
			}
		}
	}
}

// isRDMAResource reports whether a resource name is an RDMA, SR-IOV or
// host-device network resource.
func isRDMAResource(r v1.ResourceName) bool {
	s := strings.ToLower(string(r))
	for _, k := range []string{"rdma", "sriov", "hostdev", "infiniband", "mellanox", "/ib", "roce"} {
		if strings.Contains(s, k) {
			return true
		}
	}
	return false
}

// AnnotationMultus names the secondary networks of a pod.
const AnnotationMultus = "k8s.v1.cni.cncf.io/networks"

func (c *Context) channelTemplates() map[string]bool {
	out := map[string]bool{}
	for _, o := range c.Kind("ComputeDomain") {
		cd := o.V.(*objects.ComputeDomain)
		if cd.Spec.Channel != nil {
			out[o.Namespace+"/"+cd.Spec.Channel.ResourceClaimTemplate.Name] = true
		}
	}
	return out
}

func fastNetwork(p *PodRef, channels map[string]bool) bool {
	if p.Spec.HostNetwork || p.Meta.Annotations[AnnotationMultus] != "" {
		return true
	}
	for _, rc := range p.Spec.ResourceClaims {
		if rc.ResourceClaimTemplateName != nil && channels[p.Obj.Namespace+"/"+*rc.ResourceClaimTemplateName] {
			return true
		}
	}
	for _, ct := range p.Containers() {
		for r := range ct.C.Resources.Limits {
			if isRDMAResource(r) {
				return true
			}
		}
		for r := range ct.C.Resources.Requests {
			if isRDMAResource(r) {
				return true
			}
		}
	}
	return false
}

func checkMultiNode(c *Context, emit Emit) {
	channels := c.channelTemplates()
	for _, g := range c.jobs() {
		if g.Total < 2 {
			continue
		}
		for _, p := range g.Pods {
			if !usesGPU(p) || p.Replicas == 0 || fastNetwork(p, channels) {
				continue
			}
			who := "its pods"
			if p.Role != "" {
				who = fmt.Sprintf("its %s pods (%d)", p.Role, p.Replicas)
			}
			emit(p.Obj, p.Path+".hostNetwork", fmt.Sprintf("%s runs %d pods with GPUs; %s use the pod network only (no hostNetwork, no RDMA/SR-IOV resource, no %s network, no ComputeDomain channel): NCCL traffic between nodes goes through the CNI overlay and TCP sockets",
				p.Obj.Kind, g.Total, who, AnnotationMultus), "set hostNetwork: true (with dnsPolicy: ClusterFirstWithHostNet), or request an RDMA/SR-IOV device (e.g. rdma/ib from the RDMA device plugin) or attach a Multus network")
		}
	}
}

func checkSingleNUMA(c *Context, emit Emit) {
	if c.In.Node == nil || c.In.Kubelet == nil {
		return
	}
	switch c.In.Kubelet.KC.TopologyManagerPolicy {
	case "single-numa-node", "restricted":
	default:
		return
	}
	for _, p := range c.Pods {
		pod := defaulted(p)
		sim, err := admit.New(c.In.Node, &c.In.Kubelet.KC, admit.Options{})
		if err != nil {
			// said once for the input (the rule runs object by object)
			if c.In.kubeletRefused {
				return
			}
			c.In.kubeletRefused = true
			emit(p.Obj, p.Path, fmt.Sprintf("kubelet would not start with %s on node %s: %v", c.In.Kubelet.Name, c.In.NodeName, err), "fix the KubeletConfiguration (gpunode k8s kubelet lint)")
			return
		}
		res := sim.Admit(pod)
		if res.Admitted {
			continue
		}
		msg := fmt.Sprintf("on node %s with topologyManagerPolicy %s (scope %s) kubelet rejects the pod: %s: %s", c.In.NodeName, c.In.Kubelet.KC.TopologyManagerPolicy, c.In.Kubelet.KC.TopologyManagerScope, res.Reason, res.Message)
		if len(res.Explanation) > 0 {
			msg += "; " + strings.Join(res.Explanation, "; ")
		}
		emit(p.Obj, p.Path+".containers", msg, "ask for what one NUMA node holds (see `gpunode k8s admit` for the per-NUMA amounts), or split the pod")
	}
}
