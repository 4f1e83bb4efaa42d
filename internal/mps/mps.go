// Package mps manages NVIDIA Multi-Process Service control daemons: one per
// GPU or per MIG device, each with its own pipe and log directory under a
// state directory (default /run/gpunode/mps/<device UUID>/{pipe,log}), so
// daemons never share a pipe (seed section 2.3, MIG + MPS). It starts and
// stops them, reads their clients ('ps') and static SM partitions
// ('lspart'), plans SM partitions (chunks -> SMs by architecture) and adds
// them ('sm_partition add').
//
// Every command goes through a gpu.Runner, so tests need neither the driver
// nor nvidia-cuda-mps-control. Starting a daemon is journaled (owner "mps",
// kind "mps.daemon"): a rollback sends it 'quit'.
//
// MPS does not partition memory: one client's out-of-memory can kill every
// client of the same server. NVIDIA recommends EXCLUSIVE_PROCESS compute mode
// with MPS except under MIG, where each GPU instance gets its own server.
package mps

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/journal"
	"github.com/gpunode/gpunode/internal/output"
)

// DefaultStateDir is where daemons get their pipe and log directories (a
// host path under --root).
const DefaultStateDir = "/run/gpunode/mps"

// ControlBinary is the MPS control program.
const ControlBinary = "nvidia-cuda-mps-control"

// Journal constants.
const (
	JournalOwner = "mps"
	StepDaemon   = "mps.daemon" // Target: device UUID; Original "stopped", New "running"
)

// Manager runs MPS control daemons on one host.
type Manager struct {
	Host     *hostfs.FS
	StateDir string
	Runner   gpu.Runner
	// Control is the control program (default ControlBinary).
	Control string
}

// Daemon is one control daemon serving one device.
type Daemon struct {
	// Device is the GPU or MIG device UUID the daemon serves
	// (CUDA_VISIBLE_DEVICES of the daemon).
	Device string `json:"device"`
	// GPU is the index of the physical GPU.
	GPU int `json:"gpu"`
	// MIG is true when Device is a MIG device.
	MIG bool `json:"mig,omitempty"`
	// PipeDir and LogDir are host paths.
	PipeDir string `json:"pipeDir"`
	LogDir  string `json:"logDir"`
	// Hint is advice about the device (e.g. its compute mode).
	Hint string `json:"hint,omitempty"`
}

var uuidRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(GPU|MIG)-[0-9A-Za-z-]+(/[0-9]+/[0-9]+)?$`) }) // compiled on first use: package inits run at every start

// ValidDevice reports whether s looks like a GPU or MIG UUID (the legacy
// MIG-GPU-<uuid>/<gi>/<ci> form included).
func ValidDevice(s string) bool { return len(s) <= 128 && uuidRE().MatchString(s) }

func (m *Manager) control() string {
	if m.Control == "" {
		return ControlBinary
	}
	return m.Control
}

func (m *Manager) stateDir() string {
	if m.StateDir == "" {
		return DefaultStateDir
	}
	return m.StateDir
}

// DaemonFor returns the daemon of device (a GPU or MIG UUID) on GPU index.
func (m *Manager) DaemonFor(device string, gpuIndex int, mig bool) (Daemon, error) {
	if !ValidDevice(device) {
		return Daemon{}, fmt.Errorf("device %q: not a GPU-... or MIG-... UUID", device)
	}
	dir := m.stateDir() + "/" + strings.ReplaceAll(device, "/", "_")
	return Daemon{Device: device, GPU: gpuIndex, MIG: mig, PipeDir: dir + "/pipe", LogDir: dir + "/log"}, nil
}

// Env is the environment of the daemon and of its clients (real paths on
// this machine, i.e. below --root).
func (m *Manager) Env(d Daemon) []string {
	return []string{
		"CUDA_VISIBLE_DEVICES=" + d.Device,
		"CUDA_MPS_PIPE_DIRECTORY=" + m.Host.Path(d.PipeDir),
		"CUDA_MPS_LOG_DIRECTORY=" + m.Host.Path(d.LogDir),
	}
}

// Running reports whether d's control pipe exists.
func (m *Manager) Running(d Daemon) bool {
	_, err := m.Host.Stat(d.PipeDir + "/control")
	return err == nil
}

// ask sends one command to d's control daemon.
func (m *Manager) ask(ctx context.Context, d Daemon, command string) (string, error) {
	out, err := m.Runner.Run(ctx, gpu.Cmd{Name: m.control(), Env: m.Env(d), Stdin: command + "\n"})
	if err != nil {
		return "", fmt.Errorf("mps %s on %s: %w", command, d.Device, err)
	}
	return string(out), nil
}

// StartCmd is the command that starts d (for plans and dry runs).
func (m *Manager) StartCmd(d Daemon, smPartitioning bool) gpu.Cmd {
	args := []string{"-d"}
	if smPartitioning {
		args = append(args, "-S")
	}
	return gpu.Cmd{Name: m.control(), Args: args, Env: m.Env(d)}
}

// StartAction returns the journaled action that creates d's directories
// and starts its control daemon (a rollback stops it); ok is false when d is
// already running (nothing to do). Run it with journal.Run.
func (m *Manager) StartAction(d Daemon, smPartitioning bool) (a journal.Action, ok bool) {
	if m.Running(d) {
		return journal.Action{}, false
	}
	step := journal.Step{Kind: StepDaemon, Target: d.Device, ID: "mps/" + d.Device, Path: d.PipeDir, Original: "stopped", New: "running"}
	return journal.Action{Step: step, Do: func(ctx context.Context) error {
		for _, dir := range []string{d.PipeDir, d.LogDir} {
			if _, err := m.Host.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("mps: %w", err)
			}
		}
		_, err := m.Runner.Run(ctx, m.StartCmd(d, smPartitioning))
		return err
	}}, true
}

// Stop sends 'quit' to d's control daemon. A stopped daemon is left alone.
func (m *Manager) Stop(ctx context.Context, d Daemon) (changed bool, err error) {
	if !m.Running(d) {
		return false, nil
	}
	if _, err := m.ask(ctx, d, "quit"); err != nil {
		return false, err
	}
	return true, nil
}

// RegisterJournalKinds registers the MPS step kind: reverting a started
// daemon sends it 'quit' (idempotent: a stopped daemon is left alone).
func RegisterJournalKinds(k *journal.Kinds, m *Manager) error {
	return k.Register(StepDaemon, func(ctx context.Context, _ *hostfs.FS, s journal.Step) error {
		if s.Original != "stopped" {
			return nil
		}
		d := Daemon{Device: s.Target, PipeDir: s.Path, LogDir: strings.TrimSuffix(s.Path, "/pipe") + "/log"}
		_, err := m.Stop(ctx, d)
		return err
	})
}

// SchemaVersion is the schema of Status.
const SchemaVersion = "gpunode.mps/v1"

// Status is the state of the daemons gpunode manages.
type Status struct {
	SchemaVersion string         `json:"schemaVersion"`
	StateDir      string         `json:"stateDir"`
	Daemons       []DaemonStatus `json:"daemons"`
	// Action is set by start/stop ("start", "stop", "start (dry run)").
	Action  string `json:"action,omitempty"`
	Journal string `json:"journal,omitempty"`
}

// DaemonStatus is one daemon and what it serves.
type DaemonStatus struct {
	Daemon
	Running bool `json:"running"`
	// Changed is set by start/stop when the daemon was started/stopped.
	Changed    bool        `json:"changed,omitempty"`
	Command    string      `json:"command,omitempty"`
	Env        []string    `json:"env"`
	Clients    []Process   `json:"clients,omitempty"`
	Partitions []Partition `json:"partitions,omitempty"`
	Error      string      `json:"error,omitempty"`
}

// Inspect reads d's clients (and SM partitions when withParts) through the
// control daemon. A daemon that is not running has no clients.
func (m *Manager) Inspect(ctx context.Context, d Daemon, withParts bool) DaemonStatus {
	ds := DaemonStatus{Daemon: d, Env: m.Env(d), Running: m.Running(d)}
	if !ds.Running {
		return ds
	}
	out, err := m.ask(ctx, d, "ps")
	if err == nil {
		ds.Clients, err = ParsePS(out)
	}
	if err != nil {
		ds.Error = err.Error()
		return ds
	}
	if withParts {
		if ds.Partitions, err = m.Partitions(ctx, d); err != nil {
			ds.Error = err.Error()
		}
	}
	return ds
}

// Partitions reads d's static SM partitions ('lspart') from its running
// control daemon.
func (m *Manager) Partitions(ctx context.Context, d Daemon) ([]Partition, error) {
	out, err := m.ask(ctx, d, "lspart")
	if err != nil {
		return nil, err
	}
	return ParseLsPart(out)
}

// AddPartition asks d's daemon (started with -S) for a static SM partition
// of chunks chunks on GPU gpuUUID; it returns the CUDA_MPS_SM_PARTITION value.
func (m *Manager) AddPartition(ctx context.Context, d Daemon, gpuUUID string, chunks int) (string, error) {
	if chunks <= 0 {
		return "", fmt.Errorf("sm_partition add: %d chunks: want at least 1", chunks)
	}
	if !m.Running(d) {
		return "", fmt.Errorf("sm_partition add: no MPS daemon for %s (start one with -S: gpunode mps start --sm-partitioning)", d.Device)
	}
	out, err := m.ask(ctx, d, fmt.Sprintf("sm_partition add %s %d", gpuUUID, chunks))
	if err != nil {
		return "", err
	}
	return ParsePartitionAdd(out)
}

// ListItems implements output.Lister: one row per daemon.
func (s Status) ListItems() any { return s.Daemons }

// WriteTable implements output.Tabler.
func (s Status) WriteTable(w io.Writer, o output.Options) error {
	g := output.NewGrid("GPU", "DEVICE", "RUNNING", "CHANGED", "CLIENTS", "PARTITIONS", "PIPE")
	for _, d := range s.Daemons {
		parts := 0
		for _, p := range d.Partitions {
			if p.ID != "" {
				parts++
			}
		}
		g.AddRow(gpuIndex(d.GPU), d.Device, yes(d.Running), yes(d.Changed), fmt.Sprint(len(d.Clients)), fmt.Sprint(parts), d.PipeDir)
	}
	if o.NoHeaders {
		return output.Print(w, g, o)
	}
	if s.Action != "" {
		line := "mps " + s.Action
		if s.Journal != "" {
			line += ", journal " + s.Journal
		}
		fmt.Fprintln(w, line)
	}
	if len(s.Daemons) == 0 {
		_, err := fmt.Fprintln(w, "no MPS devices")
		return err
	}
	if err := output.Print(w, g, o); err != nil {
		return err
	}
	for _, d := range s.Daemons {
		fmt.Fprintf(w, "\n%s (GPU %s)\n", d.Device, gpuIndex(d.GPU))
		if d.Command != "" {
			fmt.Fprintf(w, "  command: %s\n", d.Command)
		}
		fmt.Fprintf(w, "  client env: %s\n", strings.Join(d.Env, " "))
		for _, c := range d.Clients {
			fmt.Fprintf(w, "  client pid %d server %d: %s\n", c.PID, c.Server, c.Command)
		}
		for _, p := range d.Partitions {
			if p.ID != "" {
				fmt.Fprintf(w, "  partition %s: %s chunks, %s SMs, clients %s\n", p.ID, num(p.UsedChunks), num(p.UsedSMs), p.Clients)
			}
		}
		if d.Hint != "" {
			fmt.Fprintf(w, "  hint: %s\n", d.Hint)
		}
		if d.Error != "" {
			fmt.Fprintf(w, "  error: %s\n", d.Error)
		}
	}
	return nil
}

func gpuIndex(i int) string {
	if i < 0 {
		return "-"
	}
	return fmt.Sprint(i)
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func num(p *int) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}

// Targets resolves --gpu and --mig selections against a GPU status into the
// devices that get a daemon: one per selected GPU, except that a GPU in MIG
// mode needs --mig (its GPU UUID is refused: MPS runs per MIG device). mig
// "all" selects every MIG device of the selected GPUs.
func (m *Manager) Targets(st gpu.Status, gpuSel, migSel []string) ([]Daemon, error) {
	var out []Daemon
	if len(migSel) > 0 {
		want := map[string]bool{}
		all := false
		for _, s := range migSel {
			for _, p := range strings.Split(s, ",") {
				p = strings.TrimSpace(p)
				if strings.EqualFold(p, "all") {
					all = true
				} else if p != "" {
					want[p] = true
				}
			}
		}
		gpus, err := gpu.SelectGPUs(st, gpuSel)
		if err != nil {
			return nil, err
		}
		// known lists the MIG devices the backend reports; when it reports
		// some, a UUID outside them is a typo, not a device it cannot see.
		var known []string
		for _, g := range st.GPUs {
			for _, gi := range g.MIGInstances {
				for _, ci := range gi.ComputeInstances {
					if ci.UUID != "" {
						known = append(known, ci.UUID)
					}
				}
			}
		}
		for _, g := range gpus {
			for _, gi := range g.MIGInstances {
				for _, ci := range gi.ComputeInstances {
					if ci.UUID == "" || !(all || want[ci.UUID]) {
						continue
					}
					delete(want, ci.UUID)
					d, err := m.DaemonFor(ci.UUID, g.Index, true)
					if err != nil {
						return nil, err
					}
					out = append(out, d)
				}
			}
		}
		for _, u := range slices.Sorted(maps.Keys(want)) {
			if len(known) > 0 && strings.HasPrefix(u, "MIG-") {
				return nil, fmt.Errorf("--mig %q: no such MIG device on the selected GPUs (the GPU backend lists %s)", u, strings.Join(clipStrings(known, 4), ", "))
			}
			// A MIG UUID gpunode cannot see (a backend that lists no MIG
			// devices, e.g. nvidia-smi): accept it when it is well-formed.
			d, err := m.DaemonFor(u, -1, true)
			if err != nil || !strings.HasPrefix(u, "MIG-") {
				return nil, fmt.Errorf("--mig %q: not a MIG device UUID", u)
			}
			out = append(out, d)
		}
		if len(out) == 0 {
			return nil, errors.New("--mig: no MIG devices selected (is MIG enabled and are instances created?)")
		}
		return out, nil
	}
	gpus, err := gpu.SelectGPUs(st, gpuSel)
	if err != nil {
		return nil, err
	}
	for _, g := range gpus {
		if g.MIG != nil && g.MIG.Current {
			if len(gpuSel) == 0 {
				continue // all GPUs: skip MIG GPUs silently
			}
			return nil, fmt.Errorf("GPU %d is in MIG mode: MPS runs one daemon per MIG device; use --mig <MIG UUID>|all", g.Index)
		}
		d, err := m.DaemonFor(g.UUID, g.Index, false)
		if err != nil {
			return nil, err
		}
		if g.ComputeMode != "" && g.ComputeMode != "Exclusive_Process" {
			d.Hint = fmt.Sprintf("compute mode is %s: NVIDIA recommends EXCLUSIVE_PROCESS with MPS so that only the MPS server uses the GPU (nvidia-smi -i %s -c EXCLUSIVE_PROCESS)", g.ComputeMode, g.UUID)
		}
		out = append(out, d)
	}
	return out, nil
}

// Discover lists the daemons that have a directory under the state dir
// (for status and stop without a GPU backend).
func (m *Manager) Discover() ([]Daemon, error) {
	entries, err := m.Host.ReadDir(m.stateDir())
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var out []Daemon
	for _, e := range entries {
		dev := e.Name()
		d, err := m.DaemonFor(strings.ReplaceAll(dev, "_", "/"), -1, strings.HasPrefix(dev, "MIG-"))
		if err != nil {
			continue // not a daemon directory
		}
		out = append(out, d)
	}
	return out, nil
}

// clipStrings returns the first n of ss, and "... N more" for the rest.
func clipStrings(ss []string, n int) []string {
	if len(ss) <= n {
		return ss
	}
	return append(ss[:n:n], fmt.Sprintf("... %d more", len(ss)-n))
}
