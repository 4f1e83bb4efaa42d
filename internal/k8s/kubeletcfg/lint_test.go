package kubeletcfg

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/k8s/node"
	"github.com/gpunode/gpunode/internal/output"
)

const header = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"

func mustNode(t testing.TB, path string) *node.Node {
	t.Helper()
	n, err := node.Load(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func lintString(t *testing.T, body string, n *node.Node) Report {
	t.Helper()
	c, err := Parse([]byte(header+body), "kc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return Lint(c, n)
}

func TestLintRules(t *testing.T) {
	dual := mustNode(t, "testdata/node-2numa-smt.yaml")
	gb := mustNode(t, "testdata/node-gb200.yaml")
	goodStatic := "cpuManagerPolicy: static\nreservedSystemCPUs: \"0,16\"\ntopologyManagerPolicy: restricted\n"
	tests := []struct {
		name  string
		body  string
		node  *node.Node
		sev   Severity
		field string
		want  string // exact kubelet message
	}{
		{"bad topology policy", "topologyManagerPolicy: strict\n", nil, SeverityError, "topologyManagerPolicy",
			`invalid configuration: topologyManagerPolicy (--topology-manager-policy) "strict" must be one of: ["none" "best-effort" "restricted" "single-numa-node"]`},
		{"bad scope", "topologyManagerScope: node\n", nil, SeverityError, "topologyManagerScope",
			`invalid configuration: topologyManagerScope (--topology-manager-scope) "node" must be one of: "container", or "pod"`},
		{"reserved cpus with cgroup", "reservedSystemCPUs: \"0\"\nsystemReservedCgroup: /system.slice\n", nil, SeverityError, "reservedSystemCPUs",
			"invalid configuration: can't use reservedSystemCPUs (--reserved-cpus) with systemReservedCgroup (--system-reserved-cgroup) or kubeReservedCgroup (--kube-reserved-cgroup)"},
		{"reserved cpus unparsable", "reservedSystemCPUs: \"0-\"\n", nil, SeverityError, "reservedSystemCPUs",
			`invalid configuration: unable to parse reservedSystemCPUs (--reserved-cpus) 0-, error: strconv.Atoi: parsing "": invalid syntax`},
		{"reserved cpus not on node", "reservedSystemCPUs: \"0,40\"\n", dual, SeverityError, "reservedSystemCPUs",
			"reserved-cpus: 0,40 is not a subset of online-cpus: 0-31"},
		{"reserved memory zero", "reservedMemory: [{numaNode: 0, limits: {memory: \"0\"}}]\n", nil, SeverityError, "reservedMemory[0].limits.memory",
			`invalid configuration: reserved memory may not be zero for NUMA node 0 and resource "memory"`},
		{"reserved memory duplicate", "reservedMemory: [{numaNode: 0, limits: {memory: 1Gi}}, {numaNode: 0, limits: {memory: 1Gi}}]\n", nil, SeverityError, "reservedMemory[1].limits.memory",
			`invalid configuration: the reserved memory has a duplicate value for NUMA node 0 and resource "memory"`},
		{"reserved memory unsupported type", "reservedMemory: [{numaNode: 0, limits: {cpu: \"1\"}}]\n", nil, SeverityError, "reservedMemory[0].limits.cpu",
			`invalid configuration: the limit type "cpu" for NUMA node 0 is not supported, only [memory hugepages-<HugePageSize>] is accepted`},
		{"static cpu without reservation", "cpuManagerPolicy: static\n", nil, SeverityError, "kubeReserved.cpu",
			"[cpumanager] unable to determine reserved CPU resources for static policy"},
		{"static cpu zero reservation", "cpuManagerPolicy: static\nkubeReserved: {cpu: \"0\"}\n", nil, SeverityError, "kubeReserved.cpu",
			"[cpumanager] unable to determine reserved CPU resources for static policy"},
		{"none cpu with options", "cpuManagerPolicyOptions: {full-pcpus-only: \"true\"}\n", nil, SeverityError, "cpuManagerPolicyOptions",
			"new none policy error: None policy: received unsupported options=map[full-pcpus-only:true]"},
		{"unknown cpu policy", "cpuManagerPolicy: Static\n", nil, SeverityError, "cpuManagerPolicy", `unknown policy: "Static"`},
		{"unknown cpu option", goodStatic + "cpuManagerPolicyOptions: {pin-everything: \"true\"}\n", nil, SeverityError, "cpuManagerPolicyOptions.pin-everything",
			`new static policy error: unknown CPU Manager Policy option: "pin-everything"`},
		{"alpha cpu option without gate", goodStatic + "cpuManagerPolicyOptions: {align-by-socket: \"true\"}\n", nil, SeverityError, "cpuManagerPolicyOptions.align-by-socket",
			`new static policy error: CPU Manager Policy Alpha-level Options not enabled, but option "align-by-socket" provided`},
		{"beta cpu option gate off", goodStatic + "featureGates: {CPUManagerPolicyBetaOptions: false}\ncpuManagerPolicyOptions: {distribute-cpus-across-numa: \"true\"}\n", nil, SeverityError, "cpuManagerPolicyOptions.distribute-cpus-across-numa",
			`new static policy error: CPU Manager Policy Beta-level Options not enabled, but option "distribute-cpus-across-numa" provided`},
		{"incompatible cpu options", goodStatic + "featureGates: {CPUManagerPolicyAlphaOptions: true}\ncpuManagerPolicyOptions: {full-pcpus-only: \"true\", distribute-cpus-across-cores: \"true\"}\n", nil, SeverityError, "cpuManagerPolicyOptions",
			"new static policy error: static policy options full-pcpus-only and distribute-cpus-across-cores can not be used at the same time"},
		{"uncore with numa", goodStatic + "cpuManagerPolicyOptions: {prefer-align-cpus-by-uncorecache: \"true\", distribute-cpus-across-numa: \"true\"}\n", nil, SeverityError, "cpuManagerPolicyOptions",
			"new static policy error: static policy options prefer-align-cpus-by-uncorecache and distribute-cpus-across-numa can not be used at the same time"},
		{"align-by-socket with single-numa-node", "cpuManagerPolicy: static\nreservedSystemCPUs: \"0,16\"\ntopologyManagerPolicy: single-numa-node\nfeatureGates: {CPUManagerPolicyAlphaOptions: true}\ncpuManagerPolicyOptions: {align-by-socket: \"true\"}\n", nil, SeverityError, "cpuManagerPolicyOptions.align-by-socket",
			"new static policy error: Topolgy manager single-numa-node policy is incompatible with CPUManager align-by-socket policy option"},
		{"bad option bool", goodStatic + "cpuManagerPolicyOptions: {full-pcpus-only: \"yes\"}\n", nil, SeverityError, "cpuManagerPolicyOptions.full-pcpus-only",
			`new static policy error: bad value for option "full-pcpus-only": strconv.ParseBool: parsing "yes": invalid syntax`},
		{"split core", "cpuManagerPolicy: static\ntopologyManagerPolicy: restricted\nreservedSystemCPUs: \"0\"\n", dual, SeverityWarning, "reservedSystemCPUs",
			"reservedSystemCPUs 0 holds only part of the cores of CPUs 16: exclusive containers can get their siblings and share those cores with system daemons"},
		{"too many reserved cpus", "cpuManagerPolicy: static\nkubeReserved: {cpu: \"40\"}\n", dual, SeverityError, "kubeReserved.cpu",
			"new static policy error: [cpumanager] unable to reserve the required amount of CPUs (size of  did not equal 40)"},
		{"unknown topology option", "topologyManagerPolicy: restricted\ntopologyManagerPolicyOptions: {fast: \"true\"}\n", nil, SeverityError, "topologyManagerPolicyOptions.fast",
			`unknown Topology Manager Policy option: "fast"`},
		{"max-allowable below 8", "topologyManagerPolicy: restricted\ntopologyManagerPolicyOptions: {max-allowable-numa-nodes: \"4\"}\n", nil, SeverityError, "topologyManagerPolicyOptions.max-allowable-numa-nodes",
			`the minimum value of "max-allowable-numa-nodes" should not be less than 8`},
		{"more than 8 NUMA nodes", "topologyManagerPolicy: best-effort\n", gb, SeverityError, "topologyManagerPolicyOptions.max-allowable-numa-nodes",
			"unsupported on machines with more than 8 NUMA Nodes"},
		{"max-allowable below node count", "topologyManagerPolicy: best-effort\ntopologyManagerPolicyOptions: {max-allowable-numa-nodes: \"16\"}\n", gb, SeverityError, "topologyManagerPolicyOptions.max-allowable-numa-nodes",
			"unsupported on machines with more than 16 NUMA Nodes"},
		{"topology options ignored with none", "topologyManagerPolicyOptions: {prefer-closest-numa-nodes: \"true\"}\n", nil, SeverityWarning, "topologyManagerPolicyOptions",
			"topologyManagerPolicyOptions map[prefer-closest-numa-nodes:true] are ignored with topologyManagerPolicy none"},
		{"unknown memory policy", "memoryManagerPolicy: static\n", nil, SeverityError, "memoryManagerPolicy", `unknown policy: "static"`},
		{"reservedMemory sum", "memoryManagerPolicy: Static\nkubeReserved: {memory: 1Gi}\nreservedMemory: [{numaNode: 0, limits: {memory: 1Gi}}]\n", nil, SeverityError, "reservedMemory",
			`the total amount "1Gi" of type "memory" is not equal to the value "1124Mi" determined by Node Allocatable feature`},
		{"reservedMemory without any", "memoryManagerPolicy: Static\n", nil, SeverityError, "reservedMemory",
			`the total amount "0" of type "memory" is not equal to the value "100Mi" determined by Node Allocatable feature`},
		{"reservedMemory hugepages", "memoryManagerPolicy: Static\nreservedMemory: [{numaNode: 0, limits: {memory: 100Mi, hugepages-1Gi: 1Gi}}]\n", nil, SeverityError, "reservedMemory",
			`the total amount "1Gi" of type "hugepages-1Gi" is not equal to the value "0" determined by Node Allocatable feature`},
		{"reservedMemory unknown NUMA", "memoryManagerPolicy: Static\nreservedMemory: [{numaNode: 3, limits: {memory: 100Mi}}]\n", dual, SeverityError, "reservedMemory[0].numaNode",
			"the reserved memory configuration references a NUMA node 3 that does not exist on this machine"},
		{"eviction without memory and no reservation", "memoryManagerPolicy: Static\nevictionHard: {nodefs.available: 10%}\n", nil, SeverityError, "reservedMemory",
			"[memorymanager] you should specify the system reserved memory"},
		{"eviction percentage", "memoryManagerPolicy: Static\nevictionHard: {memory.available: 1%}\nreservedMemory: [{numaNode: 0, limits: {memory: 1Gi}}]\n", dual, SeverityError, "reservedMemory",
			`the total amount "1Gi" of type "memory" is not equal to the value "1374389504" determined by Node Allocatable feature`},
		{"reservedMemory ignored", "reservedMemory: [{numaNode: 0, limits: {memory: 1Gi}}]\n", nil, SeverityWarning, "reservedMemory",
			"reservedMemory is ignored with memoryManagerPolicy None"},
		{"kubeReserved hugepages", "kubeReserved: {hugepages-2Mi: 2Mi}\n", nil, SeverityError, "kubeReserved",
			`--kube-reserved value failed to parse: cannot reserve "hugepages-2Mi" resource`},
		{"eviction zero", "evictionHard: {memory.available: \"0\"}\n", nil, SeverityError, "evictionHard.memory.available",
			"eviction threshold memory.available must be positive: 0"},
		{"eviction signal", "evictionHard: {memory.free: 1Gi}\n", nil, SeverityError, "evictionHard.memory.free",
			"unsupported eviction signal memory.free"},
		{"reservation beyond capacity", "systemReserved: {memory: 200Gi}\n", dual, SeverityError, "kubeReserved",
			`invalid Node Allocatable configuration. Resource "memory" has a reservation of 204900Mi but capacity of 128Gi. Expected capacity >= reservation.`},
		{"static without topology", "cpuManagerPolicy: static\nreservedSystemCPUs: \"0,16\"\n", nil, SeverityWarning, "topologyManagerPolicy",
			"topologyManagerPolicy none: the CPU, memory and device managers allocate independently, so a Guaranteed pod's CPUs, memory and GPUs may land on different NUMA nodes"},
		{"prefer-closest without distances", "topologyManagerPolicy: restricted\ntopologyManagerPolicyOptions: {prefer-closest-numa-nodes: \"true\"}\n", noDistances(t, dual), SeverityError, "topologyManagerPolicyOptions.prefer-closest-numa-nodes",
			"cannot discover NUMA topology: error getting NUMA distances from cadvisor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := lintString(t, tt.body, tt.node)
			for _, f := range r.Findings {
				if f.Message == tt.want {
					if f.Severity != tt.sev || f.Field != tt.field {
						t.Fatalf("finding %q: severity %s field %s, want %s %s", f.Message, f.Severity, f.Field, tt.sev, tt.field)
					}
					return
				}
			}
			t.Fatalf("no finding %q in\n%s", tt.want, dump(r))
		})
	}
}

func noDistances(t *testing.T, n *node.Node) *node.Node {
	c := *n
	c.NUMANodes = append([]node.NUMANode(nil), n.NUMANodes...)
	for i := range c.NUMANodes {
		c.NUMANodes[i].Distances = nil
	}
	return &c
}

func dump(r Report) string {
	var b strings.Builder
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "  %s %s [%s] %s\n", f.Severity, f.Field, f.Stage, f.Message)
	}
	return b.String()
}

func TestLintCleanConfig(t *testing.T) {
	dual := mustNode(t, "testdata/node-2numa-smt.yaml")
	r := lintString(t, `cpuManagerPolicy: static
reservedSystemCPUs: "0,16"
memoryManagerPolicy: Static
kubeReserved: {memory: 1Gi}
systemReserved: {memory: 1Gi}
reservedMemory:
- {numaNode: 0, limits: {memory: 1Gi}}
- {numaNode: 1, limits: {memory: 1124Mi}}
topologyManagerPolicy: single-numa-node
`, dual)
	if r.Problems() != 0 {
		t.Fatalf("want no problems, got\n%s", dump(r))
	}
}

func TestLintBrokenGolden(t *testing.T) {
	c, err := Load("testdata/broken.yaml", 0)
	if err != nil {
		t.Fatal(err)
	}
	r := Lint(c, mustNode(t, "testdata/node-2numa-smt.yaml"))
	var b bytes.Buffer
	if err := output.Write(&b, output.JSON, r, output.Options{}); err != nil {
		t.Fatal(err)
	}
	golden := "testdata/broken.lint.golden.json"
	if *update {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("report differs from %s (run go test -update):\n%s", golden, b.String())
	}
	if r.Errors() != 4 {
		t.Errorf("errors = %d, want 4:\n%s", r.Errors(), dump(r))
	}
}
