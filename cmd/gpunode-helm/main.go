// Command gpunode-helm renders Helm charts for 'gpunode k8s lint' with the
// Helm SDK, so that gpunode-full does not link the SDK (whose package
// initialisers would cost every gpunode-full start). It reads one JSON
// request on stdin and writes one JSON response on stdout (the protocol of
// internal/k8s/helmexec); exit 0 rendered, 2 a chart or values file at
// fault, 3 a failure. Install it beside gpunode-full; the DaemonSet image
// does not need it.
package main

import (
	"fmt"
	"os"

	"github.com/gpunode/gpunode/internal/k8s/helmchart"
	"github.com/gpunode/gpunode/internal/k8s/helmexec"
)

func main() {
	if len(os.Args) > 1 {
		fmt.Fprintf(os.Stderr, "usage: %s < REQUEST.json (a %s request; 'gpunode k8s lint' runs it)\n", helmexec.HelperName, helmexec.SchemaVersion)
		os.Exit(helmexec.ExitInput)
	}
	os.Exit(helmexec.Serve(os.Stdin, os.Stdout, helmchart.RenderRequest))
}
