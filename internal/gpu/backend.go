package gpu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"strings"
	"time"

	"github.com/gpunode/gpunode/internal/hostfs"
)

// Backend is what gpunode needs from a GPU driver interface. Implementations:
// nvml, nvidia-smi, fake and none. GPUs are addressed by UUID.
type Backend interface {
	// Name is nvml, nvidia-smi, fake or none.
	Name() string
	// Status reads every GPU. A GPU field the backend cannot read is left
	// empty; only a failure to enumerate GPUs is an error.
	Status(ctx context.Context) (Status, error)
	// SetPersistence turns persistence mode on or off.
	SetPersistence(ctx context.Context, uuid string, on bool) error
	// LockClocks locks the graphics clock to [r.MinMHz, r.MaxMHz].
	LockClocks(ctx context.Context, uuid string, r ClockRange) error
	// ResetClocks removes a graphics clock lock.
	ResetClocks(ctx context.Context, uuid string) error
	// Close releases the backend (nvml.Shutdown).
	Close() error
}

// Backend kinds accepted by Open.
const (
	KindAuto      = "auto"
	KindNVML      = "nvml"
	KindNVIDIASMI = "nvidia-smi"
	KindFake      = "fake"
	KindNone      = "none"
)

// Kinds lists the values of --gpu-backend.
var Kinds = []string{KindAuto, KindNVML, KindNVIDIASMI, KindFake, KindNone}

// FakeFile is the host path of the fake backend's GPU description. With
// --root other than "/", auto selection uses it when it exists.
const FakeFile = "/etc/gpunode/fake-gpus.yaml"

// ErrNoDriver is returned by the none backend's setters.
var ErrNoDriver = errors.New("no NVIDIA driver")

// ErrUnknownGPU is returned for a UUID the backend does not know.
var ErrUnknownGPU = errors.New("unknown GPU")

// Cmd is one external command to run.
type Cmd struct {
	Name  string
	Args  []string
	Env   []string // extra KEY=VALUE entries on top of the process environment
	Stdin string
}

func (c Cmd) String() string {
	s := strings.TrimSpace(strings.Join(c.Env, " ") + " " + c.Name + " " + strings.Join(c.Args, " "))
	if c.Stdin != "" {
		s = fmt.Sprintf("echo %q | %s", strings.TrimSpace(c.Stdin), s)
	}
	return s
}

// Runner runs external commands (nvidia-smi, nvidia-cuda-mps-control). Tests
// replace it; production uses ExecRunner.
type Runner interface {
	// Run runs c and returns its standard output. A non-zero exit is an
	// error that includes the command's standard error.
	Run(ctx context.Context, c Cmd) ([]byte, error)
}

// ExecRunner runs commands with os/exec.
type ExecRunner struct {
	// Environ is the base environment (nil: inherit the process's).
	Environ []string
}

// Run implements Runner.
func (r ExecRunner) Run(ctx context.Context, c Cmd) ([]byte, error) {
	cmd := exec.CommandContext(ctx, c.Name, c.Args...)
	if len(c.Env) > 0 || r.Environ != nil {
		base := r.Environ
		if base == nil {
			base = cmd.Environ()
		}
		cmd.Env = append(append([]string{}, base...), c.Env...)
	}
	if c.Stdin != "" {
		cmd.Stdin = strings.NewReader(c.Stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A daemonising program (nvidia-cuda-mps-control -d) may leave its
	// child holding our pipes: stop waiting for them shortly after the
	// program itself exits.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Run(); err != nil && !errors.Is(err, exec.ErrWaitDelay) {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(stdout.String())
		}
		if msg != "" {
			return stdout.Bytes(), fmt.Errorf("%s: %w: %s", c.Name, err, msg)
		}
		return stdout.Bytes(), fmt.Errorf("%s: %w", c.Name, err)
	}
	return stdout.Bytes(), nil
}

// Options configure Open.
type Options struct {
	// Kind is one of Kinds ("" means auto).
	Kind string
	// Host is the host filesystem (--root). Required.
	Host *hostfs.FS
	// Runner runs nvidia-smi (default ExecRunner).
	Runner Runner
	// LookPath finds nvidia-smi (default exec.LookPath). Auto selection only
	// tries nvidia-smi when LookPath finds it.
	LookPath func(string) (string, error)
	// FakeFile overrides FakeFile (a host path).
	FakeFile string
	// NewNVML opens the NVML backend (default OpenNVML); tests inject a mock.
	NewNVML func() (Backend, error)
	// Timeout is the deadline of each nvidia-smi run and of each GPU's NVML
	// reads (--gpu-timeout; <= 0: DefaultTimeout).
	Timeout time.Duration
	// LiveSMI allows the nvidia-smi backend with a --root other than "/"
	// (--gpu-smi-live): it runs this host's nvidia-smi, whose answer has
	// nothing to do with the captured files under the root.
	LiveSMI bool
	// LiveRoot says the --root directory is this running host mounted
	// elsewhere (--live-root, a DaemonSet's /host): the backends are the
	// live ones (NVML, then nvidia-smi), never the fake file.
	LiveRoot bool
}

// live reports whether the root is the running host: "/" or --live-root.
func (o Options) live() bool { return o.LiveRoot || o.Host.IsLive() }

// NVMLLibrary is the file name of the NVML library: the NVIDIA container
// toolkit injects it into a container run with the utility capability.
const NVMLLibrary = "libnvidia-ml.so.1"

// ErrNVMLLibraryNotFound is wrapped by OpenNVML's error when
// libnvidia-ml.so.1 cannot be loaded.
var ErrNVMLLibraryNotFound = errors.New("NVML library " + NVMLLibrary + " not found")

// ErrNoNVMLBuild is OpenNVML's error in a build without cgo (HaveNVML
// false), such as the static node binary.
var ErrNoNVMLBuild = errors.New("this gpunode was built without cgo, so it has no NVML backend: install gpunode-agent beside it (gpunode then runs GPU commands there), or use --gpu-backend nvidia-smi")

// ErrFakeLiveRoot is returned for --gpu-backend fake with --live-root.
var ErrFakeLiveRoot = errors.New("--gpu-backend fake with --live-root: the root is this running host, whose GPUs the live backends (nvml, nvidia-smi) read; the fake file describes a captured tree (drop --live-root to read one)")

// ErrLiveSMIRefused is returned for --gpu-backend nvidia-smi with a root
// other than "/" and no LiveSMI.
var ErrLiveSMIRefused = errors.New("the nvidia-smi backend runs this host's nvidia-smi")

// timeoutSetter is implemented by backends with a per-call deadline.
type timeoutSetter interface{ SetTimeout(time.Duration) }

// openNVML opens NVML under the deadline (nvmlInit can block on a wedged
// driver) and sets its per-GPU deadline.
func (o Options) openNVML(ctx context.Context) (Backend, error) {
	b, err := withDeadline(ctx, o.Timeout, "nvmlInit", "all", func(context.Context) (Backend, error) { return o.NewNVML() })
	if err != nil {
		return nil, err
	}
	if t, ok := b.(timeoutSetter); ok {
		t.SetTimeout(o.Timeout)
	}
	return b, nil
}

// Open selects and opens a backend. Auto on a live host tries NVML, then
// nvidia-smi, then returns the none backend with the reasons; auto with
// another --root uses the fake file when present, else none. It fails only
// for an explicit kind that cannot be opened, or a malformed fake file.
func Open(ctx context.Context, o Options) (Backend, error) {
	if o.Host == nil {
		return nil, errors.New("gpu.Open: no host filesystem")
	}
	if o.Runner == nil {
		o.Runner = ExecRunner{}
	}
	if o.LookPath == nil {
		o.LookPath = exec.LookPath
	}
	if o.FakeFile == "" {
		o.FakeFile = FakeFile
	}
	if o.NewNVML == nil {
		o.NewNVML = OpenNVML
	}
	kind := strings.ToLower(strings.TrimSpace(o.Kind))
	switch kind {
	case "", KindAuto:
		if !o.live() {
			b, err := OpenFake(o.Host, o.FakeFile)
			if errors.Is(err, fs.ErrNotExist) {
				return NewNone(fmt.Sprintf("--root is not / and has no %s", o.FakeFile)), nil
			}
			return b, err
		}
		var reasons []string
		b, err := o.openNVML(ctx)
		if err == nil {
			return b, nil
		}
		reasons = append(reasons, "nvml: "+err.Error())
		if _, lerr := o.LookPath("nvidia-smi"); lerr == nil {
			return NewSMITimeout(o.Runner, o.Timeout), nil
		}
		reasons = append(reasons, "nvidia-smi not found")
		if o.LiveRoot && errors.Is(err, ErrNVMLLibraryNotFound) {
			return NewNoneLibrary(strings.Join(reasons, "; ")), nil
		}
		return NewNone(strings.Join(reasons, "; ")), nil
	case KindNVML:
		b, err := o.openNVML(ctx)
		if err != nil {
			return nil, fmt.Errorf("--gpu-backend nvml: %w", err)
		}
		return b, nil
	case KindNVIDIASMI:
		if !o.live() && !o.LiveSMI {
			return nil, fmt.Errorf("--gpu-backend nvidia-smi with --root %s: %w, not the captured host; pass --gpu-smi-live to run it anyway, or describe the GPUs in %s under the root (--gpu-backend fake)",
				o.Host.Root(), ErrLiveSMIRefused, o.FakeFile)
		}
		return NewSMITimeout(o.Runner, o.Timeout), nil
	case KindFake:
		if o.LiveRoot && !o.Host.IsLive() {
			return nil, ErrFakeLiveRoot
		}
		b, err := OpenFake(o.Host, o.FakeFile)
		if err != nil {
			return nil, fmt.Errorf("--gpu-backend fake: %w", err)
		}
		return b, nil
	case KindNone:
		return none{reason: "--gpu-backend none", notAsked: true}, nil
	default:
		return nil, fmt.Errorf("unknown GPU backend %q (want %s)", o.Kind, strings.Join(Kinds, ", "))
	}
}

// none is the backend of a node without a driver.
type none struct {
	reason string
	// noLibrary: NVML's library could not be loaded (and nvidia-smi is
	// not on PATH): in a container, the runtime did not inject the driver.
	noLibrary bool
	// notAsked: the user chose --gpu-backend none; no driver was looked
	// for, so none is judged missing.
	notAsked bool
}

// NewNone returns a backend with no GPUs; reason says why.
func NewNone(reason string) Backend { return none{reason: reason} }

// NewNoneLibrary is NewNone for a process that found neither
// libnvidia-ml.so.1 nor nvidia-smi: its status says NVMLLibraryMissing,
// which Audit reports as gpu.backend (the container lacks the driver's
// user-space files) rather than gpu.driver (the host's driver is broken).
func NewNoneLibrary(reason string) Backend { return none{reason: reason, noLibrary: true} }

func (n none) Name() string { return KindNone }
func (n none) Status(context.Context) (Status, error) {
	s := Status{Backend: KindNone, Reason: "no NVIDIA driver: " + n.reason, NVMLLibraryMissing: n.noLibrary, NotAsked: n.notAsked}
	s.normalize()
	return s, nil
}
func (n none) SetPersistence(context.Context, string, bool) error {
	return fmt.Errorf("%w: %s", ErrNoDriver, n.reason)
}
func (n none) LockClocks(context.Context, string, ClockRange) error {
	return fmt.Errorf("%w: %s", ErrNoDriver, n.reason)
}
func (n none) ResetClocks(context.Context, string) error {
	return fmt.Errorf("%w: %s", ErrNoDriver, n.reason)
}
func (n none) Close() error { return nil }

var _ Backend = none{}

// FindGPU returns the GPU of s selected by sel: an index ("0"), a UUID
// (full or a unique prefix of at least "GPU-" plus 4 characters) or a PCI
// address in either form.
func FindGPU(s Status, sel string) (GPU, error) {
	sel = strings.TrimSpace(sel)
	var hits []GPU
	for _, g := range s.GPUs {
		switch {
		case fmt.Sprint(g.Index) == sel, strings.EqualFold(g.UUID, sel):
			return g, nil
		case len(sel) >= 8 && strings.HasPrefix(strings.ToUpper(g.UUID), strings.ToUpper(sel)):
			hits = append(hits, g)
		default:
			if a, err := NormalizePCIAddress(sel); err == nil && a == g.PCIAddress {
				return g, nil
			}
		}
	}
	switch len(hits) {
	case 1:
		return hits[0], nil
	case 0:
		return GPU{}, fmt.Errorf("%w %q (have %d GPUs)", ErrUnknownGPU, sel, len(s.GPUs))
	default:
		return GPU{}, fmt.Errorf("%w %q: prefix matches %d GPUs", ErrUnknownGPU, sel, len(hits))
	}
}

// SelectGPUs returns the GPUs named by sels (all GPUs when sels is empty),
// without duplicates, in index order.
func SelectGPUs(s Status, sels []string) ([]GPU, error) {
	if len(sels) == 0 {
		return append([]GPU{}, s.GPUs...), nil
	}
	seen := map[string]bool{}
	var out []GPU
	for _, sel := range sels {
		for _, part := range strings.Split(sel, ",") {
			if strings.TrimSpace(part) == "" {
				continue
			}
			if strings.EqualFold(strings.TrimSpace(part), "all") {
				return append([]GPU{}, s.GPUs...), nil
			}
			g, err := FindGPU(s, part)
			if err != nil {
				return nil, err
			}
			if !seen[g.UUID] {
				seen[g.UUID] = true
				out = append(out, g)
			}
		}
	}
	return out, nil
}
