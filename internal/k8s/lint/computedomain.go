package lint

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/gpunode/gpunode/internal/k8s/objects"
)

// LabelClique is GFD's NVLink clique label (<ClusterUUID>.<CliqueID>).
const LabelClique = "nvidia.com/gpu.clique"

func computeDomainRules() []Rule {
	return []Rule{
		{ID: "computedomain.num-nodes", Severity: SeverityWarning, Section: "5.3.5",
			Summary: "ComputeDomain numNodes is 0 (non-zero is deprecated: daemons follow where the workers land)",
			Check:   checkCDNumNodes},
		{ID: "computedomain.channel", Severity: SeverityError, Section: "5.3.5",
			Summary: "a ComputeDomain's channel ResourceClaimTemplate is referenced by a workload pod (MPIJob workers included) and claimed by a container",
			Check:   checkCDChannel},
		{ID: "computedomain.clique", Severity: SeverityWarning, Section: "5.3.5",
			Summary: "pods of one ComputeDomain cannot land in different NVLink cliques (nvidia.com/gpu.clique)",
			Needs:   "--nodes", Check: checkCDClique},
	}
}

func checkCDNumNodes(c *Context, emit Emit) {
	for _, o := range c.Kind("ComputeDomain") {
		cd := o.V.(*objects.ComputeDomain)
		if cd.Spec.NumNodes != nil && *cd.Spec.NumNodes != 0 {
			emit(o, "spec.numNodes", fmt.Sprintf("numNodes is %d: the field is deprecated; with IMEX daemons using DNS names (the default) it only drives the status, and with them off every pod waits until %d daemons joined",
				*cd.Spec.NumNodes, *cd.Spec.NumNodes), "set numNodes: 0 and let the daemons follow the workers")
		}
	}
}

// channelPods returns the pod templates (same namespace) that list the
// template in spec.resourceClaims, with the claim's index.
func (c *Context) channelPods(ns, tmpl string) []*PodRef {
	var out []*PodRef
	for _, p := range c.Pods {
		if p.Obj.Namespace != ns {
			continue
		}
		for _, rc := range p.Spec.ResourceClaims {
			if rc.ResourceClaimTemplateName != nil && *rc.ResourceClaimTemplateName == tmpl {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

func checkCDChannel(c *Context, emit Emit) {
	for _, o := range c.Kind("ComputeDomain") {
		cd := o.V.(*objects.ComputeDomain)
		if cd.Spec.Channel == nil || cd.Spec.Channel.ResourceClaimTemplate.Name == "" {
			emit(o, "spec.channel.resourceClaimTemplate.name", "the ComputeDomain names no channel ResourceClaimTemplate: no pod can join it", "set spec.channel.resourceClaimTemplate.name")
			continue
		}
		name := cd.Spec.Channel.ResourceClaimTemplate.Name
		if m := cd.Spec.Channel.AllocationMode; m != "" && m != "Single" && m != "All" {
			emit(o, "spec.channel.allocationMode", fmt.Sprintf("allocationMode %q: the CRD accepts Single or All", m), "set allocationMode: Single (or All)")
		}
		pods := c.channelPods(o.Namespace, name)
		if len(pods) == 0 {
			emit(o, "spec.channel.resourceClaimTemplate.name", fmt.Sprintf("no workload pod in namespace %s lists ResourceClaimTemplate %s in spec.resourceClaims: no pod gets the IMEX channel, so cross-node NVLink memory sharing fails",
				o.Namespace, name), fmt.Sprintf("add {name: compute-domain-channel, resourceClaimTemplateName: %s} to the workers' spec.resourceClaims and claim it in their containers (resources.claims)", name))
			continue
		}
		for _, p := range pods {
			for i, rc := range p.Spec.ResourceClaims {
				if rc.ResourceClaimTemplateName == nil || *rc.ResourceClaimTemplateName != name {
					continue
				}
				claimed := false
				for _, ct := range p.Containers() {
					for _, cl := range ct.C.Resources.Claims {
						if cl.Name == rc.Name {
							claimed = true
						}
					}
				}
				if !claimed {
					emit(p.Obj, fmt.Sprintf("%s.resourceClaims[%d]", p.Path, i), fmt.Sprintf("the pod lists claim %s (ComputeDomain %s's channel) but no container claims it in resources.claims: the channel device /dev/nvidia-caps-imex-channels/channel0 is injected into no container",
						rc.Name, o.Name), fmt.Sprintf("add resources.claims: [{name: %s}] to the containers that run the job", rc.Name))
				}
			}
		}
	}
}

func hasCliqueAffinity(p *PodRef) bool {
	a := p.Spec.Affinity
	if a == nil || a.PodAffinity == nil {
		return false
	}
	for _, t := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		if t.TopologyKey == LabelClique {
			return true
		}
	}
	return false
}

func checkCDClique(c *Context, emit Emit) {
	if len(c.In.Nodes) == 0 {
		return
	}
	for _, o := range c.Kind("ComputeDomain") {
		cd := o.V.(*objects.ComputeDomain)
		if cd.Spec.Channel == nil {
			continue
		}
		pods := c.channelPods(o.Namespace, cd.Spec.Channel.ResourceClaimTemplate.Name)
		total, pinned := 0, true
		for _, p := range pods {
			total += p.Replicas
			if !hasCliqueAffinity(p) {
				pinned = false
			}
		}
		if total < 2 || pinned {
			continue
		}
		cliques := map[string]int{}
		for _, n := range c.In.Nodes {
			cl, ok := n.Labels[LabelClique]
			if !ok {
				continue
			}
			fits := true
			for _, p := range pods {
				if ok, _ := nodeaffinity.GetRequiredNodeAffinity(p.Pod()).Match(n); !ok {
					fits = false
				}
			}
			if fits {
				cliques[cl]++
			}
		}
		if len(cliques) < 2 {
			continue
		}
		names := make([]string, 0, len(cliques))
		for k := range cliques {
			names = append(names, k)
		}
		sort.Strings(names)
		parts := make([]string, 0, len(names))
		for _, k := range names {
			parts = append(parts, fmt.Sprintf("%s (%d nodes)", k, cliques[k]))
		}
		emit(o, "spec.channel.resourceClaimTemplate.name", fmt.Sprintf("its %d pods can land in %d NVLink cliques: %s; one IMEX domain needs one <ClusterUUID, CliqueID>, so pods in different cliques cannot share GPU memory",
			total, len(cliques), strings.Join(first(parts, 6), ", ")), fmt.Sprintf("give the workers a required podAffinity on topologyKey %s (as the seed's MPIJob does) or a nodeAffinity on one %s value", LabelClique, LabelClique))
	}
}
