package companion

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/internal/cli"
	"github.com/gpunode/gpunode/internal/cli/agentcli"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/podresources"
)

func (a *app) newK8sPodsCommand() *cobra.Command {
	var o agentcli.PodsOptions
	cmd := &cobra.Command{
		Use:   "pods [--pod-resources-socket PATH]",
		Short: "Show the running pods' GPUs, CPUs and memory NUMA nodes (kubelet pod-resources API) and check they are aligned",
		Long: `Read the kubelet's PodResources API v1 (List and GetAllocatableResources on
the unix socket ` + podresources.DefaultSocket + ` under --root) and show, per pod
and container, the GPUs it holds (device plugin ids: GPU and MIG UUIDs,
time-sliced <uuid>::<replica>, indices) with their PCI address and NUMA node,
its exclusive CPUs and its memory's NUMA nodes. A --root other than / is read
only with --live-root (the running host mounted elsewhere) or when
--pod-resources-socket names the socket; a captured tree's pods are not this
host's, so there it is one info check.

CPUs and memory come from the API when the CPU manager is static and the
Memory Manager Static (Guaranteed pods); otherwise from the container's cgroup
(cpuset.cpus.effective, cpuset.mems.effective under /sys/fs/cgroup, cgroup v2
with the systemd or cgroupfs driver, or v1). The API names no pod UID or
container id: the cgroup is found through kubelet's log names
(/var/log/containers, /var/log/pods; names only) or, when every container
without exclusive CPUs has the same cpuset (the shared pool), from that.

Check k8s.pod.numa, per container that holds GPUs: ok when every GPU's NUMA
node is among its CPUs' nodes and its memory's; drift otherwise, with the
numbers and the kubelet settings that align it (as 'gpunode k8s kubelet
recommend' prints them); error when it cannot be decided. A missing socket
is an info check ("kubelet pod-resources socket not mounted").

Exit status: 0 aligned (or no socket), 1 drift or undecided, 2 bad flags,
3 kubelet did not answer (within --pod-resources-timeout).`,
		Example: `  gpunode k8s pods
  gpunode --root /host k8s pods -o json
  gpunode k8s pods --pod-resources-socket /var/lib/kubelet/pod-resources/kubelet.sock`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Timeout <= 0 {
				return cli.Usagef("--pod-resources-timeout %s: want a positive duration", o.Timeout)
			}
			if !strings.HasPrefix(o.Socket, "/") {
				return cli.Usagef("--pod-resources-socket %q: want an absolute host path", o.Socket)
			}
			o.Explicit = cmd.Flags().Changed("pod-resources-socket")
			r, err := agentcli.Pods(a.App, cmd.Context(), o)
			if r == nil {
				return err
			}
			if r.State == podresources.StateUnreachable || r.State == podresources.StateFailed {
				if rerr := a.Render(r); rerr != nil {
					return rerr
				}
				return err
			}
			return a.RenderFindings(r, r.Summary.Failing())
		},
	}
	o.Flags(cmd)
	cli.GPUBackendVar(cmd.Flags(), &o.Backend, "GPU backend that names GPUs by UUID: "+strings.Join(gpu.Kinds, ", "))
	return cmd
}
