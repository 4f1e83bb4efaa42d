package companion

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/internal/cli"
	"github.com/gpunode/gpunode/internal/k8s/admit"
	"github.com/gpunode/gpunode/internal/k8s/kubeletcfg"
	"github.com/gpunode/gpunode/internal/k8s/objects"
)

func (a *app) newK8sAdmitCommand() *cobra.Command {
	var nodeFile, kcFile, podsFile string
	var live bool
	var maxMasks int
	cmd := &cobra.Command{
		Use:   "admit --node NODE.yaml|--live --kubelet-config KC.yaml -f pods.yaml",
		Short: "Simulate kubelet's Topology, CPU, Memory and Device manager admission of pods",
		Long: `Admit pods in order on a node as kubelet v1.37 would, carrying the state from
one pod to the next: the Topology Manager (policy and scope from the
KubeletConfiguration) merges the hints of the Device, CPU (static) and Memory
(Static) managers, admits or rejects each pod with kubelet's reason
(TopologyAffinityError, SMTAlignmentError, UnexpectedAdmissionError, OutOfcpu,
...), and the managers allocate CPUs, memory per NUMA node and devices along
the merged hint. Rejected pods are explained: which resource's hints could
not align and what would make the pod fit.

The node comes from a node file (--node, see internal/k8s/node) or from this
host's live topology (--live, read through --root). pods.yaml holds one or
more v1 Pod documents, or a v1 List of pods.

Exit codes: 0 all pods admitted, 1 some pod rejected, 2 bad input (nothing
is admitted then), 3 failure.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (nodeFile == "") == !live {
				return cli.Usagef("give exactly one of --node NODE.yaml and --live")
			}
			if kcFile == "" {
				return cli.Usagef("--kubelet-config is required")
			}
			if podsFile == "" {
				return cli.Usagef("-f pods.yaml is required")
			}
			n, err := a.k8sNode(cmd.Context(), nodeFile, live)
			if err != nil {
				return err
			}
			kc, err := kubeletcfg.Load(kcFile, a.MaxInputBytes)
			if err != nil {
				return cli.WrapUsage(err)
			}
			var data []byte
			name := podsFile
			if podsFile == "-" {
				name = "stdin"
				data, err = objects.ReadAll(a.Stdin, name, a.MaxInputBytes)
			} else if data, err = objects.ReadFile(podsFile, a.MaxInputBytes); err != nil {
				err = fmt.Errorf("pods: %w", err)
			}
			if err != nil {
				return cli.WrapUsage(err)
			}
			list, err := admit.LoadPods(name, data)
			if err != nil {
				return cli.WrapUsage(err)
			}
			sim, err := admit.New(n, &kc.KC, admit.Options{MaxMasks: maxMasks})
			if err != nil {
				return cli.WrapUsage(fmt.Errorf("%s: kubelet would not start: %w", kcFile, err))
			}
			rep := sim.Run(list)
			return a.RenderFindings(rep, rep.Rejected > 0)
		},
	}
	f := cmd.Flags()
	f.StringVar(&nodeFile, "node", "", "node file (YAML) describing NUMA nodes, CPUs, memory and devices")
	f.BoolVar(&live, "live", false, "use this host's topology (read through --root) instead of --node")
	f.StringVar(&kcFile, "kubelet-config", "", "KubeletConfiguration file (kubelet.config.k8s.io/v1beta1)")
	f.StringVarP(&podsFile, "filename", "f", "", "pods to admit, in order: Pod documents or a v1 List ('-' for stdin)")
	f.IntVar(&maxMasks, "max-masks", 0, "bound on NUMA masks enumerated per resource (0 = 65536; kubelet enumerates all 2^N)")
	return cmd
}
