package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/internal/bind"
	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/container"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/topo"
	"github.com/gpunode/gpunode/internal/userfile"
)

func (a *App) newContainerCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "container",
		Short: "Check how GPUs reach containers, and run containers next to their GPUs",
		Long: `'container check' audits the container layer (NVIDIA Container Toolkit,
the nvidia runtime in Docker, containerd and CRI-O, CDI specs, the driver
against the image's CUDA, data on overlayfs). 'container flags' prints the
docker/podman/apptainer/enroot flags or the Kubernetes pod fragment that
give a container its GPUs with the CPUs and memory of their NUMA node, an
unlimited memlock and a large /dev/shm; 'container run' execs the runtime
with them.`,
	}
	cmd.AddCommand(a.newContainerCheckCommand(), a.newContainerFlagsCommand(), a.newContainerRunCommand())
	return cmd
}

type containerCheckFlags struct {
	cuda, imageConfig, spec string
	data                    []string
	gf                      GPUFlags
}

func (a *App) newContainerCheckCommand() *cobra.Command {
	var f containerCheckFlags
	cmd := &cobra.Command{
		Use:   "check [--cuda V] [--image-config F] [--data PATH...] [--container-spec F]",
		Short: "Check the container layer: toolkit, runtimes, CDI specs, CUDA compatibility, data on overlayfs",
		Long: `Run the container layer's checks (also a layer of 'gpunode audit'):

  container.toolkit              nvidia-ctk, runtime, hook, nvidia-container-cli, libnvidia-container
  container.runtime.docker       /etc/docker/daemon.json: nvidia runtime, CDI, memlock, shm size
  container.runtime.containerd   /etc/containerd/config.toml (v2, v3, imports): nvidia BinaryName, CDI
  container.runtime.crio         /etc/crio/crio.conf and crio.conf.d: nvidia runtime_path, CDI dirs
  container.cdi                  /etc/cdi, /var/run/cdi: valid, complete, not stale, no duplicates
  container.cuda-compat          driver vs --cuda, --image-config (docker inspect / OCI config) or /usr/local/cuda
  container.overlay              --data paths (or --container-spec mounts) not on overlayfs

A runtime file that does not parse makes its check an error with the file,
line and reason; the other checks still run. Files are read under --root;
nothing is executed.

Exit status: 0 nothing drifts, 1 drift or error, 2 usage, 3 failure.`,
		Example: `  gpunode container check
  gpunode container check --cuda 12.8
  docker image inspect nvcr.io/nvidia/pytorch:25.01-py3 > img.json && gpunode container check --image-config img.json
  gpunode container check --data /data --data /checkpoints     # inside the container
  docker inspect train > c.json && gpunode container check --container-spec c.json --data /data`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.cuda != "" {
				if err := gpu.ParseCUDARuntime(f.cuda); err != nil {
					return Usagef("--cuda: %v", err)
				}
			}
			ctx := cmd.Context()
			host, err := a.CheckedHost()
			if err != nil {
				return err
			}
			// The files the user names are input: one that cannot be read
			// or parsed is a usage error (exit 2), not a finding. They are
			// read under --max-input-bytes, as the check reads them.
			if f.imageConfig != "" {
				data, err := userfile.ReadUnder(host, f.imageConfig, a.MaxInputBytes)
				if err == nil {
					_, err = container.ImageCUDA(f.imageConfig, data)
				}
				if err != nil {
					return Usagef("--image-config: %v", err)
				}
			}
			if f.spec != "" {
				data, err := userfile.ReadUnder(host, f.spec, a.MaxInputBytes)
				if err == nil {
					_, err = container.ParseContainerSpec(f.spec, data)
				}
				if err != nil {
					return Usagef("--container-spec: %v", err)
				}
			}
			// --data paths are the host's (with --container-spec they
			// are the container's mount points, not checked here).
			if f.spec == "" {
				if err := checkPathsExist(host, "--data", f.data); err != nil {
					return err
				}
			}
			src := a.containerSource(ctx, host, nil, f.gf.backend)
			src.Options = container.Options{CUDA: f.cuda, ImageConfig: f.imageConfig, Data: f.data, ContainerSpec: f.spec, MaxInputBytes: a.MaxInputBytes}
			r, err := container.Run(ctx, src)
			if err != nil {
				return err
			}
			return a.RenderFindings(r, r.Failing())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.cuda, "cuda", "", "CUDA version of the image, major.minor[.patch] (e.g. 12.4)")
	fl.StringVar(&f.imageConfig, "image-config", "", "image config JSON ('docker image inspect' or OCI config) to read CUDA_VERSION / NVIDIA_REQUIRE_CUDA from")
	fl.StringSliceVar(&f.data, "data", nil, "data or checkpoint path to check for overlayfs (repeatable)")
	fl.StringVar(&f.spec, "container-spec", "", "'docker inspect' JSON or a Pod (YAML/JSON) whose mounts are checked")
	f.gf.Register(cmd, false)
	return cmd
}

// containerSource is the container layer for 'container check' and
// 'gpunode audit'. b is an already opened GPU backend (nil: open one from
// backend; a backend that cannot be opened leaves the layer to sysfs and
// /proc/driver/nvidia/version).
func (a *App) containerSource(ctx context.Context, host *hostfs.FS, b gpu.Backend, backend string) container.Source {
	if b == nil {
		if ob, err := a.openGPU(ctx, backend); err == nil {
			b = ob
		}
	}
	return container.Source{FS: host, Backend: b}
}

// containerAuditSource is the container layer of 'gpunode audit', sharing
// the GPU layer's backend.
func (a *App) containerAuditSource(ctx context.Context, host *hostfs.FS, t *topo.Topology, g gpu.Source) check.Source {
	s := a.containerSource(ctx, host, g.Backend, gpu.KindAuto)
	s.Topo = t
	return s
}

type containerFlagsFlags struct {
	gpus                    []string
	node                    int
	runtime, mig, shm, back string
	cdi, rdma, ipcHost      bool
}

func (f *containerFlagsFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringSliceVar(&f.gpus, "gpu", nil, "GPU(s) for the container: index, GPU- UUID or PCI address, comma-separated")
	fl.IntVar(&f.node, "node", 0, "no GPU: place the container on this NUMA node only")
	fl.StringVar(&f.runtime, "runtime", "", "container runtime: "+strings.Join(container.Runtimes(), ", "))
	fl.BoolVar(&f.cdi, "cdi", false, "name GPUs through CDI (--device nvidia.com/gpu=N) instead of --gpus (podman always does)")
	fl.StringVar(&f.mig, "mig", "", "give this MIG device (MIG- UUID) of the --gpu instead of the whole GPU")
	fl.BoolVar(&f.rdma, "rdma", false, "add the RDMA devices of the NICs on the GPUs' node and --network=host")
	fl.BoolVar(&f.ipcHost, "ipc-host", false, "share the host's IPC namespace (--ipc=host) instead of a private /dev/shm")
	fl.StringVar(&f.shm, "shm-size", container.DefaultShmSize, "/dev/shm size (docker/podman --shm-size; the pod's memory emptyDir)")
	fl.StringVar(&f.back, "gpu-backend", gpu.KindAuto, "GPU driver layer for UUIDs and NVML NUMA ids: auto, nvml, fake or none")
	_ = cmd.RegisterFlagCompletionFunc("runtime", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return container.Runtimes(), cobra.ShellCompDirectiveNoFileComp
	})
}

func (a *App) newContainerFlagsCommand() *cobra.Command {
	var f containerFlagsFlags
	cmd := &cobra.Command{
		Use:   "flags --gpu G[,G...] --runtime docker|podman|apptainer|enroot|kubernetes [--cdi] [--mig UUID] [--rdma] [--ipc-host] [--shm-size S]",
		Short: "Print the runtime flags that run a container next to its GPUs",
		Long: `Print the flags and environment that give a container its GPUs, the CPUs
and memory node of their NUMA node (gpunode bind's rules: whole cores,
isolated and nohz_full CPUs left out), an unlimited memlock and a
/dev/shm of --shm-size:

  docker/podman  --gpus device=N (podman, or --cdi: --device nvidia.com/gpu=N),
                 --cpuset-cpus, --cpuset-mems, --ulimit memlock=-1:-1, --shm-size
                 (or --ipc=host), with --rdma the uverbs devices, rdma_cm and --network=host
  apptainer      --nv and APPTAINERENV_CUDA_VISIBLE_DEVICES (--cdi: --nvccli --contain
                 and NVIDIA_VISIBLE_DEVICES)
  enroot         NVIDIA_VISIBLE_DEVICES and ENROOT_RESTRICT_DEV=yes
  kubernetes     a pod spec fragment: Guaranteed-QoS resources, the memory-backed
                 /dev/shm volume, hostNetwork with --rdma

-o json prints {"schemaVersion":"gpunode.container.flags/v1","args":[...],"env":{...}};
the table ends with the shell line.`,
		Example: `  gpunode container flags --gpu 0,1 --runtime docker
  eval docker run $(gpunode container flags --gpu 3 --runtime docker -o json | jq -r '.args|@sh') nvcr.io/nvidia/pytorch:25.01-py3
  gpunode container flags --gpu 0 --runtime kubernetes --rdma -o yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fl, err := a.containerFlags(cmd, &f)
			if err != nil {
				return err
			}
			return a.Render(fl)
		},
	}
	f.register(cmd)
	return cmd
}

func (a *App) containerFlags(cmd *cobra.Command, f *containerFlagsFlags) (*container.Flags, error) {
	ctx := cmd.Context()
	req := container.FlagsRequest{GPUs: f.gpus, Runtime: f.runtime, CDI: f.cdi, MIG: f.mig, RDMA: f.rdma, IPCHost: f.ipcHost, ShmSize: f.shm}
	if f.mig != "" {
		if err := checkMIGUUID("--mig", f.mig); err != nil {
			return nil, err
		}
	}
	if cmd.Flags().Changed("node") {
		n := f.node
		req.Node = &n
	}
	// the request's own values before the host is read: a bad --runtime
	// is exit 2 on a --root that is no host too
	if !slices.Contains(container.Runtimes(), f.runtime) {
		return nil, Usagef("--runtime %q: want one of %s", f.runtime, strings.Join(container.Runtimes(), ", "))
	}
	switch kind := strings.ToLower(strings.TrimSpace(f.back)); {
	case kind == gpu.KindNVIDIASMI:
		return nil, Usagef("--gpu-backend nvidia-smi is too slow here; use auto, nvml, fake or none")
	case kind != "" && !slices.Contains(gpu.Kinds, kind):
		return nil, Usagef("--gpu-backend %q: want auto, nvml, fake or none", f.back)
	}
	host, err := a.Host()
	if err != nil {
		return nil, err
	}
	t, err := topo.Discover(ctx, host)
	if err != nil {
		return nil, err
	}
	var src bind.Sources
	if host.IsLive() {
		src.Policy = bind.LivePolicy{}
	}
	if req.Node == nil {
		src.GPUs = a.BindGPUSource(f.back)
		src.GPUsAlways = cmd.Flags().Changed("gpu-backend") && f.back != gpu.KindAuto
	}
	fl, err := container.ComputeFlags(ctx, host, t, req, src)
	if errors.Is(err, container.ErrInput) {
		return nil, WrapUsage(err)
	}
	return fl, err
}

func (a *App) newContainerRunCommand() *cobra.Command {
	var f containerFlagsFlags
	var quiet bool
	cmd := &cobra.Command{
		Use:   "run --gpu G --runtime R [flags] -- [RUNTIME ARGS...] IMAGE [CMD...]",
		Short: "Exec the container runtime with the flags of 'container flags' inserted (exec in place)",
		Long: `Exec 'docker run', 'podman run', 'apptainer exec' or 'enroot start' with the
flags 'gpunode container flags' prints inserted before the arguments after
--: same PID, no wrapper process. The command line goes to stderr (-q: not).`,
		Example: `  gpunode container run --gpu 0 --runtime docker -- --rm nvcr.io/nvidia/pytorch:25.01-py3 python train.py
  gpunode container run --gpu 2,3 --runtime podman --rdma -- --rm -v /data:/data img:latest ./run.sh`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() < 0 || len(args) == 0 {
				return Usagef("put the runtime's arguments after --: gpunode container run --gpu G --runtime R -- [ARGS...] IMAGE [CMD...]")
			}
			if f.runtime == container.RuntimeKubernetes {
				return Usagef("--runtime kubernetes has nothing to run: use 'gpunode container flags --runtime kubernetes -o yaml'")
			}
			fl, err := a.containerFlags(cmd, &f)
			if err != nil {
				return err
			}
			return a.execContainer(fl, args, quiet)
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "do not print the command line")
	return cmd
}

func (a *App) execContainer(fl *container.Flags, args []string, quiet bool) error {
	host, err := a.Host()
	if err != nil {
		return err
	}
	if !host.IsLive() {
		return Usagef("container run runs on this machine: --root %s is for 'container flags'", a.Root)
	}
	argv := container.RunArgv(fl, args)
	path, err := bind.LookPath(argv[0], a.getenv("PATH"))
	if err != nil {
		return fmt.Errorf("container run: %w (nothing was run)", err)
	}
	env := a.EnvironList()
	for _, k := range sortedKeys(fl.Env) {
		env = append(env, k+"="+fl.Env[k])
	}
	if !quiet {
		fmt.Fprintln(a.Stderr, container.CommandLine(fl, argv))
	}
	exe := a.Exec
	if exe == nil {
		exe = execve
	}
	if err := exe(path, argv, env); err != nil {
		return fmt.Errorf("container run: exec %s: %w", path, err)
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
