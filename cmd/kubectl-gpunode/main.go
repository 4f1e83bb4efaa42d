// Command kubectl-gpunode is gpunode-full as a kubectl plugin: on PATH,
// 'kubectl gpunode k8s place ...' runs it with the arguments after
// 'gpunode', and the k8s commands read the cluster kubectl reads
// (--kubeconfig, --context, -n, --request-timeout, KUBECONFIG).
package main

import (
	"os"

	"github.com/gpunode/gpunode/internal/cli"
	"github.com/gpunode/gpunode/internal/cli/companion"
)

func main() {
	os.Exit(cli.MainWithSignals(cli.OSEnv(os.Args[1:]), companion.Commands()...))
}
