package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/spf13/cobra"
)

const handOffRoot = "../../testdata/hosts/dgx-h100"

func fakeExecutable(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// handOffEnv is forwardEnv for a build without NVML (noNVML) or with it.
func handOffEnv(t *testing.T, noNVML bool, getenv map[string]string, args ...string) (Env, *[][]string, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	env, execs, errb := forwardEnv(t, getenv, args...)
	have := !noNVML
	env.HaveNVML = func() bool { return have }
	return env, execs, env.Stdout.(*bytes.Buffer), errb
}

// A node binary without NVML runs a command that would open NVML again in
// gpunode-agent (else gpunode-full), same arguments, the caller's
// environment plus GPUNODE_NVML_FORWARDED=1, before it prints anything.
func TestNoNVMLBuildHandsGPUCommandsToTheAgent(t *testing.T) {
	dir := t.TempDir()
	agent := fakeExecutable(t, dir, AgentName)
	full := fakeExecutable(t, dir, CompanionName)
	live := []string{"--root", handOffRoot, "--live-root"}
	cases := []struct {
		name   string
		getenv map[string]string
		args   []string
		want   string // the executable handed to; "" none
		// goesOn: the command reads GPUs as a best-effort source (audit's
		// layer, bind's driver view), so when a test's Exec returns it
		// carries on with what it has; a real exec does not return.
		goesOn bool
	}{
		{"gpu status, auto, live root", map[string]string{EnvAgent: agent}, append(slices.Clone(live), "gpu", "status"), agent, false},
		{"audit, auto, live root", map[string]string{EnvAgent: agent}, append(slices.Clone(live), "audit"), agent, true},
		{"tune status, live root", map[string]string{EnvAgent: agent}, append(slices.Clone(live), "tune", "status"), agent, true},
		{"explicit nvml on a captured tree", map[string]string{EnvAgent: agent}, []string{"--root", handOffRoot, "gpu", "status", "--gpu-backend", "nvml"}, agent, false},
		{"bind asking the driver", map[string]string{EnvAgent: agent}, append(slices.Clone(live), "bind", "--dry-run", "--gpu", "0", "--gpu-backend", "nvml", "--", "true"), agent, true},
		{"no agent: the companion", map[string]string{EnvCompanion: full}, append(slices.Clone(live), "gpu", "status"), full, false},
		{"agent preferred over the companion", map[string]string{EnvAgent: agent, EnvCompanion: full}, append(slices.Clone(live), "gpu", "status"), agent, false},
		// Stays here:
		{"captured tree, auto: the fake file", map[string]string{EnvAgent: agent}, []string{"--root", handOffRoot, "gpu", "status"}, "", false},
		{"fake backend", map[string]string{EnvAgent: agent}, []string{"--root", handOffRoot, "gpu", "status", "--gpu-backend", "fake"}, "", false},
		{"none backend", map[string]string{EnvAgent: agent}, append(slices.Clone(live), "gpu", "status", "--gpu-backend", "none"), "", false},
		{"nvidia-smi backend", map[string]string{EnvAgent: agent}, append(slices.Clone(live), "gpu", "status", "--gpu-backend", "nvidia-smi"), "", false},
		{"already handed once", map[string]string{EnvAgent: agent, EnvNVMLForwarded: "1"}, []string{"--root", handOffRoot, "gpu", "status", "--gpu-backend", "nvml"}, "", false},
		{"no executable with NVML", map[string]string{"PATH": dir + "/none"}, []string{"--root", handOffRoot, "gpu", "status", "--gpu-backend", "nvml"}, "", false},
		{"command without GPUs", map[string]string{EnvAgent: agent}, append(slices.Clone(live), "topo", "numa"), "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env, execs, _, errb := handOffEnv(t, true, c.getenv, c.args...)
			code := Main(context.Background(), env)
			if c.want == "" {
				if len(*execs) != 0 {
					t.Fatalf("exec'd %q; want the command run here (exit %d, stderr %s)", *execs, code, errb)
				}
				return
			}
			if len(*execs) != 1 || (!c.goesOn && code != 0) {
				t.Fatalf("exit %d, %d execs (%q), stderr %s; want one hand-off, exit 0", code, len(*execs), *execs, errb)
			}
			e := (*execs)[0]
			if e[0] != c.want || e[2] != c.want || !slices.Equal(e[3:], c.args) {
				t.Errorf("exec %q; want %s with the same arguments %q", e, c.want, c.args)
			}
			if e[1] != "A=1 "+EnvNVMLForwarded+"=1" {
				t.Errorf("environment %q; want the caller's plus %s=1", e[1], EnvNVMLForwarded)
			}
			if !c.goesOn && errb.Len() != 0 {
				t.Errorf("stderr %q; the hand-off prints nothing", errb)
			}
		})
	}
}

// A build with NVML, and the executables that are handed commands, never
// hand them on.
func TestNVMLBuildsKeepGPUCommands(t *testing.T) {
	agent := fakeExecutable(t, t.TempDir(), AgentName)
	args := []string{"--root", handOffRoot, "--live-root", "gpu", "status", "--gpu-backend", "nvml"}
	env, execs, _, _ := handOffEnv(t, false, map[string]string{EnvAgent: agent}, args...)
	Main(context.Background(), env)
	if len(*execs) != 0 {
		t.Errorf("a build with NVML exec'd %q", *execs)
	}
	env, execs, _, _ = handOffEnv(t, true, map[string]string{EnvAgent: agent}, args...)
	Main(context.Background(), env, func(*App) *cobra.Command { return &cobra.Command{Use: "extra"} })
	if len(*execs) != 0 {
		t.Errorf("a companion (extra commands) exec'd %q", *execs)
	}
}

// Once the process has printed or changed something, the command stays:
// running it again elsewhere would repeat it.
func TestHandOffOnlyBeforeAnythingHappened(t *testing.T) {
	agent := fakeExecutable(t, t.TempDir(), AgentName)
	env, execs, _, _ := handOffEnv(t, true, map[string]string{EnvAgent: agent})
	a := &App{Env: env, LiveRoot: true}
	if err := a.handOffForNVML("auto"); !errors.Is(err, ErrHandedOff) || len(*execs) != 1 {
		t.Fatalf("fresh process: %v, %d execs; want a hand-off", err, len(*execs))
	}
	a.printed.Store(true)
	if err := a.handOffForNVML("auto"); err != nil || len(*execs) != 1 {
		t.Errorf("after printing: %v, %d execs; want none", err, len(*execs))
	}
	root := t.TempDir()
	host, err := hostfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	b := &App{Env: env, host: host, LiveRoot: true}
	if err := host.WriteFileAtomic("/f", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := b.handOffForNVML("auto"); err != nil || len(*execs) != 1 {
		t.Errorf("after a write under the root: %v, %d execs; want none", err, len(*execs))
	}
	// Auto on a captured tree never asks NVML, so it stays.
	captured, err := hostfs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := &App{Env: env, host: captured}
	if err := c.handOffForNVML("auto"); err != nil || len(*execs) != 1 {
		t.Errorf("auto, not live: %v, %d execs; want none", err, len(*execs))
	}
	// Auto with the host opened at / (no --live-root) asks NVML, so it goes.
	slash, err := hostfs.New("/")
	if err != nil {
		t.Fatal(err)
	}
	e := &App{Env: env, host: slash}
	if err := e.handOffForNVML("auto"); !errors.Is(err, ErrHandedOff) || len(*execs) != 2 {
		t.Errorf("auto, root /: %v, %d execs; want a hand-off", err, len(*execs))
	}
	// A failed exec is an error naming the executable.
	env.Exec = func(string, []string, []string) error { return os.ErrPermission }
	d := &App{Env: env}
	if err := d.handOffForNVML("nvml"); err == nil || !strings.Contains(err.Error(), agent) || !errors.Is(err, os.ErrPermission) {
		t.Errorf("failed exec: %v; want an error naming %s", err, agent)
	}
}

// Without an executable to hand to, the static build's auto falls back and
// an explicit nvml names what to install.
func TestNoNVMLBuildMessage(t *testing.T) {
	if !strings.Contains(gpu.ErrNoNVMLBuild.Error(), AgentName) {
		t.Errorf("%q does not name %s", gpu.ErrNoNVMLBuild, AgentName)
	}
}

// A command that has read its input from stdin (mig apply -f -) stays: the
// executable it would be handed to finds stdin drained and would run on
// nothing (or on the rest of a stream).
func TestHandOffNotAfterStdinWasRead(t *testing.T) {
	agent := fakeExecutable(t, t.TempDir(), AgentName)
	cfg := "version: v1\nmig-configs:\n  all-disabled:\n    - devices: all\n      mig-enabled: false\n"
	for _, args := range [][]string{
		{"--root", handOffRoot, "--live-root", "mig", "apply", "-f", "-", "-c", "all-disabled", "--dry-run"},
		{"--root", handOffRoot, "--live-root", "mig", "assert", "-f", "-", "-c", "all-disabled"},
	} {
		env, execs, _, errb := handOffEnv(t, true, map[string]string{EnvAgent: agent}, args...)
		env.Stdin = strings.NewReader(cfg)
		Main(context.Background(), env)
		if len(*execs) != 0 {
			t.Errorf("%q: exec'd %q after reading the config from stdin; want the command run here (stderr %s)", args, *execs, errb)
		}
	}
	// The same command with the file named hands off.
	f := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(f, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	env, execs, _, errb := handOffEnv(t, true, map[string]string{EnvAgent: agent}, "--root", handOffRoot, "--live-root", "mig", "assert", "-f", f, "-c", "all-disabled")
	Main(context.Background(), env)
	if len(*execs) != 1 {
		t.Errorf("config in a file: %d execs (stderr %s); want one hand-off", len(*execs), errb)
	}
}

// The marker of a hand-off is for the executable handed to, not for what
// that runs: a workload that bind (or container run) starts, and any
// gpunode inside it (a per-rank 'gpunode bind' under torchrun), get the
// environment without it, so their own hand-off still happens.
func TestHandOffMarkerNotPassedOn(t *testing.T) {
	a := &App{Env: Env{Environ: func() []string {
		return []string{"A=1", EnvNVMLForwarded + "=1", "B=2"}
	}}}
	if got := strings.Join(a.EnvironList(), " "); got != "A=1 B=2" {
		t.Errorf("EnvironList() = %q; want %s dropped", got, EnvNVMLForwarded)
	}
	// And the hand-off still adds it, once.
	agent := fakeExecutable(t, t.TempDir(), AgentName)
	env, execs, _, _ := handOffEnv(t, true, map[string]string{EnvAgent: agent})
	env.Environ = func() []string { return []string{"A=1", EnvNVMLForwarded + "=1"} }
	b := &App{Env: env}
	if err := b.handOffForNVML("nvml"); !errors.Is(err, ErrHandedOff) || len(*execs) != 1 {
		t.Fatalf("%v, %d execs; want a hand-off", err, len(*execs))
	}
	if got := (*execs)[0][1]; got != "A=1 "+EnvNVMLForwarded+"=1" {
		t.Errorf("hand-off environment %q", got)
	}
}

// The same for a named file that is a pipe (-f /dev/stdin, -f <(...)):
// reading it drains it as reading stdin does.
func TestHandOffNotAfterAPipeWasRead(t *testing.T) {
	agent := fakeExecutable(t, t.TempDir(), AgentName)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := w.WriteString("version: v1\nmig-configs:\n  all-disabled:\n    - devices: all\n      mig-enabled: false\n"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	p := fmt.Sprintf("/dev/fd/%d", r.Fd())
	env, execs, _, errb := handOffEnv(t, true, map[string]string{EnvAgent: agent}, "--root", handOffRoot, "--live-root", "mig", "assert", "-f", p, "-c", "all-disabled")
	Main(context.Background(), env)
	if len(*execs) != 0 {
		t.Errorf("exec'd %q after reading the config from a pipe (%s); want the command run here (stderr %s)", *execs, p, errb)
	}
	if strings.Contains(errb.String(), "all-disabled") && strings.Contains(errb.String(), "not found") {
		t.Errorf("the pipe was not read: %s", errb)
	}
}

// And for a tune profile read from a pipe (audit --profile <(...)).
func TestHandOffNotAfterAProfilePipeWasRead(t *testing.T) {
	agent := fakeExecutable(t, t.TempDir(), AgentName)
	profile := func(t *testing.T) string {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		if _, err := w.WriteString("apiVersion: gpunode.tune/v1\nname: piped\ninclude: training\nsettings:\n  vm.swappiness: 1\n"); err != nil {
			t.Fatal(err)
		}
		w.Close()
		return fmt.Sprintf("/dev/fd/%d", r.Fd())
	}
	env, execs, _, errb := handOffEnv(t, true, map[string]string{EnvAgent: agent}, "--root", handOffRoot, "--live-root", "audit", "--profile", profile(t))
	Main(context.Background(), env)
	if len(*execs) != 0 {
		t.Errorf("exec'd %q after reading the profile from a pipe; want the command run here (stderr %s)", *execs, errb)
	}
	// The same profile in a file hands off.
	f := filepath.Join(t.TempDir(), "piped.yaml")
	if err := os.WriteFile(f, []byte("apiVersion: gpunode.tune/v1\nname: piped\ninclude: training\nsettings:\n  vm.swappiness: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env, execs, _, errb = handOffEnv(t, true, map[string]string{EnvAgent: agent}, "--root", handOffRoot, "--live-root", "audit", "--profile", f)
	Main(context.Background(), env)
	if len(*execs) != 1 {
		t.Errorf("profile in a file: %d execs (stderr %s); want one hand-off", len(*execs), errb)
	}
}
