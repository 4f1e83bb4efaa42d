package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FindHelper finds a helper as forward finds gpunode-agent: its variable,
// then $PATH (beside the test binary there is none), then `go run` from the
// checkout; the variable must name an executable.
func TestFindHelper(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	write := func(name string) string {
		p := filepath.Join(bin, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	goBin := write("go")
	env := map[string]string{"PATH": bin}
	a := &App{Env: Env{Getenv: func(k string) string { return env[k] }}}

	// From the checkout, with go on PATH: go run CHECKOUT/cmd/gpunode-helm.
	h, err := a.FindHelper("gpunode-helm", "GPUNODE_HELM")
	want := []string{goBin, "run", filepath.Join(root, "cmd", "gpunode-helm")}
	if err != nil || !h.GoRun || strings.Join(h.Argv, " ") != strings.Join(want, " ") {
		t.Fatalf("checkout: %+v %v, want go run %q", h, err, want)
	}
	// A helper on PATH wins over go run.
	onPath := write("gpunode-helm")
	if h, err = a.FindHelper("gpunode-helm", "GPUNODE_HELM"); err != nil || h.GoRun || len(h.Argv) != 1 || h.Argv[0] != onPath {
		t.Fatalf("on PATH: %+v %v", h, err)
	}
	// The variable wins over both, and must be an executable.
	named := filepath.Join(t.TempDir(), "my-helm")
	if err := os.WriteFile(named, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env["GPUNODE_HELM"] = named
	if h, err = a.FindHelper("gpunode-helm", "GPUNODE_HELM"); err != nil || len(h.Argv) != 1 || h.Argv[0] != named {
		t.Fatalf("variable: %+v %v", h, err)
	}
	env["GPUNODE_HELM"] = filepath.Join(bin, "nope")
	if _, err = a.FindHelper("gpunode-helm", "GPUNODE_HELM"); !errors.Is(err, ErrNoHelper) || !strings.Contains(err.Error(), "GPUNODE_HELM=") {
		t.Fatalf("variable naming no file: %v", err)
	}
	// A command the checkout does not have, and nothing on PATH: the
	// install advice.
	delete(env, "GPUNODE_HELM")
	if _, err = a.FindHelper("gpunode-nosuch", "GPUNODE_NOSUCH"); !errors.Is(err, ErrNoHelper) || !strings.Contains(err.Error(), "go build -o DIR/ ./cmd/gpunode-nosuch") {
		t.Fatalf("unknown helper: %v", err)
	}
}
