// Command gpunode makes GPU nodes fast and keeps them that way.
//
// See README.md for the user guide and docs/ARCHITECTURE.md for the package map.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/gpunode/gpunode/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, cli.OSEnv(os.Args[1:]))
	stop()
	os.Exit(code)
}
