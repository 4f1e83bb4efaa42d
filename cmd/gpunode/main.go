// Command gpunode makes GPU nodes fast and keeps them that way.
//
// See README.md for the user guide and docs/ARCHITECTURE.md for the package map.
package main

import (
	"os"

	"github.com/gpunode/gpunode/internal/cli"
)

func main() {
	// SIGINT and SIGTERM cancel the command's context; one that has not
	// stopped within cli.SignalGrace is ended (see cli.MainWithSignals).
	os.Exit(cli.MainWithSignals(cli.OSEnv(os.Args[1:])))
}
