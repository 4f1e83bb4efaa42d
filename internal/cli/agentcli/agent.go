// Package agentcli holds the fleet agent's command, 'gpunode agent' (and
// its npd-check), apart from the companion's other commands: it links what
// the agent needs and none of the Kubernetes client, the DRA allocator or
// helm, so cmd/gpunode-agent, the binary the DaemonSet runs, stays small
// (its file pages are most of the agent's RSS). gpunode-full links it too.
// See docs/ARCHITECTURE.md.
package agentcli

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/internal/agent"
	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/cli"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/irq"
	"github.com/gpunode/gpunode/internal/journal"
	"github.com/gpunode/gpunode/internal/podresources"
	"github.com/gpunode/gpunode/internal/tune"
)

// AuditOptions select what one agent audit runs.
type AuditOptions struct {
	Profile string
	Backend string
	// podSocket and podTimeout are the kubelet pod-resources socket (a
	// host path) and the bound on reading it.
	PodSocket   string
	PodTimeout  time.Duration
	PodExplicit bool // --pod-resources-socket given: read even under a captured root
}

func (o *AuditOptions) PodFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.PodSocket, "pod-resources-socket", podresources.DefaultSocket, "kubelet pod-resources socket (a host path, read under --root): k8s.pod.numa checks and pod labels on the GPU series")
	f.DurationVar(&o.PodTimeout, "pod-resources-timeout", podresources.DefaultTimeout, "give up on a kubelet that does not answer within this time")
}

// RunAudit runs discovery and the full audit once, exactly as 'gpunode
// audit --profile PROFILE --gpu-backend BACKEND' does (same sources, same
// model as 'gpunode audit -o json'), and adds what the agent exports beside
// it: the topology, the IRQ analysis and the GPU backend's facts. The GPU
// backend is closed before it returns.
func (a *app) RunAudit(ctx context.Context, o AuditOptions) (agent.Result, error) {
	fs, cat, p, err := a.LoadProfile(o.Profile)
	if err != nil {
		return agent.Result{}, err
	}
	h := tune.NewHost(ctx, fs)
	srcs := a.AuditSources(ctx, h, o.Backend, "", 0)
	// The IRQ series come from the analysis the irq.off-node checks were
	// made from: one analysis per cycle, not two. The audit runs every
	// source, so a cycle without it is one whose analysis failed (its
	// error is the irq check's); analysing again would fail again.
	var irqRep *irq.Report
	for i, s := range srcs {
		if is, ok := s.(irq.Source); ok {
			is.Keep = func(r *irq.Report) { irqRep = r }
			srcs[i] = is
		}
	}
	po := PodsOptions{Socket: o.PodSocket, Explicit: o.PodExplicit, Timeout: o.PodTimeout, Topo: h.Topo}
	for _, s := range srcs {
		if g, ok := s.(gpu.Source); ok && g.Backend != nil {
			po.Status = g.Backend.Status // the audit's (read once per cycle)
		}
	}
	pods := &podresources.Source{Run: func(ctx context.Context) *podresources.Report {
		r, err := a.pods(ctx, po)
		if r == nil && err != nil {
			r = podresources.FromError(po.Socket, err)
		}
		return r
	}}
	srcs = append(srcs, pods)
	defer func() {
		for _, s := range srcs {
			if g, ok := s.(gpu.Source); ok && g.Backend != nil {
				_ = g.Backend.Close()
			}
		}
	}()
	r, err := tune.Audit(ctx, h, cat, p, tune.Options{Sources: srcs})
	if err != nil {
		return agent.Result{}, err
	}
	res := agent.Result{Report: r, Topo: h.Topo, Pods: pods.Report(), IRQ: irqRep}
	for _, s := range srcs {
		g, ok := s.(gpu.Source)
		if !ok || g.Backend == nil {
			continue
		}
		if st, err := g.Backend.Status(ctx); err == nil {
			for _, x := range st.GPUs {
				res.GPUs = append(res.GPUs, agent.GPU{Index: x.Index, BDF: x.PCIAddress, UUID: x.UUID, Model: x.Name})
			}
		}
	}
	return res, nil
}

func (a *app) newAgentCommand() *cobra.Command {
	var (
		ao         AuditOptions
		interval   time.Duration
		listen     string
		nfdDir     string
		logFormat  string
		html       bool
		enforce    bool
		enforceGap time.Duration
		webConfig  string
		noReport   bool
	)
	cmd := &cobra.Command{
		Use:   "agent [--listen ADDR] [--interval 60s] [--profile NAME] [--nfd-features-dir DIR]",
		Short: "Watch the node: audit every interval, serve Prometheus metrics, the report and NFD labels",
		Long: `Run discovery and the full audit (every layer, --profile) every --interval
(jittered by +-5%) into an immutable snapshot and serve it read-only on
--listen (default ` + agent.DefaultListen + `):

  /metrics      Prometheus metrics (gpunode_check_status, gpunode_checks,
                gpunode_gpu_info, PCIe links, NIC locality, IRQs off-node,
                gpunode_pod_numa_aligned, audit duration/errors, last
                success, build info)
  /healthz      200 while running
  /readyz       200 after the first successful audit, 503 before
  /report       the audit JSON (same schema as 'gpunode audit -o json')
  /report.html  the one-page HTML report (as 'gpunode report --html')
  /topo         the topology JSON (same schema as 'gpunode topo -o json')

Each audit also reads the kubelet's pod-resources socket under --root (as
'gpunode k8s pods'): the k8s.pod.numa checks join the report, the per-GPU
series get namespace, pod and container labels (empty on a free GPU), and
gpunode_pod_numa_aligned{namespace,pod,container} is 1 or 0 per container
holding GPUs. Without the socket that is one info check.

Scrapes never run an audit. A failing or panicking audit is logged and
counted (gpunode_audit_errors_total); the last good snapshot stays served.
After each audit the Node Feature Discovery feature file
DIR/gpunode is rewritten atomically (--nfd-features-dir "" turns it off).
The default DIR is this machine's, so it is written only for the running
host (--root / or --live-root): a captured --root writes no feature file
unless --nfd-features-dir names one.

Logs are structured (--log-format json|text), one line per audit with the
counts by status. SIGTERM stops the agent within a second.

--enforce (off by default) re-applies the profile when an audit drifts,
through the journal exactly as 'gpunode tune apply' (so 'tune rollback'
undoes it), at most once per --enforce-min-interval; every action is logged
and counted in gpunode_enforce_actions_total{outcome}. Only the profile's
settings are re-applied: GPU and IRQ drift is reported, not changed.

The endpoint is read-only; on a non-loopback --listen, restrict who reaches
it (NetworkPolicy, or --listen 127.0.0.1:PORT with hostNetwork scraping):
see docs/FLEET.md.`,
		Example: `  gpunode agent --root /host --profile training
  gpunode agent --listen 127.0.0.1:9847 --interval 30s --nfd-features-dir ""
  gpunode agent npd-check gpu.persistence 'irq.off-node/*'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ao.PodExplicit = cmd.Flags().Changed("pod-resources-socket")
			if interval < time.Second {
				return cli.Usagef("--interval %s: want at least 1s", interval)
			}
			if enforceGap < 0 {
				return cli.Usagef("--enforce-min-interval %s: want 0 (no pause between re-applies) or more", enforceGap)
			}
			logger, err := a.agentLogger(logFormat)
			if err != nil {
				return err
			}
			if _, _, _, err := a.LoadProfile(ao.Profile); err != nil {
				return err
			}
			nfdDir = NFDDir(nfdDir, cmd.Flags().Changed("nfd-features-dir"), a.IsLiveRoot())
			cfg := agent.Config{
				Audit:    func(ctx context.Context) (agent.Result, error) { return a.RunAudit(ctx, ao) },
				Interval: interval, Profile: ao.Profile, NFDDir: nfdDir, Logger: logger,
				WebConfigFile: webConfig, NoReportEndpoints: noReport,
			}
			if html {
				cfg.HTML = a.agentHTML
			}
			if enforce {
				cfg.Enforce = &agent.Enforcer{MinInterval: enforceGap, Apply: func(ctx context.Context) (agent.EnforceResult, error) {
					return a.enforceApply(ctx, ao.Profile)
				}}
			}
			v := cli.BuildVersion()
			cfg.Build = agent.Build{Version: v.Version, Commit: v.Commit, GoVersion: v.GoVersion}
			ag, err := agent.New(cfg)
			if err != nil {
				return cli.Usagef("%v", err)
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				// the address the user gave cannot be served (malformed,
				// in use, not this host's): a usage error, exit 2
				return cli.WrapUsage(fmt.Errorf("--listen %s: %w", listen, err))
			}
			if err := ag.Run(cmd.Context(), ln); err != nil {
				return err
			}
			if err := cmd.Context().Err(); err != nil {
				// stopped by SIGINT or SIGTERM: exit 130 or 143, as the
				// README's table says, not 0
				return fmt.Errorf("agent stopped: %w", err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&ao.Profile, "profile", tune.ProfileBase, "profile to audit against: a built-in or user profile name, or a YAML file")
	cli.GPUBackendVar(f, &ao.Backend, "GPU backend: "+strings.Join(gpu.Kinds, ", "))
	ao.PodFlags(cmd)
	f.DurationVar(&interval, "interval", agent.DefaultInterval, "time between audits (jittered by +-5%)")
	f.StringVar(&listen, "listen", agent.DefaultListen, "HTTP listen address (host:port); every interface by default: see --web.config.file and --no-report-endpoints")
	f.StringVar(&webConfig, "web.config.file", "", "exporter-toolkit web configuration (TLS, client certificates, basic auth), as Prometheus exporters take it; empty: plain HTTP, no authentication")
	f.BoolVar(&noReport, "no-report-endpoints", false, "do not serve /report, /report.html and /topo (hostname, kernel, topology, full audit); /metrics, /healthz and /readyz stay")
	f.StringVar(&nfdDir, "nfd-features-dir", DefaultNFDDir, "NFD features.d directory for the feature file (empty: none; the default is written only with --root / or --live-root)")
	f.StringVar(&logFormat, "log-format", "json", "log format: json or text")
	f.BoolVar(&html, "html", true, "serve /report.html (rendered once per audit)")
	f.BoolVar(&enforce, "enforce", false, "re-apply --profile through the journal (as 'tune apply') when an audit drifts; needs a writable --root")
	f.DurationVar(&enforceGap, "enforce-min-interval", 30*time.Minute, "at most one --enforce re-apply per this interval")
	cmd.AddCommand(a.newNPDCheckCommand())
	return cmd
}

// DefaultNFDDir is NFD's features.d directory: the agent's default
// --nfd-features-dir.
const DefaultNFDDir = "/etc/kubernetes/node-feature-discovery/features.d"

// NFDDir is the feature file directory the agent writes: the flag's value
// when given; the default only for the running host (--root / or
// --live-root). A captured tree describes another machine: labelling this
// one from it would be wrong, and the agent writes only under the root and
// the paths its flags name.
func NFDDir(flag string, given, liveRoot bool) string {
	if given || liveRoot {
		return flag
	}
	return ""
}

func (a *app) agentLogger(format string) (*slog.Logger, error) {
	switch format {
	case "json":
		return slog.New(slog.NewJSONHandler(a.Stderr, nil)), nil
	case "text":
		return slog.New(slog.NewTextHandler(a.Stderr, nil)), nil
	}
	return nil, cli.Usagef("--log-format %q: want json or text", format)
}

// NPD custom-plugin exit codes (Node Problem Detector's protocol).
const (
	npdOK      = 0
	npdProblem = 1
	npdUnknown = 2
)

// npdExit is an npd-check verdict other than OK: the message is printed,
// the exit status is the protocol's.
type npdExit struct{ code int }

func (e npdExit) Error() string { return fmt.Sprintf("npd-check: exit %d", e.code) }
func (e npdExit) Unwrap() error {
	if e.code == npdProblem {
		return cli.ErrFindings
	}
	return cli.ErrUsage // exit 2: NPD's Unknown
}

func (a *app) newNPDCheckCommand() *cobra.Command {
	var (
		ao     AuditOptions
		maxLen int
	)
	cmd := &cobra.Command{
		Use:   "npd-check CHECK...",
		Short: "Node Problem Detector custom plugin: audit the named checks, exit 0 OK, 1 problem, 2 unknown",
		Long: `Run the audit and judge the checks that match CHECK (an id, id/subject or
pattern as profiles use them: gpu.persistence, 'irq.off-node/*').

Follows Node Problem Detector's custom-plugin protocol: exit 0 when every
matched check passes, 1 when one drifts or is an error (the problem), 2 when
none matched or the audit could not run (unknown). One line on stdout, at
most --max-output characters, names the failing checks. deploy/npd has the
custom-plugin-monitor configuration.`,
		Example: `  gpunode agent npd-check --root /host gpu.persistence gpu.ecc
  gpunode agent npd-check 'irq.off-node/*'`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ao.PodExplicit = cmd.Flags().Changed("pod-resources-socket")
			sels := make([]check.Selector, 0, len(args))
			for _, s := range args {
				sel, err := check.ParseSelector(s)
				if err != nil {
					return a.npdSay(maxLen, npdUnknown, fmt.Sprintf("bad check %q: %v", s, err))
				}
				sels = append(sels, sel)
			}
			res, err := a.RunAudit(cmd.Context(), ao)
			if err != nil {
				return a.npdSay(maxLen, npdUnknown, "audit failed: "+err.Error())
			}
			code, msg := NPDVerdict(res.Report, sels)
			return a.npdSay(maxLen, code, msg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&ao.Profile, "profile", tune.ProfileBase, "profile to audit against")
	cli.GPUBackendVar(f, &ao.Backend, "GPU backend: "+strings.Join(gpu.Kinds, ", "))
	f.IntVar(&maxLen, "max-output", 80, "longest message printed (NPD's max_output_length)")
	ao.PodFlags(cmd)
	return cmd
}

func (a *app) npdSay(maxLen, code int, msg string) error {
	if maxLen < 1 {
		maxLen = 80
	}
	msg = strings.Join(strings.Fields(msg), " ")
	if len(msg) > maxLen {
		cut := maxLen
		for cut > 0 && (msg[cut]&0xC0) == 0x80 { // do not split a UTF-8 sequence
			cut--
		}
		msg = msg[:cut]
	}
	fmt.Fprintln(a.Stdout, msg)
	if code == npdOK {
		return nil
	}
	return npdExit{code}
}

// NPDVerdict judges the checks of r that match sels: OK when every one
// passes, a problem when one drifts or is an error, unknown when none
// matched.
func NPDVerdict(r *tune.Report, sels []check.Selector) (int, string) {
	var matched, failing []check.Check
	for _, c := range r.Checks {
		for _, s := range sels {
			if s.Match(c) {
				matched = append(matched, c)
				if c.Status.Failing() {
					failing = append(failing, c)
				}
				break
			}
		}
	}
	if len(matched) == 0 {
		return npdUnknown, "no check matched " + selString(sels)
	}
	if len(failing) == 0 {
		return npdOK, fmt.Sprintf("%d checks pass", len(matched))
	}
	parts := make([]string, 0, len(failing))
	for _, c := range failing {
		parts = append(parts, c.Key()+" "+string(c.Status))
	}
	return npdProblem, fmt.Sprintf("%d of %d failing: %s", len(failing), len(matched), strings.Join(parts, ", "))
}

func selString(sels []check.Selector) string {
	s := make([]string, len(sels))
	for i, x := range sels {
		s[i] = x.String()
	}
	return strings.Join(s, " ")
}

// enforceApply re-applies profile through the journal, as 'gpunode tune
// apply --profile PROFILE' does.
func (a *app) enforceApply(ctx context.Context, profile string) (agent.EnforceResult, error) {
	fs, cat, p, err := a.LoadProfile(profile)
	if err != nil {
		return agent.EnforceResult{}, err
	}
	req := tune.ApplyRequest{Profile: p, StateDir: journal.DefaultDir, Command: a.CommandLine()}
	rep, err := tune.Apply(ctx, tune.NewHost(ctx, fs), cat, req)
	if rep == nil {
		return agent.EnforceResult{}, err
	}
	return agent.EnforceResult{Steps: rep.Steps, Journal: rep.Journal, State: string(rep.State)}, err
}

// app is the invocation's cli.App, seen from the agent's commands.
type app struct{ *cli.App }
