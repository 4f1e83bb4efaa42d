// Package companion holds the commands that live in gpunode-full, the
// companion executable: 'k8s', 'bench', 'agent' and 'report'. They link the
// Kubernetes API types, the DRA allocator and its CEL environment,
// Prometheus and gonum, whose package initialisers cost about 10 ms at every
// start; keeping them out of package cli keeps that cost off the node
// commands ('bind', 'audit', 'tune', ...). See docs/ARCHITECTURE.md.
package companion

import (
	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/internal/cli"
	"github.com/gpunode/gpunode/internal/cli/agentcli"
)

// app is the invocation's cli.App, seen from the companion's commands.
type app struct{ *cli.App }

// Commands are the companion's top-level commands, for cli.Main.
func Commands() []cli.Command {
	wrap := func(f func(*app) *cobra.Command) cli.Command {
		return func(a *cli.App) *cobra.Command { return f(&app{a}) }
	}
	return []cli.Command{
		wrap((*app).newK8sCommand),
		wrap((*app).newBenchCommand),
		agentcli.Command,
		wrap((*app).newReportCommand),
	}
}
