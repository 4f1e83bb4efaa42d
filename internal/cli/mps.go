package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/journal"
	"github.com/gpunode/gpunode/internal/mps"
)

// mpsFlags are shared by the mps subcommands.
type mpsFlags struct {
	GPUFlags
	mig      []string
	stateDir string
	control  string
}

func (a *App) mpsManager(f *mpsFlags) (*mps.Manager, error) {
	host, err := a.Host()
	if err != nil {
		return nil, err
	}
	return &mps.Manager{Host: host, StateDir: f.stateDir, Runner: gpu.ExecRunner{}, Control: f.control}, nil
}

// mpsTargets resolves --gpu/--mig through the GPU backend; without either it
// lists the daemons found under the state dir when discover is set.
func (a *App) mpsTargets(ctx context.Context, m *mps.Manager, f *mpsFlags, discover bool) ([]mps.Daemon, error) {
	if discover && len(f.gpus) == 0 && len(f.mig) == 0 {
		return m.Discover()
	}
	b, st, err := a.openGPUStatus(ctx, f.backend)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	if b.Name() == gpu.KindNone && len(f.mig) == 0 {
		return nil, fmt.Errorf("%s", st.Reason)
	}
	ds, err := m.Targets(st, f.gpus, f.mig)
	if err != nil {
		return nil, WrapUsage(err)
	}
	return ds, nil
}

// mpsDaemons builds the manager from the mps flags and resolves the daemons
// the command acts on (see mpsTargets).
func (a *App) mpsDaemons(ctx context.Context, f *mpsFlags, discover bool) (*mps.Manager, []mps.Daemon, error) {
	m, err := a.mpsManager(f)
	if err != nil {
		return nil, nil, err
	}
	ds, err := a.mpsTargets(ctx, m, f, discover)
	if err != nil {
		return nil, nil, err
	}
	return m, ds, nil
}

// mpsReport is the empty model of 'mps start' or 'mps stop' (action), marked
// as a dry run when it is one.
func mpsReport(m *mps.Manager, action string, dryRun bool) mps.Status {
	if dryRun {
		action += " (dry run)"
	}
	return mps.Status{SchemaVersion: mps.SchemaVersion, StateDir: m.StateDir, Action: action}
}

func (a *App) newMPSCommand() *cobra.Command {
	f := &mpsFlags{}
	cmd := &cobra.Command{
		Use:   "mps",
		Short: "Run NVIDIA MPS control daemons per GPU or MIG device, and static SM partitions",
		Long: `Manage Multi-Process Service: one control daemon per GPU or per MIG device,
each with its own CUDA_MPS_PIPE_DIRECTORY and CUDA_MPS_LOG_DIRECTORY under
--mps-dir (default ` + mps.DefaultStateDir + `/<UUID>/{pipe,log}), so daemons never
share a pipe. 'start' prints the environment clients need.

MPS shares compute, not memory: one client's out-of-memory error can take
down every client of the same server.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	f.GPUFlags.Register(cmd, true)
	pf := cmd.PersistentFlags()
	pf.StringSliceVar(&f.gpus, "gpu", nil, "GPUs: index, UUID (prefix) or PCI address, comma-separated (default all non-MIG GPUs)")
	pf.StringSliceVar(&f.mig, "mig", nil, "MIG device UUIDs, or all (one daemon per MIG device)")
	pf.StringVar(&f.stateDir, "mps-dir", mps.DefaultStateDir, "directory of the daemons' pipe and log directories, one per GPU (a host path under --root)")
	pf.StringVar(&f.stateDir, "state-dir", mps.DefaultStateDir, "deprecated alias of --mps-dir")
	DeprecatedAlias(pf, "state-dir", "use --mps-dir (the same directory)")
	pf.StringVar(&f.control, "mps-control", mps.ControlBinary, "the nvidia-cuda-mps-control program")
	cmd.AddCommand(a.newMPSStartCommand(f), a.newMPSStopCommand(f), a.newMPSStatusCommand(f), a.newMPSPartitionCommand(f))
	return cmd
}

func (a *App) newMPSStartCommand(f *mpsFlags) *cobra.Command {
	var dryRun, smPart bool
	var journalDir string
	cmd := &cobra.Command{
		Use:   "start",
		Short: "Start one control daemon per selected GPU or MIG device (journaled) and print the client env",
		Example: `  gpunode mps start --gpu 0 --dry-run
  gpunode mps start --mig all --sm-partitioning
  eval "$(gpunode mps status --gpu 0 -o json | jq -r '.daemons[0].env | map("export " + .) | .[]')"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			m, ds, err := a.mpsDaemons(ctx, f, false)
			if err != nil {
				return err
			}
			st := mpsReport(m, "start", dryRun)
			if dryRun {
				for _, d := range ds {
					s := mps.DaemonStatus{Daemon: d, Env: m.Env(d), Running: m.Running(d), Command: m.StartCmd(d, smPart).String()}
					st.Daemons = append(st.Daemons, s)
				}
				return a.Render(st)
			}
			kinds := journal.NewKinds()
			if err := mps.RegisterJournalKinds(kinds, m); err != nil {
				return err
			}
			res, err := journal.Run(ctx, m.Host, journalDir, journal.Meta{Owner: mps.JournalOwner, Command: a.CommandLine()}, func(context.Context, *journal.Tx) ([]journal.Action, error) {
				var acts []journal.Action
				for _, d := range ds {
					act, ok := m.StartAction(d, smPart)
					if ok {
						acts = append(acts, act)
					}
					st.Daemons = append(st.Daemons, mps.DaemonStatus{Daemon: d, Env: m.Env(d), Running: true, Changed: ok,
						Command: m.StartCmd(d, smPart).String()})
				}
				return acts, nil
			}, journal.WithKinds(kinds))
			if err != nil {
				var je *journal.Error
				if errors.As(err, &je) {
					if je.Revert != nil {
						return fmt.Errorf("%w (and stopping the daemons started so far failed: %v)", je.Err, je.Revert)
					}
					return fmt.Errorf("%w (daemons started so far were stopped)", je.Err)
				}
				return fmt.Errorf("journal: %w", err)
			}
			st.Journal = res.ID
			return a.Render(st)
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the commands and change nothing")
	cmd.Flags().BoolVar(&smPart, "sm-partitioning", false, "start the daemons with -S (static SM partitions)")
	cmd.Flags().StringVar(&journalDir, "journal-dir", journal.DefaultDir, "journal directory (a host path under --root)")
	return cmd
}

func (a *App) newMPSStopCommand(f *mpsFlags) *cobra.Command {
	var dryRun bool
	cmd := &cobra.Command{
		Use:     "stop",
		Short:   "Send quit to the selected daemons (default: every daemon under --mps-dir)",
		Example: `  gpunode mps stop --gpu 0`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			m, ds, err := a.mpsDaemons(ctx, f, true)
			if err != nil {
				return err
			}
			st := mpsReport(m, "stop", dryRun)
			var firstErr error
			for _, d := range ds {
				s := mps.DaemonStatus{Daemon: d, Env: m.Env(d), Running: m.Running(d)}
				if !dryRun {
					changed, err := m.Stop(ctx, d)
					s.Changed = changed
					if err != nil {
						s.Error = err.Error()
						if firstErr == nil {
							firstErr = err
						}
					} else {
						s.Running = false
					}
				}
				st.Daemons = append(st.Daemons, s)
			}
			if err := a.Render(st); err != nil {
				return err
			}
			return firstErr
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "show which daemons would be stopped")
	return cmd
}

func (a *App) newMPSStatusCommand(f *mpsFlags) *cobra.Command {
	var parts bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show daemons, their clients (echo ps | nvidia-cuda-mps-control) and SM partitions (lspart)",
		Example: `  gpunode mps status
  gpunode mps status --gpu 0 --partitions -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			m, ds, err := a.mpsDaemons(ctx, f, true)
			if err != nil {
				return err
			}
			st := mps.Status{SchemaVersion: mps.SchemaVersion, StateDir: m.StateDir, Daemons: []mps.DaemonStatus{}}
			for _, d := range ds {
				st.Daemons = append(st.Daemons, m.Inspect(ctx, d, parts))
			}
			return a.Render(st)
		},
	}
	cmd.Flags().BoolVar(&parts, "partitions", false, "also list static SM partitions (lspart)")
	return cmd
}

func (a *App) newMPSPartitionCommand(f *mpsFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "partition",
		Short: "Plan and add static MPS SM partitions (chunks -> SMs: 4 per chunk before Hopper, 8 on Hopper+)",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	var want, arch string
	var smCount int
	plan := &cobra.Command{
		Use:   "plan --chunks 5,3,2|40sm,24sm",
		Short: "Map wanted partitions to chunks and SMs on a GPU; exit 1 when they do not fit",
		Example: `  gpunode mps partition plan --gpu 0 --chunks 5,3,2
  gpunode mps partition plan --sm-count 132 --arch hopper --chunks 64sm,32sm,32sm`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			req, err := mps.ParseRequests(want)
			if err != nil {
				return WrapUsage(fmt.Errorf("--chunks: %w", err))
			}
			switch {
			case smCount < 0:
				return Usagef("--sm-count %d: want a positive SM count", smCount)
			case smCount > 0 && len(f.gpus) > 0:
				return Usagef("--sm-count plans offline and --gpu reads a GPU's SM count: give one of them")
			case smCount > 0 && !cmd.Flags().Changed("arch"):
				return Usagef("--sm-count needs --arch (ampere: 4 SMs per chunk; hopper, blackwell: 8)")
			case smCount > 0 && !slices.Contains([]string{"hopper", "blackwell", "ampere", "ada", "turing", "volta", "pascal"}, strings.ToLower(arch)):
				return Usagef("--arch %q: want hopper, blackwell, ampere, ada, turing, volta or pascal", arch)
			case smCount == 0 && cmd.Flags().Changed("arch"):
				return Usagef("--arch goes with --sm-count (with --gpu the architecture comes from the GPU)")
			}
			var p mps.PartitionPlan
			if smCount > 0 {
				p = mps.PlanPartitions(-1, "", smCount, mps.ChunkSMs(arch, ""), 0, req)
			} else {
				if len(f.gpus) != 1 {
					return Usagef("mps partition plan: pass one --gpu, or --sm-count and --arch")
				}
				m, err := a.mpsManager(f)
				if err != nil {
					return err
				}
				b, st, err := a.openGPUStatus(ctx, f.backend)
				if err != nil {
					return err
				}
				defer b.Close()
				g, err := gpu.FindGPU(st, f.gpus[0])
				if err != nil {
					return WrapUsage(err)
				}
				if g.SMCount == 0 {
					return fmt.Errorf("GPU %d: SM count unknown to the %s backend; pass --sm-count", g.Index, b.Name())
				}
				total := 0
				if d, err := m.DaemonFor(g.UUID, g.Index, false); err == nil && m.Running(d) {
					// Unreadable partitions fall back to the estimate.
					parts, _ := m.Partitions(ctx, d)
					for _, row := range parts {
						if row.ID == "" && row.FreeChunks != nil {
							total = *row.FreeChunks
						}
					}
				}
				p = mps.PlanPartitions(g.Index, g.UUID, g.SMCount, mps.ChunkSMs(g.Architecture, g.ComputeCapability), total, req)
			}
			return a.RenderFindings(p, !p.Feasible)
		},
	}
	plan.Flags().StringVar(&want, "chunks", "", "partitions: chunk counts (5,3,2) or SM counts (40sm,24sm)")
	plan.Flags().IntVar(&smCount, "sm-count", 0, "plan offline for a GPU with this many SMs")
	plan.Flags().StringVar(&arch, "arch", "", "architecture for --sm-count, required with it (ampere: 4 SMs per chunk, hopper/blackwell: 8)")
	var chunks int
	add := &cobra.Command{
		Use:     "add --gpu SEL --chunks N",
		Short:   "Add one static SM partition on a GPU whose daemon runs with -S; prints CUDA_MPS_SM_PARTITION",
		Example: `  gpunode mps partition add --gpu 0 --chunks 5`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if len(f.gpus) != 1 || chunks <= 0 {
				return Usagef("mps partition add: pass one --gpu and --chunks N (N >= 1)")
			}
			m, ds, err := a.mpsDaemons(ctx, f, false)
			if err != nil {
				return err
			}
			if len(ds) != 1 {
				return Usagef("mps partition add: --gpu selects %d devices, want 1", len(ds))
			}
			id, err := m.AddPartition(ctx, ds[0], ds[0].Device, chunks)
			if err != nil {
				return err
			}
			st := m.Inspect(ctx, ds[0], true)
			st.Env = append(st.Env, "CUDA_MPS_SM_PARTITION="+id)
			return a.Render(mps.Status{SchemaVersion: mps.SchemaVersion, StateDir: m.StateDir, Action: "partition add " + id, Daemons: []mps.DaemonStatus{st}})
		},
	}
	add.Flags().IntVar(&chunks, "chunks", 0, "chunks in the new partition")
	cmd.AddCommand(plan, add)
	return cmd
}
