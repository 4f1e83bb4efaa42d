// Command gpunode-agent is the fleet agent's binary: gpunode's node
// commands plus 'agent', without the Kubernetes client, the DRA allocator
// and the other libraries gpunode-full links (k8s, bench and report still
// forward there). Its file pages are most of a long-running agent's RSS,
// so the DaemonSet runs this one; 'gpunode agent' execs it when it is
// installed beside gpunode.
package main

import (
	"os"

	"github.com/gpunode/gpunode/internal/cli"
	"github.com/gpunode/gpunode/internal/cli/agentcli"
)

func main() {
	os.Exit(cli.MainWithSignals(cli.OSEnv(os.Args[1:]), agentcli.Command))
}
