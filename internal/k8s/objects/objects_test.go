package objects

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

const goodNode = `apiVersion: v1
kind: Node
metadata: {name: a, labels: {rack: r1}}
status:
  allocatable: {cpu: "8", nvidia.com/gpu: "8"}
`

func TestLoadNodesFormats(t *testing.T) {
	list := `{"apiVersion":"v1","kind":"List","metadata":{"resourceVersion":""},"items":[
 {"apiVersion":"v1","kind":"Node","metadata":{"name":"x"},"status":{"allocatable":{"cpu":"4"}}},
 {"apiVersion":"v1","kind":"Node","metadata":{"name":"y"}}]}`
	for _, tc := range []struct {
		name, data string
		want       []string
	}{
		{"yaml doc", goodNode, []string{"a"}},
		{"two docs", goodNode + "---\n# comment only\n---\n" + strings.Replace(goodNode, "name: a", "name: b", 1), []string{"a", "b"}},
		{"json list", list, []string{"x", "y"}},
		{"yaml NodeList", "apiVersion: v1\nkind: NodeList\nitems:\n- metadata: {name: z}\n", []string{"z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes, err := LoadNodes("f", []byte(tc.data))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, n := range nodes {
				got = append(got, n.Name)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	nodes, _ := LoadNodes("f", []byte(goodNode))
	if q := nodes[0].Status.Allocatable["nvidia.com/gpu"]; q.Value() != 8 || nodes[0].Labels["rack"] != "r1" {
		t.Errorf("decoded %+v", nodes[0])
	}
}

func TestBadInputNamesFileDocumentField(t *testing.T) {
	for _, tc := range []struct {
		name string
		load func(string, []byte) error
		data string
		want string
	}{
		{"unknown field in a List item", nodes, `{"apiVersion":"v1","kind":"List","items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"},"spec":{"unschedulabel":true}}]}`,
			`f.json:1: document 1: items[1]: Node "b": unknown field "spec.unschedulabel"`},
		{"bad quantity", nodes, goodNode + "---\n" + "apiVersion: v1\nkind: Node\nmetadata: {name: b}\nstatus: {allocatable: {nvidia.com/gpu: lots}}\n",
			`f.json:10: document 2: Node "b": status.allocatable[nvidia.com/gpu]: Invalid value: "lots"`},
		{"wrong type", nodes, "apiVersion: v1\nkind: Node\nmetadata: {name: b}\nspec: {unschedulable: maybe}\n",
			`f.json:4: document 1: Node "b": spec.unschedulable: Invalid value: string (want bool)`},
		{"wrong kind", nodes, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n", `f.json:2: document 1: kind: this is a v1 Pod "p", not a v1 Node (or a List of Nodes)`},
		{"wrong item kind", nodes, `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"}}]}`, `items[0]: Node "s": kind: Unsupported value: "Service"`},
		{"no name", nodes, "apiVersion: v1\nkind: Node\nmetadata: {}\n", `document 1: Node "": metadata.name: Required value`},
		{"duplicate node", nodes, goodNode + "---\n" + goodNode, `Node "a": metadata.name: Duplicate value`},
		{"duplicate yaml key", nodes, "apiVersion: v1\nkind: Node\nkind: Node\nmetadata: {name: a}\n", `f.json:3: document 1: `},
		{"not yaml", nodes, "apiVersion: v1\nkind: [\n", `f.json:2: document 1: `},
		{"empty", nodes, "# nothing\n", `f.json: no documents`},
		{"pod unknown field", pods, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {nodeNam: n1, containers: [{name: c}]}\n", `f.json:4: document 1: Pod "p": unknown field "spec.nodeNam"`},
		{"podgroup unknown field", work, "apiVersion: scheduling.k8s.io/v1alpha3\nkind: PodGroup\nmetadata: {name: g}\nspec: {schedulingConstraints: {topologies: []}}\n", `document 1: PodGroup "g": unknown field "spec.schedulingConstraints.topologies"`},
		{"unsupported workload", work, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n", `document 1: Deployment "d": kind: Unsupported value`},
		{"volcano task field", work, "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: v}\nspec: {tasks: [{name: w, replica: 2}]}\n", `f.json:4: document 1: Job "v": unknown field "spec.tasks[0].replica"`},
		{"kai level without label", topo, "apiVersion: kai.scheduler/v1alpha1\nkind: Topology\nmetadata: {name: t}\nspec: {levels: [{nodeLabel: a}, {}]}\n", `f.json:4: document 1: Topology "t": spec.levels[1].nodeLabel: Required value`},
		{"hypernode tier type", topo, "apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata: {name: s0}\nspec: {tier: one}\n", `HyperNode "s0": spec.tier: Invalid value`},
		{"kueue list item", topo, "apiVersion: v1\nkind: List\nitems:\n- apiVersion: kueue.x-k8s.io/v1beta2\n  kind: Topology\n  metadata: {name: k}\n  spec: {levels: [{nodeLable: x}]}\n", `f.json:7: document 1: items[0]: Topology "k": unknown field "spec.levels[0].nodeLable"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.load("f.json", []byte(tc.data))
			var oe *Error
			if !errors.As(err, &oe) {
				t.Fatalf("error %v (%T) is not an *Error", err, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error\n  %v\nwant it to contain\n  %s", err, tc.want)
			}
		})
	}
}

func nodes(f string, b []byte) error { _, err := LoadNodes(f, b); return err }
func pods(f string, b []byte) error  { _, err := LoadPods(f, b); return err }
func work(f string, b []byte) error  { _, err := LoadWorkload(f, b); return err }
func topo(f string, b []byte) error  { _, err := LoadTopology(f, b); return err }

func TestLoadWorkloadAndTopologyKinds(t *testing.T) {
	w, err := LoadWorkload("w", []byte(`apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata: {name: g}
spec:
  schedulingPolicy: {gang: {minCount: 2}}
  schedulingConstraints: {topology: [{key: rack}, {key: block}]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: j}
spec:
  parallelism: 2
  template:
    spec:
      schedulingGroup: {podGroupName: g}
      containers: [{name: c}]
`))
	if err != nil {
		t.Fatal(err)
	}
	// two topology keys decode: rejecting them is lint's and place's job
	if len(w.PodGroups) != 1 || len(w.PodGroups[0].Spec.SchedulingConstraints.Topology) != 2 || len(w.Jobs) != 1 || w.Jobs[0].Doc != 2 {
		t.Errorf("workload %+v", w)
	}
	tp, err := LoadTopology("t", []byte(`apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: s0}
spec:
  tier: 1
  tierName: leaf
  members:
  - type: Node
    selector: {labelMatch: {matchLabels: {rack: r1}}}
status: {nodeCount: 2}
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(tp.HyperNodes) != 1 || tp.HyperNodes[0].Spec.TierName != "leaf" || tp.HyperNodes[0].Spec.Members[0].Selector.LabelMatch == nil {
		t.Errorf("topology %+v", tp)
	}
}

// TestWorkloadPodGroupVersions: kube-scheduler v1.37 watches
// scheduling.k8s.io/v1beta1 PodGroups (GenericWorkload beta); v1alpha2 and
// v1alpha3 read the same; another version is refused naming the supported ones.
func TestWorkloadPodGroupVersions(t *testing.T) {
	for _, v := range []string{"scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1alpha3", "scheduling.k8s.io/v1alpha2"} {
		doc := "apiVersion: " + v + "\nkind: PodGroup\nmetadata: {name: g}\nspec: {schedulingPolicy: {gang: {minCount: 3}}, schedulingConstraints: {topology: [{key: topology.kubernetes.io/rack}]}}\n"
		w, err := LoadWorkload("w.yaml", []byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if len(w.PodGroups) != 1 || w.PodGroups[0].Spec.SchedulingPolicy.Gang.MinCount != 3 || w.PodGroups[0].Spec.SchedulingConstraints.Topology[0].Key != "topology.kubernetes.io/rack" {
			t.Errorf("%s: decoded %+v", v, w.PodGroups)
		}
	}
	_, err := LoadWorkload("w.yaml", []byte("apiVersion: scheduling.k8s.io/v2\nkind: PodGroup\nmetadata: {name: g}\n"))
	if err == nil || !strings.Contains(err.Error(), "supported: PodGroup (scheduling.k8s.io/v1beta1, scheduling.k8s.io/v1alpha2, scheduling.k8s.io/v1alpha3)") {
		t.Errorf("unknown version: %v", err)
	}
}

// TestUniqueNamesCollisions: names whose hashes collide are told apart by
// name, and a duplicate among them is still found.
func TestUniqueNamesCollisions(t *testing.T) {
	names := [][2]string{{"a", "p"}, {"b", "p"}, {"", "p"}, {"a", "q"}, {"b", "p"}}
	at := func(i int) (string, string, string) { return names[i][0], names[i][1], "Pod" }
	for _, hash := range []func(string, string) uint64{
		func(string, string) uint64 { return 7 },                            // every hash collides
		func(ns, _ string) uint64 { return uint64(len(ns)) },                // some do
		func(ns, name string) uint64 { return uint64(len(ns) + len(name)) }, // others
	} {
		err := uniqueNamesHashed("f", len(names), at, hash)
		if err == nil || !strings.Contains(err.Error(), `Duplicate value: "b/p" (objects 2 and 5 of the file)`) {
			t.Errorf("got %v", err)
		}
		if err := uniqueNamesHashed("f", 4, at, hash); err != nil {
			t.Errorf("distinct names: %v", err)
		}
	}
	if err := uniqueNames("f", len(names), at); err == nil || !strings.Contains(err.Error(), "objects 2 and 5") {
		t.Errorf("uniqueNames: %v", err)
	}
}

// TestMaxDocumentsEdge: a file of MaxDocuments documents (empty ones
// counted) is read whole; one more is refused, not cut short.
func TestMaxDocumentsEdge(t *testing.T) {
	obj := "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"
	for _, tc := range []struct {
		empty   int // empty documents before the object
		wantErr bool
	}{
		{MaxDocuments - 2, false},
		{MaxDocuments - 1, false}, // the object is document MaxDocuments
		{MaxDocuments, true},
	} {
		data := strings.Repeat("# empty\n---\n", tc.empty) + obj
		n := 0
		err := EachDocument("f.yaml", []byte(data), func(Document) error { n++; return nil })
		if tc.wantErr {
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than %d documents", MaxDocuments)) {
				t.Errorf("%d empty documents: err = %v, want more than %d documents", tc.empty, err, MaxDocuments)
			}
			continue
		}
		if err != nil || n != 1 {
			t.Errorf("%d empty documents: %d documents, err %v; want 1, nil", tc.empty, n, err)
		}
	}
}

// TestLocateLoneCR: YAML breaks lines at a lone '\r' too; the line an
// Error names is counted by '\n' as every other one is, and lies inside
// the file.
func TestLocateLoneCR(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"apiVersion: v1\rkind: Pod\rbogus: 1\n", 1},
		{"apiVersion: v1\r\nkind: Pod\r\nbogus: 1\r\n", 3},
		{"apiVersion: v1\rkind: Pod\nx: 2\rbogus: 1\n", 2},
		{"\r0:", 1},
	} {
		field := "bogus"
		if tc.in == "\r0:" {
			field = "0"
		}
		err := Locate(&Error{File: "f.yaml", Doc: 1, Item: -1, Field: field, Reason: "unknown field"}, []byte(tc.in))
		var e *Error
		if !errors.As(err, &e) || e.Line != tc.want {
			t.Errorf("%q: %v, want line %d", tc.in, err, tc.want)
		}
	}
}
