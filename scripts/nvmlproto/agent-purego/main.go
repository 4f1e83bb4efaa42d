// Command agent-purego is cmd/gpunode-agent with purego linked (the agent
// of a purego NVML backend, without its bindings): scripts/nvmlproto/measure.sh
// compares its RSS with the cgo and the static agent.
package main

import (
	"os"

	_ "github.com/ebitengine/purego"

	"github.com/gpunode/gpunode/internal/cli"
	"github.com/gpunode/gpunode/internal/cli/agentcli"
)

func main() {
	os.Exit(cli.MainWithSignals(cli.OSEnv(os.Args[1:]), agentcli.Command))
}
