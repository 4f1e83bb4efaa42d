package container

import (
	"context"
	"fmt"

	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/topo"
)

// Layer is the audit layer of every check here.
const Layer = "container"

// Check ids.
const (
	CheckToolkit    = "container.toolkit"
	CheckDocker     = "container.runtime.docker"
	CheckContainerd = "container.runtime.containerd"
	CheckCRIO       = "container.runtime.crio"
	CheckCDI        = "container.cdi"
	CheckCUDACompat = "container.cuda-compat"
	CheckOverlay    = "container.overlay"
)

// SchemaVersion is the schema of 'gpunode container check' output.
const SchemaVersion = "gpunode.container.check/v1"

// Options are what the user adds to the host's files.
type Options struct {
	// CUDA is the image's CUDA version (--cuda); it must be valid
	// (gpu.ParseCUDARuntime), which the caller checks as a usage error.
	CUDA string
	// ImageConfig is a host path to docker inspect / OCI image config JSON.
	ImageConfig string
	// Data are paths whose filesystem is checked (--data).
	Data []string
	// ContainerSpec is a host path to docker inspect JSON or a Pod (YAML
	// or JSON) whose mounts are checked.
	ContainerSpec string
	// MaxInputBytes bounds ImageConfig and ContainerSpec
	// (--max-input-bytes; <= 0: userfile.DefaultMaxBytes).
	MaxInputBytes int64
}

// Source is the container layer's check.Source. It reads, never writes.
type Source struct {
	FS *hostfs.FS
	// Backend answers the driver version, GPU UUIDs and MIG devices
	// (nil: /proc/driver/nvidia/version and sysfs only).
	Backend gpu.Backend
	// Topo is the host's topology (nil: discovered from FS when needed).
	Topo    *topo.Topology
	Options Options
}

var (
	_ check.Source    = Source{}
	_ check.Describer = Source{}
	_ check.Named     = Source{}
)

// Name implements check.Named.
func (Source) Name() string { return Layer }

// Describe implements check.Describer.
func (Source) Describe() []check.Description { return Describe() }

// Describe lists the container layer's check ids.
func Describe() []check.Description {
	return []check.Description{
		{ID: CheckToolkit, Layer: Layer, Section: "4.1", Title: "NVIDIA Container Toolkit installed (nvidia-ctk, runtime, hook, nvidia-container-cli, libnvidia-container) and one version"},
		{ID: CheckDocker, Layer: Layer, Section: "4.1", Title: "Docker daemon.json: nvidia runtime registered and its binary present, CDI enabled where the version needs it, default memlock ulimit and shm size"},
		{ID: CheckContainerd, Layer: Layer, Section: "4.1", Title: "containerd config.toml (v2/v3): nvidia runtime with an existing BinaryName, CDI enabled with spec dirs"},
		{ID: CheckCRIO, Layer: Layer, Section: "4.1", Title: "CRI-O crio.conf and crio.conf.d: nvidia runtime with an existing runtime_path, CDI spec dirs"},
		{ID: CheckCDI, Layer: Layer, Section: "4.1", Title: "CDI specs valid, every GPU and MIG device named, no device node gone (stale after a driver or MIG change), no duplicate names"},
		{ID: CheckCUDACompat, Layer: Layer, Section: "4.1", Title: "driver new enough for the image's CUDA version (minimum driver table, forward-compatibility packages)"},
		{ID: CheckOverlay, Layer: Layer, Section: "4.2", Title: "data and checkpoint paths on a bind mount or volume, not the container's overlayfs"},
	}
}

// Report is the model of 'gpunode container check'.
type Report struct {
	SchemaVersion string        `json:"schemaVersion"`
	Checks        []check.Check `json:"checks"`
	Summary       check.Summary `json:"summary"`
}

// Failing reports whether a check drifts or is an error.
func (r Report) Failing() bool { return r.Summary.Failing() }

// Run runs the source and builds the report.
func Run(ctx context.Context, s Source) (Report, error) {
	cs, err := s.Checks(ctx)
	if err != nil {
		return Report{}, err
	}
	return Report{SchemaVersion: SchemaVersion, Checks: cs, Summary: check.Summarize(cs)}, nil
}

// Checks implements check.Source.
func (s Source) Checks(ctx context.Context) ([]check.Check, error) {
	if s.FS == nil {
		return nil, fmt.Errorf("container: no host filesystem")
	}
	h, err := s.load(ctx)
	if err != nil {
		return nil, err
	}
	out := []check.Check{
		toolkitCheck(h),
		dockerCheck(h),
		containerdCheck(h),
		crioCheck(h),
	}
	out = append(out, cdiCheck(h))
	out = append(out, compatCheck(h, s.Options))
	out = append(out, overlayChecks(h, s.Options)...)
	for i := range out {
		out[i].Layer = Layer
	}
	return out, ctx.Err()
}

// host is what the checks share: the files, the packages, the GPUs.
type host struct {
	fs     *hostfs.FS
	pkgs   map[string]string // installed package -> version
	pkgErr error
	st     *gpu.Status // nil: no backend answer
	gpus   []gpuRef
}

// gpuRef is one GPU as CDI names it.
type gpuRef struct {
	Index int
	UUID  string
	MIG   []migRef
}

type migRef struct {
	GPU, Index int
	UUID       string
}

func (s Source) load(ctx context.Context) (*host, error) {
	h := &host{fs: s.FS}
	h.pkgs, h.pkgErr = readDpkg(s.FS)
	if s.Backend != nil {
		if st, err := s.Backend.Status(ctx); err == nil && (st.DriverVersion != "" || len(st.GPUs) > 0) {
			h.st = &st
		}
	}
	if h.st != nil && len(h.st.GPUs) > 0 {
		for _, g := range h.st.GPUs {
			r := gpuRef{Index: g.Index, UUID: g.UUID}
			if g.MIG != nil && g.MIG.Current {
				n := 0
				for _, gi := range g.MIGInstances {
					for _, ci := range gi.ComputeInstances {
						r.MIG = append(r.MIG, migRef{GPU: g.Index, Index: n, UUID: ci.UUID})
						n++
					}
				}
			}
			h.gpus = append(h.gpus, r)
		}
		return h, nil
	}
	t := s.Topo
	if t == nil {
		var err error
		if t, err = topo.Discover(ctx, s.FS); err != nil {
			t = nil
		}
	}
	if t != nil {
		for _, g := range t.GPUs {
			if g.VendorID == "0x10de" {
				h.gpus = append(h.gpus, gpuRef{Index: len(h.gpus)})
			}
		}
	}
	return h, nil
}
