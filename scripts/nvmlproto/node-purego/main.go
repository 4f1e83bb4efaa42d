// Command node-purego is cmd/gpunode with purego linked (what a purego
// NVML backend in the node binary would cost at every start, before any
// NVML call): scripts/nvmlproto/measure.sh builds it with CGO_ENABLED=0.
package main

import (
	"os"

	_ "github.com/ebitengine/purego"

	"github.com/gpunode/gpunode/internal/cli"
)

func main() { os.Exit(cli.MainWithSignals(cli.OSEnv(os.Args[1:]))) }
