package agentcli

import (
	"context"

	"github.com/spf13/cobra"

	"time"

	"github.com/gpunode/gpunode/internal/agent"
	"github.com/gpunode/gpunode/internal/bench"
	"github.com/gpunode/gpunode/internal/cli"
	"github.com/gpunode/gpunode/internal/report"
)

// agentHTML renders /report.html from an agent snapshot.
func (a *app) agentHTML(s *agent.Snapshot) ([]byte, error) {
	r := s.Result
	var saved []*bench.Saved
	if fs, err := a.Host(); err == nil {
		saved, _ = bench.LoadAll(fs, bench.DefaultDir)
	}
	return report.HTML(report.Input{Report: r.Report, Topo: r.Topo, IRQ: r.IRQ, Bench: saved,
		Generated: s.At.UTC().Format(time.RFC3339), Version: cli.BuildVersion().Version})
}

// Command is 'gpunode agent', for cli.Main (gpunode-agent and gpunode-full).
func Command(a *cli.App) *cobra.Command { return (&app{a}).newAgentCommand() }

// RunAudit is (*app).RunAudit for the companion's 'report'.
func RunAudit(a *cli.App, ctx context.Context, o AuditOptions) (agent.Result, error) {
	return (&app{a}).RunAudit(ctx, o)
}
