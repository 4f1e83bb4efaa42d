package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// Command constructs one top-level command of an invocation.
type Command func(*App) *cobra.Command

// CompanionName is the companion executable that holds the commands gpunode
// forwards (see forwardedCommands). It has the whole command tree, so it
// also works alone.
const CompanionName = "gpunode-full"

// EnvCompanion names the companion executable explicitly (a path); without
// it gpunode looks beside its own executable, then on PATH.
const EnvCompanion = "GPUNODE_FULL"

// forwardedCommands are the top-level commands that live in the companion
// executable, with their one-line help. They link the Kubernetes API types,
// the DRA allocator's CEL environment, Prometheus and gonum, whose package
// initialisers cost about 10 ms at every start; the node commands (bind
// above all) must not pay that.
func forwardedCommands() []struct{ name, short string } {
	return []struct{ name, short string }{
		{"k8s", "Kubernetes: kubelet admission, Topology Manager merge, kubelet config, placement, lint, DRA"},
		{"bench", "Measure NUMA memory bandwidth and latency, host<->GPU copies and allocators"},
		{"agent", "Run the fleet agent: audit on an interval, serve /metrics and /report, write NFD features"},
		{"report", "Write a self-contained HTML report of this node"},
	}
}

// forwarders are the stand-ins of the forwarded commands: help lists them,
// and running one (or its help, or its shell completion) execs the
// companion with the same arguments.
func forwarders() []Command {
	var cmds []Command
	for _, f := range forwardedCommands() {
		cmds = append(cmds, func(a *App) *cobra.Command {
			return &cobra.Command{
				Use:                f.name,
				Short:              f.short + " (in " + CompanionName + ")",
				DisableFlagParsing: true,
				Annotations:        map[string]string{annotationForward: "true"},
				RunE:               func(*cobra.Command, []string) error { return a.forward(f.name) },
			}
		})
	}
	return cmds
}

const annotationForward = "gpunode.forward"

func isForwarder(c *cobra.Command) bool { return c.Annotations[annotationForward] == "true" }

// forwardTarget is the forwarded top-level command args run, directly,
// through 'help' or through cobra's completion entry points ("" when they
// run none).
func forwardTarget(root *cobra.Command, args []string) string {
	if len(args) > 0 {
		switch args[0] {
		case "help", cobra.ShellCompRequestCmd, cobra.ShellCompNoDescRequestCmd:
			args = args[1:]
		}
	}
	c, _, err := root.Find(args)
	if err != nil || c == root || !isForwarder(c) {
		return ""
	}
	for c.HasParent() && c.Parent() != root {
		c = c.Parent()
	}
	return c.Name()
}

// ErrNoCompanion is returned when a forwarded command's companion
// executable cannot be found.
var ErrNoCompanion = errors.New(CompanionName + " not found")

// AgentName is the fleet agent's lean executable (cmd/gpunode-agent):
// gpunode's node commands and 'agent', without the libraries of the
// companion's other commands. 'gpunode agent' execs it when it is found,
// the companion otherwise.
const AgentName = "gpunode-agent"

// EnvAgent names the agent executable explicitly (a path).
const EnvAgent = "GPUNODE_AGENT"

// forward replaces this process with the executable that holds command
// name (the agent's for 'agent' when installed, else the companion), same
// arguments and environment; it returns only on failure.
func (a *App) forward(name string) error {
	path, err := a.forwardPath(name)
	if errors.Is(err, ErrNoCompanion) && a.getenv(EnvCompanion) == "" && a.Exec != nil {
		// From a checkout, without an installed companion: go run it.
		if goPath, argv, ok := a.goRunCompanion(); ok {
			if err := a.Exec(goPath, argv, a.EnvironList()); err != nil {
				return fmt.Errorf("run %s: %w", strings.Join(argv[:3], " "), err)
			}
			return nil
		}
	}
	if err != nil {
		return err
	}
	// A "companion" that is this very executable would exec itself forever.
	if self, err := os.Executable(); err == nil && sameFile(self, path) {
		return fmt.Errorf("%s at %s is gpunode itself, not the companion (build it with 'go build -o %s ./cmd/%s')", CompanionName, path, CompanionName, CompanionName)
	}
	if a.Exec == nil {
		return fmt.Errorf("run %s: no exec in this environment", path)
	}
	if err := a.Exec(path, append([]string{path}, a.Args...), a.EnvironList()); err != nil {
		return fmt.Errorf("run %s: %w", path, err)
	}
	return nil
}

func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// forwardPath is the executable that runs command name: for 'agent',
// $GPUNODE_AGENT (which must be executable), then gpunode-agent beside this
// executable or on $PATH; for the others, and for 'agent' without
// gpunode-agent, the companion (companionPath).
func (a *App) forwardPath(name string) (string, error) {
	if name == "agent" {
		if p := a.getenv(EnvAgent); p != "" {
			if !isExecutable(p) {
				return "", fmt.Errorf("%s=%s: not an executable file", EnvAgent, p)
			}
			return p, nil
		}
		if p, ok := a.lookBeside(AgentName); ok {
			return p, nil
		}
	}
	return a.companionPath()
}

// lookBeside finds the executable file name beside this executable
// (symlinks resolved), then on $PATH (absolute entries only).
func (a *App) lookBeside(name string) (string, bool) {
	if self, err := os.Executable(); err == nil {
		if r, err := filepath.EvalSymlinks(self); err == nil {
			self = r
		}
		if p := filepath.Join(filepath.Dir(self), name); isExecutable(p) {
			return p, true
		}
	}
	for _, dir := range filepath.SplitList(a.getenv("PATH")) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		if p := filepath.Join(dir, name); isExecutable(p) {
			return p, true
		}
	}
	return "", false
}

// companionPath finds the companion: $GPUNODE_FULL, then beside this
// executable (symlinks resolved), then on $PATH. The lookup is of gpunode's
// own installation, not of the host under --root.
func (a *App) companionPath() (string, error) {
	if p := a.getenv(EnvCompanion); p != "" {
		if !isExecutable(p) {
			return "", fmt.Errorf("%s=%s: not an executable file: %w", EnvCompanion, p, ErrNoCompanion)
		}
		return p, nil
	}
	var tried []string
	beside := "DIR" // where gpunode is installed, when the kernel says
	if self, err := os.Executable(); err == nil {
		if r, err := filepath.EvalSymlinks(self); err == nil {
			self = r
		}
		beside = filepath.Dir(self)
		p := filepath.Join(beside, CompanionName)
		if isExecutable(p) {
			return p, nil
		}
		tried = append(tried, beside)
	}
	for _, dir := range filepath.SplitList(a.getenv("PATH")) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, CompanionName)
		if isExecutable(p) {
			return p, nil
		}
	}
	tried = append(tried, "$PATH")
	var names []string
	for _, f := range forwardedCommands() {
		names = append(names, f.name)
	}
	return "", fmt.Errorf("%w (looked in %s): the %s commands live in the companion executable %s, "+
		"which links the Kubernetes, Prometheus and plotting libraries the node commands do not load; "+
		"install it beside gpunode (from a checkout of gpunode: go build -o %s ./cmd/%s) or set %s to its path",
		ErrNoCompanion, strings.Join(tried, ", "), strings.Join(names, ", "), CompanionName,
		filepath.Join(beside, CompanionName), CompanionName, EnvCompanion)
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}
