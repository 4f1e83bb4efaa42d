// Command bindonly is 'gpunode bind -q -- CMD' without the rest of gpunode:
// the same discovery, plan and exec, but none of the other commands'
// dependencies (whose package initialisation dominates gpunode's start-up).
// BenchmarkExecOverhead builds it to separate bind's own cost from the
// binary's.
package main

import (
	"context"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/gpunode/gpunode/internal/bind"
	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/topo"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bindonly:", err)
		os.Exit(3)
	}
}

func run() error {
	fsys, err := hostfs.New("/")
	if err != nil {
		return err
	}
	t, err := topo.Discover(context.Background(), fsys)
	if err != nil {
		return err
	}
	p, err := bind.Resolve(context.Background(), t, bind.Request{Command: os.Args[1:], Getenv: os.Getenv}, bind.Sources{Policy: bind.LivePolicy{}})
	if err != nil {
		return err
	}
	return bind.Exec(p, bind.Runtime{FS: fsys, Environ: os.Environ(), Exec: unix.Exec})
}
