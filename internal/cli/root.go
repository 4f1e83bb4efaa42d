// Package cli wires gpunode's commands together. Each command lives in its own
// file and only parses flags, calls the package that owns the work, and renders
// the result; no business logic lives here.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/output"
	"github.com/gpunode/gpunode/internal/userfile"
)

// Env is everything a command may touch outside its arguments. Tests build one
// with buffers and a fake environment; main builds it from the process.
type Env struct {
	Args   []string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads the environment (os.Getenv in production).
	Getenv func(string) string
	// Environ lists the environment (os.Environ in production).
	Environ func() []string
	// Exec replaces the current process (unix.Exec in production). Tests
	// replace it to observe what would be run.
	Exec func(argv0 string, argv, envv []string) error
	// IsTerminal reports whether Stdout is a terminal (for colour).
	IsTerminal bool
	// HaveNVML overrides whether this build has the NVML backend
	// (gpu.HaveNVML); tests set it to run the static build's hand-off.
	HaveNVML func() bool
}

// OSEnv returns the Env of the running process.
func OSEnv(args []string) Env {
	isTTY := false
	if fi, err := os.Stdout.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		isTTY = true
	}
	return Env{
		Args: args, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Getenv: os.Getenv, Environ: os.Environ, Exec: execve, IsTerminal: isTTY,
	}
}

// App holds the global flags and the Env for one invocation.
type App struct {
	Env
	Root    string
	Output  string
	NoColor bool
	// NoHeaders is --no-headers: tables without their header line.
	NoHeaders bool
	// GPUTimeout and GPUSMILive are --gpu-timeout and --gpu-smi-live
	// (gpu.Options.Timeout, LiveSMI) for every command that opens a GPU
	// backend.
	GPUTimeout time.Duration
	GPUSMILive bool
	// MaxInputBytes is --max-input-bytes: the bound on every file a user
	// names (userfile.Read).
	MaxInputBytes int64
	// LiveRoot is --live-root (or GPUNODE_LIVE_ROOT=1): Root is this
	// running host mounted elsewhere (a DaemonSet's /host), not a captured
	// tree. GPU backends are then the live ones, kubelet sockets are read
	// under Root, and the agent writes the NFD default directory.
	LiveRoot bool
	format   output.Format
	host     *hostfs.FS // opened by Host
	// companion: this executable has extra commands (gpunode-agent,
	// gpunode-full), so it is where GPU commands are handed, never from.
	companion bool
	// printed is set by the first write to Stdout or Stderr.
	printed atomic.Bool
	// consumed is set by the first read of Stdin or of a named input
	// that is a pipe (a hand-off would find it drained).
	consumed atomic.Bool
}

// Main runs gpunode with env and returns the process exit code. extra are
// the companion's commands (gpunode-full passes them); without them the
// forwarded commands exec the companion.
func Main(ctx context.Context, env Env, extra ...Command) int {
	app := &App{Env: env, companion: len(extra) > 0}
	if env.Stdout != nil {
		app.Stdout = watchWriter{w: env.Stdout, printed: &app.printed}
	}
	if env.Stderr != nil {
		app.Stderr = watchWriter{w: env.Stderr, printed: &app.printed}
	}
	if env.Stdin != nil {
		app.Stdin = watchReader{r: env.Stdin, read: &app.consumed}
	}
	cmd := app.newRoot(extra, runTarget(env.Args))
	// A forwarded command that extra does not replace execs the
	// executable that holds it (gpunode-agent forwards k8s, bench, report).
	if name := forwardTarget(cmd, env.Args); name != "" {
		// Exec returns only when it failed (or in tests).
		err := app.forward(name)
		if err != nil {
			fmt.Fprintf(env.Stderr, "gpunode: %s\n", err)
		}
		return ExitCode(err)
	}
	cmd.SetArgs(env.Args)
	cmd.SetIn(app.Stdin)
	cmd.SetOut(app.Stdout)
	cmd.SetErr(app.Stderr)
	ran, err := cmd.ExecuteContextC(ctx)
	if errors.Is(err, ErrHandedOff) {
		return ExitOK
	}
	app.reportRefused()
	if err != nil && !isFindings(err) {
		msg := err.Error()
		msg = strings.TrimPrefix(msg, ErrUsage.Error()+": ")
		fmt.Fprintf(env.Stderr, "gpunode: %s\n", msg)
		if isUsage(err) && usageHint(err, msg) {
			// The help of the command that ran, not the root's.
			path := "gpunode"
			if ran != nil {
				path = ran.CommandPath()
			}
			fmt.Fprintf(env.Stderr, "Run '%s --help' for usage.\n", path)
		}
	}
	return ExitCode(err)
}

// newRoot builds the root command with every top-level command, or with
// only the one named target when there is one of that name: a run needs
// only its own command, and building all of them (flags, help texts) is a
// measurable part of gpunode's start-up.
func (a *App) newRoot(extra []Command, target string) *cobra.Command {
	root := &cobra.Command{
		Use:   "gpunode",
		Short: "Make GPU nodes fast and keep them that way",
		Long: `gpunode audits, tunes and explains GPU nodes layer by layer: CPU and OS
(NUMA, hugepages, IRQs, governors), the GPU driver (persistence, MIG, MPS),
containers and Kubernetes admission.

Every command reads the host through --root (default /), so it works on a live
node or on a captured copy of one (see 'gpunode topo capture').

Exit codes:
  0  success
  1  the command worked and found drift, findings or a rejection
  2  usage error (bad flags, arguments or input files)
  3  failure (the command could not do its job)
  130, 143  stopped by SIGINT (Ctrl-C) or SIGTERM`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if strings.TrimSpace(a.Output) == "" {
				return Usagef("-o/--output: empty (want table, wide, json, yaml, jsonpath=TEMPLATE or custom-columns=SPEC)")
			}
			f, err := output.ParseFormat(a.Output)
			if err != nil {
				return WrapUsage(err)
			}
			a.format = f
			if a.GPUTimeout <= 0 || a.GPUTimeout > maxGPUTimeout {
				return Usagef("--gpu-timeout %s: want more than 0 and at most %s", a.GPUTimeout, maxGPUTimeout)
			}
			a.warnDeprecated(cmd)
			return nil
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return commandLine(WrapUsage(err)) })
	pf := root.PersistentFlags()
	pf.StringVar(&a.Root, "root", "/", "host filesystem root to read (and write) instead of /")
	pf.StringVarP(&a.Output, "output", "o", "table", output.FormatHelp())
	pf.BoolVar(&a.NoHeaders, "no-headers", false, "print tables without their header line (and without the sections under them), as kubectl's --no-headers")
	pf.BoolVar(&a.NoColor, "no-color", false, "disable colours in table output")
	pf.DurationVar(&a.GPUTimeout, "gpu-timeout", gpu.DefaultTimeout, "deadline of each nvidia-smi run and of each GPU's NVML reads; a call past it is reported as an error naming the GPU and the call")
	a.MaxInputBytes = userfile.DefaultMaxBytes
	pf.Var(userfile.Flag{Bytes: &a.MaxInputBytes}, userfile.FlagName, "largest input file (manifest, cluster export, spec, config) any command reads; a larger one is refused before it is read (Ki, Mi, Gi, k, M, G suffixes)")
	pf.BoolVar(&a.LiveRoot, "live-root", a.liveRootDefault(), "--root is this running host mounted elsewhere (a DaemonSet's /host), not a captured tree: GPUs are read through NVML (libnvidia-ml.so.1) or nvidia-smi, never the fake file (default from "+EnvLiveRoot+"=1)")
	pf.BoolVar(&a.GPUSMILive, "gpu-smi-live", false, "allow --gpu-backend nvidia-smi with --root other than /: it runs this host's nvidia-smi, not the captured one")
	_ = root.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"table", "wide", "json", "yaml", "jsonpath=", "custom-columns="}, cobra.ShellCompDirectiveNoFileComp
	})
	cmds, ok := a.topLevel(extra, target)
	if !ok {
		cmds, _ = a.topLevel(extra, "")
		target = ""
	}
	root.AddCommand(cmds...)
	root.Args = cobra.NoArgs
	if target == "" {
		// Add cobra's completion command now, so that its argument checks
		// are marked too ('completion tcsh' printed help and exited 0).
		root.InitDefaultCompletionCmd()
	} else {
		// A run of one known command needs no completion command (cobra
		// would build it, with its help texts, at every start).
		root.CompletionOptions.DisableDefaultCmd = true
	}
	markUsageErrors(root)
	return root
}

// EnvLiveRoot sets --live-root's default ("1" or "true": on).
const EnvLiveRoot = "GPUNODE_LIVE_ROOT"

// liveRootDefault is --live-root's default from GPUNODE_LIVE_ROOT.
func (a *App) liveRootDefault() bool {
	if a.Getenv == nil {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(a.Getenv(EnvLiveRoot))) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// IsLiveRoot reports whether the root is the running host: --root / or
// --live-root.
func (a *App) IsLiveRoot() bool {
	return a.LiveRoot || a.Root == "" || a.Root == "/"
}

// markUsageErrors makes argument-validation failures of every command (an
// unknown subcommand, a missing or extra argument) map to exit code 2.
func markUsageErrors(cmd *cobra.Command) {
	if !cmd.Runnable() && cmd.HasSubCommands() {
		// Group commands print their help; cobra would otherwise skip
		// argument validation for them and exit 0 on a typo.
		cmd.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	}
	validate := cmd.Args
	cmd.Args = func(c *cobra.Command, args []string) error {
		var err error
		if validate != nil {
			err = validate(c, args)
		} else if c.HasSubCommands() && len(args) > 0 {
			err = fmt.Errorf("unknown command %q for %q", args[0], c.CommandPath())
		}
		return commandLine(WrapUsage(err))
	}
	for _, sub := range cmd.Commands() {
		markUsageErrors(sub)
	}
}

// Host returns the host filesystem named by --root, opened once per
// invocation. A --root that is not a directory is a usage error.
func (a *App) Host() (*hostfs.FS, error) {
	if a.host != nil {
		return a.host, nil
	}
	fs, err := hostfs.New(a.Root)
	if err != nil {
		return nil, WrapUsage(fmt.Errorf("--root: %w", err))
	}
	a.host = fs
	return fs, nil
}

// CheckedHost is Host for the commands that judge the host (audit, tune
// status, gpu audit, container check): a --root holding none of /proc,
// /sys, /etc, /usr and /var cannot be read at all, which is a failure
// (exit 3: the command could not do its job), not a report of absent
// and error checks with exit 0 or 1. A host missing only some of them is
// checked: the checks that cannot read their part say absent or error.
func (a *App) CheckedHost() (*hostfs.FS, error) {
	fs, err := a.Host()
	if err != nil {
		return nil, err
	}
	for _, d := range []string{"/proc", "/sys", "/etc", "/usr", "/var"} {
		if fs.Exists(d) {
			return fs, nil
		}
	}
	return nil, fmt.Errorf("--root %s holds no host (none of /proc, /sys, /etc, /usr, /var below it): nothing to check", a.Root)
}

// Format is the validated -o value.
func (a *App) Format() output.Format {
	if a.format == "" {
		return output.Table
	}
	return a.format
}

// Render writes v to stdout in the selected format.
func (a *App) Render(v any) error {
	return output.Write(a.Stdout, a.Format(), v, output.Options{Color: a.IsTerminal && !a.NoColor, NoHeaders: a.NoHeaders})
}

// SetFormat overrides the parsed -o format, for commands with formats of
// their own (k8s lint's sarif renders as JSON).
func (a *App) SetFormat(f output.Format) { a.format = f }

// RenderFindings renders v and returns ErrFindings (exit 1) when findings
// is set: the ending of every command that checks something.
func (a *App) RenderFindings(v any, findings bool) error {
	if err := a.Render(v); err != nil {
		return err
	}
	if findings {
		return ErrFindings
	}
	return nil
}

// CommandLine is this invocation as journals record it ("gpunode ARGS...").
func (a *App) CommandLine() string {
	return "gpunode " + strings.Join(a.Args, " ")
}

// Warnf prints a warning line to stderr.
func (a *App) Warnf(format string, args ...any) {
	fmt.Fprintf(a.Stderr, "warning: "+format+"\n", args...)
}

// maxGPUTimeout bounds --gpu-timeout: one call that may hang for longer
// than this is not a deadline any more.
const maxGPUTimeout = 10 * time.Minute
