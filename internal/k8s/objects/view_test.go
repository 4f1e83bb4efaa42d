package objects

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	sigsjson "sigs.k8s.io/json"
)

// viewCases are documents the full plan and sigs.k8s.io/json's strict
// decode must agree on: same value when both accept, both refuse otherwise.
func viewCases(t testing.TB) []string {
	one := int64(1)
	pod := v1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ml", Labels: map[string]string{"a": "b"}, CreationTimestamp: metav1.Now(), ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}}}},
		Spec: v1.PodSpec{NodeName: "n", ActiveDeadlineSeconds: &one, Containers: []v1.Container{{Name: "c", Image: "i", Command: []string{"a", "b\u00e9\"\\"},
			Ports:          []v1.ContainerPort{{ContainerPort: 80, Protocol: v1.ProtocolTCP}},
			LivenessProbe:  &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromString("http")}}, PeriodSeconds: 3},
			Resources:      v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}, Limits: v1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}},
			ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(8080)}}}}},
			Tolerations: []v1.Toleration{{Key: "k", Operator: v1.TolerationOpExists}}},
		Status: v1.PodStatus{Phase: v1.PodRunning, StartTime: &metav1.Time{}},
	}
	b, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	good := string(b)
	cases := []string{good, `{}`, `null`, `{"spec":{"containers":null}}`, `{"spec":{"containers":[]}}`,
		`{"metadata":{"labels":{"a":"\u00e9\ud83d\ude00","b":"\ud800x"}}}`, `{"metadata":{"name":"a\tb"}}`,
		`{"status":{"startTime":null}}`, `{"spec":{"priority":null}}`, `{"spec":{"priority":-3}}`}
	for _, bad := range []string{
		`{"kind":"Pod","spec":{"nodeNam":"x"}}`,     // unknown field
		`{"metadata":{"name":"a","name":"b"}}`,      // duplicate field
		`{"metadata":{"labels":{"a":"1","a":"2"}}}`, // duplicate key
		`{"spec":{"priority":1.5}}`,                 // not an int
		`{"spec":{"priority":"1"}}`,                 // a string for an int
		`{"spec":{"priority":99999999999}}`,         // int32 overflow
		`{"spec":{"hostNetwork":"yes"}}`,            // a string for a bool
		`{"spec":{"containers":{}}}`,                // an object for a list
		`{"spec":{"overhead":{"cpu":"lots"}}}`,      // a bad quantity
		`{"status":{"startTime":"yesterday"}}`,      // a bad time
		`{"Kind":"Pod"}`,                            // case-sensitive names
		`{"spec":{"containers":[{"name":"c",}]}}`,   // syntax
		`{"spec":`,                              // truncated
		`{"metadata":{}} x`,                     // trailing data
		`{"metadata":{"name":"\x01"}}`,          // control character
		`{"metadata":{"name":"\q"}}`,            // bad escape
		`{"spec":{"activeDeadlineSeconds":01}}`, // bad number
		`[1]`, `"pod"`, `7`, `tru`, ``,
	} {
		cases = append(cases, bad)
	}
	// every field of the good pod renamed in turn: each an unknown field
	for i := 0; i < len(good); i++ {
		if good[i] == '"' && i+2 < len(good) && good[i+1] >= 'a' && good[i+1] <= 'z' {
			if j := strings.IndexByte(good[i+1:], '"'); j > 0 && good[i+1+j+1] == ':' {
				cases = append(cases, good[:i+1]+"X"+good[i+1:])
			}
		}
	}
	return cases
}

func strictPod(data []byte) (*v1.Pod, error) {
	var p v1.Pod
	serrs, err := sigsjson.UnmarshalStrict(data, &p, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err == nil && len(serrs) > 0 {
		err = serrs[0]
	}
	return &p, err
}

// TestFullPlanMatchesStrictDecode: the walker with every field kept decodes
// what sigs.k8s.io/json's strict decode decodes, and refuses what it refuses.
func TestFullPlanMatchesStrictDecode(t *testing.T) {
	full := plans().full(reflect.TypeFor[v1.Pod]())
	refused := 0
	for _, c := range viewCases(t) {
		want, werr := strictPod([]byte(c))
		var got v1.Pod
		gerr := decodeView([]byte(c), full, &got)
		if (werr == nil) != (gerr == nil) {
			t.Errorf("%.120s: strict err %v, view err %v", c, werr, gerr)
			continue
		}
		if werr != nil {
			refused++
			continue
		}
		if !reflect.DeepEqual(want, &got) {
			t.Errorf("%.120s: decoded\n%+v\nwant\n%+v", c, got, *want)
		}
	}
	if refused < 20 {
		t.Errorf("only %d cases refused", refused)
	}
}

// TestViewKeepsOnlyPlannerFields: the pod view keeps what planners read,
// drops the rest, and still refuses bad values in the dropped fields.
func TestViewKeepsOnlyPlannerFields(t *testing.T) {
	data := []byte(viewCases(t)[0])
	var got podDoc
	if err := decodeView(data, podDocView(), &got); err != nil {
		t.Fatal(err)
	}
	want, _ := strictPod(data)
	if got.Metadata.Name != "p" || got.Spec.NodeName != "n" || !reflect.DeepEqual(got.Spec.Containers[0].Resources, want.Spec.Containers[0].Resources) ||
		got.Spec.Tolerations[0].Key != "k" || got.Status.Phase != v1.PodRunning {
		t.Errorf("kept fields lost: %+v", got)
	}
	if got.Spec.Containers[0].Image != "" || got.Spec.Containers[0].Command != nil || got.Metadata.ManagedFields != nil || got.Spec.ActiveDeadlineSeconds != nil ||
		got.Status.StartTime != nil || !got.Metadata.CreationTimestamp.IsZero() {
		t.Errorf("dropped fields kept: %+v", got)
	}
	for _, tc := range []struct{ data, want string }{
		{`{"spec":{"containers":[{"name":"c","imag":"x"}]}}`, `unknown field "spec.containers[0].imag"`},
		{`{"spec":{"containers":[{"name":"c","ports":[{"containerPort":"80"}]}]}}`, `spec.containers[0].ports[0].containerPort: Invalid value: string (want int32)`},
		{`{"metadata":{"creationTimestamp":"soon"}}`, `metadata.creationTimestamp: Invalid value: "soon"`},
		{`{"spec":{"activeDeadlineSeconds":1,"activeDeadlineSeconds":2}}`, `duplicate field "spec.activeDeadlineSeconds"`},
		{`{"items":[{"metadata":{"name":"a"}},{"spec":{"hostPID":1}}]}`, `items[1].spec.hostPID: Invalid value: number 1 (want bool)`},
		{`{"spec":{"containers":` + strings.Repeat(`[`, 2000), `exceeded max depth`},
	} {
		var pd podDoc
		err := decodeView([]byte(tc.data), podDocView(), &pd)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.80s: got %v, want %q", tc.data, err, tc.want)
		}
	}
}

func FuzzFullPlanMatchesStrictDecode(f *testing.F) {
	for _, c := range viewCases(f) {
		f.Add([]byte(c))
	}
	full := plans().full(reflect.TypeFor[v1.Pod]())
	f.Fuzz(func(t *testing.T, data []byte) {
		want, werr := strictPod(data)
		var got v1.Pod
		gerr := decodeView(data, full, &got)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("strict err %v, view err %v", werr, gerr)
		}
		if werr == nil && !reflect.DeepEqual(want, &got) {
			t.Fatalf("decoded %+v, want %+v", got, *want)
		}
	})
}
