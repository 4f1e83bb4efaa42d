package cli

import (
	"strings"

	"github.com/spf13/cobra"
)

// commands returns the constructors of gpunode's own top-level commands, in
// the order they appear in help. Add a node command by adding its
// constructor here; a command that links heavy libraries belongs in package
// companion (see forward.go).
func commands() []namedCommand {
	return []namedCommand{
		{"version", (*App).newVersionCommand},
		{"topo", (*App).newTopoCommand},
		{"bind", (*App).newBindCommand},
		{"irq", (*App).newIRQCommand},
		{"gpu", (*App).newGPUCommand},
		{"mps", (*App).newMPSCommand},
		{"mig", (*App).newMIGCommand},
		{"container", (*App).newContainerCommand},
		{"audit", (*App).newAuditCommand},
		{"tune", (*App).newTuneCommand},
	}
}

// namedCommand is a top-level command's constructor with the name it
// constructs (TestCommandNames keeps them equal), so that a run builds only
// the command it runs.
type namedCommand struct {
	name string
	new  Command
}

// topLevel builds the top-level commands: gpunode's own, then the forwarded
// ones, which are the stand-ins (forwarders) or, in the companion, extra:
// its real commands of the same names. With only set, it builds just that
// command (false when there is none of that name).
func (a *App) topLevel(extra []Command, only string) ([]*cobra.Command, bool) {
	var cmds []*cobra.Command
	for _, c := range commands() {
		if only == "" || c.name == only {
			cmds = append(cmds, c.new(a))
		}
	}
	if only != "" && len(cmds) == 1 {
		return cmds, true
	}
	// extra replaces the stand-ins of the same names; the others stay
	// (gpunode-agent has 'agent' and forwards the rest).
	have := map[string]bool{}
	for _, c := range extra {
		cmd := c(a)
		have[cmd.Name()] = true
		if only == "" || cmd.Name() == only {
			cmds = append(cmds, cmd)
		}
	}
	for _, c := range forwarders() {
		if cmd := c(a); !have[cmd.Name()] && (only == "" || cmd.Name() == only) {
			cmds = append(cmds, cmd)
		}
	}
	return cmds, len(cmds) > 0
}

// runTarget is the top-level command args run, or "" when that takes the
// whole tree to know (help, completion, no command, an unknown flag before
// the command). The global flags that take a value are skipped with it.
func runTarget(args []string) string {
	for i := 0; i < len(args); i++ {
		arg := args[i]
		switch {
		case arg == "--" || arg == "-":
			return ""
		case arg == "--root" || arg == "-o" || arg == "--output" || arg == "--gpu-timeout":
			i++
		case strings.HasPrefix(arg, "--root=") || strings.HasPrefix(arg, "--output=") || strings.HasPrefix(arg, "--gpu-timeout=") ||
			strings.HasPrefix(arg, "-o") || arg == "--no-color" || arg == "--gpu-smi-live":
		case strings.HasPrefix(arg, "-"):
			return "" // -h, --help, an unknown flag: cobra decides
		default:
			switch arg {
			case "help", "completion", cobra.ShellCompRequestCmd, cobra.ShellCompNoDescRequestCmd:
				return ""
			}
			return arg
		}
	}
	return ""
}
