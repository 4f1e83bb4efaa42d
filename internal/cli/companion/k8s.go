package companion

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/internal/cli"
	"github.com/gpunode/gpunode/internal/k8s/kubeletcfg"
	"github.com/gpunode/gpunode/internal/k8s/node"
	"github.com/gpunode/gpunode/internal/k8s/topology"
	"github.com/gpunode/gpunode/internal/topo"
	"github.com/gpunode/gpunode/internal/userfile"
)

func (a *app) newK8sCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "k8s",
		Short: "Simulate kubelet's resource managers (Topology Manager merge, kubelet config lint, pod admission) and check running pods' NUMA alignment",
		Long: `Explain and predict what kubelet v1.37 does with a node's NUMA topology: the
Topology Manager's hint merge, the KubeletConfiguration rules that stop kubelet
from starting, a recommended configuration for GPU nodes, and pod admission;
and check, on a running node, that each pod's GPUs, CPUs and memory share
their NUMA nodes (k8s pods, from the kubelet's pod-resources API).`,
		Args: cobra.NoArgs,
	}
	registerClusterFlags(cmd)
	cmd.AddCommand(a.newK8sMergeCommand(), a.newK8sKubeletCommand(), a.newK8sAdmitCommand(), a.newK8sPlaceCommand(), a.newK8sDRACommand(), a.newK8sLintCommand(), a.newK8sPodsCommand())
	return cmd
}

func (a *app) newK8sMergeCommand() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "merge -f HINTS.json",
		Short: "Merge topology hints like kubelet's Topology Manager and say whether the pod would be admitted",
		Long: `Run the Topology Manager's hint merge (kubelet v1.37.2, same result as the
upstream policies) on hints given as JSON, without the Cartesian product that
makes kubelet take minutes on 8 NUMA nodes.

Input (-f FILE, or -f - for stdin):
  {"policy": "best-effort|restricted|single-numa-node|none",
   "options": {"prefer-closest-numa-nodes": "true", "max-allowable-numa-nodes": "16"},
   "numaNodes": [0, 1],
   "distances": [[10, 21], [21, 10]],          (rows/columns in numaNodes order)
   "providers": [{"cpu": [{"affinity": [0], "preferred": true},
                          {"affinity": [0, 1], "preferred": false}],
                  "nvidia.com/gpu": null}]}   (null = don't care, [] = cannot satisfy)

Output: {"affinity": [..] | null, "preferred": bool, "admit": bool}.
Exit status: 0 admitted, 1 rejected (TopologyAffinityError), 2 bad input.`,
		Example: `  gpunode k8s merge -f hints.json -o json
  echo '{"policy":"single-numa-node","numaNodes":[0,1],"providers":[{"nvidia.com/gpu":[{"affinity":[0,1],"preferred":true}]}]}' | gpunode k8s merge -f -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return cli.Usagef("merge: -f HINTS.json is required (use -f - for stdin)")
			}
			var req *topology.MergeRequest
			var err error
			name := file
			if file == "-" {
				name = "stdin"
				req, err = topology.ReadMergeRequest(a.Stdin, name, a.MaxInputBytes)
			} else {
				b, rerr := userfile.Read(file, a.MaxInputBytes)
				if rerr != nil {
					return cli.WrapUsage(rerr)
				}
				req, err = topology.DecodeMergeRequest(file, b)
			}
			if err != nil {
				return cli.WrapUsage(err)
			}
			res, err := topology.RunMergeRequest(req)
			if err != nil {
				return cli.WrapUsage(fmt.Errorf("%s: %w", name, err))
			}
			return a.RenderFindings(res, !res.Admit)
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "hints JSON file, - for stdin")
	return cmd
}

func (a *app) newK8sKubeletCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kubelet",
		Short: "Lint a KubeletConfiguration or recommend one for a GPU node",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(a.newK8sKubeletLintCommand(), a.newK8sKubeletRecommendCommand())
	return cmd
}

// k8sNode loads the node model from --node, or discovers it from --root when
// live is set; it returns nil when neither applies.
func (a *app) k8sNode(ctx context.Context, nodeFile string, live bool) (*node.Node, error) {
	if nodeFile != "" {
		n, err := node.Load(nodeFile, a.MaxInputBytes)
		if err != nil {
			return nil, cli.WrapUsage(err)
		}
		return n, nil
	}
	if !live {
		return nil, nil
	}
	fs, err := a.Host()
	if err != nil {
		return nil, err
	}
	t, err := topo.Discover(ctx, fs)
	if err != nil {
		return nil, fmt.Errorf("discover topology: %w", err)
	}
	n, err := node.FromTopology(t)
	if err != nil {
		return nil, fmt.Errorf("node model from live topology: %w", err)
	}
	return n, nil
}

func (a *app) newK8sKubeletLintCommand() *cobra.Command {
	var nodeFile string
	var live bool
	cmd := &cobra.Command{
		Use:   "lint KUBELET-CONFIG.yaml [--node NODE.yaml | --live]",
		Short: "Report every KubeletConfiguration setting that stops kubelet v1.37 or silently defeats NUMA alignment",
		Long: `Check a KubeletConfiguration (kubelet.config.k8s.io/v1beta1) against the rules
kubelet v1.37.2 applies at startup, reporting kubelet's own error text:
reservedMemory must sum to kubeReserved + systemReserved + evictionHard per
resource, the static CPU policy needs a CPU reservation, unknown, gated
(alpha/beta) or incompatible CPU/Topology/Memory Manager policy options,
NUMA node references, max-allowable-numa-nodes below 8 or below the node's
NUMA count, and more. Warnings flag settings kubelet accepts but ignores or
that quietly defeat NUMA alignment.

With --node (a node file) or --live (discover the machine under --root) the
rules that need the machine run too.

Exit status: 0 clean, 1 errors or warnings found, 2 bad input.`,
		Example: `  gpunode k8s kubelet lint /var/lib/kubelet/config.yaml --live
  gpunode k8s kubelet lint kc.yaml --node node.yaml -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if nodeFile != "" && live {
				return cli.Usagef("lint: --node and --live are exclusive")
			}
			c, err := kubeletcfg.Load(args[0], a.MaxInputBytes)
			if err != nil {
				return cli.WrapUsage(err)
			}
			n, err := a.k8sNode(cmd.Context(), nodeFile, live || cmd.Flags().Changed("root"))
			if err != nil {
				return err
			}
			r := kubeletcfg.Lint(c, n)
			return a.RenderFindings(r, r.Problems() > 0)
		},
	}
	cmd.Flags().StringVar(&nodeFile, "node", "", "node file (YAML) describing the machine")
	cmd.Flags().BoolVar(&live, "live", false, "discover the machine under --root (default /)")
	return cmd
}

func (a *app) newK8sKubeletRecommendCommand() *cobra.Command {
	var nodeFile, profile string
	cmd := &cobra.Command{
		Use:   "recommend [--profile training|inference] [--node NODE.yaml]",
		Short: "Print a KubeletConfiguration for this node (or a node file) that aligns CPUs, memory and GPUs",
		Long: `Print the KubeletConfiguration fields for NUMA-aligned GPU workloads on this
machine (discovered under --root) or on the machine of --node:

  - cpuManagerPolicy static, reservedSystemCPUs spread over the NUMA nodes with
    CPUs (whole cores, SMT siblings together), full-pcpus-only with SMT;
  - memoryManagerPolicy Static with a reservedMemory that sums exactly to
    kubeReserved + systemReserved + evictionHard memory.available;
  - topologyManagerPolicy restricted (training: pods may need GPUs from several
    NUMA nodes) or single-numa-node (inference), topologyManagerScope pod;
    max-allowable-numa-nodes on machines with more than 8 NUMA nodes.

The default output is commented YAML; -o json / -o yaml print the bare
configuration. The result passes 'gpunode k8s kubelet lint'.`,
		Example: `  gpunode k8s kubelet recommend --profile inference
  gpunode k8s kubelet recommend --node node.yaml --profile training > kubelet-numa.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			n, err := a.k8sNode(cmd.Context(), nodeFile, true)
			if err != nil {
				return err
			}
			rec, err := kubeletcfg.Recommend(n, profile)
			if err != nil {
				return cli.WrapUsage(err)
			}
			return a.Render(*rec)
		},
	}
	cmd.Flags().StringVar(&nodeFile, "node", "", "node file (YAML); default: discover the machine under --root")
	cmd.Flags().StringVar(&profile, "profile", kubeletcfg.ProfileTraining, "workload profile: training or inference")
	_ = cmd.RegisterFlagCompletionFunc("profile", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{kubeletcfg.ProfileTraining, kubeletcfg.ProfileInference}, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}
