package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/internal/bind"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/sysfmt"
	"github.com/gpunode/gpunode/internal/topo"
)

type bindFlags struct {
	gpu, nic, mem, sched, cgroup, exclude, backend string
	node, localRank, localWorld, cpusPerRank       int
	includeIsolated, skipIsolated, quiet, dryRun   bool
	show                                           bool
}

func (a *App) newBindCommand() *cobra.Command {
	var f bindFlags
	cmd := &cobra.Command{
		Use:   "bind [flags] -- COMMAND [ARGS...]",
		Short: "Run a command on the CPUs and memory of its GPU's NUMA node (exec in place)",
		Long: `Resolve the target GPU (--gpu, or the local rank's GPU through
CUDA_VISIBLE_DEVICES), NIC (--nic) or node (--node), find its NUMA node (NVML,
then sysfs numa_node, then local_cpulist, then the current policy; the plan
says which answered), choose CPUs and a memory policy, and exec the command in
place: same PID, no wrapper process. One line goes to stderr:

  rank 0 -> GPU 3 (0000:c1:00.0) -> NUMA 0 -> CPUs 0-7,64-71 mem=preferred

Isolated and nohz_full CPUs are skipped, except when the host's isolation is
the one 'gpunode tune apply --profile inference-isolated' sets (isolcpus equal
to the pipeline split it computes: the first 1/8 of each node's cores kept for
housekeeping and IRQs): then the rank runs on its node's pipeline CPUs, off the
housekeeping ones, with OMP_PROC_BIND=close OMP_PLACES=cores (the kernel does
not spread threads over isolated CPUs). --skip-isolated keeps ranks off them;
--include-isolated uses the whole node. A warning says when an isolation
gpunode did not set leaves the rank only the housekeeping CPUs, or when too
few pipeline cores are left for the node's ranks.

Ranks sharing a node (--local-world-size or $LOCAL_WORLD_SIZE) get disjoint
whole-core shares, deterministic by rank. The command gets GPUNODE_CPUS (the
chosen CPU list), GPUNODE_NUMA_NODE and OMP_NUM_THREADS (unless set).

'gpunode bind --show [PID]' prints a process's affinity, memory policy and
threads (default: gpunode itself, i.e. what a command would inherit).`,
		Example: `  torchrun --nproc_per_node=8 --no-python gpunode bind -- python train.py
  gpunode bind --gpu 3 --mem bind -- python infer.py
  gpunode bind --node 0 --sched fifo:10 --cgroup gpu-workload -- ./feeder
  gpunode bind --local-rank 5 --local-world-size 8 --dry-run -o json -- true
  gpunode bind --show $(pgrep -f train.py)`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.show {
				if cmd.ArgsLenAtDash() >= 0 || len(args) > 1 {
					return Usagef("--show takes at most a PID, not a command")
				}
				return a.runBindShow(cmd.Context(), args)
			}
			dash := cmd.ArgsLenAtDash()
			if dash < 0 && len(args) > 0 {
				return Usagef("put the command after --: gpunode bind [flags] -- %s", strings.Join(args, " "))
			}
			if len(args) == 0 && !f.dryRun {
				return Usagef("missing command after --: gpunode bind [flags] -- COMMAND [ARGS...]")
			}
			return a.runBind(cmd, &f, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.gpu, "gpu", "", "GPU to bind next to: index (nvidia-smi order), GPU- UUID or PCI address")
	fl.IntVar(&f.localRank, "local-rank", 0, "local rank (default $LOCAL_RANK); picks the rank's GPU through CUDA_VISIBLE_DEVICES")
	fl.IntVar(&f.localWorld, "local-world-size", 0, "local ranks on this host (default $LOCAL_WORLD_SIZE); ranks sharing a node get disjoint cores")
	fl.IntVar(&f.node, "node", 0, "bind to this NUMA node (no GPU needed)")
	fl.StringVar(&f.nic, "nic", "", "bind next to this NIC (mlx5_0, ibp26s0 or a PCI address)")
	fl.IntVar(&f.cpusPerRank, "cpus-per-rank", 0, "logical CPUs per rank, rounded up to whole cores (default: an even split of the node)")
	fl.StringVar(&f.exclude, "exclude-cpus", "", "CPUs never to use (cpulist, e.g. 0,64)")
	fl.BoolVar(&f.includeIsolated, "include-isolated", false, "also use isolated and nohz_full CPUs of the node (the whole node)")
	fl.BoolVar(&f.skipIsolated, "skip-isolated", false, "never use isolated and nohz_full CPUs, even the pipeline CPUs of gpunode's inference-isolated profile")
	fl.StringVar(&f.mem, "mem", bind.MemPreferred, "memory policy: bind, preferred, interleave or none")
	fl.StringVar(&f.sched, "sched", "", "scheduling: nice:N, fifo:N, rr:N, batch:N, idle or other")
	fl.StringVar(&f.cgroup, "cgroup", "", "join this cgroup v2 cpuset (below /sys/fs/cgroup) with the chosen CPUs and nodes")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "do not print the binding line")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print the plan (-o json for the full model) and run nothing")
	fl.BoolVar(&f.show, "show", false, "show the affinity, memory policy and threads of PID (default gpunode itself)")
	fl.StringVar(&f.backend, "gpu-backend", gpu.KindAuto, "GPU driver layer for UUIDs and NVML NUMA ids: auto, nvml, fake or none")
	return cmd
}

func (a *App) lookupEnv(key string) (string, bool) {
	if a.Environ == nil {
		v := a.getenv(key)
		return v, v != ""
	}
	env := a.Environ()
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

func (a *App) getenv(key string) string {
	if a.Getenv == nil {
		return ""
	}
	return a.Getenv(key)
}

// EnvironList is the process environment (nil in tests without one),
// less the NVML hand-off's marker (EnvNVMLForwarded): it is for this
// process, not for what it starts (a workload's own gpunode hands off).
func (a *App) EnvironList() []string {
	if a.Environ == nil {
		return nil
	}
	env := a.Environ()
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		return strings.HasPrefix(kv, EnvNVMLForwarded+"=")
	})
}

func (a *App) runBind(cmd *cobra.Command, f *bindFlags, args []string) error {
	ctx := cmd.Context()
	fl := cmd.Flags()
	if f.includeIsolated && f.skipIsolated {
		return Usagef("--include-isolated and --skip-isolated conflict: pick one")
	}
	req := bind.Request{GPU: f.gpu, NIC: f.nic, CPUsPerRank: f.cpusPerRank, IncludeIsolated: f.includeIsolated, SkipIsolated: f.skipIsolated, Mem: f.mem, Cgroup: f.cgroup, Command: args, Getenv: a.getenv}
	var err error
	if fl.Changed("node") {
		n := f.node
		req.Node = &n
	}
	switch {
	case fl.Changed("local-rank"):
		if f.localRank < 0 {
			return Usagef("--local-rank %d: want a non-negative integer", f.localRank)
		}
		r := f.localRank
		req.LocalRank = &r
	default:
		if v, ok := a.lookupEnv(bind.EnvRank); ok && v != "" {
			r, err := bind.ParseRank(bind.EnvRank, v)
			if err != nil {
				return WrapUsage(err)
			}
			req.LocalRank = &r
		}
	}
	switch {
	case fl.Changed("local-world-size"):
		if f.localWorld < 1 {
			return Usagef("--local-world-size %d: want at least 1", f.localWorld)
		}
		req.LocalWorldSize = f.localWorld
	default:
		if v, ok := a.lookupEnv(bind.EnvWorld); ok && v != "" {
			if req.LocalWorldSize, err = bind.ParseRank(bind.EnvWorld, v); err != nil {
				return WrapUsage(err)
			}
		}
	}
	if v, ok := a.lookupEnv(bind.EnvVisible); ok {
		req.CUDAVisibleDevices = &v
	}
	if req.ExcludeCPUs, err = bind.ParseCPUs("--exclude-cpus", f.exclude); err != nil {
		return WrapUsage(err)
	}
	if req.Sched, err = bind.ParseSched(f.sched); err != nil {
		return WrapUsage(err)
	}
	if _, err := bind.ParseMem(f.mem); err != nil {
		return WrapUsage(err)
	}
	switch kind := strings.ToLower(strings.TrimSpace(f.backend)); {
	case kind == gpu.KindNVIDIASMI:
		return Usagef("--gpu-backend nvidia-smi is too slow for bind (seconds per launch); use auto, nvml, fake or none")
	case kind != "" && !slices.Contains(gpu.Kinds, kind):
		return Usagef("--gpu-backend %q: want auto, nvml, fake or none", f.backend)
	}
	host, err := a.Host()
	if err != nil {
		return err
	}
	if !host.IsLive() && !f.dryRun {
		return Usagef("bind runs the command on this machine: --root %s works only with --dry-run", a.Root)
	}
	// bind reads only what the request needs (its start-up is per rank).
	t, err := topo.DiscoverWith(ctx, host, bind.DiscoverOptions(req))
	if err != nil {
		return err
	}
	var src bind.Sources
	if host.IsLive() {
		src.Policy = bind.LivePolicy{}
	}
	if req.Node == nil && req.NIC == "" {
		src.GPUs = a.BindGPUSource(f.backend)
		// An explicitly chosen backend is always asked; auto only when
		// sysfs cannot answer (NVML start-up is slow).
		src.GPUsAlways = fl.Changed("gpu-backend") && f.backend != gpu.KindAuto
	}
	plan, err := bind.Resolve(ctx, t, req, src)
	if err != nil {
		if errors.Is(err, bind.ErrInput) {
			return WrapUsage(err)
		}
		return err
	}
	if f.dryRun {
		if len(plan.Command) == 0 {
			// A dry run shows what would run: without a command it is a
			// mistake ('gpunode bind --show' describes a running process).
			return Usagef("--dry-run: missing command after --: gpunode bind --dry-run [flags] -- COMMAND [ARGS...]")
		}
		return a.Render(plan)
	}
	for _, w := range plan.Warnings {
		a.Warnf("%s", w)
	}
	exe := a.Exec
	if exe == nil {
		exe = execve
	}
	err = bind.Exec(plan, bind.Runtime{FS: host, Environ: a.EnvironList(), Exec: func(argv0 string, argv, envv []string) error {
		if !f.quiet {
			fmt.Fprintln(a.Stderr, plan.Line)
		}
		return exe(argv0, argv, envv)
	}})
	if errors.Is(err, bind.ErrInput) {
		return WrapUsage(err)
	}
	if err != nil {
		return fmt.Errorf("bind: %w (nothing was run)", err)
	}
	return nil
}

func (a *App) runBindShow(ctx context.Context, args []string) error {
	host, err := a.Host()
	if err != nil {
		return err
	}
	pid := 0
	if len(args) == 1 {
		if pid, err = strconv.Atoi(args[0]); err != nil || pid <= 0 {
			return Usagef("--show %q: want a process id", args[0])
		}
	}
	self := os.Getpid()
	if !host.IsLive() && pid == 0 {
		return Usagef("--show needs a PID with --root")
	}
	// The topology only adds the nodes of the allowed CPUs; without it the
	// process view is still complete.
	t, err := topo.Discover(ctx, host)
	if err != nil {
		t = nil
	}
	s, err := bind.ReadShow(host, t, pid, self)
	if err != nil {
		if pid != 0 && errors.Is(err, os.ErrNotExist) {
			return Usagef("--show: no process %d", pid)
		}
		return err
	}
	return a.Render(s)
}

// BindGPUSource is the GPU layer as bind sees it (NVML or the fake file,
// never nvidia-smi).
func (a *App) BindGPUSource(kind string) bind.GPUSource { return &gpuSource{a: a, kind: kind} }

// gpuSource adapts the GPU layer to bind.GPUSource. It never runs
// nvidia-smi (seconds per call): on a live host it uses NVML or nothing;
// under --root the fake GPU file when present.
type gpuSource struct {
	a    *App
	kind string
	name string
}

func (g *gpuSource) Name() string {
	if g.name == "" {
		return "nvml"
	}
	return g.name
}

func (g *gpuSource) GPUs(ctx context.Context) ([]bind.GPUInfo, error) {
	host, err := g.a.Host()
	if err != nil {
		return nil, err
	}
	if err := g.a.handOffForNVML(g.kind); err != nil {
		return nil, err
	}
	b, err := gpu.Open(ctx, gpu.Options{Kind: g.kind, Host: host, Timeout: g.a.GPUTimeout, LiveRoot: g.a.LiveRoot, LookPath: func(string) (string, error) {
		return "", errors.New("not used by bind")
	}})
	if err != nil {
		return nil, err
	}
	defer b.Close()
	if b.Name() == gpu.KindNone {
		return nil, nil
	}
	g.name = b.Name()
	st, err := b.Status(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]bind.GPUInfo, 0, len(st.GPUs))
	for _, x := range st.GPUs {
		info := bind.GPUInfo{Index: x.Index, UUID: x.UUID, BDF: x.PCIAddress, NUMANode: x.NUMANode}
		for _, gi := range x.MIGInstances {
			for _, ci := range gi.ComputeInstances {
				if ci.UUID != "" {
					info.MIGUUIDs = append(info.MIGUUIDs, ci.UUID)
				}
			}
		}
		if x.CPUAffinity != "" {
			set, err := sysfmt.ParseCPUList(x.CPUAffinity)
			if err != nil {
				return nil, fmt.Errorf("GPU %d cpuAffinity: %w", x.Index, err)
			}
			info.CPUAffinity = set
		}
		out = append(out, info)
	}
	return out, nil
}
