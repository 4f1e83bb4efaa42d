package cli

import "github.com/spf13/cobra"

// commands returns the constructors of gpunode's own top-level commands, in
// the order they appear in help. Add a node command by adding its
// constructor here; a command that links heavy libraries belongs in package
// companion (see forward.go).
func commands() []Command {
	return []Command{
		(*App).newTopoCommand,
		(*App).newBindCommand,
		(*App).newIRQCommand,
		(*App).newGPUCommand,
		(*App).newMPSCommand,
		(*App).newMIGCommand,
		(*App).newContainerCommand,
		(*App).newAuditCommand,
		(*App).newTuneCommand,
	}
}

// topLevel builds the top-level commands: gpunode's own, then the forwarded
// ones, each replaced by the command of the same name in extra (the
// companion passes its real ones).
func (a *App) topLevel(extra []Command) []*cobra.Command {
	var cmds []*cobra.Command
	for _, c := range commands() {
		cmds = append(cmds, c(a))
	}
	real := map[string]*cobra.Command{}
	var order []string
	for _, c := range extra {
		cmd := c(a)
		real[cmd.Name()] = cmd
		order = append(order, cmd.Name())
	}
	for _, f := range forwarders() {
		cmd := f(a)
		if r, ok := real[cmd.Name()]; ok {
			cmd = r
			delete(real, cmd.Name())
		}
		cmds = append(cmds, cmd)
	}
	for _, name := range order {
		if r, ok := real[name]; ok {
			cmds = append(cmds, r)
		}
	}
	return cmds
}
