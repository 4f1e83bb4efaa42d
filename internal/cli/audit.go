package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/irq"
	"github.com/gpunode/gpunode/internal/tune"
)

func (a *App) newAuditCommand() *cobra.Command {
	var (
		profile string
		pid     int
		gf      gpuFlags
	)
	cmd := &cobra.Command{
		Use:   "audit [--profile NAME|FILE] [--pid PID]",
		Short: "Check the node against a tuning profile: every knob's value, the expected one, the fix and why",
		Long: `Check every setting of a tuning profile (CPU governor and C-states, THP,
hugepages, swap, dirty limits, NUMA balancing, memlock/nofile limits, network
buffers, boot-time isolation and IOMMU, PCIe links and ACS, device IRQ
locality, GPU persistence/ECC/clocks/MIG) and print, for each, its status:

  ok              the live value (and the boot configuration) match
  drift           the live value differs, or is right now but the boot
                  configuration (sysctl.d, tmpfiles.d, grub) will undo it
  pending-reboot  set in the boot configuration, not live until a reboot
  absent          the knob does not exist on this kernel or hardware
  error           the knob could not be read (the others still run)

with the current and expected value, the exact command that fixes it and the
reason (pointing into the seed chapter). --pid adds checks of one process:
swapped-out memory, locked memory vs RLIMIT_MEMLOCK, the malloc it uses, and
its threads' CPU affinity and NUMA policy vs the GPUs it has open.

Profiles: base, training, inference, inference-isolated (gpunode tune
profiles), a user profile in /etc/gpunode/profiles/NAME.yaml, or a YAML file.

Exit status: 0 nothing drifts, 1 something drifts, 2 usage, 3 failure.`,
		Example: `  gpunode audit --profile training
  gpunode audit --profile inference --pid $(pgrep -f vllm | head -1)
  gpunode audit --profile ./my-profile.yaml -o json | jq '.checks[] | select(.status=="drift")'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if pid < 0 {
				return Usagef("--pid %d: want a process id", pid)
			}
			ctx := cmd.Context()
			fs, cat, p, err := a.loadProfile(profile)
			if err != nil {
				return err
			}
			opt := tune.Options{PID: pid, GPU: a.gpuAuditSource(ctx, gf.backend, ""), IRQ: irqAuditSource{}}
			r, err := tune.Audit(ctx, tune.NewHost(ctx, fs), cat, p, opt)
			if err != nil {
				if errors.Is(err, tune.ErrNoProcess) {
					return wrapUsage(err)
				}
				return err
			}
			return a.renderFindings(r, r.Drifted())
		},
	}
	f := cmd.Flags()
	f.StringVar(&profile, "profile", tune.ProfileBase, "profile to check against: a built-in or user profile name, or a YAML file")
	f.IntVar(&pid, "pid", 0, "also check this process (swap, locked memory, allocator, CPU/NUMA placement vs its GPUs)")
	gf.register(cmd, false)
	_ = cmd.RegisterFlagCompletionFunc("profile", a.completeProfiles)
	return cmd
}

// loadProfile opens the host and resolves --profile (name) against the
// built-in catalogue; a bad profile is a usage error.
func (a *App) loadProfile(name string) (*hostfs.FS, *tune.Catalogue, *tune.Profile, error) {
	fs, err := a.Host()
	if err != nil {
		return nil, nil, nil, err
	}
	if strings.TrimSpace(name) == "" {
		return nil, nil, nil, Usagef("--profile: empty (try 'gpunode tune profiles')")
	}
	cat := tune.NewCatalogue()
	p, err := (&tune.Loader{Cat: cat, Host: fs}).Load(name)
	if err != nil {
		return nil, nil, nil, wrapUsage(err)
	}
	return fs, cat, p, nil
}

func (a *App) completeProfiles(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	var names []string
	fs, err := a.Host()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	for _, p := range (&tune.Loader{Cat: tune.NewCatalogue(), Host: fs}).List() {
		names = append(names, p.Name)
	}
	return names, cobra.ShellCompDirectiveDefault
}

// irqAuditSource adapts the IRQ layer's off-node finding to the audit
// (it replaces the catalogue's simpler irq.numa-local check, whose reason
// tune.Audit gives its checks).
type irqAuditSource struct{}

var _ tune.Source = irqAuditSource{}

func (irqAuditSource) Name() string { return "irq" }

func (irqAuditSource) Checks(ctx context.Context, h *tune.Host, _ *tune.Profile) ([]tune.Check, error) {
	if h.Topo == nil {
		return []tune.Check{{ID: irq.FindingOffNode, Layer: tune.LayerIRQ, Status: tune.StatusError, Detail: "no topology"}}, nil
	}
	fs, err := irq.OffNodeFindings(ctx, h.FS, h.Topo)
	if err != nil {
		return nil, err
	}
	if len(fs) == 0 {
		return []tune.Check{{ID: irq.FindingOffNode, Layer: tune.LayerIRQ, Status: tune.StatusOK, Current: "every GPU/NIC IRQ on its NUMA node", Expected: "pass"}}, nil
	}
	out := make([]tune.Check, 0, len(fs))
	for _, f := range fs {
		ev := f.Evidence
		if len(ev) > 4 {
			ev = append(ev[:4:4], fmt.Sprintf("... %d more ('gpunode irq' lists them)", len(f.Evidence)-4))
		}
		c := tune.Check{ID: f.ID, Layer: tune.LayerIRQ, Status: tune.StatusDrift, Current: f.Title, Expected: "pass",
			Detail: strings.Join(append([]string{f.Detail}, ev...), "; ")}
		if f.Fix != "" {
			c.Fix = []string{f.Fix}
		}
		out = append(out, c)
	}
	return out, nil
}
