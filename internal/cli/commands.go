package cli

import "github.com/spf13/cobra"

// commands returns the constructors of gpunode's top-level commands, in the
// order they appear in help. Add a new command by adding its constructor here.
func commands() []func(*App) *cobra.Command {
	return []func(*App) *cobra.Command{
		(*App).newTopoCommand,
		(*App).newBindCommand,
		(*App).newIRQCommand,
		(*App).newGPUCommand,
		(*App).newMPSCommand,
		(*App).newMIGCommand,
		(*App).newK8sCommand,
		(*App).newContainerCommand,
		(*App).newAuditCommand,
		(*App).newTuneCommand,
		(*App).newBenchCommand,
		(*App).newAgentCommand,
		(*App).newReportCommand,
	}
}
