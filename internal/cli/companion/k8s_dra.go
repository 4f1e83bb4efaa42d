package companion

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/gpunode/gpunode/internal/cli"
	"github.com/gpunode/gpunode/internal/k8s/dra"
	"github.com/gpunode/gpunode/internal/k8s/objects"
	"github.com/gpunode/gpunode/internal/topo"
)

func (a *app) newK8sDRACommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dra",
		Short: "Dynamic Resource Allocation what-if: this node's ResourceSlices, and whether claims fit, where, and why not",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(a.newK8sDRASlicesCommand(), a.newK8sDRAAllocateCommand())
	return cmd
}

func (a *app) newK8sDRASlicesCommand() *cobra.Command {
	var migMode, nodeName string
	var gf cli.GPUFlags
	cmd := &cobra.Command{
		Use:   "slices [--mig none|static|dynamic] [--node-name N]",
		Short: "Print the ResourceSlices the NVIDIA DRA driver (gpu.nvidia.com) would publish for this node",
		Long: `Build the resource.k8s.io/v1 ResourceSlices of the NVIDIA GPU DRA driver for
this node (--root, the GPU backend, the MIG catalogue), as a v1 List:

  none     full GPUs gpu-<index> with the driver's attributes, pciBusID,
           pcieRoot (the GPU's root complex) and numaNode
  static   as none, and GPUs in MIG mode publish their existing MIG devices
           (gpu-<i>-mig-<profile id>-<start>-<size>)
  dynamic  every MIG placement as a partitionable device consuming the GPU's
           counter set gpu-<i>-counter-set (multiprocessors, copy-engines,
           decoders, encoders, jpeg-engines, ofa-engines, memory,
           memory-slice-0..7); counter sets in their own slices, one device
           slice per GPU, one pool named after the node

MIG engine counts are gpunode's model of NVIDIA's published profile tables.`,
		Example: `  gpunode k8s dra slices --mig dynamic -o yaml > slices.yaml
  gpunode --root testdata/hosts/dgx-h100 k8s dra slices --node-name dgx-01`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			host, err := a.Host()
			if err != nil {
				return err
			}
			if nodeName == "" {
				name, herr := host.ReadString("/proc/sys/kernel/hostname")
				if herr != nil || strings.TrimSpace(name) == "" {
					name = "node"
				}
				// The kubelet's node name is the host name, lower-cased.
				nodeName = strings.ToLower(strings.TrimSpace(name))
			} else if err := checkNodeNameFlag("--node-name", nodeName); err != nil {
				return err
			}
			t, err := topo.Discover(ctx, host)
			if err != nil {
				return err
			}
			st, err := a.GPUStatus(ctx, gf.Backend())
			if err != nil {
				return err
			}
			if len(st.GPUs) == 0 {
				reason := st.Reason
				if reason == "" {
					reason = "it reports no GPUs"
				}
				a.Warnf("no GPUs from the GPU backend %s (%s): the slice has no devices", st.Backend, reason)
			}
			l, err := dra.Slices(dra.SliceOptions{NodeName: nodeName, MIG: migMode, Topology: t, Status: st, Catalog: a.MIGCatalogue()})
			if err != nil {
				return cli.WrapUsage(err)
			}
			for _, w := range l.Warnings {
				a.Warnf("%s", w)
			}
			return a.Render(l)
		},
	}
	gf.Register(cmd, false)
	cmd.Flags().StringVar(&migMode, "mig", dra.MIGNone, "MIG devices: none, static (existing instances) or dynamic (every placement, partitionable)")
	cmd.Flags().StringVar(&nodeName, "node-name", "", "node name for spec.nodeName and the pool (default: the host name)")
	return cmd
}

func (a *app) newK8sDRAAllocateCommand() *cobra.Command {
	var slicesF, classesF, claimsF, allocatedF, podF, templatesF, fromCluster string
	var nodes []string
	var explain bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "allocate --slices S --classes C --claims X [--allocated A] [--node NAME] [--explain] [--timeout 5s] [--pod P --templates T]",
		Short: "Say whether ResourceClaims fit on a node as kube-scheduler would allocate them, on which devices, and if not why",
		Long: `Allocate ResourceClaims together (as for one pod) on each node, with the
semantics of kube-scheduler v1.37's structured allocator and default feature
gates: ExactCount and All, firstAvailable, CEL selectors of class and request
(upstream's CEL), matchAttribute/distinctAttribute, shared counters
(partitionable devices), taints and tolerations, adminAccess, consumable
capacity, binding conditions, 32 devices per claim, slice node selectors and
incomplete pools.

gpunode's exact search decides: a "no" is proven (bounds per attribute
value, matching, counter capacity, memoisation) without the upstream
depth-first search; a "yes" gives its devices, a valid allocation (the
scheduler's first fit where the claims fit easily). The upstream allocator
(k8s.io/dynamic-resource-allocation) runs only where the search cannot
decide: features it does not model (consumable capacity), an allocator error
to report, its node budget spent.

Each node's decision is bounded by --timeout (default 5s, at most 10s:
kube-scheduler's DRA filter gives up after 10 s). A node not decided in time
is "undecided within T", with what was left in explain.reason, and fits
false, as the scheduler treats it.

Inputs as 'kubectl get ... -o yaml|json' prints them (documents or a List;
resource.k8s.io/v1, v1beta2, v1beta1):
  --slices     ResourceSlices          --classes    DeviceClasses
  --claims     ResourceClaims to allocate (with --pod: the claims it names)
  --allocated  ResourceClaims with status.allocation (their devices are in use)
  --pod, --templates   a Pod and its ResourceClaimTemplates
  --node       node names to try (default: every node the slices name)

Output -o json: {"schemaVersion":"gpunode.k8s.dra.allocate/v1","nodes":[{"node",
"fits","allocations":[{"claim":"ns/name","results":[{"request","driver","pool",
"device"}]}],"undecided","explain"}]}.

Against a live cluster (--kubeconfig, --context, -n, --request-timeout as
kubectl): without --slices, the ResourceSlices, DeviceClasses (unless
--classes) and every allocated ResourceClaim (unless --allocated; their
devices are in use) are listed from the API server, and a --pod's named
claims and templates come from its namespace. --from-cluster pod/NAME reads
a pending pod ("why is my pod Pending?") instead of --pod.

Exit codes: 0 some node fits, 1 none, 2 bad input, 3 none fits and some node
is undecided within --timeout, or the cluster could not be read.`,
		Example: `  gpunode k8s dra allocate --slices slices.yaml --classes classes.yaml --claims claim.yaml --explain
  gpunode k8s dra allocate --slices s.yaml --classes c.yaml --pod pod.yaml --templates t.yaml -o json
  kubectl gpunode k8s dra allocate -n team-a --from-cluster pod/trainer-0 --explain`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			live := slicesF == "" || fromCluster != ""
			if !live && (classesF == "" || (claimsF == "" && podF == "")) {
				return cli.Usagef("allocate: --slices, --classes and --claims (or --pod) are required (without --slices they come from the cluster)")
			}
			if claimsF == "" && podF == "" && fromCluster == "" {
				return cli.Usagef("allocate: --claims, --pod or --from-cluster pod/NAME is required")
			}
			if fromCluster != "" && podF != "" {
				return cli.Usagef("allocate: give --pod or --from-cluster, not both")
			}
			if (podF == "") != (templatesF == "") && templatesF != "" {
				return cli.Usagef("allocate: --templates needs --pod")
			}
			var in *dra.Input
			var err error
			if live {
				in, err = a.liveDRAInput(cmd, draFiles{classesF, claimsF, allocatedF, podF, templatesF}, fromCluster)
				if err != nil {
					return err
				}
			} else if in, err = loadDRAInput(slicesF, classesF, claimsF, allocatedF, podF, templatesF, a.MaxInputBytes); err != nil {
				return cli.WrapUsage(err)
			}
			if timeout <= 0 || timeout > dra.SchedulerFilterTimeout {
				return cli.Usagef("allocate: --timeout %s: %v", timeout, dra.ErrTimeoutRange)
			}
			if err := checkDRANodes(in, nodes); err != nil {
				return err
			}
			in.Nodes = nodes
			rep, err := dra.Run(cmd.Context(), in, dra.Options{Explain: explain, Timeout: timeout})
			if err != nil {
				var ie *dra.InputError
				if errors.As(err, &ie) {
					return cli.WrapUsage(err)
				}
				return err
			}
			if !explain {
				for i := range rep.Nodes {
					if rep.Nodes[i].Fits && rep.Nodes[i].Explain != nil && rep.Nodes[i].Explain.Solver == "upstream" {
						rep.Nodes[i].Explain = nil
					}
				}
			}
			if !rep.Fits && rep.Undecided {
				if err := a.Render(rep); err != nil {
					return err
				}
				var names []string
				for _, n := range rep.Nodes {
					if n.Undecided {
						names = append(names, n.Node)
					}
				}
				return fmt.Errorf("no node fits and %s undecided within %s (--timeout)", strings.Join(names, ", "), timeout)
			}
			return a.RenderFindings(rep, !rep.Fits)
		},
	}
	f := cmd.Flags()
	f.StringVar(&slicesF, "slices", "", "ResourceSlices (YAML or JSON, documents or a List)")
	f.StringVar(&classesF, "classes", "", "DeviceClasses")
	f.StringVar(&claimsF, "claims", "", "ResourceClaims to allocate together")
	f.StringVar(&allocatedF, "allocated", "", "allocated ResourceClaims (status.allocation set): their devices are in use")
	f.StringVar(&podF, "pod", "", "a Pod whose spec.resourceClaims name the claims (with --templates)")
	f.StringVar(&templatesF, "templates", "", "ResourceClaimTemplates of --pod")
	f.StringSliceVar(&nodes, "node", nil, "node names to try (default: every node the slices name)")
	f.BoolVar(&explain, "explain", false, "explain every node, with numbers and the nearest fit")
	f.DurationVar(&timeout, "timeout", dra.DefaultTimeout, "wall-clock bound of each node's decision, explanation included (at most 10s, kube-scheduler's DRA filter timeout); past it the node is undecided (exit 3 when no node fits)")
	f.StringVar(&fromCluster, "from-cluster", "", "read a pending pod from the cluster instead of --pod: pod/NAME (namespace -n)")
	return cmd
}

func loadDRAInput(slicesF, classesF, claimsF, allocatedF, podF, templatesF string, maxBytes int64) (*dra.Input, error) {
	read := func(p string) ([]byte, error) {
		if p == "-" {
			return nil, errors.New("- (stdin) is not supported here: give a file")
		}
		return objects.ReadFile(p, maxBytes)
	}
	in := &dra.Input{}
	b, err := read(slicesF)
	if err != nil {
		return nil, err
	}
	ss, err := dra.LoadSlices(slicesF, b)
	if err != nil {
		return nil, err
	}
	for _, s := range ss {
		in.Slices = append(in.Slices, s.Obj)
	}
	if b, err = read(classesF); err != nil {
		return nil, err
	}
	cs, err := dra.LoadClasses(classesF, b)
	if err != nil {
		return nil, err
	}
	for _, c := range cs {
		in.Classes = append(in.Classes, c.Obj)
	}
	var claims []dra.Loaded[*resourceapi.ResourceClaim]
	if claimsF != "" {
		if b, err = read(claimsF); err != nil {
			return nil, err
		}
		if claims, err = dra.LoadClaims(claimsF, b); err != nil {
			return nil, err
		}
	}
	if allocatedF != "" {
		if b, err = read(allocatedF); err != nil {
			return nil, err
		}
		al, err := dra.LoadClaims(allocatedF, b)
		if err != nil {
			return nil, err
		}
		for _, c := range al {
			in.Allocated = append(in.Allocated, c.Obj)
		}
	}
	if podF == "" {
		for _, c := range claims {
			in.Claims = append(in.Claims, c.Obj)
		}
		return in, nil
	}
	if b, err = read(podF); err != nil {
		return nil, err
	}
	pod, err := dra.LoadPod(podF, b)
	if err != nil {
		return nil, err
	}
	var tmpls []dra.Loaded[*resourceapi.ResourceClaimTemplate]
	if templatesF != "" {
		if b, err = read(templatesF); err != nil {
			return nil, err
		}
		if tmpls, err = dra.LoadTemplates(templatesF, b); err != nil {
			return nil, err
		}
	}
	pc, err := dra.PodClaims(pod, podF, tmpls, claims)
	if err != nil {
		return nil, err
	}
	// Claims the pod names that are already allocated are in use, not new.
	for _, c := range pc {
		if c.Status.Allocation == nil {
			in.Claims = append(in.Claims, c)
		}
	}
	return in, nil
}
