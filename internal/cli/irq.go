package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/bind"
	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/irq"
	"github.com/gpunode/gpunode/internal/journal"
	"github.com/gpunode/gpunode/internal/topo"
)

type irqFlags struct {
	devices, avoid, rankCPUs, journalDir string
	ranks, cpusPerRank                   int
	exitCode, dryRun                     bool
	sample                               time.Duration
}

func (a *App) newIRQCommand() *cobra.Command {
	var f irqFlags
	cmd := &cobra.Command{
		Use:   "irq",
		Short: "Show, plan, apply and roll back GPU/NIC interrupt affinity",
		Long: `List every GPU and NIC IRQ (from msi_irqs and /proc/interrupts), where it was
served so far, its smp_affinity_list, and a plan that puts each IRQ on one CPU
of its device's NUMA node, spread across physical cores, away from isolated
and nohz_full CPUs, --avoid and the CPUs handed to ranks (--rank-cpus).
'apply' writes the plan through the shared change journal; 'rollback' restores
the originals. When irqbalance runs, the output says how to keep it away.`,
		Args: cobra.NoArgs,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.devices, "devices", "gpu,nic", "device kinds: gpu, nic, nvme, nvswitch or all")
	pf.StringVar(&f.avoid, "avoid", "", "CPUs no IRQ may use (cpulist)")
	pf.StringVar(&f.rankCPUs, "rank-cpus", "", "CPUs handed to ranks (e.g. the union of their GPUNODE_CPUS); kept free of IRQs")
	pf.StringVar(&f.journalDir, "journal-dir", journal.DefaultDir, "journal directory (a host path under --root)")
	pf.IntVar(&f.ranks, "ranks", 0, "local ranks launched with 'gpunode bind': their CPU shares are kept free of IRQs (with --cpus-per-rank)")
	pf.DurationVar(&f.sample, "sample", 0, "also count the interrupts served off-node during this window (e.g. 2s); without it only the current routing decides")
	pf.IntVar(&f.cpusPerRank, "cpus-per-rank", 0, "the --cpus-per-rank the ranks are bound with (needed with --ranks: an even split leaves no CPU for IRQs)")

	plan := &cobra.Command{
		Use:   "plan",
		Short: "Show every GPU/NIC IRQ, where it was served, and the planned affinity (exit 0; with --exit-code, 1 when there is something to fix)",
		Example: `  gpunode irq plan
  gpunode irq plan --devices gpu --rank-cpus 8-55,120-167 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, _, err := a.irqReport(cmd, &f)
			if err != nil {
				return err
			}
			return a.RenderFindings(rep, f.exitCode && (rep.Summary.OffNode > 0 || rep.Summary.Changes > 0))
		},
	}
	plan.Flags().BoolVar(&f.exitCode, "exit-code", false, "exit 1 when IRQs are served off-node or the plan changes something (like 'git diff --exit-code')")
	apply := &cobra.Command{
		Use:   "apply",
		Short: "Write the planned IRQ affinity (journaled; undo with 'gpunode irq rollback')",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, fs, err := a.irqReport(cmd, &f)
			if err != nil {
				return err
			}
			if f.dryRun {
				// The plan is what apply would write; nothing changes.
				return a.Render(rep)
			}
			res, err := irq.Apply(cmd.Context(), fs, rep, irq.ApplyOptions{JournalDir: f.journalDir, Command: a.CommandLine()})
			if res != nil {
				if rerr := a.Render(res); rerr != nil && err == nil {
					err = rerr
				}
			}
			return err
		},
	}
	apply.Flags().BoolVar(&f.dryRun, "dry-run", false, "print the plan apply would write (the IRQs whose PLANNED differs) and change nothing")
	var dry bool
	var skip []string
	rollback := &cobra.Command{
		Use:   "rollback",
		Short: "Restore the IRQ affinity recorded by 'gpunode irq apply'",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkSkipRefs(skip); err != nil {
				return err
			}
			fs, err := a.Host()
			if err != nil {
				return err
			}
			rep, err := irq.Rollback(cmd.Context(), fs, f.journalDir, dry, journal.WithSkip(skip...))
			if rerr := a.Render(journal.RollbackReport{SchemaVersion: irq.SchemaRollback, Report: rep}); rerr != nil && err == nil {
				err = rerr
			}
			return err
		},
	}
	rollback.Flags().BoolVar(&dry, "dry-run", false, "say what would be restored and change nothing")
	rollback.Flags().StringSliceVar(&skip, "skip", nil, "skip step ID:N (as a failed rollback prints it) whose original cannot be written back; the original stays in the journal")
	cmd.AddCommand(plan, apply, rollback)
	return cmd
}

func (a *App) irqReport(cmd *cobra.Command, f *irqFlags) (*irq.Report, *hostfs.FS, error) {
	kinds, err := irq.ParseKinds(f.devices)
	if err != nil {
		return nil, nil, WrapUsage(err)
	}
	var avoid, ranks cpuset.CPUSet
	if avoid, err = bind.ParseCPUs("--avoid", f.avoid); err != nil {
		return nil, nil, WrapUsage(err)
	}
	if ranks, err = bind.ParseCPUs("--rank-cpus", f.rankCPUs); err != nil {
		return nil, nil, WrapUsage(err)
	}
	if f.sample < 0 || f.sample > irq.MaxSample {
		return nil, nil, Usagef("--sample %s: want a duration from 0 to %s", f.sample, irq.MaxSample)
	}
	if f.ranks < 0 || f.cpusPerRank < 0 || (f.ranks > 0 && f.cpusPerRank == 0) {
		return nil, nil, Usagef("--ranks %d --cpus-per-rank %d: give both, positive (ranks split whole nodes otherwise, leaving no CPU for IRQs)", f.ranks, f.cpusPerRank)
	}
	fs, err := a.Host()
	if err != nil {
		return nil, nil, err
	}
	t, err := topo.Discover(cmd.Context(), fs)
	if err != nil {
		return nil, nil, err
	}
	// The CPUs 'gpunode bind --local-world-size N --cpus-per-rank M' gives
	// each rank, computed exactly as bind does.
	for r := 0; r < f.ranks; r++ {
		rank := r
		p, err := bind.Resolve(cmd.Context(), t, bind.Request{LocalRank: &rank, LocalWorldSize: f.ranks, CPUsPerRank: f.cpusPerRank}, bind.Sources{})
		if err != nil {
			return nil, nil, WrapUsage(fmt.Errorf("--ranks: rank %d: %w", r, err))
		}
		ranks = ranks.Union(p.CPUs.CPUSet)
	}
	rep, err := irq.Analyze(cmd.Context(), fs, t, irq.Options{Kinds: kinds, Avoid: avoid, RankCPUs: ranks, Sample: f.sample})
	if err != nil {
		return nil, nil, err
	}
	return rep, fs, nil
}
