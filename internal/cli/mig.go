package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/internal/mig"
	"github.com/gpunode/gpunode/internal/miglive"
	"github.com/gpunode/gpunode/internal/userfile"
)

// newMIGCommand builds `gpunode mig`: offline planning (plan, validate,
// profiles) of NVIDIA MIG layouts, and the live-GPU subcommands (apply,
// assert, export, live-profiles) of mig_live.go.
func (a *App) newMIGCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mig",
		Short: "Plan and validate MIG (Multi-Instance GPU) layouts",
		Long: `Plan NVIDIA MIG layouts exactly, before touching a GPU.

  gpunode mig profiles --model H100-80GB
  gpunode mig plan --model H100-80GB --want 3g.40gb=1,2g.20gb=1,1g.10gb=2 [--gpus N]
  gpunode mig validate -f mig-parted.yaml [-c LABEL] [--model M | --device-id 0x2330 ...]

--model takes the product name as nvidia-smi prints it ("NVIDIA H100 80GB HBM3"),
a short form (H100-80GB, A100-SXM4-40GB, A100-80GB, A30-24GB, H100-94GB-NVL,
H200-141GB, GH200-96GB, GH200-144GB, B200-180GB) or a PCI device id (0x2330).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(a.newMIGPlanCommand(), a.newMIGValidateCommand(), a.newMIGProfilesCommand(),
		a.newMIGApplyCommand(), a.newMIGAssertCommand(), a.newMIGExportCommand(), a.newMIGLiveProfilesCommand())
	return cmd
}

// MIGCatalogue returns the MIG catalogue commands plan against: the
// built-in one. A live backend overrides products with NVML data via
// Catalogue.With.
func (a *App) MIGCatalogue() *mig.Catalogue { return mig.Builtin() }

// planOnLiveGPU plans wants for GPUs of the model of the node's GPU sel,
// with the profiles and placements the GPU itself reports overriding the
// built-in catalogue.
func (a *App) planOnLiveGPU(ctx context.Context, backend, sel string, wants []mig.Want, opts mig.PlanOptions) error {
	return a.withMIGDevices(ctx, backend, func(cat *mig.Catalogue, devs []miglive.Device) error {
		var dev miglive.Device
		for _, d := range devs {
			if info := d.Info(); strconv.Itoa(info.Index) == sel || strings.EqualFold(info.UUID, sel) {
				dev = d
			}
		}
		if dev == nil {
			return Usagef("mig plan: --gpu %q matches no GPU on this node (%d GPUs)", sel, len(devs))
		}
		if !dev.Info().MIGCapable {
			return Usagef("mig plan: GPU %s (%s) is not MIG-capable", sel, dev.Info().Name)
		}
		p, err := miglive.Product(ctx, cat, dev)
		if err != nil {
			return err
		}
		live, err := cat.With(*p)
		if err != nil {
			return err
		}
		if p, err = live.Lookup(p.Key); err != nil {
			return err
		}
		plan, err := live.Plan(ctx, p, wants, opts)
		if err != nil {
			return migUsage(err)
		}
		return a.RenderFindings(plan, !plan.Feasible)
	})
}

// migUsage maps the mig package's bad-input errors to exit 2.
func migUsage(err error) error {
	if errors.Is(err, mig.ErrBadDemand) || errors.Is(err, mig.ErrUnknownModel) ||
		errors.Is(err, mig.ErrNotMIGCapable) || errors.Is(err, mig.ErrNoSuchConfig) {
		return WrapUsage(err)
	}
	return err
}

func lookupModel(c *mig.Catalogue, model string) (*mig.Product, error) {
	p, err := c.Lookup(model)
	if err != nil {
		return nil, WrapUsage(fmt.Errorf("--model: %w", err))
	}
	return p, nil
}

func (a *App) newMIGPlanCommand() *cobra.Command {
	var model, want, gpuSel string
	var gpus int
	var withCI bool
	var gf GPUFlags
	cmd := &cobra.Command{
		Use:   "plan --model MODEL --want PROFILE=N[,PROFILE=N...] [--gpus N]",
		Short: "Lay a demand of MIG instances out on N GPUs, or say why it does not fit",
		Long: `Plan finds an exact layout (placements start:size on the memory-slice axis
and a creation order, larger instances first) for a demand of GPU instances on
N GPUs of one model, or proves that none exists, says why in slice terms and
lists the closest demands that fit.

Profiles are GI names (3g.40gb, 1g.10gb+me), -lgip profile IDs (9) or
compute-instance forms (1c.3g.40gb), which are packed into as few GIs as hold
them, as mig-parted does (1c.3g.40gb=3 is one 3g.40gb GI with three CIs).

Exit codes: 0 feasible, 1 infeasible, 2 bad input.`,
		Example: "  gpunode mig plan --model H100-80GB --want 3g.40gb=1,2g.20gb=1,1g.10gb=2\n" +
			"  gpunode mig plan --model 'NVIDIA A100-SXM4-40GB' --want 3g.20gb=4,1g.5gb=4 --gpus 3 -o json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case model == "" && gpuSel == "":
				return Usagef("mig plan: --model is required (or --gpu for one of this node's GPUs)")
			case model != "" && gpuSel != "":
				return Usagef("mig plan: give only one of --model or --gpu")
			}
			if want == "" {
				return Usagef("mig plan: --want is required")
			}
			if gpus < 1 {
				return Usagef("mig plan: --gpus must be at least 1, got %d", gpus)
			}
			wants, err := mig.ParseWant(want)
			if err != nil {
				return WrapUsage(err)
			}
			opts := mig.PlanOptions{GPUs: gpus, ComputeInstances: withCI}
			if gpuSel != "" {
				return a.planOnLiveGPU(cmd.Context(), gf.backend, gpuSel, wants, opts)
			}
			c := a.MIGCatalogue()
			p, err := lookupModel(c, model)
			if err != nil {
				return err
			}
			plan, err := c.Plan(cmd.Context(), p, wants, opts)
			if err != nil {
				return migUsage(err)
			}
			return a.RenderFindings(plan, !plan.Feasible)
		},
	}
	gf.Register(cmd, false)
	f := cmd.Flags()
	f.StringVar(&gpuSel, "gpu", "", "plan for this node's GPU (index or UUID) with its live profile data (NVML, or the fake backend under --root) instead of --model")
	f.StringVar(&model, "model", "", "GPU model: nvidia-smi name, short form (H100-80GB) or PCI device id (0x2330)")
	f.StringVar(&want, "want", "", "demand: PROFILE=COUNT[,PROFILE=COUNT...], e.g. 3g.40gb=1,1g.10gb=2")
	f.IntVar(&gpus, "gpus", 1, "number of GPUs to spread the demand over")
	f.BoolVar(&withCI, "compute-instances", false, "list each GPU instance's compute-instance options")
	return cmd
}

func (a *App) newMIGValidateCommand() *cobra.Command {
	var file, label, model string
	var deviceIDs []string
	var gpus int
	cmd := &cobra.Command{
		Use:   "validate (-f mig-parted.yaml | mig-parted.yaml) [-c LABEL] [--model M [--gpus N] | --device-id ID ...]",
		Short: "Check a mig-parted config file: format (as mig-parted) and feasibility of every entry",
		Long: `Validate parses a mig-parted v1 config file with mig-parted's own rules and
error messages, then checks offline that every entry's mig-devices fit on each
GPU the entry selects (device-filter and devices).

The node is described by --device-id (repeat, or comma-separate: GPU i gets the
i-th id) or by --model with --gpus (default: enough GPUs for the highest index
any entry names). Without either, each entry is checked on every catalogued
model its device-filter selects (entries without a filter: on every model that
has all their profiles).

The file is -f FILE (mig-parted's own flag) or the one argument, as
'k8s kubelet lint FILE' takes its file; - reads stdin.

Exit codes: 0 every entry fits, 1 an entry does not fit, 2 malformed file or flags.`,
		Example: "  gpunode mig validate -f /etc/nvidia-mig-manager/config.yaml -c all-balanced --device-id 0x2330\n  gpunode mig validate mig-parted.yaml --model A100-SXM4-80GB",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if file != "" && file != args[0] {
					return Usagef("mig validate: the file is given twice (-f %s and %s): give one", file, args[0])
				}
				file = args[0]
			}
			if file == "" {
				// mig-parted's text.
				return Usagef("mig validate: missing required flags 'config-file' (-f)")
			}
			if model != "" && len(deviceIDs) > 0 {
				return Usagef("mig validate: --model and --device-id are mutually exclusive")
			}
			spec, err := a.readMIGSpec(file)
			if err != nil {
				return err
			}
			c := a.MIGCatalogue()
			var node []mig.GPU
			switch {
			case len(deviceIDs) > 0:
				var ids []uint16
				for _, item := range deviceIDs {
					for _, s := range strings.Split(item, ",") {
						id, err := mig.ParseDeviceID(s)
						if err != nil {
							return WrapUsage(fmt.Errorf("--device-id: %w", err))
						}
						ids = append(ids, id)
					}
				}
				node = mig.NodeGPUs(ids)
			case model != "":
				p, err := lookupModel(c, model)
				if err != nil {
					return err
				}
				n := gpus
				if n == 0 {
					n = 1 + maxDeviceIndex(spec)
				}
				if n < 1 || n > 1024 {
					return Usagef("mig validate: --gpus %d out of range 1..1024", n)
				}
				ids := make([]uint16, n)
				for i := range ids {
					ids[i] = p.DeviceIDs[0]
				}
				node = mig.NodeGPUs(ids)
			case gpus != 0:
				return Usagef("mig validate: --gpus needs --model")
			}
			v, err := c.Validate(cmd.Context(), spec, mig.ValidateOptions{File: file, Label: label, GPUs: node})
			if err != nil {
				return migUsage(err)
			}
			return a.RenderFindings(v, !v.OK)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "config-file", "f", "", "mig-parted config file ('-' for stdin)")
	f.StringVarP(&label, "selected-config", "c", "", "check only this mig-config label")
	f.StringVar(&model, "model", "", "node of --gpus GPUs of this model")
	f.IntVar(&gpus, "gpus", 0, "number of GPUs with --model (default: highest device index in the file + 1)")
	f.StringSliceVar(&deviceIDs, "device-id", nil, "PCI device id of GPU 0, 1, ... (0x2330 or 0x233010DE); repeat or comma-separate")
	return cmd
}

// maxDeviceIndex is the highest GPU index any entry's devices list names.
func maxDeviceIndex(spec *mig.MigPartedSpec) int {
	m := 0
	for _, entries := range spec.MigConfigs {
		for _, e := range entries {
			for _, d := range e.Devices.Indices {
				m = max(m, d)
			}
		}
	}
	return m
}

func (a *App) readMIGFile(name string) ([]byte, error) {
	var data []byte
	var err error
	if name == "-" {
		data, err = userfile.ReadAll(a.Stdin, "stdin", a.MaxInputBytes)
	} else {
		data, err = a.readNamedInput(name)
	}
	if errors.Is(err, userfile.ErrTooLarge) {
		return nil, WrapUsage(err)
	}
	if err != nil {
		return nil, WrapUsage(fmt.Errorf("%s: error parsing config file: read error: %w", name, err))
	}
	return data, nil
}

func (a *App) newMIGProfilesCommand() *cobra.Command {
	var model string
	cmd := &cobra.Command{
		Use:   "profiles [--model MODEL]",
		Short: "List the MIG profiles, placements and compute-instance options of a GPU model",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c := a.MIGCatalogue()
			if model == "" {
				return a.Render(mig.ProfilesOf(c.Products()...))
			}
			p, err := lookupModel(c, model)
			if err != nil {
				return err
			}
			return a.Render(mig.ProfilesOf(p))
		},
	}
	cmd.Flags().StringVar(&model, "model", "", "GPU model (default: all catalogued models)")
	return cmd
}
