package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"

	"github.com/gpunode/gpunode/internal/gpu"
)

// The node binary is built without cgo (a static executable: no dynamic
// loader or libc start-up, 0.5 ms less CPU per start here;
// docs/ARCHITECTURE.md, "Start-up of the node binary"), and NVML needs
// cgo. So when a command of that binary would open NVML (--gpu-backend
// nvml, or auto on a live root), it runs again, whole,
// in an installed executable that has NVML: gpunode-agent (the node
// commands plus the agent), else gpunode-full. Without either it stays
// here, where auto falls back to nvidia-smi and nvml fails with
// gpu.ErrNoNVMLBuild.
//
// The hand-off happens at the backend's opening, so only the commands that
// reach the driver pay the second start (bind asks the driver only when
// sysfs cannot answer), and only while the process has printed nothing,
// changed nothing under --root and read nothing from stdin or a pipe: the
// second run starts from the same state.

// EnvNVMLForwarded is set in the environment of the executable a node
// binary without NVML hands a GPU command to; a process that finds it set
// never hands the command on again.
const EnvNVMLForwarded = "GPUNODE_NVML_FORWARDED"

// ErrHandedOff is returned by a command whose run was handed to another
// executable whose exec returned (only an Env.Exec of tests returns on
// success); Main exits 0 without a message.
var ErrHandedOff = errors.New("the command ran in another executable")

// haveNVML reports whether this build has the NVML backend.
func (a *App) haveNVML() bool {
	if a.Env.HaveNVML != nil {
		return a.Env.HaveNVML()
	}
	return gpu.HaveNVML
}

// handOffForNVML hands the command to an executable with NVML (see above)
// when this build has none, kind would try NVML (auto does on a live root:
// --live-root, or a host opened at /), and nothing has been printed,
// changed or read from stdin or a pipe. It returns nil when the command
// stays here, ErrHandedOff when the exec returned without error (tests),
// or the exec's failure.
func (a *App) handOffForNVML(kind string) error {
	if a.haveNVML() || a.companion || a.getenv(EnvNVMLForwarded) != "" {
		return nil
	}
	live := a.LiveRoot || (a.host != nil && a.host.IsLive())
	switch k := strings.ToLower(strings.TrimSpace(kind)); {
	case k == gpu.KindNVML:
	case (k == "" || k == gpu.KindAuto) && live:
	default:
		return nil
	}
	if a.printed.Load() || a.consumed.Load() || (a.host != nil && a.host.Changed()) {
		return nil
	}
	path, ok := a.nvmlExecutable()
	if !ok || a.Exec == nil {
		return nil
	}
	env := append(a.EnvironList(), EnvNVMLForwarded+"=1")
	if err := a.Exec(path, append([]string{path}, a.Args...), env); err != nil {
		return fmt.Errorf("run %s (it has NVML; this gpunode was built without cgo): %w", path, err)
	}
	return ErrHandedOff
}

// nvmlExecutable finds an installed executable with the node commands and
// NVML: $GPUNODE_AGENT, gpunode-agent beside this executable or on $PATH,
// then $GPUNODE_FULL, gpunode-full beside it or on $PATH. Never this
// executable itself, and never a 'go run' from a checkout (a compile is no
// hand-off).
func (a *App) nvmlExecutable() (string, bool) {
	var cands []string
	if p := a.getenv(EnvAgent); p != "" {
		cands = append(cands, p)
	} else if p, ok := a.lookBeside(AgentName); ok {
		cands = append(cands, p)
	}
	if p := a.getenv(EnvCompanion); p != "" {
		cands = append(cands, p)
	} else if p, ok := a.lookBeside(CompanionName); ok {
		cands = append(cands, p)
	}
	self, _ := os.Executable()
	for _, p := range cands {
		if isExecutable(p) && (self == "" || !sameFile(self, p)) {
			return p, true
		}
	}
	return "", false
}

// watchWriter notes that something was written through it.
type watchWriter struct {
	w       io.Writer
	printed *atomic.Bool
}

func (w watchWriter) Write(p []byte) (int, error) {
	w.printed.Store(true)
	return w.w.Write(p)
}

// watchReader notes that something was read through it.
type watchReader struct {
	r    io.Reader
	read *atomic.Bool
}

func (r watchReader) Read(p []byte) (int, error) {
	r.read.Store(true)
	return r.r.Read(p)
}
