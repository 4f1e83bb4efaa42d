// Command cobrafloor is the start-up floor of a cobra CLI: a root command
// with two persistent flags and one subcommand, 'version', that prints a
// line, as 'gpunode version' does. scripts/bench.sh builds it with
// CGO_ENABLED=0 (as the node binary) and prints its time over 'true' beside
// gpunode's and a static hello world's: what gpunode pays above this floor
// is its own (its packages' initialisers and pages), what the floor pays
// above the hello world is cobra's, pflag's and their imports' (net,
// text/template).
package main

import (
	"os"

	"github.com/spf13/cobra"
)

func main() {
	var root, output string
	cmd := &cobra.Command{Use: "cobrafloor", SilenceUsage: true, SilenceErrors: true}
	cmd.PersistentFlags().StringVar(&root, "root", "/", "host filesystem root")
	cmd.PersistentFlags().StringVarP(&output, "output", "o", "table", "output format")
	cmd.AddCommand(&cobra.Command{
		Use:  "version",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			_, err := c.OutOrStdout().Write([]byte("cobrafloor (devel) " + output + "\n"))
			return err
		},
	})
	if err := cmd.Execute(); err != nil {
		os.Stderr.WriteString("cobrafloor: " + err.Error() + "\n")
		os.Exit(2)
	}
}
