package companion

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpunode/gpunode/internal/cli"
	"github.com/gpunode/gpunode/internal/k8s/helmexec"
	"github.com/gpunode/gpunode/internal/k8s/kubeletcfg"
	"github.com/gpunode/gpunode/internal/k8s/lint"
	"github.com/gpunode/gpunode/internal/k8s/node"
	"github.com/gpunode/gpunode/internal/k8s/objects"
	"github.com/gpunode/gpunode/internal/output"
	"github.com/gpunode/gpunode/internal/userfile"
)

func (a *app) newK8sLintCommand() *cobra.Command {
	var files []string
	var nodeFile, kcFile, nodesFile, failOn, shmMin, helmRelease, helmNamespace string
	var helmValues []string
	var listRules, sarif, fromCluster bool
	cmd := &cobra.Command{
		Use:   "lint -f PATH... [--helm-values F]... [--node-file F] [--kubelet-config F] [--nodes F] [--fail-on error|warning|info]",
		Short: "Say why GPU workloads and cluster configs will not do what their authors meant",
		Long: `Read the manifests a team already has (files or directories of YAML/JSON,
multi-document or List, as 'kubectl get -o yaml' or a Git repo holds them;
-f - reads stdin, e.g. 'helm template ... | gpunode k8s lint -f -') and report
settings that are silently wrong: GPU limits, QoS for exclusive CPUs and the
memory manager, /dev/shm, multi-node networking, NUMA fit (seed 5.4-5.6), the
k8s-device-plugin config (5.2), the GPU Operator ClusterPolicy or its Helm
values (5.1), DRA claims and NVIDIA GpuConfigs (5.3), ComputeDomains (5.3.5)
and topology-aware gangs (5.7), and names and labels the API server refuses.
'gpunode k8s lint --rules' lists the rules.

A Helm chart (a directory with Chart.yaml, named with -f or found in a
directory) is rendered with the Helm SDK's engine, as 'helm template' would
(--helm-values FILE, repeatable, later files winning; --helm-release,
--helm-namespace), and its objects are linted: findings name the template
file. A chart's objects are duplicates only of each other, not of plain
manifests beside it.

Objects are decoded into their real types (k8s.io/api; NVIDIA and Kubeflow
CRDs as typed structs); unknown kinds are skipped and counted. Optional
context: --nodes (v1 Nodes: labels for clique, level and MIG rules),
--node-file and --kubelet-config (the 'k8s admit' inputs: NUMA fit, QoS
rules against the node's policies).

Output: a table grouped by object; -o json
{"schemaVersion":"gpunode.k8s.lint/v1","findings":[{"rule","severity","object",
"field","message","fix","section"}],"objects":N,"skipped":M,
"charts":[{"chart","values","templates"}]}; -o sarif (SARIF 2.1.0 for CI code
scanning).

Exit codes: 0 no finding at or above --fail-on (default warning), 1 findings
at or above it, 2 bad input (invalid YAML, a wrong apiVersion for a known kind,
a duplicate object, a --helm-values file that is not a YAML mapping, a chart
that does not render: the error names the file, document and field, and
nothing is reported).

--cluster lints the live objects of every kind lint knows (listed from the API
server as kubectl would: --kubeconfig, --context, --request-timeout; every
namespace), together with any -f files; the cluster's Nodes are the --nodes
context unless --nodes is given.`,
		Example: `  gpunode k8s lint -f deploy/
  gpunode k8s lint -f deploy/helm/gpunode --helm-values prod-values.yaml
  helm template gpu-operator nvidia/gpu-operator -f values.yaml | gpunode k8s lint -f -
  gpunode k8s lint -f job.yaml --node-file node.yaml --kubelet-config kubelet.yaml -o json
  gpunode k8s lint -f manifests/ --nodes nodes.json -o sarif > lint.sarif
  kubectl gpunode k8s lint --cluster --context prod`,
		Args: cobra.NoArgs,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if strings.EqualFold(strings.TrimSpace(a.Output), "sarif") {
				sarif = true
				a.SetFormat(output.JSON)
				return nil
			}
			f, err := output.ParseFormat(a.Output)
			if err != nil {
				return cli.WrapUsage(fmt.Errorf("%w (or sarif)", err))
			}
			a.SetFormat(f)
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			// A bad flag value is a usage error whatever else is given
			// (--rules too).
			threshold, err := lint.ParseSeverity(failOn)
			if err != nil {
				return cli.WrapUsage(err)
			}
			if listRules {
				if sarif {
					return cli.Usagef("lint: --rules has no SARIF form (use -o json)")
				}
				if shmMin != "" {
					if q, err := resource.ParseQuantity(shmMin); err != nil || q.Sign() <= 0 {
						return cli.Usagef("--shm-min %q: want a positive quantity such as 1Gi", shmMin)
					}
				}
				return a.Render(lint.ListRules())
			}
			if len(files) == 0 && !fromCluster {
				return cli.Usagef("lint: -f PATH or --cluster is required (a file, a directory, or - for stdin)")
			}
			// The context first: the per-object rules run as each object
			// is read.
			l := lint.NewLoader()
			in := l.Input()
			if shmMin != "" {
				q, err := resource.ParseQuantity(shmMin)
				if err != nil || q.Sign() <= 0 {
					return cli.Usagef("--shm-min %q: want a positive quantity such as 1Gi", shmMin)
				}
				in.ShmMin = q
			}
			if nodesFile != "" {
				b, err := objects.ReadFile(nodesFile, a.MaxInputBytes)
				if err != nil {
					return cli.WrapUsage(err)
				}
				if in.Nodes, err = objects.LoadNodes(nodesFile, b); err != nil {
					return cli.WrapUsage(err)
				}
			}
			if kcFile != "" {
				if in.Kubelet, err = kubeletcfg.Load(kcFile, a.MaxInputBytes); err != nil {
					return cli.WrapUsage(err)
				}
			}
			if nodeFile != "" {
				if in.Node, err = node.Load(nodeFile, a.MaxInputBytes); err != nil {
					return cli.WrapUsage(err)
				}
				in.NodeName = in.Node.Name
				if in.NodeName == "" {
					in.NodeName = nodeFile
				}
			}
			var live func(*lint.Loader) error
			if fromCluster {
				live = func(l *lint.Loader) error { return a.liveLintInput(cmd, l, nodesFile == "") }
			}
			helm := helmOptions{values: helmValues, release: helmRelease, namespace: helmNamespace}
			lines, err := a.loadLintInput(cmd.Context(), l, files, helm, live, sarif)
			if err != nil {
				return err
			}
			if (nodeFile == "") != (kcFile == "") {
				a.Warnf("lint: topology.single-numa needs both --node-file and --kubelet-config; it is skipped")
			}
			rep := lint.Run(in)
			if rep.Objects == 0 && len(files) > 0 {
				rep.Findings = append(rep.Findings, lint.NoObjectsFinding(files))
			}
			failing := rep.AtLeast(threshold) > 0
			if sarif {
				if err := rep.WriteSARIF(a.Stdout, lines); err != nil {
					return err
				}
				if failing {
					return cli.ErrFindings
				}
				return nil
			}
			return a.RenderFindings(rep, failing)
		},
	}
	f := cmd.Flags()
	f.StringArrayVarP(&files, "filename", "f", nil, "manifests: a file, a directory (recursive: .yaml, .yml, .json) or - for stdin; repeatable")
	f.StringVar(&nodeFile, "node-file", "", "node file (as for 'k8s admit --node'): NUMA layout for topology.single-numa")
	f.StringVar(&kcFile, "kubelet-config", "", "KubeletConfiguration: CPU, memory and topology manager policies")
	f.StringVar(&nodesFile, "nodes", "", "v1 Nodes (kubectl get nodes -o yaml): labels for clique, level, driver and MIG rules")
	f.StringVar(&failOn, "fail-on", "warning", "exit 1 when a finding is at least this severe: error, warning or info")
	f.StringVar(&shmMin, "shm-min", "1Gi", "smallest /dev/shm shm.size accepts for NCCL/DataLoader containers")
	f.BoolVar(&listRules, "rules", false, "list the rules with their severities and seed sections")
	f.StringArrayVar(&helmValues, "helm-values", nil, "values file for the Helm charts among the -f paths (as helm template -f); repeatable, later files win")
	f.StringVar(&helmRelease, "helm-release", helmexec.DefaultRelease, "release name the Helm charts are rendered with (.Release.Name)")
	f.StringVar(&helmNamespace, "helm-namespace", helmexec.DefaultNamespace, "namespace the Helm charts are rendered into (.Release.Namespace)")
	f.BoolVar(&fromCluster, "cluster", false, "also lint the live objects of the cluster (kubeconfig, --context), every namespace")
	return cmd
}

// helmOptions render the Helm charts among the -f paths.
type helmOptions struct {
	values             []string
	release, namespace string
}

// loadLintInput reads every -f source into l, one file at a time, and
// renders the Helm charts among them (each template's objects linted under
// the template's path) with the helper gpunode-helm (renderCharts); lines maps each file to its documents' start lines
// (only for SARIF); live, when set, adds the cluster's objects. A bad file,
// values file or chart is a usage error (exit 2), a failed read of the
// cluster a failure (3).
func (a *app) loadLintInput(ctx context.Context, l *lint.Loader, paths []string, helm helmOptions, live func(*lint.Loader) error, sarif bool) (map[string][]int, error) {
	srcs, charts, err := lint.Sources(paths)
	if err != nil {
		return nil, cli.WrapUsage(err)
	}
	if len(helm.values) > 0 && len(charts) == 0 {
		return nil, cli.Usagef("--helm-values: no Helm chart (a directory with Chart.yaml) among the -f paths")
	}
	lines := map[string][]int{}
	add := func(scope, name string, b []byte) error {
		if err := l.AddScoped(scope, name, b); err != nil {
			return cli.WrapUsage(err)
		}
		if sarif {
			lines[name] = lint.DocumentLines(b)
		}
		return nil
	}
	stdinRead := false
	for _, s := range srcs {
		var b []byte
		if s == "-" {
			if stdinRead {
				return nil, cli.Usagef("-f -: stdin given twice")
			}
			stdinRead = true
			if b, err = objects.ReadAll(a.Stdin, "stdin", a.MaxInputBytes); err != nil {
				return nil, cli.WrapUsage(err)
			}
		} else if b, err = objects.ReadFile(s, a.MaxInputBytes); err != nil {
			return nil, cli.WrapUsage(err)
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue // an empty file in a directory holds nothing
		}
		if err := add("", s, b); err != nil {
			return nil, err
		}
	}
	if len(charts) > 0 {
		rendered, err := a.renderCharts(ctx, charts, helm)
		if err != nil {
			return nil, err
		}
		for _, c := range rendered {
			for _, f := range c.Templates {
				if err := add(c.Chart, f.Path, []byte(f.Data)); err != nil {
					return nil, err
				}
			}
			l.Input().Charts = append(l.Input().Charts, lint.RenderedChart{Chart: c.Chart, Values: helm.values, Templates: len(c.Templates)})
		}
	}
	if live != nil {
		if err := live(l); err != nil {
			return nil, err
		}
	}
	return lines, nil
}

// renderCharts renders the charts with the values files, as `helm
// template` would, in the helper executable gpunode-helm (found as 'gpunode
// agent' finds gpunode-agent: $GPUNODE_HELM, beside this executable, $PATH,
// or `go run` from a checkout), so that gpunode-full does not link the Helm
// SDK. A values file that cannot be read or is not a mapping, or a chart
// that does not render, is a usage error naming the file; a helper that
// cannot be found or run is a failure.
func (a *app) renderCharts(ctx context.Context, charts []string, helm helmOptions) ([]helmexec.Chart, error) {
	req := helmexec.Request{Charts: charts, Release: helm.release, Namespace: helm.namespace, MaxBytes: a.MaxInputBytes}
	for _, f := range helm.values {
		b, err := userfile.Read(f, a.MaxInputBytes)
		if err != nil {
			return nil, cli.WrapUsage(fmt.Errorf("--helm-values: %w", err))
		}
		req.Values = append(req.Values, helmexec.Values{File: f, Data: b})
	}
	h, err := a.FindHelper(helmexec.HelperName, helmexec.EnvHelper)
	if err != nil {
		return nil, fmt.Errorf("rendering Helm chart %s: %w", charts[0], err)
	}
	timeout := helmexec.DefaultTimeout
	if h.GoRun {
		timeout = helmexec.GoRunTimeout
	}
	out, err := helmexec.Run(ctx, h.Argv, a.EnvironList(), timeout, req)
	var inputErr *helmexec.InputError
	if errors.As(err, &inputErr) {
		return nil, cli.WrapUsage(err)
	}
	return out, err
}

// liveLintInput adds the cluster's objects of every kind lint knows, and its
// Nodes as the nodes context when nodes is set.
func (a *app) liveLintInput(cmd *cobra.Command, l *lint.Loader, nodes bool) error {
	c, err := a.k8sCluster(cmd)
	if err != nil {
		return err
	}
	names, lists, err := c.LintSources(cmd.Context())
	if err != nil {
		return err
	}
	for i := range names {
		if err := l.Add(names[i], lists[i]); err != nil {
			return fmt.Errorf("%s: %w", c.Server(), err)
		}
	}
	if nodes {
		ns, err := c.Nodes(cmd.Context())
		if err != nil {
			return err
		}
		l.Input().Nodes = ns
	}
	a.notef("lint: %d kinds of live objects from %s", len(names), c.Server())
	return nil
}
