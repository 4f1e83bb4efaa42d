package companion

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/internal/cli"
	"github.com/gpunode/gpunode/internal/k8s/cluster"
)

// registerClusterFlags adds kubectl's connection flags to the k8s command,
// for every subcommand that reads from a cluster when a file is not given.
func registerClusterFlags(cmd *cobra.Command) {
	var f cluster.Flags
	f.Register(cmd.PersistentFlags())
}

// k8sCluster builds the client from the (inherited) connection flags.
func (a *app) k8sCluster(cmd *cobra.Command) (*cluster.Client, error) {
	fs := cmd.Flags()
	var f cluster.Flags
	var err error
	if f.Kubeconfig, err = fs.GetString("kubeconfig"); err != nil {
		return nil, err
	}
	f.Context, _ = fs.GetString("context")
	f.Namespace, _ = fs.GetString("namespace")
	f.RequestTimeout, _ = fs.GetDuration("request-timeout")
	c, err := f.New()
	if err != nil {
		return nil, clusterErr(err)
	}
	return c, nil
}

// clusterErr maps a cluster read error to gpunode's exit codes: a bad
// kubeconfig or reference is the caller's input (2), a failed read is a
// failure (3).
func clusterErr(err error) error {
	var ce *cluster.ConfigError
	if errors.As(err, &ce) {
		return cli.WrapUsage(err)
	}
	return err
}

// notef prints an informational line to stderr (what was read where).
func (a *app) notef(format string, args ...any) {
	fmt.Fprintf(a.Stderr, "note: "+format+"\n", args...)
}
