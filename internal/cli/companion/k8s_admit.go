package companion

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/internal/cli"
	"github.com/gpunode/gpunode/internal/k8s/admit"
	"github.com/gpunode/gpunode/internal/k8s/kubeletcfg"
	"github.com/gpunode/gpunode/internal/k8s/node"
	"github.com/gpunode/gpunode/internal/k8s/objects"
)

func (a *app) newK8sAdmitCommand() *cobra.Command {
	var nodeFile, nodeArg, kcFile, podsFile string
	var live bool
	var maxMasks int
	cmd := &cobra.Command{
		Use:   "admit --node NODE.yaml|--node NAME|--node-file NODE.yaml|--live --kubelet-config KC.yaml -f pods.yaml",
		Short: "Simulate kubelet's Topology, CPU, Memory and Device manager admission of pods",
		Long: `Admit pods in order on a node as kubelet v1.37 would, carrying the state from
one pod to the next: the Topology Manager (policy and scope from the
KubeletConfiguration) merges the hints of the Device, CPU (static) and Memory
(Static) managers, admits or rejects each pod with kubelet's reason
(TopologyAffinityError, SMTAlignmentError, UnexpectedAdmissionError, OutOfcpu,
...), and the managers allocate CPUs, memory per NUMA node and devices along
the merged hint. Rejected pods are explained: which resource's hints could
not align and what would make the pod fit.

The node comes from a node file (--node-file, or --node with a path, a
.yaml/.yml/.json name or an existing file; see internal/k8s/node), from this
host's live topology (--live, read through --root), or from the live cluster
(--node NAME: a Node name, read through --kubeconfig/--context like the other
k8s commands, GET only). From the cluster gpunode reads the Node (its
allocatable) and the pods bound to it that are not terminal (field selector
spec.nodeName=NAME); those are admitted first as the node's state (the
report's boundPods) and the pods of -f are admitted on top. The NUMA layout
comes from the gpunode agent running on that node: its /topo, read through
the API server's pods/proxy ("agent-topo"), else the agent's NFD label
gpunode.io/numa.nodes with the Node's CPUs, memory and nvidia.com/gpu split
evenly over the NUMA nodes ("nfd-labels"). The report says which
(node.numaSource, and "NUMA layout:" in the table). With neither, admit
stops with exit 2 and asks for --node-file or the agent. A Node that does
not exist, a 401/403 or an unreachable server is exit 3.
pods.yaml holds one or more v1 Pod documents, or a v1 List of pods.

  gpunode-full k8s admit --node gpu-node-7 --kubelet-config kc.yaml -f pod.yaml

Exit codes: 0 all pods admitted, 1 some pod rejected, 2 bad input (nothing
is admitted then), 3 failure.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			liveName := ""
			if nodeArg != "" {
				if nodeArgIsFile(nodeArg) {
					if nodeFile != "" {
						return cli.Usagef("give one of --node and --node-file")
					}
					nodeFile = nodeArg
				} else {
					liveName = nodeArg
				}
			}
			given := 0
			for _, b := range []bool{nodeFile != "", liveName != "", live} {
				if b {
					given++
				}
			}
			if given != 1 {
				return cli.Usagef("give exactly one of --node NODE.yaml|NAME, --node-file NODE.yaml and --live")
			}
			if kcFile == "" {
				return cli.Usagef("--kubelet-config is required")
			}
			if podsFile == "" {
				return cli.Usagef("-f pods.yaml is required")
			}
			var n *node.Node
			var err error
			if liveName == "" {
				if n, err = a.k8sNode(cmd.Context(), nodeFile, live); err != nil {
					return err
				}
			}
			// The files are checked before the cluster is read.
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
			var ln *liveNode
			if liveName != "" {
				if ln, err = a.k8sLiveNode(cmd, liveName); err != nil {
					return err
				}
				n = ln.model
			}
			sim, err := admit.New(n, &kc.KC, admit.Options{MaxMasks: maxMasks})
			if err != nil {
				return cli.WrapUsage(fmt.Errorf("%s: kubelet would not start: %w", kcFile, err))
			}
			var rep *admit.Report
			if ln != nil {
				rep = sim.RunBound(ln.bound, list)
				rep.Node.NUMASource, rep.Node.Allocatable = ln.source, ln.allocatable
			} else {
				rep = sim.Run(list)
			}
			return a.RenderFindings(rep, rep.Rejected > 0)
		},
	}
	f := cmd.Flags()
	f.StringVar(&nodeArg, "node", "", "node file (YAML) describing NUMA nodes, CPUs, memory and devices, or the name of a Node in the cluster")
	f.StringVar(&nodeFile, "node-file", "", "node file (YAML), never a Node name")
	f.BoolVar(&live, "live", false, "use this host's topology (read through --root) instead of --node")
	f.StringVar(&kcFile, "kubelet-config", "", "KubeletConfiguration file (kubelet.config.k8s.io/v1beta1)")
	f.StringVarP(&podsFile, "filename", "f", "", "pods to admit, in order: Pod documents or a v1 List ('-' for stdin)")
	f.IntVar(&maxMasks, "max-masks", 0, "bound on NUMA masks enumerated per resource (0 = 65536; kubelet enumerates all 2^N)")
	return cmd
}
