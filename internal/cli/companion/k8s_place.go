package companion

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/internal/cli"
	"github.com/gpunode/gpunode/internal/k8s/objects"
	"github.com/gpunode/gpunode/internal/k8s/place"
)

func (a *app) newK8sPlaceCommand() *cobra.Command {
	var nodesFile, podsFile, topoFile, levels, workFile, fromCluster string
	cmd := &cobra.Command{
		Use:   "place --nodes NODES --workload WORKLOAD [--pods PODS] [--topology TOPOLOGY | --levels KEY,...]",
		Short: "Say whether a gang fits inside one network domain now, where, and if not, why",
		Long: `Place a distributed job's pods (a gang: all or none) inside one network
performance domain, the way topology-aware schedulers do (seed 5.7), before
you submit it.

Inputs, as kubectl exports them (-o yaml or -o json; several documents or a List):
  --nodes     v1 Nodes (labels, status.allocatable, taints, spec.unschedulable, Ready)
  --pods      v1 Pods already bound (spec.nodeName); their effective requests
              (init/sidecar rules as in 'k8s admit') are in use; Succeeded/Failed pods are not
  --topology  Volcano HyperNodes, a KAI Topology (kai.scheduler/v1alpha1) or a
              Kueue Topology (kueue.x-k8s.io/v1beta1, v1beta2)
  --levels    node label keys, outermost first (instead of --topology)
  --workload  a PodGroup (scheduling.k8s.io/v1beta1|v1alpha2|v1alpha3) + the Job naming it
              (schedulingGroup.podGroupName), a Job with KAI annotations
              (kai.scheduler/topology-required-placement, -preferred-placement), a Job
              with Kueue annotations (kueue.x-k8s.io/podset-required-topology,
              podset-preferred-topology), or a Volcano Job (batch.volcano.sh/v1alpha1)

gpunode takes the tightest answer: the innermost level at which one domain
holds the whole gang (up to the required level), the best-fit domain there
(least capacity left), filling its nodes fullest-first. Fit is decided exactly.

Against a live cluster (kubectl's --kubeconfig, --context, -n, --request-timeout;
KUBECONFIG, ~/.kube/config or the pod's service account): without --nodes the
Nodes and the bound, non-terminal Pods of every namespace are listed from the
API server, and without --topology/--levels the workload's topology object is
read too (the Volcano HyperNodes, the KAI Topology it names, or the Kueue
Topology of its queue's ResourceFlavor). --from-cluster KIND/NAME (job/NAME,
podgroup/NAME, vcjob/NAME in -n) reads a pending workload instead of
--workload. Only get and list are used (deploy/clusterrole.yaml).

Exit codes: 0 fits, 1 does not fit, 2 bad input, 3 undecided (the exact
search stopped at its bound: verdict "undecided" in the output) or the
cluster could not be read.`,
		Example: `  gpunode k8s place --nodes nodes.json --pods pods.json --topology kai-topology.yaml --workload job.yaml
  gpunode k8s place --nodes nodes.yaml --levels topology.kubernetes.io/zone,topology.kubernetes.io/rack --workload podgroup-job.yaml -o json
  gpunode k8s place --workload job.yaml                      (nodes, pods and topology from the cluster)
  kubectl gpunode k8s place -n team-a --from-cluster job/train --context prod`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (workFile == "") == (fromCluster == "") {
				return cli.Usagef("place: give --workload FILE or --from-cluster KIND/NAME")
			}
			if topoFile != "" && levels != "" {
				return cli.Usagef("place: give --topology or --levels, not both")
			}
			if nodesFile == "" && podsFile != "" {
				return cli.Usagef("place: --pods needs --nodes (without --nodes both come from the cluster)")
			}
			in, err := loadPlaceInput(nodesFile, podsFile, topoFile, levels, workFile, a.MaxInputBytes)
			if err != nil {
				return cli.WrapUsage(err)
			}
			if nodesFile == "" || fromCluster != "" {
				if err := a.livePlaceInput(cmd, &in, nodesFile == "", topoFile == "" && levels == "", fromCluster); err != nil {
					return err
				}
			}
			rep, err := place.Run(cmd.Context(), in)
			if err != nil {
				return cli.WrapUsage(err)
			}
			if rep.Undecided() {
				if err := a.Render(rep); err != nil {
					return err
				}
				return fmt.Errorf("place: undecided: the exact search stopped at its bound before it found a domain that holds the gang or proved none does")
			}
			return a.RenderFindings(rep, !rep.Fits)
		},
	}
	f := cmd.Flags()
	f.StringVar(&nodesFile, "nodes", "", "v1 Nodes (YAML or JSON, documents or a List)")
	f.StringVar(&podsFile, "pods", "", "v1 Pods already bound to nodes (optional)")
	f.StringVar(&topoFile, "topology", "", "Volcano HyperNodes, a KAI Topology or a Kueue Topology (optional)")
	f.StringVar(&levels, "levels", "", "node label keys, outermost first, comma-separated (instead of --topology)")
	f.StringVar(&workFile, "workload", "", "PodGroup + Job, Job with KAI or Kueue annotations, or Volcano Job")
	f.StringVar(&fromCluster, "from-cluster", "", "read a pending workload from the cluster instead of --workload: job/NAME, podgroup/NAME or vcjob/NAME (namespace -n)")
	return cmd
}

// loadPlaceInput reads and decodes the input files; nodes and pods (the big
// ones) are decoded concurrently.
func loadPlaceInput(nodesFile, podsFile, topoFile, levels, workFile string, maxBytes int64) (place.Input, error) {
	var in place.Input
	type res struct {
		nodes any
		err   error
	}
	load := func(file string, fn func(string, []byte) (any, error)) chan res {
		ch := make(chan res, 1)
		go func() {
			b, err := objects.ReadFile(file, maxBytes)
			if err != nil {
				ch <- res{err: err}
				return
			}
			v, err := fn(file, b)
			ch <- res{v, err}
		}()
		return ch
	}
	var nodesCh chan res
	if nodesFile != "" {
		nodesCh = load(nodesFile, func(f string, b []byte) (any, error) { return objects.DecodeNodes(f, b) })
	}
	var podsCh chan res
	if podsFile != "" {
		podsCh = load(podsFile, func(f string, b []byte) (any, error) { return objects.DecodePods(f, b) })
	}
	var err error
	if workFile != "" {
		var wb []byte
		if wb, err = objects.ReadFile(workFile, maxBytes); err == nil {
			in.Workload, err = objects.LoadWorkload(workFile, wb)
		}
	}
	var topoErr error
	if topoFile != "" {
		tb, e := objects.ReadFile(topoFile, maxBytes)
		if e == nil {
			in.Topology, e = objects.LoadTopology(topoFile, tb)
		}
		topoErr = e
	}
	var nr, pr res
	if nodesCh != nil {
		nr = <-nodesCh
	}
	if podsCh != nil {
		pr = <-podsCh
	}
	for _, e := range []error{nr.err, pr.err, topoErr, err} {
		if e != nil {
			return in, e
		}
	}
	if nodesCh != nil {
		in.Nodes = nr.nodes.([]*objects.Node)
	}
	if podsCh != nil {
		in.Pods = pr.nodes.([]*objects.Pod)
	}
	if levels != "" {
		for _, k := range strings.Split(levels, ",") {
			k = strings.TrimSpace(k)
			if k == "" {
				return in, fmt.Errorf("--levels: empty label key in %q", levels)
			}
			in.Levels = append(in.Levels, k)
		}
	}
	return in, nil
}

// livePlaceInput fills what the files did not give from the cluster:
// nodes and bound pods (listed concurrently), the workload (--from-cluster)
// and its topology object.
func (a *app) livePlaceInput(cmd *cobra.Command, in *place.Input, nodes, topology bool, fromCluster string) error {
	ctx := cmd.Context()
	c, err := a.k8sCluster(cmd)
	if err != nil {
		return err
	}
	type res struct {
		nodes []*objects.Node
		pods  []*objects.Pod
		err   error
	}
	var nodesCh, podsCh chan res
	if nodes {
		nodesCh, podsCh = make(chan res, 1), make(chan res, 1)
		go func() { n, err := c.PlannerNodes(ctx); nodesCh <- res{nodes: n, err: err} }()
		go func() { p, err := c.PlannerPods(ctx, ""); podsCh <- res{pods: p, err: err} }()
	}
	if fromCluster != "" {
		w, err := c.Workload(ctx, fromCluster)
		if err != nil {
			return clusterErr(err)
		}
		in.Workload = w
	}
	var note string
	if topology && in.Workload != nil {
		t, n, err := c.Topology(ctx, in.Workload)
		if err != nil {
			return clusterErr(err)
		}
		in.Topology, note = t, n
	}
	if nodes {
		nr, pr := <-nodesCh, <-podsCh
		for _, e := range []error{nr.err, pr.err} {
			if e != nil {
				return e
			}
		}
		in.Nodes, in.Pods = nr.nodes, pr.pods
		a.notef("%d nodes and %d bound pods from %s", len(in.Nodes), len(in.Pods), c.Server())
	}
	if note != "" {
		a.notef("%s", note)
	}
	return nil
}
