package place

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/k8s/objects"
)

const job2 = `apiVersion: batch/v1
kind: Job
metadata: {name: j}
spec:
  parallelism: 2
  template:
    spec:
      containers: [{name: c, resources: {limits: {nvidia.com/gpu: "1"}}}]
`

func TestBadWorkloadsAndTopologies(t *testing.T) {
	nodesYAML := `apiVersion: v1
kind: Node
metadata: {name: node0, labels: {rack: r1}}
status:
  allocatable: {cpu: "8", nvidia.com/gpu: "8"}
  conditions: [{type: Ready, status: "True"}]
`
	hn := func(name string, tier int, member string) string {
		return "apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata: {name: " + name + "}\nspec:\n  tier: " + string(rune('0'+tier)) +
			"\n  members:\n  - type: HyperNode\n    selector: {exactMatch: {name: " + member + "}}\n"
	}
	for _, tc := range []struct {
		name, workload, topology string
		levels                   []string
		want                     string
	}{
		{name: "two topology keys", workload: `apiVersion: scheduling.k8s.io/v1alpha3
kind: PodGroup
metadata: {name: g}
spec:
  schedulingPolicy: {gang: {minCount: 2}}
  schedulingConstraints: {topology: [{key: rack}, {key: block}]}
---
` + strings.Replace(job2, "    spec:\n", "    spec:\n      schedulingGroup: {podGroupName: g}\n", 1),
			want: `w.yaml: document 1: PodGroup "g": spec.schedulingConstraints.topology: Too many: 2`},
		{name: "missing PodGroup", workload: strings.Replace(job2, "    spec:\n", "    spec:\n      schedulingGroup: {podGroupName: nope}\n", 1),
			want: `w.yaml: document 1: Job "j": spec.template.spec.schedulingGroup.podGroupName: Not found: "nope"`},
		{name: "two jobs", workload: job2 + "---\n" + strings.Replace(job2, "name: j", "name: k", 1), want: `w.yaml: document 2: Invalid value: the workload file holds 2 Jobs`},
		{name: "no job", workload: "apiVersion: scheduling.k8s.io/v1alpha3\nkind: PodGroup\nmetadata: {name: g}\nspec: {schedulingPolicy: {gang: {minCount: 1}}}\n", want: `w.yaml: document 1: Required value: the workload file holds no Job`},
		{name: "required level not in topology", workload: strings.Replace(job2, "metadata: {name: j}", "metadata:\n  name: j\n  annotations: {kai.scheduler/topology-required-placement: zone}", 1),
			levels: []string{"rack"}, want: `requires level "zone", which is not a level of the topology (rack)`},
		{name: "HyperNode cycle", workload: "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: v}\nspec:\n  networkTopology: {mode: hard, highestTierAllowed: 2}\n  tasks: [{name: w, replicas: 1, template: {spec: {containers: [{name: c}]}}}]\n",
			topology: hn("a", 1, "b") + "---\n" + hn("b", 2, "a"), want: `t.yaml: document 2: HyperNode "b": spec.members: Invalid value: HyperNode membership cycle a -> b -> a`},
		{name: "Volcano without HyperNodes", workload: "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: v}\nspec:\n  networkTopology: {mode: hard}\n  tasks: [{name: w, replicas: 1, template: {spec: {containers: [{name: c}]}}}]\n",
			want: `give its HyperNodes with --topology`},
		{name: "Volcano bad mode", workload: "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: v}\nspec:\n  networkTopology: {mode: strict}\n  tasks: [{name: w, replicas: 1, template: {spec: {containers: [{name: c}]}}}]\n",
			want: `w.yaml: document 1: Job "v": spec.networkTopology.mode: Unsupported value: "strict"`},
		{name: "bad regex", workload: "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: v}\nspec:\n  tasks: [{name: w, replicas: 1, template: {spec: {containers: [{name: c}]}}}]\n",
			topology: "apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata: {name: a}\nspec:\n  tier: 1\n  members: [{type: Node, selector: {regexMatch: {pattern: \"(\"}}}]\n",
			want:     `t.yaml: document 1: HyperNode "a": spec.members[0].selector.regexMatch.pattern: Invalid value: "("`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in Input
			var err error
			if in.Nodes, err = objects.DecodeNodes("n.yaml", []byte(nodesYAML)); err != nil {
				t.Fatal(err)
			}
			if in.Workload, err = objects.LoadWorkload("w.yaml", []byte(tc.workload)); err != nil {
				t.Fatal(err)
			}
			if tc.topology != "" {
				if in.Topology, err = objects.LoadTopology("t.yaml", []byte(tc.topology)); err != nil {
					t.Fatal(err)
				}
			}
			in.Levels = tc.levels
			_, err = Run(context.Background(), in)
			var oe *objects.Error
			if !errors.As(err, &oe) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v (%T), want an *objects.Error containing %q", err, err, tc.want)
			}
		})
	}
}

func TestEffectiveRequestsSidecarsAndOverhead(t *testing.T) {
	pods, err := objects.DecodePods("p.yaml", []byte(`apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec:
  nodeName: node1
  overhead: {cpu: 250m}
  initContainers:
  - {name: init, resources: {requests: {cpu: "4"}, limits: {nvidia.com/gpu: "3"}}}
  - {name: side, restartPolicy: Always, resources: {requests: {cpu: "1"}}}
  containers:
  - {name: a, resources: {requests: {cpu: "2"}, limits: {nvidia.com/gpu: "2"}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	v := pods[0].V1()
	req := EffectiveRequests(v)
	// init 4 cpu (before the sidecar starts) vs app 2 + sidecar 1; gpu max(3, 2); plus 250m overhead
	cpu, gpu := req["cpu"], req[ResourceGPU]
	if cpu.MilliValue() != 4250 || gpu.Value() != 3 {
		t.Errorf("cpu %s gpu %s, want 4250m and 3", cpu.String(), gpu.String())
	}
	if _, ok := v.Spec.InitContainers[0].Resources.Requests[ResourceGPU]; ok {
		t.Error("EffectiveRequests modified the pod")
	}
	// what a bound pod counts for on its node
	out := make([]int64, 2)
	Resources{"cpu", ResourceGPU}.requestVector(pods[0], out)
	if out[0] != 4250 || out[1] != 3 {
		t.Errorf("request vector %v, want [4250 3]", out)
	}
}
