package objects

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// typedCases: the view cases, a pod and a node with every kept field set,
// each field of those renamed in turn, bad values in kept fields, and each
// case as the item of a List.
func typedCases(t testing.TB) (pods, nodes []string) {
	always := v1.ContainerRestartPolicyAlways
	pod := v1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ml", UID: "u-1", Labels: map[string]string{"a": "b", "c": ""},
			Annotations: map[string]string{"x/y": "z"}, OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: "u-2", Controller: ptr.To(true)}},
			CreationTimestamp: metav1.Now()},
		Spec: v1.PodSpec{NodeName: "n", NodeSelector: map[string]string{"k": "v"}, Priority: ptr.To[int32](-5), PriorityClassName: "high", SchedulerName: "volcano",
			Affinity: &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone", Operator: v1.NodeSelectorOpIn, Values: []string{"a", "b"}}}}}}}},
			Tolerations:     []v1.Toleration{{Key: "k", Operator: v1.TolerationOpExists, TolerationSeconds: ptr.To[int64](30)}},
			Resources:       &v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}},
			Overhead:        v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")},
			ResourceClaims:  []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("t")}},
			SchedulingGates: []v1.PodSchedulingGate{{Name: "wait"}},
			InitContainers: []v1.Container{{Name: "side", Image: "i", RestartPolicy: &always,
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}}}},
			Containers: []v1.Container{{Name: "c", Image: "i", Command: []string{"a"},
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi")},
					Limits: v1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}, Claims: []v1.ResourceClaim{{Name: "gpu"}}}}}},
		Status: v1.PodStatus{Phase: v1.PodRunning, QOSClass: v1.PodQOSBurstable, StartTime: &metav1.Time{}},
	}
	node := v1.Node{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "u-3", Labels: map[string]string{"kubernetes.io/hostname": "n"}, Annotations: map[string]string{"a": "b"}},
		Spec:       v1.NodeSpec{Unschedulable: true, Taints: []v1.Taint{{Key: "k", Value: "v", Effect: v1.TaintEffectNoSchedule}}, PodCIDR: "10.0.0.0/24"},
		Status: v1.NodeStatus{
			Capacity:    v1.ResourceList{v1.ResourceCPU: resource.MustParse("64"), "nvidia.com/gpu": resource.MustParse("8")},
			Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("63500m"), v1.ResourcePods: resource.MustParse("110")},
			Conditions:  []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now()}},
			NodeInfo:    v1.NodeSystemInfo{KubeletVersion: "v1.37.2"}},
	}
	marshal := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	renamed := func(good string) []string {
		var out []string
		for i := 0; i < len(good); i++ {
			if good[i] == '"' && i+2 < len(good) && good[i+1] >= 'a' && good[i+1] <= 'z' {
				if j := strings.IndexByte(good[i+1:], '"'); j > 0 && good[i+1+j+1] == ':' {
					out = append(out, good[:i+1]+"X"+good[i+1:])
				}
			}
		}
		return out
	}
	gp, gn := marshal(pod), marshal(node)
	pods = append(append(viewCases(t), gp), renamed(gp)...)
	pods = append(pods,
		`{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"1","cpu":"2"}}}]}}`,
		`{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"x"}}}]}}`,
		`{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":null,"memory":1}}}]}}`,
		`{"spec":{"containers":[null,{"name":7}]}}`, `{"spec":{"containers":[{"restartPolicy":null}]}}`,
		`{"spec":{"containers":[{"resources":{"limits":{}},"restartPolicy":"Always"}]}}`,
		`{"spec":{"overhead":null,"tolerations":[],"nodeSelector":{},"priority":null,"affinity":null}}`,
		`{"spec":{"nodeSelector":{"a":null,"b":"c"}}}`, `{"spec":{"nodeSelector":{"a":1}}}`, `{"spec":{"nodeSelector":[]}}`,
		`{"metadata":{"labels":{"a":"b","a":"c"}}}`, `{"metadata":{"ownerReferences":null,"annotations":null}}`, `{"metadata":null,"spec":null,"status":null}`,
		`{"status":{"phase":3}}`, `{"status":{"qosClass":"","phase":null}}`, `{"metadata":{"name":"a\u00e9\"b"}}`,
		`{"spec":{"nodeName":"n\u0000"}}`, `{"kind":"PodList","items":[null,{"metadata":{"name":"a"}},7]}`, `{"items":null}`, `{"items":[]}`,
		`{"items":{}}`, `{"items":[{"items":[]}]}`, `{"metadata":{"continue":"x","remainingItemCount":3}}`, `{"items":[{"metadata":{"continue":"x"}}]}`)
	nodes = append([]string{gn}, renamed(gn)...)
	nodes = append(nodes, `{}`, `null`, `[1]`, `{"spec":{"unschedulable":"yes"}}`, `{"spec":{"taints":[{"key":1}]}}`,
		`{"status":{"conditions":[null,{"type":"Ready"},{"status":"True","reason":7}]}}`, `{"status":{"conditions":[]}}`,
		`{"status":{"allocatable":{"cpu":"1","cpu":"2"}}}`, `{"status":{"capacity":{"cpu":"-1"},"allocatable":{}}}`, `{"status":{"capacity":{"cpu":"1e"}}}`,
		`{"status":{"nodeInfo":{"bootID":1}}}`, `{"kind":"NodeList","items":[{"metadata":{"name":"a"}},{"spec":{"podCIDR":1}}]}`)
	for _, list := range []*[]string{&pods, &nodes} {
		n := len(*list)
		for _, c := range (*list)[:n] {
			*list = append(*list, `{"apiVersion":"v1","kind":"List","items":[`+c+`,`+c+`]}`)
		}
	}
	return pods, nodes
}

func typedPodDecode(data []byte) (top Pod, items []*Pod, hasItems bool, err error) {
	d := &typedDecoder{}
	d.reset(data)
	if err = d.podObject(typedPlansOnce().podDoc, &top, &items, &hasItems); err == nil {
		err = d.finish()
	}
	return
}

func typedNodeDecode(data []byte) (top Node, items []*Node, hasItems bool, err error) {
	d := &typedDecoder{}
	d.reset(data)
	if err = d.nodeObject(typedPlansOnce().nodeDoc, &top, &items, &hasItems); err == nil {
		err = d.finish()
	}
	return
}

// conditionsTypeStatus keeps what the planner Node keeps of conditions.
func conditionsTypeStatus(cs []v1.NodeCondition) []v1.NodeCondition {
	if cs == nil {
		return nil
	}
	out := make([]v1.NodeCondition, len(cs))
	for i, c := range cs {
		out[i] = v1.NodeCondition{Type: c.Type, Status: c.Status}
	}
	return out
}

// TestTypedMatchesView: the typed decode keeps what the view decode keeps
// (as v1 objects, Node conditions cut to type and status) and refuses what
// it refuses with the same error, at the same path.
func TestTypedMatchesView(t *testing.T) {
	pods, nodes := typedCases(t)
	refused := 0
	for _, c := range pods {
		var want podDoc
		werr := decodeView([]byte(c), podDocView(), &want)
		top, items, hasItems, gerr := typedPodDecode([]byte(c))
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
			t.Errorf("pod %.150s:\n view err  %v\n typed err %v", c, werr, gerr)
			continue
		}
		if werr != nil {
			refused++
			continue
		}
		wantPod := &v1.Pod{TypeMeta: want.TypeMeta, ObjectMeta: want.Metadata.ObjectMeta, Spec: want.Spec, Status: want.Status}
		if got := top.V1(); !reflect.DeepEqual(got, wantPod) {
			t.Errorf("pod %.150s:\n typed %+v\n view  %+v", c, got, wantPod)
		}
		if hasItems != (want.Items != nil) || len(items) != len(want.Items) {
			t.Errorf("pod %.150s: %d items (%v), view %d", c, len(items), hasItems, len(want.Items))
			continue
		}
		for i := range items {
			// the view keeps List items whole: compare the planner's fields
			if (items[i] == nil) != (want.Items[i] == nil) || items[i] != nil && !reflect.DeepEqual(items[i].V1(), PodFromV1(want.Items[i]).V1()) {
				t.Errorf("pod %.150s: items[%d]:\n typed %+v\n view  %+v", c, i, items[i], want.Items[i])
			}
		}
	}
	for _, c := range nodes {
		var want nodeDoc
		werr := decodeView([]byte(c), nodeDocView(), &want)
		top, items, hasItems, gerr := typedNodeDecode([]byte(c))
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
			t.Errorf("node %.150s:\n view err  %v\n typed err %v", c, werr, gerr)
			continue
		}
		if werr != nil {
			refused++
			continue
		}
		want.Status.Conditions = conditionsTypeStatus(want.Status.Conditions)
		wantNode := &v1.Node{TypeMeta: want.TypeMeta, ObjectMeta: want.Metadata.ObjectMeta, Spec: want.Spec, Status: want.Status}
		if got := top.V1(); !reflect.DeepEqual(got, wantNode) {
			t.Errorf("node %.150s:\n typed %+v\n view  %+v", c, got, wantNode)
		}
		if hasItems != (want.Items != nil) || len(items) != len(want.Items) {
			t.Errorf("node %.150s: %d items, view %d", c, len(items), len(want.Items))
			continue
		}
		for i := range items {
			if items[i] == nil {
				continue
			}
			w := NodeFromV1(want.Items[i]).V1()
			if !reflect.DeepEqual(items[i].V1(), w) {
				t.Errorf("node %.150s: items[%d]:\n typed %+v\n view  %+v", c, i, items[i].V1(), w)
			}
		}
	}
	t.Logf("%d cases, %d refused", len(pods)+len(nodes), refused)
	if refused < 100 {
		t.Errorf("only %d cases refused", refused)
	}
}

// TestPlannerFromV1: the planner types made from v1 objects (the live
// cluster's) give back the same v1 fields as a decode of their JSON.
func TestPlannerFromV1(t *testing.T) {
	pods, nodes := typedCases(t)
	for _, c := range pods[len(viewCases(t)) : len(viewCases(t))+1] {
		top, _, _, err := typedPodDecode([]byte(c))
		if err != nil {
			t.Fatal(err)
		}
		v := top.V1()
		if got := PodFromV1(v).V1(); !reflect.DeepEqual(got, v) {
			t.Errorf("pod:\n from v1 %+v\n decoded %+v", got, v)
		}
		if top.More == nil || top.More.Overhead == nil || top.PodResources() == nil {
			t.Errorf("pod: More not kept: %+v", top.More)
		}
	}
	top, _, _, err := typedNodeDecode([]byte(nodes[0]))
	if err != nil {
		t.Fatal(err)
	}
	v := top.V1()
	if got := NodeFromV1(v).V1(); !reflect.DeepEqual(got, v) {
		t.Errorf("node:\n from v1 %+v\n decoded %+v", got, v)
	}
	if !top.Ready() || !top.Unschedulable || len(top.Allocatable) != 2 {
		t.Errorf("node fields lost: %+v", top)
	}
	if q, ok := top.Allocatable.Get(v1.ResourceCPU); !ok || q.MilliValue() != 63500 {
		t.Errorf("allocatable cpu %v %v", q, ok)
	}
}

func FuzzTypedMatchesView(f *testing.F) {
	pods, _ := typedCases(f)
	for _, c := range pods {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want podDoc
		werr := decodeView(data, podDocView(), &want)
		top, _, _, gerr := typedPodDecode(data)
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
			t.Fatalf("view err %v, typed err %v", werr, gerr)
		}
		if werr == nil {
			wantPod := &v1.Pod{TypeMeta: want.TypeMeta, ObjectMeta: want.Metadata.ObjectMeta, Spec: want.Spec, Status: want.Status}
			if got := top.V1(); !reflect.DeepEqual(got, wantPod) {
				t.Fatalf("typed %+v, view %+v", got, wantPod)
			}
		}
	})
}
