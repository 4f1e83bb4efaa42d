package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// From a checkout without an installed companion, a forwarded command runs
// `go run CHECKOUT/cmd/gpunode-full ARGS` (issue 28 item 9); outside one,
// the error says how to install the companion.
func TestForwardFromCheckoutGoRuns(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if got := checkoutRoot(filepath.Join(root, "internal", "cli")); got != root {
		t.Fatalf("checkoutRoot(internal/cli) = %q, want %q", got, root)
	}
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "go.mod"), []byte("module example.com/other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(other, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := checkoutRoot(filepath.Join(other, "sub")); got != "" {
		t.Fatalf("checkoutRoot in another module = %q, want none", got)
	}

	bin := t.TempDir()
	goBin := filepath.Join(bin, "go")
	if err := os.WriteFile(goBin, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var gotPath string
	var gotArgv []string
	a := &App{Env: Env{Args: []string{"k8s", "lint", "-f", "x.yaml"},
		Getenv: func(k string) string {
			if k == "PATH" {
				return bin
			}
			return ""
		},
		Exec: func(p string, argv, _ []string) error { gotPath, gotArgv = p, argv; return nil },
	}}
	if err := a.forward("k8s"); err != nil {
		t.Fatalf("forward: %v", err)
	}
	want := []string{goBin, "run", filepath.Join(root, "cmd", "gpunode-full"), "k8s", "lint", "-f", "x.yaml"}
	if gotPath != goBin || strings.Join(gotArgv, " ") != strings.Join(want, " ") {
		t.Fatalf("exec %s %q, want %q", gotPath, gotArgv, want)
	}
	// No go on PATH: the install advice, not an exec.
	a.Getenv = func(string) string { return "" }
	gotPath = ""
	if err := a.forward("k8s"); err == nil || !strings.Contains(err.Error(), "gpunode-full not found") || gotPath != "" {
		t.Fatalf("without go: err %v, exec %q", err, gotPath)
	}
}
