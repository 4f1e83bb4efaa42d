package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/journal"
	"github.com/gpunode/gpunode/internal/miglive"
	"github.com/gpunode/gpunode/internal/mps"
)

// GPUFlags are the --gpu-backend flags shared by commands that talk to
// GPUs.
type GPUFlags struct {
	backend string
	gpus    []string
}

// Register adds the flags to cmd (persistent: to its subcommands too).
func (f *GPUFlags) Register(cmd *cobra.Command, persistent bool) {
	fs := cmd.Flags()
	if persistent {
		fs = cmd.PersistentFlags()
	}
	GPUBackendVar(fs, &f.backend, "GPU backend: "+strings.Join(gpu.Kinds, ", ")+
		" (auto: NVML, else nvidia-smi, else none; with --root other than / and no --live-root, the fake file "+gpu.FakeFile+")")
	_ = cmd.RegisterFlagCompletionFunc("gpu-backend", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return gpu.Kinds, cobra.ShellCompDirectiveNoFileComp
	})
}

// backendValue is --gpu-backend, checked as it is parsed: a bad name is
// a usage error (exit 2) on every command and path, whatever else is
// given (it was a gpu.driver error in audit, ok in tune status, container
// check and report).
type backendValue struct{ p *string }

func (v backendValue) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}

func (v backendValue) Type() string { return "string" }

func (v backendValue) Set(s string) error {
	if !slices.Contains(gpu.Kinds, s) {
		return fmt.Errorf("unknown GPU backend %q (want %s)", s, strings.Join(gpu.Kinds, ", "))
	}
	*v.p = s
	return nil
}

// GPUBackendVar defines --gpu-backend on fs for the commands that declare
// it themselves (report, agent, k8s pods): checked as it is parsed, as
// GPUFlags' is.
func GPUBackendVar(fs *pflag.FlagSet, p *string, usage string) {
	*p = gpu.KindAuto
	fs.Var(backendValue{p}, "gpu-backend", usage)
}

// Backend is the --gpu-backend value.
func (f *GPUFlags) Backend() string { return f.backend }

// openGPU opens the GPU backend selected by --gpu-backend and --root. A bad
// backend name or a malformed fake file is a usage error.
func (a *App) openGPU(ctx context.Context, kind string) (gpu.Backend, error) {
	host, err := a.Host()
	if err != nil {
		return nil, err
	}
	if err := a.handOffForNVML(kind); err != nil {
		return nil, err
	}
	b, err := gpu.Open(ctx, gpu.Options{Kind: kind, Host: host, Timeout: a.GPUTimeout, LiveSMI: a.GPUSMILive, LiveRoot: a.LiveRoot})
	if err != nil {
		if a.LiveRoot && errors.Is(err, gpu.ErrNVMLLibraryNotFound) {
			err = fmt.Errorf("%w: not found in this container: %s; %s", err, gpu.FixRuntimeClass, gpu.FixVisibleEnv)
		}
		return nil, WrapUsage(err)
	}
	return b, nil
}

// openGPUStatus opens the GPU backend selected by kind and reads its status.
// On success the caller closes the backend.
func (a *App) openGPUStatus(ctx context.Context, kind string) (gpu.Backend, gpu.Status, error) {
	b, err := a.openGPU(ctx, kind)
	if err != nil {
		return nil, gpu.Status{}, err
	}
	st, err := b.Status(ctx)
	if err != nil {
		b.Close()
		return nil, gpu.Status{}, err
	}
	return b, st, nil
}

// GPUStatus reads the status of the GPU backend selected by kind, with NUMA
// nodes filled from sysfs and MIG devices named from the catalogue.
func (a *App) GPUStatus(ctx context.Context, kind string) (gpu.Status, error) {
	b, st, err := a.openGPUStatus(ctx, kind)
	if err != nil {
		return gpu.Status{}, err
	}
	defer b.Close()
	host, err := a.Host()
	if err != nil {
		return gpu.Status{}, err
	}
	for _, w := range gpu.Annotate(host, &st) {
		a.Warnf("%v", w)
	}
	miglive.NameInstances(&st, a.MIGCatalogue())
	return st, nil
}

func (a *App) newGPUCommand() *cobra.Command {
	var f GPUFlags
	cmd := &cobra.Command{
		Use:   "gpu",
		Short: "Show and set GPU driver state: persistence, clocks, ECC, MIG mode (nvidia-smi -q)",
		Long: `Read every NVIDIA GPU through NVML (or nvidia-smi, or a fake description
with --root) and show or change the driver settings that matter for
performance: persistence mode, locked clocks, ECC, MIG mode.

Changes are journaled before they are made, like 'gpunode tune', so a
rollback restores them. A node without an NVIDIA driver shows no GPUs and
the reason; no command crashes on it. When NVIDIA GPUs are on the PCI bus
but no driver answers (missing or broken driver), 'gpu status' and
'gpu audit' say so and exit 1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	f.Register(cmd, true)
	cmd.AddCommand(a.newGPUStatusCommand(&f), a.newGPUPersistenceCommand(&f), a.newGPUClocksCommand(&f),
		a.newGPUAuditCommand(&f), a.newGPURollbackCommand(&f))
	return cmd
}

func (a *App) newGPUStatusCommand(f *GPUFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Per GPU: identity, NUMA node, persistence/compute/MIG modes, clocks and clock events, ECC, power, PCIe, NVLink",
		Example: `  gpunode gpu status
  gpunode gpu status -o json | jq '.gpus[] | {index, persistence, ecc}'
  gpunode gpu status --gpu 0,1
  gpunode gpu status --root ./testdata/hosts/h100x8   # fake backend`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := a.GPUStatus(cmd.Context(), f.backend)
			if err != nil {
				return err
			}
			if len(f.gpus) > 0 {
				sel, err := gpu.SelectGPUs(st, f.gpus)
				if err != nil {
					return WrapUsage(err)
				}
				st.GPUs = sel
			}
			broken := false
			if st.Backend == gpu.KindNone && !st.NotAsked {
				if host, err := a.Host(); err == nil {
					if fns, _ := gpu.NVIDIAFunctions(host); len(fns) > 0 {
						broken = true
						if st.NVMLLibraryMissing {
							a.Warnf("NVML library %s not found in this container (%d NVIDIA GPU functions on the host's PCI bus): %s; %s", gpu.NVMLLibrary, len(fns), gpu.FixRuntimeClass, gpu.FixVisibleEnv)
						} else {
							a.Warnf("%d NVIDIA GPU functions on the PCI bus (%s...) but no driver answers: %s", len(fns), fns[0].BDF, st.Reason)
						}
					}
				}
			}
			return a.RenderFindings(st, broken)
		},
	}
	cmd.Flags().StringSliceVar(&f.gpus, "gpu", nil, "GPUs to show: index, UUID (prefix) or PCI address, comma-separated (default all)")
	return cmd
}

// mutateFlags are the flags of commands that change GPUs.
type mutateFlags struct {
	gpus       []string
	dryRun     bool
	journalDir string
}

func (m *mutateFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringSliceVar(&m.gpus, "gpu", nil, "GPUs to change: index, UUID (prefix) or PCI address, comma-separated (default all)")
	cmd.Flags().BoolVar(&m.dryRun, "dry-run", false, "print the plan and change nothing")
	cmd.Flags().StringVar(&m.journalDir, "journal-dir", journal.DefaultDir, "journal directory (a host path under --root)")
}

// runGPUPlan opens the backend, selects GPUs, builds a plan with mk and
// applies it unless --dry-run.
func (a *App) runGPUPlan(cmd *cobra.Command, f *GPUFlags, m *mutateFlags, mk func(be string, gpus []gpu.GPU) (gpu.Plan, error)) error {
	ctx := cmd.Context()
	b, st, err := a.openGPUStatus(ctx, f.backend)
	if err != nil {
		return err
	}
	defer b.Close()
	if b.Name() == gpu.KindNone {
		return fmt.Errorf("%s", st.Reason)
	}
	sel, err := gpu.SelectGPUs(st, m.gpus)
	if err != nil {
		return WrapUsage(err)
	}
	plan, err := mk(b.Name(), sel)
	if err != nil {
		return WrapUsage(err)
	}
	host, err := a.Host()
	if err != nil {
		return err
	}
	plan, err = gpu.Apply(ctx, b, host, m.journalDir, plan, a.CommandLine(), m.dryRun)
	if rerr := a.Render(plan); rerr != nil && err == nil {
		err = rerr
	}
	return err
}

func (a *App) newGPUPersistenceCommand(f *GPUFlags) *cobra.Command {
	var m mutateFlags
	cmd := &cobra.Command{
		Use:   "persistence on|off",
		Short: "Turn persistence mode on or off (journaled; nvidia-persistenced is the supported way)",
		Long: `Set the legacy persistence mode (nvidia-smi -pm) on the selected GPUs. The
change is journaled first, so a rollback restores the previous mode.
NVIDIA calls the legacy mode near end of life: prefer
'systemctl enable --now nvidia-persistenced' on hosts you manage.`,
		Example: `  gpunode gpu persistence on --dry-run
  gpunode gpu persistence on --gpu 0,1`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"on", "off"},
		RunE: func(cmd *cobra.Command, args []string) error {
			var on bool
			switch strings.ToLower(args[0]) {
			case "on", "1", "enabled":
				on = true
			case "off", "0", "disabled":
			default:
				return Usagef("gpu persistence: %q: want on or off", args[0])
			}
			return a.runGPUPlan(cmd, f, &m, func(be string, gpus []gpu.GPU) (gpu.Plan, error) {
				return gpu.PlanPersistence(be, gpus, on), nil
			})
		},
	}
	m.register(cmd)
	return cmd
}

func (a *App) newGPUClocksCommand(f *GPUFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "clocks",
		Short: "Lock or reset the graphics clock (nvidia-smi -lgc / -rgc), journaled",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	var lm, rm mutateFlags
	var mhz string
	lock := &cobra.Command{
		Use:   "lock --mhz N|max",
		Short: "Lock the graphics clock to N MHz (min = max = N) or to each GPU's maximum",
		Long: `Lock the graphics clock for repeatable benchmarks. Pick N from
'nvidia-smi -q -d SUPPORTED_CLOCKS'; 'max' uses each GPU's maximum graphics
clock. Keep GPU Boost for normal training and inference: 'gpunode gpu clocks
reset' or a rollback undoes the lock.`,
		Example: `  gpunode gpu clocks lock --mhz 1410 --dry-run
  gpunode gpu clocks lock --mhz max --gpu 0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var want uint32
			switch s := strings.ToLower(strings.TrimSpace(mhz)); s {
			case "":
				return Usagef("gpu clocks lock: --mhz N|max is required")
			case "max":
			default:
				n, err := strconv.ParseUint(s, 10, 32)
				if err != nil || n == 0 || n > 10000 {
					return Usagef("gpu clocks lock: --mhz %q: want a clock in MHz (1-10000) or max", mhz)
				}
				want = uint32(n)
			}
			return a.runGPUPlan(cmd, f, &lm, func(be string, gpus []gpu.GPU) (gpu.Plan, error) {
				return gpu.PlanClockLock(be, gpus, want)
			})
		},
	}
	lock.Flags().StringVar(&mhz, "mhz", "", "graphics clock in MHz, or max")
	lm.register(lock)
	reset := &cobra.Command{
		Use:     "reset",
		Short:   "Remove graphics clock locks (GPU Boost decides again)",
		Example: `  gpunode gpu clocks reset --gpu 0`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runGPUPlan(cmd, f, &rm, func(be string, gpus []gpu.GPU) (gpu.Plan, error) {
				return gpu.PlanClockReset(be, gpus), nil
			})
		},
	}
	rm.register(reset)
	cmd.AddCommand(lock, reset)
	return cmd
}

func (a *App) newGPUAuditCommand(f *GPUFlags) *cobra.Command {
	var runtime string
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Check the driver, persistence, ECC, remapped rows, locked clocks, pending MIG changes, CUDA-driver compatibility and the health signals (XID, NVLink errors, fabric, reset/recovery, retired pages)",
		Long: `Run the GPU checks that 'gpunode audit' includes, with the same statuses.
Exit 1 when a check drifts or is an error (NVIDIA GPUs on the PCI bus but no
driver answering is an error). The CUDA runtime version comes from
--cuda-runtime (major.minor; anything else is a usage error) or
/usr/local/cuda/version.json (version.txt before CUDA 11.1) under --root; a
runtime of a newer major than the driver's CUDA version fails unless a
forward-compatibility package (/usr/local/cuda-M.m/compat) covers it.

Health checks: the driver's reset-required / recovery-action flags, XID
errors (the kernel log under --root: /var/log/kern.log, messages, syslog or
dmesg, never /dev/kmsg, which blocks), NVLink CRC/replay/recovery counters
(NVML), the GPUs' fabric registration and nvidia-fabricmanager on NVSwitch
systems, retired pages against NVIDIA's RMA threshold, and driver calls
that did not answer within --gpu-timeout.`,
		Example: `  gpunode gpu audit
  gpunode gpu audit --cuda-runtime 12.4`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runtime != "" {
				if err := gpu.ParseCUDARuntime(runtime); err != nil {
					return Usagef("--cuda-runtime: %v", err)
				}
			}
			host, err := a.CheckedHost()
			if err != nil {
				return err
			}
			st, err := a.GPUStatus(cmd.Context(), f.backend)
			if c, ok := gpu.CallCheck(err); ok {
				return a.RenderFindings(gpu.NewAuditReport(f.backend, []check.Check{c}), true)
			}
			if err != nil {
				return err
			}
			o, err := gpu.Source{FS: host, CUDARuntime: runtime}.Options()
			if err != nil {
				return WrapUsage(err)
			}
			cs := append(gpu.Audit(st, o), gpu.HealthChecks(st, gpu.HealthOptions{Host: host})...)
			rep := gpu.NewAuditReport(st.Backend, cs)
			return a.RenderFindings(rep, rep.Summary.Failing())
		},
	}
	cmd.Flags().StringVar(&runtime, "cuda-runtime", "", "CUDA runtime version in use, major.minor (default: detect from /usr/local/cuda)")
	return cmd
}

// gpuAuditSource returns the GPU layer's checks for 'gpunode audit'. It
// never fails: a node without a driver yields a source whose gpu.driver
// check says so (a bad --gpu-backend is refused as the flag is parsed). The caller closes nothing; the
// backend lives as long as the process.
func (a *App) gpuAuditSource(ctx context.Context, host *hostfs.FS, backend, cudaRuntime string) gpu.Source {
	b, err := a.openGPU(ctx, backend)
	if err != nil {
		if a.LiveRoot && errors.Is(err, gpu.ErrNVMLLibraryNotFound) {
			return gpu.Source{Backend: gpu.NewNoneLibrary(err.Error()), FS: host, CUDARuntime: cudaRuntime}
		}
		return gpu.Source{Backend: gpu.NewNone(err.Error()), FS: host, CUDARuntime: cudaRuntime}
	}
	return gpu.Source{Backend: b, FS: host, CUDARuntime: cudaRuntime}
}

// gpuJournalKinds registers the step kinds of the GPU layer (gpu.*, mps.daemon,
// mig.*) with reverters that reach the GPUs through b.
func (a *App) gpuJournalKinds(ctx context.Context, b gpu.Backend, m *mps.Manager) (*journal.Kinds, error) {
	kinds := journal.NewKinds()
	if err := gpu.RegisterJournalKinds(kinds, b); err != nil {
		return nil, err
	}
	if err := mps.RegisterJournalKinds(kinds, m); err != nil {
		return nil, err
	}
	var devs []miglive.Device
	lookup := func(uuid string) (miglive.Device, error) {
		if devs == nil {
			var err error
			if devs, err = miglive.Devices(ctx, b, a.MIGCatalogue()); err != nil {
				return nil, err
			}
		}
		for _, d := range devs {
			if d.Info().UUID == uuid {
				return d, nil
			}
		}
		return nil, fmt.Errorf("GPU %s not found", uuid)
	}
	if err := miglive.RegisterJournalKinds(kinds, lookup); err != nil {
		return nil, err
	}
	return kinds, nil
}

func (a *App) newGPURollbackCommand(f *GPUFlags) *cobra.Command {
	var dryRun bool
	var journalDir, stateDir, control string
	var owners, skip []string
	cmd := &cobra.Command{
		Use:   "rollback",
		Short: "Undo the GPU layer's journaled changes (persistence, clocks, MPS daemons, MIG), newest first",
		Long: `Revert every committed or interrupted transaction of the GPU layer's journal
owners (gpu: persistence and clock locks; mps: started daemons; mig: MIG mode
and layouts), newest first, each step in reverse order. 'gpunode tune
rollback' handles the OS settings.`,
		Example: `  gpunode gpu rollback --dry-run
  gpunode gpu rollback --owner mig`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			for _, o := range owners {
				if o != gpu.JournalOwner && o != mps.JournalOwner && o != miglive.JournalOwner {
					return Usagef("gpu rollback: --owner %q: want gpu, mps or mig", o)
				}
			}
			b, err := a.openGPU(ctx, f.backend)
			if err != nil {
				return err
			}
			defer b.Close()
			host, err := a.Host()
			if err != nil {
				return err
			}
			if err := checkSkipRefs(skip); err != nil {
				return err
			}
			m := &mps.Manager{Host: host, StateDir: stateDir, Runner: gpu.ExecRunner{}, Control: control}
			kinds, err := a.gpuJournalKinds(ctx, b, m)
			if err != nil {
				return err
			}
			rep := gpu.NewRollbackReport(dryRun)
			var firstErr error
			for _, o := range owners {
				var mine []string
				for _, ref := range skip {
					if id, _, _ := strings.Cut(ref, ":"); strings.HasSuffix(id, "-"+o) {
						mine = append(mine, ref)
					}
				}
				r, err := journal.Rollback(ctx, host, journalDir, journal.WithOwner(o), journal.WithKinds(kinds), journal.WithDryRun(dryRun), journal.WithSkip(mine...))
				rep.Transactions = append(rep.Transactions, r.Transactions...)
				if err != nil && firstErr == nil {
					firstErr = err
				}
			}
			if err := a.Render(rep); err != nil {
				return err
			}
			return firstErr
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "show what would be restored")
	cmd.Flags().StringVar(&journalDir, "journal-dir", journal.DefaultDir, "journal directory (a host path under --root)")
	cmd.Flags().StringVar(&stateDir, "mps-dir", mps.DefaultStateDir, "directory of the MPS daemons' pipe and log directories (for reverting started daemons; a host path under --root)")
	cmd.Flags().StringVar(&stateDir, "state-dir", mps.DefaultStateDir, "deprecated alias of --mps-dir")
	DeprecatedAlias(cmd.Flags(), "state-dir", "use --mps-dir (the same directory)")
	cmd.Flags().StringVar(&control, "mps-control", mps.ControlBinary, "the nvidia-cuda-mps-control program")
	cmd.Flags().StringSliceVar(&owners, "owner", []string{gpu.JournalOwner, mps.JournalOwner, miglive.JournalOwner}, "journal owners to roll back: gpu, mps, mig")
	cmd.Flags().StringSliceVar(&skip, "skip", nil, "skip step ID:N (as a failed rollback prints it) whose original cannot be written back; the original stays in the journal")
	return cmd
}
