// Command gpunode-full is gpunode with every command linked in: the node
// commands and the ones gpunode forwards here (k8s, bench, agent, report),
// whose libraries cost gpunode's other commands too much at start-up.
// Install it beside gpunode; it also works alone.
package main

import (
	"os"

	"github.com/gpunode/gpunode/internal/cli"
	"github.com/gpunode/gpunode/internal/cli/companion"
)

func main() {
	os.Exit(cli.MainWithSignals(cli.OSEnv(os.Args[1:]), companion.Commands()...))
}
