package companion

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/internal/cli"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/k8s/podresources"
	"github.com/gpunode/gpunode/internal/topo"
)

// podsOptions select what one read of the running pods uses.
type podsOptions struct {
	socket string
	// explicit: --pod-resources-socket was given, so it is read even under
	// a captured root (the user named it)
	explicit bool
	backend  string
	timeout  time.Duration
	// topo and status, when set, are the topology and GPU status the
	// caller already has (the agent's audit): nothing is read twice.
	topo   *topo.Topology
	status func(context.Context) (gpu.Status, error)
}

func (o *podsOptions) flags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.socket, "pod-resources-socket", podresources.DefaultSocket, "kubelet pod-resources socket (a host path, read under --root)")
	f.DurationVar(&o.timeout, "pod-resources-timeout", podresources.DefaultTimeout, "give up on a kubelet that does not answer within this time")
}

// Pods reads the kubelet's PodResources API under the root and judges
// every container that holds GPUs against the node's topology. The GPU
// backend names GPUs by UUID (the device plugin's ids); without one, only
// the PCI topology and kubelet's device topology place them. A socket that
// cannot be read is a report with one check (info when it is missing) and
// the error. Under a captured root (--root DIR without --live-root) the
// socket is dialled only when --pod-resources-socket names it; otherwise the
// report is one info check (ErrCapturedRoot).
func (a *app) Pods(ctx context.Context, o podsOptions) (*podresources.Report, error) {
	if !a.IsLiveRoot() && !o.explicit {
		return podresources.FromError(o.socket, podresources.ErrCapturedRoot), nil
	}
	fs, err := a.Host()
	if err != nil {
		return nil, err
	}
	res, rerr := podresources.Read(ctx, fs, o.socket, o.timeout)
	if rerr != nil {
		return podresources.FromError(o.socket, rerr), rerr
	}
	t := o.topo
	if t == nil {
		if t, err = topo.Discover(ctx, fs); err != nil {
			err = fmt.Errorf("discover topology: %w", err)
			return podresources.FromError(o.socket, err), err
		}
	}
	status := o.status
	if status == nil && o.backend != "" {
		status = func(ctx context.Context) (gpu.Status, error) { return a.GPUStatus(ctx, o.backend) }
	}
	var st *gpu.Status
	if status != nil {
		if s, err := status(ctx); err == nil {
			st = &s
		} else {
			a.Warnf("GPU backend: %v (GPUs are placed by PCI topology and kubelet's device topology only)", err)
		}
	}
	return podresources.Analyze(res, podresources.Options{Topo: t, GPUs: podresources.HostGPUs(t, st), Host: fs}), nil
}

func (a *app) newK8sPodsCommand() *cobra.Command {
	var o podsOptions
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
			if o.timeout <= 0 {
				return cli.Usagef("--pod-resources-timeout %s: want a positive duration", o.timeout)
			}
			if !strings.HasPrefix(o.socket, "/") {
				return cli.Usagef("--pod-resources-socket %q: want an absolute host path", o.socket)
			}
			o.explicit = cmd.Flags().Changed("pod-resources-socket")
			r, err := a.Pods(cmd.Context(), o)
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
	o.flags(cmd)
	cmd.Flags().StringVar(&o.backend, "gpu-backend", gpu.KindAuto, "GPU backend that names GPUs by UUID: "+strings.Join(gpu.Kinds, ", "))
	return cmd
}
