package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/internal/bind"
	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/mig"
	"github.com/gpunode/gpunode/internal/output"
	"github.com/gpunode/gpunode/internal/tune"
)

// This file is what package companion (the commands of gpunode-full) uses
// of package cli. Keep it small: a helper both need lives here once.

// WrapUsage marks err as a usage error (exit 2).
func WrapUsage(err error) error { return wrapUsage(err) }

// BuildVersion is what 'gpunode version' prints.
func BuildVersion() VersionInfo { return buildVersion() }

// RenderFindings renders v and returns ErrFindings (exit 1) when findings is
// set.
func (a *App) RenderFindings(v any, findings bool) error { return a.renderFindings(v, findings) }

// CommandLine is this invocation as journals record it.
func (a *App) CommandLine() string { return a.commandLine() }

// EnvironList is the process environment (nil in tests without one).
func (a *App) EnvironList() []string { return a.environ() }

// SetFormat overrides the parsed -o format, for commands with formats of
// their own (k8s lint's sarif renders as JSON).
func (a *App) SetFormat(f output.Format) { a.format = f }

// LoadProfile opens the host and resolves a built-in profile by name; a bad
// profile is a usage error.
func (a *App) LoadProfile(name string) (*hostfs.FS, *tune.Catalogue, *tune.Profile, error) {
	return a.loadProfile(name)
}

// AuditSources are the check sources 'gpunode audit' composes with the
// catalogue.
func (a *App) AuditSources(ctx context.Context, h *tune.Host, backend, cudaRuntime string, sample time.Duration) []check.Source {
	return a.auditSources(ctx, h, backend, cudaRuntime, sample)
}

// MIGCatalogue is the MIG profile catalogue the commands use.
func (a *App) MIGCatalogue() *mig.Catalogue { return a.migCatalogue() }

// GPUStatus reads the status of the GPU backend kind, with NUMA nodes filled
// from sysfs and MIG devices named from the catalogue.
func (a *App) GPUStatus(ctx context.Context, kind string) (gpu.Status, error) {
	return a.gpuStatus(ctx, kind)
}

// BindGPUSource is the GPU layer as bind sees it (NVML or the fake file,
// never nvidia-smi).
func (a *App) BindGPUSource(kind string) bind.GPUSource { return &gpuSource{a: a, kind: kind} }

// GPUFlags are the --gpu-backend flags of commands that talk to GPUs.
type GPUFlags struct{ f gpuFlags }

// Register adds the flags to cmd (persistent: to its subcommands too).
func (g *GPUFlags) Register(cmd *cobra.Command, persistent bool) { g.f.register(cmd, persistent) }

// Backend is the --gpu-backend value.
func (g *GPUFlags) Backend() string { return g.f.backend }
