package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/internal/journal"
	"github.com/gpunode/gpunode/internal/mig"
	"github.com/gpunode/gpunode/internal/miglive"
	"github.com/gpunode/gpunode/internal/output"
	"github.com/gpunode/gpunode/internal/yamljson"
)

// The live-GPU MIG subcommands: apply, assert, export (mig-parted's format).

// liveMIGFlags are shared by apply/assert/export.
type liveMIGFlags struct {
	GPUFlags
	file, label string
}

func (a *App) readMIGSpec(name string) (*mig.MigPartedSpec, error) {
	if name == "" {
		return nil, Usagef("-f FILE is required")
	}
	data, err := a.readMIGFile(name)
	if err != nil {
		return nil, err
	}
	spec, err := mig.ParseMigPartedFile(name, data)
	if err != nil {
		return nil, WrapUsage(err)
	}
	return spec, nil
}

// readLiveMIGSpec reads the -f file of apply/assert (cmdName) once -c is given.
func (a *App) readLiveMIGSpec(f *liveMIGFlags, cmdName string) (*mig.MigPartedSpec, error) {
	if f.label == "" {
		return nil, Usagef("%s: -c LABEL is required", cmdName)
	}
	return a.readMIGSpec(f.file)
}

// withMIGDevices opens the GPU backend selected by kind, lists its GPUs as
// MIG devices against the catalogue and calls fn with them; the backend is
// closed when fn returns.
func (a *App) withMIGDevices(ctx context.Context, kind string, fn func(cat *mig.Catalogue, devs []miglive.Device) error) error {
	b, err := a.openGPU(ctx, kind)
	if err != nil {
		return err
	}
	defer b.Close()
	cat := a.MIGCatalogue()
	devs, err := miglive.Devices(ctx, b, cat)
	if err != nil {
		return err
	}
	return fn(cat, devs)
}

func liveMIGErr(err error) error {
	if errors.Is(err, miglive.ErrInfeasible) {
		return WrapUsage(err)
	}
	return migUsage(err)
}

func (a *App) newMIGApplyCommand() *cobra.Command {
	var f liveMIGFlags
	var dryRun bool
	var journalDir string
	cmd := &cobra.Command{
		Use:   "apply -f FILE -c LABEL",
		Short: "Apply a mig-parted config: set MIG mode, create instances at planned placements (journaled)",
		Long: `Apply the mig-config LABEL of a mig-parted v1 file to this node's GPUs.

Every selected GPU's layout is planned exactly first; a layout that does not fit
is refused before anything is touched (exit 2). Then MIG mode is set (a GPU
whose mode change waits for a reset is reported, exit 1, and left alone), the
GPU's instances are destroyed and recreated at the planned placements, largest
first, each with one compute instance (the default full-size one, or the size
a "<c>c.<g>g.<gb>gb" key names). Each change is journaled first, so a rollback
restores the previous mode and instances. A GPU already in the wanted state is
not touched.`,
		Example: `  gpunode mig apply -f /etc/nvidia-mig-manager/config.yaml -c all-balanced --dry-run
  gpunode mig apply -f config.yaml -c all-1g.10gb`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			spec, err := a.readLiveMIGSpec(&f, "mig apply")
			if err != nil {
				return err
			}
			return a.withMIGDevices(ctx, f.backend, func(cat *mig.Catalogue, devs []miglive.Device) error {
				host, err := a.Host()
				if err != nil {
					return err
				}
				res, err := miglive.Apply(ctx, cat, devs, spec, miglive.Options{File: f.file, Label: f.label, DryRun: dryRun,
					Host: host, JournalDir: journalDir, Command: a.CommandLine()})
				if err != nil {
					return liveMIGErr(err)
				}
				return a.RenderFindings(res, res.ResetRequired())
			})
		},
	}
	f.Register(cmd, false)
	cmd.Flags().StringVarP(&f.file, "file", "f", "", "mig-parted config file (- for stdin)")
	cmd.Flags().StringVarP(&f.label, "config", "c", "", "mig-config label to apply")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print what would be done and change nothing")
	cmd.Flags().StringVar(&journalDir, "journal-dir", journal.DefaultDir, "journal directory (a host path under --root)")
	return cmd
}

func (a *App) newMIGAssertCommand() *cobra.Command {
	var f liveMIGFlags
	cmd := &cobra.Command{
		Use:   "assert -f FILE -c LABEL",
		Short: "Check that a mig-parted config is applied (exit 1 when it is not)",
		Long: `Compare, for every GPU the mig-config LABEL selects, the MIG mode and the
profile -> count map of its MIG devices with the config, as mig-parted's assert
does. Exit 0 when applied, 1 when not.`,
		Example: `  gpunode mig assert -f config.yaml -c all-balanced`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			spec, err := a.readLiveMIGSpec(&f, "mig assert")
			if err != nil {
				return err
			}
			return a.withMIGDevices(ctx, f.backend, func(cat *mig.Catalogue, devs []miglive.Device) error {
				res, err := miglive.Assert(ctx, cat, devs, spec, f.file, f.label)
				if err != nil {
					return liveMIGErr(err)
				}
				return a.RenderFindings(res, !res.Applied)
			})
		},
	}
	f.Register(cmd, false)
	cmd.Flags().StringVarP(&f.file, "file", "f", "", "mig-parted config file (- for stdin)")
	cmd.Flags().StringVarP(&f.label, "config", "c", "", "mig-config label to check")
	return cmd
}

// MIGExport is the model of 'gpunode mig export': exactly a mig-parted v1
// spec (no schemaVersion field, so that mig-parted reads it back; the
// table form is the YAML file).
type MIGExport struct {
	*mig.MigPartedSpec
}

// WriteTable implements output.Tabler: the spec as mig-parted YAML.
func (e MIGExport) WriteTable(w io.Writer, _ output.Options) error {
	b, err := yamljson.Marshal(e.MigPartedSpec)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

func (a *App) newMIGExportCommand() *cobra.Command {
	var f liveMIGFlags
	cmd := &cobra.Command{
		Use:   "export [-c LABEL]",
		Short: "Print the live MIG layout as a mig-parted v1 config (label 'current')",
		Example: `  gpunode mig export > current.yaml
  gpunode mig assert -f current.yaml -c current`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			return a.withMIGDevices(ctx, f.backend, func(cat *mig.Catalogue, devs []miglive.Device) error {
				spec, err := miglive.Export(ctx, cat, devs, f.label)
				if err != nil {
					return err
				}
				return a.Render(MIGExport{spec})
			})
		},
	}
	f.Register(cmd, false)
	cmd.Flags().StringVarP(&f.label, "config", "c", "current", "label of the exported mig-config")
	return cmd
}

func (a *App) newMIGLiveProfilesCommand() *cobra.Command {
	var f GPUFlags
	cmd := &cobra.Command{
		Use:   "live-profiles",
		Short: "List MIG profiles and placements as this node's GPUs report them through NVML",
		Long: `Read the GPU-instance profiles and placements of every distinct MIG-capable GPU
model on this node from NVML (nvmlDeviceGetGpuInstanceProfileInfo and
...PossiblePlacements) and print them like 'gpunode mig profiles'. Compare with
the built-in catalogue to confirm it on new hardware.`,
		Example: "  gpunode mig live-profiles\n  gpunode mig live-profiles -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			return a.withMIGDevices(ctx, f.backend, func(cat *mig.Catalogue, devs []miglive.Device) error {
				seen := map[uint16]bool{}
				var ps []*mig.Product
				for _, d := range devs {
					info := d.Info()
					if !info.MIGCapable || seen[info.DeviceID.Device] {
						continue
					}
					seen[info.DeviceID.Device] = true
					p, err := miglive.Product(ctx, cat, d)
					if err != nil {
						a.Warnf("GPU %d: %v", info.Index, err)
						continue
					}
					ps = append(ps, p)
				}
				if len(ps) == 0 {
					return fmt.Errorf("no MIG-capable GPU on this node")
				}
				return a.Render(mig.ProfilesOf(ps...))
			})
		},
	}
	f.Register(cmd, false)
	return cmd
}
