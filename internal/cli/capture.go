package cli

import (
	"bytes"
	"context"
	"fmt"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/irq"
	"github.com/gpunode/gpunode/internal/journal"
	"github.com/gpunode/gpunode/internal/output"
	"github.com/gpunode/gpunode/internal/tune"
)

// captureProfiles are the profiles 'topo capture' audits so that their
// reads are recorded: every built-in, and every catalogue setting
// report-only (settings no built-in manages).
var captureProfiles = []string{tune.ProfileBase, tune.ProfileTraining, tune.ProfileInference, tune.ProfileInferenceIsolated}

// captureReads runs, on a recording fs, what the read-only commands read
// (audit for every built-in profile and plan, tune status, irq plan for
// every device kind, gpu status), so that the capture replays them. It
// returns the GPU backend's status and whether it came from a driver
// (not the fake file or the none backend): that status is saved as the
// capture's fake GPU file.
func (a *App) captureReads(ctx context.Context, fs *hostfs.FS, backend string) (gpu.Status, bool, []string) {
	var warns []string
	warn := func(format string, args ...any) { warns = append(warns, fmt.Sprintf(format, args...)) }
	h := tune.NewHost(ctx, fs)
	cat := tune.NewCatalogue()
	b, err := a.openGPU(ctx, backend)
	if err != nil {
		b = gpu.NewNone(err.Error())
	}
	defer b.Close()
	st, err := b.Status(ctx)
	if err != nil {
		warn("gpu status: %v", err)
	}
	gpu.Annotate(fs, &st)
	// The same sources as 'gpunode audit' (a layer added there is
	// captured too).
	opt := tune.Options{Sources: a.AuditSources(ctx, h, backend, "", 0)}
	loader := &tune.Loader{Cat: cat, Host: fs, Checks: sourceChecks()}
	every := &tune.Profile{Name: "capture", Settings: map[string]string{}, Origin: map[string]string{}}
	for _, s := range cat.Settings() {
		every.Settings[s.ID] = tune.ValueReport
	}
	profiles := []*tune.Profile{every}
	for _, name := range captureProfiles {
		p, err := loader.Load(name)
		if err != nil {
			warn("profile %s: %v", name, err)
			continue
		}
		profiles = append(profiles, p)
	}
	for _, p := range profiles {
		if _, err := tune.Audit(ctx, h, cat, p, opt); err != nil {
			warn("audit %s: %v", p.Name, err)
		}
		if p != every {
			if _, err := tune.Plan(ctx, h, cat, tune.ApplyRequest{Profile: p, StateDir: journal.DefaultDir}); err != nil {
				warn("plan %s: %v", p.Name, err)
			}
		}
	}
	_ = loader.List() // tune profiles reads the user profiles
	if _, err := tune.GetStatus(ctx, h, cat, journal.DefaultDir, opt); err != nil {
		warn("tune status: %v", err)
	}
	if h.Topo != nil {
		kinds, _ := irq.ParseKinds("all")
		if _, err := irq.Analyze(ctx, fs, h.Topo, irq.Options{Kinds: kinds}); err != nil {
			warn("irq plan: %v", err)
		}
	}
	fromDriver := b.Name() != gpu.KindNone && b.Name() != gpu.KindFake
	return st, fromDriver, warns
}

// saveFakeGPUs writes st into the capture as its fake GPU file, so that
// 'gpunode ... --root CAPTURE' gets the driver's answers.
func saveFakeGPUs(out string, st gpu.Status) error {
	dst, err := hostfs.New(out)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := output.Write(&b, output.YAML, st, output.Options{}); err != nil {
		return err
	}
	if _, err := dst.MkdirAll("/etc/gpunode", 0o755); err != nil {
		return err
	}
	return dst.WriteFileAtomic(gpu.FakeFile, b.Bytes(), 0o644)
}
