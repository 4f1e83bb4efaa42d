package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/container"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/irq"
	"github.com/gpunode/gpunode/internal/output"
	"github.com/gpunode/gpunode/internal/tune"
	"github.com/gpunode/gpunode/internal/userfile"
)

func (a *App) newAuditCommand() *cobra.Command {
	var (
		profile     string
		pid         int
		gf          GPUFlags
		listChecks  bool
		cudaRuntime string
		sample      time.Duration
	)
	cmd := &cobra.Command{
		Use:   "audit [--profile NAME|FILE] [--pid PID] [--sample 2s] [--list-checks]",
		Short: "Check the node against a tuning profile: every knob's value, the expected one, the fix and why",
		Long: `Check every setting of a tuning profile (CPU governor and C-states, THP,
hugepages, swap, dirty limits, NUMA balancing, memlock/nofile limits, network
buffers, boot-time isolation and IOMMU, PCIe links and ACS), the IRQ layer
(device IRQ locality) and the GPU layer (driver, persistence, ECC, clocks,
MIG, CUDA compatibility) and print, for each, its status:

  ok              the live value (and the boot configuration) match
  drift           the live value differs, or is right now but the boot
                  configuration (sysctl.d, tmpfiles.d, grub) will undo it
  pending-reboot  set in the boot configuration, not live until a reboot
  absent          the knob or hardware does not exist here (not a failure)
  error           the check could not decide, or the thing checked is
                  broken (NVIDIA GPUs on the bus but no driver answering)
  info            a fact, never a verdict

with the current and expected value, the exact command that fixes it and the
reason (pointing into the seed chapter). Per-device checks print as
ID/SUBJECT (gpu.persistence/gpu7, irq.off-node/0000:1b:00.0); profiles
disable or report any of them by id, id/subject or pattern. --list-checks
prints every check id.

IRQ locality is judged by where each IRQ is routed now (effective
affinity); --sample 2s also counts the interrupts served off-node during a
2-second window. Counts since boot never decide.

--pid adds checks of one process: swapped-out memory, locked memory vs
RLIMIT_MEMLOCK, the malloc it uses, and its threads' CPU affinity and NUMA
policy vs the GPUs it has open.

Profiles: base, training, inference, inference-isolated (gpunode tune
profiles), a user profile in /etc/gpunode/profiles/NAME.yaml, or a YAML file.

Exit status: 0 nothing drifts and nothing is an error, 1 a check drifts or
is an error, 2 usage, 3 failure.`,
		Example: `  gpunode audit --profile training
  gpunode audit --list-checks
  gpunode audit --profile inference --pid $(pgrep -f vllm | head -1)
  gpunode audit --sample 2s -o json | jq '.checks[] | select(.status=="drift" or .status=="error")'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if pid < 0 {
				return Usagef("--pid %d: want a process id", pid)
			}
			if sample < 0 || sample > irq.MaxSample {
				return Usagef("--sample %s: want a duration from 0 to %s", sample, irq.MaxSample)
			}
			if cudaRuntime != "" {
				if err := gpu.ParseCUDARuntime(cudaRuntime); err != nil {
					return Usagef("--cuda-runtime: %v", err)
				}
			}
			// --list-checks after the flags' values are checked: a bad
			// value is a usage error whatever else is given.
			if listChecks {
				return a.Render(ListChecks())
			}
			ctx := cmd.Context()
			fs, cat, p, err := a.LoadProfile(profile)
			if err != nil {
				return err
			}
			if _, err := a.CheckedHost(); err != nil {
				return err
			}
			h := tune.NewHost(ctx, fs)
			opt := tune.Options{PID: pid, Sources: a.AuditSources(ctx, h, gf.backend, cudaRuntime, sample)}
			r, err := tune.Audit(ctx, h, cat, p, opt)
			if err != nil {
				if errors.Is(err, tune.ErrNoProcess) {
					return WrapUsage(err)
				}
				return err
			}
			return a.RenderFindings(r, r.Drifted())
		},
	}
	f := cmd.Flags()
	f.StringVar(&profile, "profile", tune.ProfileBase, "profile to check against: a built-in or user profile name, or a YAML file")
	f.IntVar(&pid, "pid", 0, "also check this process (swap, locked memory, allocator, CPU/NUMA placement vs its GPUs)")
	f.BoolVar(&listChecks, "list-checks", false, "print every check id (layer, subject, seed section, title) and exit")
	f.StringVar(&cudaRuntime, "cuda-runtime", "", "CUDA runtime version in use, major.minor (default: detect from /usr/local/cuda)")
	f.DurationVar(&sample, "sample", 0, "also count IRQs served off-node during this window (e.g. 2s); 0 judges by routing only")
	gf.Register(cmd, false)
	_ = cmd.RegisterFlagCompletionFunc("profile", a.completeProfiles)
	return cmd
}

// AuditSources are the layers 'gpunode audit' and 'tune status' compose
// with the catalogue: the IRQ layer (on h's topology) and the GPU layer.
// Opening the GPU backend never fails here: a node without a driver gets
// a source whose gpu.driver check says so (a bad --gpu-backend is refused
// as the flag is parsed).
//
// The backend's status is read once for the run: the GPU layer's checks
// and pcie.link (h.GPULoad: a busy GPU's link speed is its speed under
// load) share that one reading.
func (a *App) AuditSources(ctx context.Context, h *tune.Host, backend, cudaRuntime string, sample time.Duration) []check.Source {
	g := a.gpuAuditSource(ctx, h.FS, backend, cudaRuntime)
	once := &statusOnce{Backend: g.Backend}
	g.Backend = once
	if st, err := once.Status(ctx); err == nil {
		h.GPULoad = gpuLoad(st)
	}
	return []check.Source{
		irq.Source{FS: h.FS, Topo: h.Topo, Options: irq.Options{Sample: sample}},
		g,
		a.containerAuditSource(ctx, h.FS, h.Topo, g),
	}
}

// sourceChecks describes the checks of the audit's sources, for profiles.
func sourceChecks() []check.Description {
	return append(append(gpu.Describe(), irq.Source{}.Describe()...), container.Describe()...)
}

// SchemaChecks is the schema version of ChecksList.
const SchemaChecks = "gpunode.checks/v1"

// ChecksList is the model of 'gpunode audit --list-checks'.
type ChecksList struct {
	SchemaVersion string              `json:"schemaVersion"`
	Statuses      []check.Status      `json:"statuses"`
	Checks        []check.Description `json:"checks"`
}

// ListChecks lists every check id audit can print, in display order.
func ListChecks() ChecksList {
	all := append(tune.NewCatalogue().Describe(), sourceChecks()...)
	all = append(all, tune.ProcessChecks()...)
	check.SortInfos(all, tune.LayerOrder())
	return ChecksList{SchemaVersion: SchemaChecks, Statuses: check.Statuses(), Checks: all}
}

// WriteTable implements output.Tabler.
func (l ChecksList) WriteTable(w io.Writer, o output.Options) error {
	g := output.NewGrid("ID", "LAYER", "PER", "SEED", "TITLE")
	g.Columns[4].Wrap = true
	for _, c := range l.Checks {
		g.AddRow(c.ID, c.Layer, orDashStr(c.Subject), orDashStr(c.Section), c.Title)
	}
	return output.Print(w, g, o)
}

// ListItems implements output.Lister: one row per check id.
func (l ChecksList) ListItems() any { return l.Checks }

func orDashStr(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// readNamedInput reads a file the user names (a tune profile, a MIG
// config) under --max-input-bytes, and notes one that is a pipe (--profile
// <(...), -f /dev/stdin) as consumed: an NVML hand-off would find it
// drained.
func (a *App) readNamedInput(p string) ([]byte, error) {
	b, stream, err := userfile.ReadStream(p, a.MaxInputBytes)
	if stream {
		a.consumed.Store(true)
	}
	return b, err
}

// LoadProfile opens the host and resolves --profile (name) against the
// built-in catalogue; a bad profile is a usage error.
func (a *App) LoadProfile(name string) (*hostfs.FS, *tune.Catalogue, *tune.Profile, error) {
	fs, err := a.Host()
	if err != nil {
		return nil, nil, nil, err
	}
	if strings.TrimSpace(name) == "" {
		return nil, nil, nil, Usagef("--profile: empty (try 'gpunode tune profiles')")
	}
	cat := tune.NewCatalogue()
	p, err := (&tune.Loader{Cat: cat, Host: fs, Checks: sourceChecks(), MaxInputBytes: a.MaxInputBytes, ReadFile: a.readNamedInput}).Load(name)
	if err != nil {
		return nil, nil, nil, WrapUsage(err)
	}
	return fs, cat, p, nil
}

func (a *App) completeProfiles(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	var names []string
	fs, err := a.Host()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	for _, p := range (&tune.Loader{Cat: tune.NewCatalogue(), Host: fs, Checks: sourceChecks()}).List() {
		names = append(names, p.Name)
	}
	return names, cobra.ShellCompDirectiveDefault
}

// ChecksMarkdown renders the check list as the README's table (between
// the check-ids markers; TestREADMEChecks keeps it current).
func ChecksMarkdown(l ChecksList) string {
	var b strings.Builder
	b.WriteString("| id | layer | per | seed | what it checks |\n|---|---|---|---|---|\n")
	for _, c := range l.Checks {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", c.ID, c.Layer, orDashStr(c.Subject), orDashStr(c.Section), strings.ReplaceAll(c.Title, "|", "\\|"))
	}
	return b.String()
}

// statusOnce is a GPU backend whose Status is read once and then served
// from that reading (an audit reads it for several layers).
type statusOnce struct {
	gpu.Backend
	mu   sync.Mutex
	done bool
	st   gpu.Status
	err  error
}

func (b *statusOnce) Status(ctx context.Context) (gpu.Status, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.done {
		b.st, b.err = b.Backend.Status(ctx)
		b.done = true
	}
	return b.st, b.err
}

// gpuLoad is what pcie.link needs of the backend's status: each GPU's
// utilisation and link generations.
func gpuLoad(st gpu.Status) []tune.GPULoad {
	out := make([]tune.GPULoad, 0, len(st.GPUs))
	for _, g := range st.GPUs {
		if g.PCIAddress == "" {
			continue
		}
		l := tune.GPULoad{BDF: g.PCIAddress, UtilizationPct: -1, LinkGen: g.PCIe.Gen, MaxLinkGen: g.PCIe.MaxGen}
		if g.UtilizationPct != nil {
			l.UtilizationPct = *g.UtilizationPct
		}
		out = append(out, l)
	}
	return out
}
