package cluster

import (
	"context"
	"strconv"

	v1 "k8s.io/api/core/v1"
)

// ResPodsProxy is the pods/proxy subresource: 'k8s admit --node NAME'
// reads the gpunode agent's /topo through it (GET only).
var ResPodsProxy = Resource{Version: "v1", Name: "pods/proxy", Namespaced: true}

// The gpunode agent's pod labels (deploy/daemonset.yaml) and its HTTP port.
const (
	AgentNameLabel      = "app.kubernetes.io/name"
	AgentComponentLabel = "app.kubernetes.io/component"
	AgentDefaultPort    = 9847
)

// AgentPod is the running gpunode agent among pods (those bound to one
// node), or nil: labels app.kubernetes.io/name=gpunode and
// app.kubernetes.io/component=agent, phase Running.
func AgentPod(pods []*v1.Pod) *v1.Pod {
	for _, p := range pods {
		if p.Labels[AgentNameLabel] == "gpunode" && p.Labels[AgentComponentLabel] == "agent" && p.Status.Phase == v1.PodRunning {
			return p
		}
	}
	return nil
}

// agentPort is the agent container's port named "metrics" (the
// DaemonSet's), else 9847.
func agentPort(p *v1.Pod) int {
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.Name == "metrics" && cp.ContainerPort > 0 {
				return int(cp.ContainerPort)
			}
		}
	}
	return AgentDefaultPort
}

// AgentTopo GETs the agent pod's /topo (topo.Topology JSON) through the API
// server's pods/proxy.
func (c *Client) AgentTopo(ctx context.Context, p *v1.Pod) ([]byte, error) {
	name := p.Name + ":" + strconv.Itoa(agentPort(p))
	b, err := c.cs.CoreV1().RESTClient().Get().Namespace(p.Namespace).Resource("pods").Name(name).SubResource("proxy").Suffix("topo").DoRaw(ctx)
	if err != nil {
		return nil, c.explain(ctx, err, "get", ResPodsProxy.in(p.Namespace), name+"/topo")
	}
	return b, nil
}
