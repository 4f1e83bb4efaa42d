package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/output"
	"github.com/gpunode/gpunode/internal/topo"
)

func (a *App) newTopoCommand() *cobra.Command {
	var gf GPUFlags
	cmd := &cobra.Command{
		Use:   "topo",
		Short: "Show CPU, NUMA, memory and GPU/NIC PCIe topology (numactl -H + lscpu + nvidia-smi topo -m)",
		Long: `Show the machine's topology from sysfs alone, without the NVIDIA driver:
sockets and NUMA nodes (CPUs, memory, hugepages, distance matrix), the
GPU/NIC link matrix with CPU and NUMA affinity (as nvidia-smi topo -m), every
GPU, NIC, NVMe drive and NVSwitch with its PCIe link, and warnings about
downgraded links, devices with an unknown NUMA node, and GPUs without a NIC on
their node. When a GPU backend answers (NVML, nvidia-smi, or the fake file under
--root), GPU pairs joined by NVLink show as NV# like nvidia-smi topo -m;
--gpu-backend none keeps the PCIe classes.

Use --root to read a captured tree (see 'gpunode topo capture').`,
		Example: `  gpunode topo
  gpunode topo -o json | jq '.gpus[] | {name, bdf, numaNode, localCPUs}'
  gpunode topo --root ./node-capture`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fs, err := a.Host()
			if err != nil {
				return err
			}
			if !slices.Contains(gpu.Kinds, gf.backend) {
				// a bad name is the caller's, not a warning (it exited 0)
				return Usagef("--gpu-backend %q: want one of %s", gf.backend, strings.Join(gpu.Kinds, ", "))
			}
			t, err := topo.Discover(cmd.Context(), fs)
			if err != nil {
				return err
			}
			if len(t.GPUs) > 0 && gf.backend != gpu.KindNone {
				a.addNVLinks(cmd.Context(), gf.backend, t)
			}
			return a.Render(t)
		},
	}
	gf.Register(cmd, false)
	cmd.AddCommand(a.newTopoCaptureCommand())
	return cmd
}

// addNVLinks upgrades GPU pairs joined by NVLink to NV# classes with data
// from the GPU backend. Without a driver the PCIe classes stay, with a
// warning saying why.
func (a *App) addNVLinks(ctx context.Context, backend string, t *topo.Topology) {
	b, st, err := a.openGPUStatus(ctx, backend)
	if err != nil {
		t.Warnings = append(t.Warnings, topo.Warning{Message: fmt.Sprintf("NVLink classes not shown: %v", err)})
		return
	}
	defer b.Close()
	if st.Backend == gpu.KindNone {
		t.Warnings = append(t.Warnings, topo.Warning{Message: "NVLink classes not shown (PCIe classes only): " + st.Reason})
		return
	}
	classes := gpu.NVLinkClassesOf(st)
	byBDF := map[string]string{}
	for _, g := range t.GPUs {
		byBDF[g.BDF] = g.Name
	}
	for pair, class := range classes {
		x, okx := byBDF[pair[0]]
		y, oky := byBDF[pair[1]]
		if okx && oky {
			t.SetLinkClass(x, y, class)
		}
	}
}

// SchemaCapture is the schema version of CaptureResult.
const SchemaCapture = "gpunode.capture/v1"

// CaptureResult is the model printed by 'gpunode topo capture'.
type CaptureResult struct {
	SchemaVersion string `json:"schemaVersion"`
	Out           string `json:"out"`
	Files         int    `json:"files"`
	Warnings      int    `json:"warnings"`
}

func (a *App) newTopoCaptureCommand() *cobra.Command {
	var out, gpuBackend string
	var force bool
	cmd := &cobra.Command{
		Use:   "capture --out DIR",
		Short: "Copy exactly the host files gpunode reads into DIR, for --root DIR and bug reports",
		Long: `Run topology discovery, and everything the read-only commands read (audit
for every built-in profile, tune plan and status, irq plan, gpu status), and
copy every file read (sysfs symlinks preserved) into DIR. The GPU driver's
answers are saved as DIR/etc/gpunode/fake-gpus.yaml. 'gpunode topo|audit|
irq plan|gpu status --root DIR' then reproduce this machine's reports and
verdicts anywhere. Attach 'tar czf node.tgz DIR' to a bug report.

DIR is created if missing and must otherwise be an empty directory (--force
accepts a non-empty one and replaces what is in the way). DIR itself must not
be a symbolic link, and nothing already in DIR is followed: links are
replaced, never written through, so a capture into a shared directory such as
/tmp cannot be redirected onto another file.`,
		Example: `  gpunode topo capture --out /tmp/node-capture
  gpunode topo --root /tmp/node-capture`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return Usagef("topo capture: --out DIR is required")
			}
			fs, err := a.Host()
			if err != nil {
				return err
			}
			fs.Record()
			t, err := topo.Discover(cmd.Context(), fs)
			if err != nil {
				return err
			}
			// What audit, tune status, irq plan and gpu status read
			// (capture.go), so that they replay from the capture too.
			st, fromDriver, warns := a.captureReads(cmd.Context(), fs, gpuBackend)
			for _, w := range warns {
				a.Warnf("topo capture: %s", w)
			}
			if err := fs.CopyRecordedWith(out, hostfs.CopyOptions{Force: force}); err != nil {
				if errors.Is(err, hostfs.ErrOutputDir) {
					return WrapUsage(fmt.Errorf("topo capture: --out %w", err))
				}
				return fmt.Errorf("topo capture: %w", err)
			}
			if fromDriver {
				if err := saveFakeGPUs(out, st); err != nil {
					return fmt.Errorf("topo capture: GPU answers: %w", err)
				}
			}
			return a.Render(CaptureResult{SchemaVersion: SchemaCapture, Out: out, Files: len(fs.Recorded()), Warnings: len(t.Warnings)})
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "directory to write the capture to (created if missing; must be empty unless --force)")
	cmd.Flags().BoolVar(&force, "force", false, "capture into a non-empty --out directory, replacing (never following) what is in the way")
	cmd.Flags().StringVar(&gpuBackend, "gpu-backend", gpu.KindAuto, "GPU backend whose answers are saved as the capture's "+gpu.FakeFile)
	_ = cmd.MarkFlagDirname("out")
	return cmd
}

// WriteTable implements output.Tabler.
func (c CaptureResult) WriteTable(w io.Writer, _ output.Options) error {
	_, err := fmt.Fprintf(w, "captured %d host paths into %s (%d warnings during discovery)\nreplay with: gpunode topo --root %s\n", c.Files, c.Out, c.Warnings, c.Out)
	return err
}
