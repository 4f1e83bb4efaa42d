package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// forwardEnv is an Env whose Exec records what it would run.
func forwardEnv(t *testing.T, getenv map[string]string, args ...string) (Env, *[][]string, *bytes.Buffer) {
	t.Helper()
	var execs [][]string
	var errb bytes.Buffer
	env := Env{
		Args: args, Stdin: strings.NewReader(""), Stdout: &bytes.Buffer{}, Stderr: &errb,
		Getenv:  func(k string) string { return getenv[k] },
		Environ: func() []string { return []string{"A=1"} },
		Exec: func(argv0 string, argv, envv []string) error {
			execs = append(execs, append([]string{argv0, strings.Join(envv, " ")}, argv...))
			return nil
		},
	}
	return env, &execs, &errb
}

func fakeCompanion(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, CompanionName)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// The companion's commands (and their help and completion) exec
// gpunode-full with the same arguments; the node commands never do.
func TestForwardedCommandsExecTheCompanion(t *testing.T) {
	full := fakeCompanion(t, t.TempDir())
	for _, args := range [][]string{
		{"k8s", "admit", "--pod", "p.yaml"},
		{"--root", "/x", "-o", "json", "k8s", "merge", "-f", "-"},
		{"bench", "numa"},
		{"agent", "npd-check"},
		{"report", "--html", "r.html"},
		{"help", "k8s"},
		{"k8s", "--help"},
		{"__complete", "k8s", "ad"},
	} {
		env, execs, errb := forwardEnv(t, map[string]string{EnvCompanion: full}, args...)
		if code := Main(context.Background(), env); code != 0 || errb.Len() != 0 {
			t.Errorf("%v: exit %d, stderr %q", args, code, errb)
			continue
		}
		if len(*execs) != 1 {
			t.Errorf("%v: %d execs, want 1", args, len(*execs))
			continue
		}
		e := (*execs)[0]
		if e[0] != full || e[2] != full || !slices.Equal(e[3:], args) {
			t.Errorf("%v: exec %q, want %s with the same arguments", args, e, full)
		}
		if e[1] != "A=1" {
			t.Errorf("%v: environment %q: want the caller's", args, e[1])
		}
	}
	for _, args := range [][]string{{"version"}, {"help", "mig"}, {"mig", "--help"}, {"__complete", "mig", ""}} {
		env, execs, errb := forwardEnv(t, map[string]string{EnvCompanion: full}, args...)
		Main(context.Background(), env)
		if len(*execs) != 0 {
			t.Errorf("%v: exec'd %q (stderr %s); node commands run in gpunode", args, *execs, errb)
		}
	}
}

// With the companion's commands passed in (gpunode-full), nothing forwards.
func TestCompanionRunsItsOwnCommands(t *testing.T) {
	ran := false
	extra := func(a *App) *cobra.Command {
		return &cobra.Command{Use: "k8s", RunE: func(*cobra.Command, []string) error { ran = true; return nil }}
	}
	env, execs, errb := forwardEnv(t, nil, "k8s")
	if code := Main(context.Background(), env, extra); code != 0 || !ran || len(*execs) != 0 {
		t.Fatalf("exit %d, ran %v, execs %q, stderr %s", code, ran, *execs, errb)
	}
}

func TestForwardFailures(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "plain")
	if err := os.WriteFile(notExec, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	onPath := fakeCompanion(t, t.TempDir())
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	realSelf, err := filepath.EvalSymlinks(self)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		getenv map[string]string
		code   int
		exec   string
		stderr string
	}{
		{"not found", map[string]string{"PATH": dir}, ExitFailure, "", "gpunode-full not found (looked in "},
		// The printed install command names where gpunode is installed.
		{"not found, the fix", map[string]string{"PATH": dir}, ExitFailure, "", "go build -o " + filepath.Join(filepath.Dir(realSelf), "gpunode-full") + " ./cmd/gpunode-full"},
		{"GPUNODE_FULL not executable", map[string]string{EnvCompanion: notExec}, ExitFailure, "", "GPUNODE_FULL=" + notExec + ": not an executable file"},
		{"found on PATH", map[string]string{"PATH": "relative:" + dir + ":" + filepath.Dir(onPath)}, ExitOK, onPath, ""},
		{"loop", map[string]string{EnvCompanion: self}, ExitFailure, "", "is gpunode itself"},
	} {
		env, execs, errb := forwardEnv(t, tc.getenv, "k8s", "admit")
		code := Main(context.Background(), env)
		if code != tc.code || !strings.Contains(errb.String(), tc.stderr) {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", tc.name, code, errb, tc.code, tc.stderr)
		}
		if tc.exec == "" && len(*execs) != 0 || tc.exec != "" && (len(*execs) != 1 || (*execs)[0][0] != tc.exec) {
			t.Errorf("%s: execs %q, want %q", tc.name, *execs, tc.exec)
		}
	}
}

// 'agent' execs the lean gpunode-agent when there is one ($GPUNODE_AGENT,
// then on PATH), before the companion; the other forwarded commands never
// do; without gpunode-agent 'agent' falls back to the companion.
func TestAgentForwardsToGpunodeAgent(t *testing.T) {
	full := fakeCompanion(t, t.TempDir())
	agentDir := t.TempDir()
	agentBin := filepath.Join(agentDir, AgentName)
	if err := os.WriteFile(agentBin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	notExec := filepath.Join(t.TempDir(), AgentName)
	if err := os.WriteFile(notExec, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		getenv map[string]string
		args   []string
		code   int
		exec   string
		stderr string
	}{
		{"GPUNODE_AGENT", map[string]string{EnvAgent: agentBin, EnvCompanion: full}, []string{"agent", "--interval", "30s"}, ExitOK, agentBin, ""},
		{"on PATH before GPUNODE_FULL", map[string]string{"PATH": agentDir, EnvCompanion: full}, []string{"--root", "/host", "agent"}, ExitOK, agentBin, ""},
		{"npd-check too", map[string]string{"PATH": agentDir, EnvCompanion: full}, []string{"agent", "npd-check", "gpu.ecc"}, ExitOK, agentBin, ""},
		{"help agent", map[string]string{"PATH": agentDir, EnvCompanion: full}, []string{"help", "agent"}, ExitOK, agentBin, ""},
		{"k8s never", map[string]string{"PATH": agentDir, EnvCompanion: full}, []string{"k8s", "pods"}, ExitOK, full, ""},
		{"none: the companion", map[string]string{"PATH": t.TempDir(), EnvCompanion: full}, []string{"agent"}, ExitOK, full, ""},
		{"GPUNODE_AGENT not executable", map[string]string{EnvAgent: notExec, EnvCompanion: full}, []string{"agent"}, ExitFailure, "", "GPUNODE_AGENT=" + notExec + ": not an executable file"},
	} {
		env, execs, errb := forwardEnv(t, tc.getenv, tc.args...)
		code := Main(context.Background(), env)
		if code != tc.code || !strings.Contains(errb.String(), tc.stderr) {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", tc.name, code, errb, tc.code, tc.stderr)
		}
		if tc.exec == "" && len(*execs) != 0 || tc.exec != "" && (len(*execs) != 1 || (*execs)[0][0] != tc.exec || !slices.Equal((*execs)[0][3:], tc.args)) {
			t.Errorf("%s: execs %q, want %q with the same arguments", tc.name, *execs, tc.exec)
		}
	}
}

// gpunode-agent passes only 'agent': it runs that one and still forwards
// k8s, bench and report to the companion.
func TestAgentBinaryForwardsTheOthers(t *testing.T) {
	full := fakeCompanion(t, t.TempDir())
	ran := false
	extra := func(a *App) *cobra.Command {
		return &cobra.Command{Use: "agent", RunE: func(*cobra.Command, []string) error { ran = true; return nil }}
	}
	env, execs, errb := forwardEnv(t, map[string]string{EnvCompanion: full}, "agent")
	if code := Main(context.Background(), env, extra); code != 0 || !ran || len(*execs) != 0 {
		t.Fatalf("agent: exit %d, ran %v, execs %q, stderr %s", code, ran, *execs, errb)
	}
	for _, args := range [][]string{{"k8s", "pods"}, {"bench", "numa"}, {"report", "--html", "x"}} {
		env, execs, errb := forwardEnv(t, map[string]string{EnvCompanion: full}, args...)
		if code := Main(context.Background(), env, extra); code != 0 || len(*execs) != 1 || (*execs)[0][0] != full {
			t.Errorf("%v: exit %d, execs %q, stderr %s; want %s", args, code, *execs, errb, full)
		}
	}
}
