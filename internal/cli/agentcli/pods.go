package agentcli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/internal/cli"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/podresources"
	"github.com/gpunode/gpunode/internal/topo"
)

// PodsOptions select what one read of the running pods uses.
type PodsOptions struct {
	Socket string
	// Explicit: --pod-resources-socket was given, so it is read even under
	// a captured root (the user named it)
	Explicit bool
	Backend  string
	Timeout  time.Duration
	// Topo and Status, when set, are the topology and GPU status the
	// caller already has (the agent's audit): nothing is read twice.
	Topo   *topo.Topology
	Status func(context.Context) (gpu.Status, error)
}

func (o *PodsOptions) Flags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.Socket, "pod-resources-socket", podresources.DefaultSocket, "kubelet pod-resources socket (a host path, read under --root)")
	f.DurationVar(&o.Timeout, "pod-resources-timeout", podresources.DefaultTimeout, "give up on a kubelet that does not answer within this time")
}

// Pods reads the kubelet's PodResources API under the root and judges
// every container that holds GPUs against the node's topology. The GPU
// backend names GPUs by UUID (the device plugin's ids); without one, only
// the PCI topology and kubelet's device topology place them. A socket that
// cannot be read is a report with one check (info when it is missing) and
// the error. Under a captured root (--root DIR without --live-root) the
// socket is dialled only when --pod-resources-socket names it; otherwise the
// report is one info check (ErrCapturedRoot).
func (a *app) pods(ctx context.Context, o PodsOptions) (*podresources.Report, error) {
	if !a.IsLiveRoot() && !o.Explicit {
		return podresources.FromError(o.Socket, podresources.ErrCapturedRoot), nil
	}
	fs, err := a.Host()
	if err != nil {
		return nil, err
	}
	res, rerr := podresources.Read(ctx, fs, o.Socket, o.Timeout)
	if rerr != nil {
		return podresources.FromError(o.Socket, rerr), rerr
	}
	t := o.Topo
	if t == nil {
		if t, err = topo.Discover(ctx, fs); err != nil {
			err = fmt.Errorf("discover topology: %w", err)
			return podresources.FromError(o.Socket, err), err
		}
	}
	status := o.Status
	if status == nil && o.Backend != "" {
		status = func(ctx context.Context) (gpu.Status, error) { return a.GPUStatus(ctx, o.Backend) }
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

// Pods is (*app).pods for the companion's 'k8s pods'.
func Pods(a *cli.App, ctx context.Context, o PodsOptions) (*podresources.Report, error) {
	return (&app{a}).pods(ctx, o)
}
