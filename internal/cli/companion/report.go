package companion

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/internal/bench"
	"github.com/gpunode/gpunode/internal/cli"
	"github.com/gpunode/gpunode/internal/cli/agentcli"
	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/report"
	"github.com/gpunode/gpunode/internal/tune"
)

func (a *app) newReportCommand() *cobra.Command {
	var (
		ao       agentcli.AuditOptions
		htmlFile string
		dirs     benchDirs
		force    bool
	)
	cmd := &cobra.Command{
		Use:   "report --html FILE [--profile NAME]",
		Short: "Write a one-page HTML report: topology picture, audit with fixes, IRQ placement, saved benchmarks",
		Long: `Run discovery and the full audit (as 'gpunode audit') and write one
self-contained HTML page (nothing fetched, no script): the topology drawn
as SVG (sockets, NUMA nodes with CPUs and memory, PCIe switches with their
GPUs and NICs; GPUs without a NIC on their node and PCIe links trained
below capability marked), the GPU/NIC link-class matrix, the audit table
with status colours and fixes, IRQ placement per device, and the results
saved by 'gpunode bench --save'. 'gpunode agent' serves the same page on
/report.html.

Exit status: 0 written, 2 usage, 3 failure (drift does not fail it).`,
		Example: `  gpunode report --html node.html
  gpunode report --root ./capture --profile training --html capture.html`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if htmlFile == "" {
				return cli.Usagef("--html FILE is required")
			}
			// Refuse a path that is not a regular file before the audit.
			if err := hostfs.CheckOutput(htmlFile, hostfs.OutputOptions{Force: force}); err != nil {
				return cli.WrapUsage(fmt.Errorf("--html: %w", err))
			}
			res, err := agentcli.RunAudit(a.App, cmd.Context(), ao)
			if err != nil {
				return err
			}
			fs, err := a.Host()
			if err != nil {
				return err
			}
			saved, _ := bench.LoadAll(fs, dirs.dir())
			b, err := report.HTML(report.Input{Report: res.Report, Topo: res.Topo, IRQ: res.IRQ, Bench: saved,
				Generated: time.Now().UTC().Format(time.RFC3339), Version: cli.BuildVersion().Version})
			if err != nil {
				return err
			}
			if err := hostfs.WriteOutput(htmlFile, b, 0o644, hostfs.OutputOptions{Force: force}); err != nil {
				// a FILE that cannot be written is the caller's: exit 2
				return cli.WrapUsage(fmt.Errorf("--html: %w", err))
			}
			fmt.Fprintf(a.Stdout, "wrote %s (%d bytes): %d checks, %d drift, %d error\n", htmlFile, len(b),
				len(res.Report.Checks), res.Report.Summary.Drift, res.Report.Summary.Error)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&htmlFile, "html", "", "write the HTML report to FILE (replaced atomically; refused when FILE is a FIFO, device, socket or directory)")
	f.BoolVar(&force, "force", false, "replace a symbolic link at --html FILE (the link itself, never what it points to)")
	f.StringVar(&ao.Profile, "profile", tune.ProfileBase, "profile to audit against")
	cli.GPUBackendVar(f, &ao.Backend, "GPU backend")
	dirs.register(f)
	return cmd
}
