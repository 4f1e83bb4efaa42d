package dra

import (
	"math/rand/v2"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	resourceinternal "k8s.io/kubernetes/pkg/apis/resource"
	_ "k8s.io/kubernetes/pkg/apis/resource/install"
	"k8s.io/kubernetes/pkg/apis/resource/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/gpunode/gpunode/internal/k8s/dra"
)

// Values the DRA mutations draw from, besides mutNames.
var (
	mutCounts   = []int64{-1, 0, 1, 2, 32, 33}
	mutModes    = []resourcev1.DeviceAllocationMode{"", resourcev1.DeviceAllocationModeAll, resourcev1.DeviceAllocationModeExactCount, "Some"}
	mutDrivers  = []string{"gpu.nvidia.com", "GPU.nvidia.com", "a", strings.Repeat("d", 63), strings.Repeat("d", 64), "a_b", "-a", "a..b", "dra.example.com"}
	mutPools    = []string{"node-1", "a/b", "a//b", "/a", "a/", "Bad_Name!", strings.Repeat("p", 253), strings.Repeat("p", 254), strings.Repeat("p", 200) + "/" + strings.Repeat("q", 52)}
	mutNodeSels = []string{"nodeName", "allNodes", "allNodes=false", "perDeviceNodeSelection", "nodeSelector", "none", "nodeName+allNodes", "nodeName="}
)

var corev1NodeSelector = corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
	{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-1"}}}}}}

func baseClaimSpec() resourcev1.ResourceClaimSpec {
	return resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{
		{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.nvidia.com"}},
		{Name: "any", FirstAvailable: []resourcev1.DeviceSubRequest{{Name: "mig", DeviceClassName: "mig.nvidia.com"}}},
	}}}
}

func mutateClaimSpec(r *rand.Rand, s *resourcev1.ResourceClaimSpec) string {
	ex, sub := s.Devices.Requests[0].Exactly, &s.Devices.Requests[1].FirstAvailable[0]
	switch r.IntN(6) {
	case 0:
		s.Devices.Requests[0].Name = pick(r, mutNames)
		return "request name " + s.Devices.Requests[0].Name
	case 1:
		sub.Name = pick(r, mutNames)
		return "subrequest name " + sub.Name
	case 2:
		ex.DeviceClassName = pick(r, append(mutNames, ""))
		return "deviceClassName " + ex.DeviceClassName
	case 3:
		sub.DeviceClassName = pick(r, mutNames)
		return "subrequest deviceClassName " + sub.DeviceClassName
	case 4:
		ex.AllocationMode, ex.Count = pick(r, mutModes), pick(r, mutCounts)
		return "exactly " + string(ex.AllocationMode) + " count " + itoa(ex.Count)
	default:
		sub.AllocationMode, sub.Count = pick(r, mutModes), pick(r, mutCounts)
		return "subrequest " + string(sub.AllocationMode) + " count " + itoa(sub.Count)
	}
}

func itoa(n int64) string { b, _ := yaml.Marshal(n); return strings.TrimSpace(string(b)) }

func baseSlice() *resourcev1.ResourceSlice {
	return &resourcev1.ResourceSlice{
		TypeMeta:   metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "ResourceSlice"},
		ObjectMeta: metav1.ObjectMeta{Name: "node-1-gpu.nvidia.com", Labels: map[string]string{"app": "dra"}},
		Spec: resourcev1.ResourceSliceSpec{
			Driver: "gpu.nvidia.com", NodeName: ptr.To("node-1"),
			Pool: resourcev1.ResourcePool{Name: "node-1", Generation: 1, ResourceSliceCount: 1},
			Devices: []resourcev1.Device{{Name: "gpu-0", Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
				"type": {StringValue: ptr.To("gpu")}}}},
		},
	}
}

func mutateSlice(r *rand.Rand, s *resourcev1.ResourceSlice) string {
	sp := &s.Spec
	switch r.IntN(8) {
	case 0, 1:
		return mutateMeta(r, &s.ObjectMeta, false)
	case 2:
		sp.Driver = pick(r, mutDrivers)
		return "driver " + sp.Driver
	case 3:
		sp.Pool.Name = pick(r, mutPools)
		return "pool " + sp.Pool.Name
	case 4:
		sp.Pool.Generation, sp.Pool.ResourceSliceCount = pick(r, mutCounts), pick(r, mutCounts)
		return "generation " + itoa(sp.Pool.Generation) + " sliceCount " + itoa(sp.Pool.ResourceSliceCount)
	case 5:
		sp.Devices[0].Name = pick(r, mutNames)
		return "device " + sp.Devices[0].Name
	case 6:
		sp.NodeName = ptr.To(pick(r, mutNames))
		return "nodeName " + *sp.NodeName
	default:
		sel := pick(r, mutNodeSels)
		sp.NodeName = nil
		switch sel {
		case "nodeName+allNodes":
			sp.NodeName, sp.AllNodes = ptr.To("node-1"), ptr.To(true)
		case "nodeName=":
			sp.NodeName = ptr.To("")
		case "allNodes":
			sp.AllNodes = ptr.To(true)
		case "allNodes=false":
			sp.AllNodes = ptr.To(false)
		case "perDeviceNodeSelection":
			sp.PerDeviceNodeSelection = ptr.To(true)
			sp.Devices[0].AllNodes = ptr.To(true)
		case "nodeSelector":
			// One term with one valid requirement: the selector's own rules
			// are not what this test measures.
			sp.NodeSelector = &corev1NodeSelector
		}
		return "node selection " + sel
	}
}

// upstreamResource: the API server's verdict on a created DRA object:
// defaulted, converted to the internal type, then validated.
func upstreamResource(t *testing.T, obj runtime.Object, internal runtime.Object, validate func() field.ErrorList) []string {
	t.Helper()
	obj = obj.DeepCopyObject()
	legacyscheme.Scheme.Default(obj)
	if err := legacyscheme.Scheme.Convert(obj, internal, nil); err != nil {
		t.Fatalf("convert: %v", err)
	}
	var msgs []string
	for _, e := range validate() {
		msgs = append(msgs, e.Error())
	}
	return msgs
}

// TestDRAValidationMatchesAPIServer extends TestValidationMatchesAPIServer
// to the DRA kinds: gpunode's loaders (dra.LoadClaims, LoadTemplates,
// LoadClasses, LoadSlices) and k8s.io/kubernetes/pkg/apis/resource/validation
// get the same 1,000 mutated objects, 250 of each kind, and must make the
// same accept/refuse decision on each. The mutations touch metadata (names,
// namespaces, label keys and values, annotation keys), request and
// subrequest names, device class names, allocation modes and counts, and a
// slice's driver, pool name, generation and slice count, device names, node
// name and node selection (the node selector's own terms, attributes,
// capacities, counters and CEL selectors are left out).
func TestDRAValidationMatchesAPIServer(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 3))
	kinds := []string{"ResourceClaim", "ResourceClaimTemplate", "DeviceClass", "ResourceSlice"}
	refused := map[string]int{}
	agreed := 0
	for i := range 1000 {
		kind := kinds[i%4]
		var (
			did      []string
			upstream []string
			doc      []byte
			err      error
			loadErr  error
		)
		switch kind {
		case "ResourceClaim":
			c := &resourcev1.ResourceClaim{TypeMeta: metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: kind},
				ObjectMeta: metav1.ObjectMeta{Name: "train-0-gpu", Namespace: "default", Labels: map[string]string{"app": "train"}},
				Spec:       baseClaimSpec()}
			for range 1 + r.IntN(2) {
				if r.IntN(3) == 0 {
					did = append(did, mutateMeta(r, &c.ObjectMeta, true))
				} else {
					did = append(did, mutateClaimSpec(r, &c.Spec))
				}
			}
			var in resourceinternal.ResourceClaim
			upstream = upstreamResource(t, c, &in, func() field.ErrorList { return validation.ValidateResourceClaim(&in) })
			doc, err = yaml.Marshal(c)
			if err == nil {
				_, loadErr = dra.LoadClaims("claim.yaml", doc)
			}
		case "ResourceClaimTemplate":
			c := &resourcev1.ResourceClaimTemplate{TypeMeta: metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: kind},
				ObjectMeta: metav1.ObjectMeta{Name: "gpu-template", Namespace: "default", Labels: map[string]string{"app": "train"}},
				Spec:       resourcev1.ResourceClaimTemplateSpec{Spec: baseClaimSpec()}}
			for range 1 + r.IntN(2) {
				if r.IntN(3) == 0 {
					did = append(did, mutateMeta(r, &c.ObjectMeta, true))
				} else {
					did = append(did, mutateClaimSpec(r, &c.Spec.Spec))
				}
			}
			var in resourceinternal.ResourceClaimTemplate
			upstream = upstreamResource(t, c, &in, func() field.ErrorList { return validation.ValidateResourceClaimTemplate(&in) })
			doc, err = yaml.Marshal(c)
			if err == nil {
				_, loadErr = dra.LoadTemplates("template.yaml", doc)
			}
		case "DeviceClass":
			c := &resourcev1.DeviceClass{TypeMeta: metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: kind},
				ObjectMeta: metav1.ObjectMeta{Name: "gpu.nvidia.com", Labels: map[string]string{"app": "dra"}},
				Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
					Expression: "device.driver == 'gpu.nvidia.com'"}}}}}
			for range 1 + r.IntN(2) {
				did = append(did, mutateMeta(r, &c.ObjectMeta, false))
			}
			var in resourceinternal.DeviceClass
			upstream = upstreamResource(t, c, &in, func() field.ErrorList { return validation.ValidateDeviceClass(&in) })
			doc, err = yaml.Marshal(c)
			if err == nil {
				_, loadErr = dra.LoadClasses("class.yaml", doc)
			}
		default:
			s := baseSlice()
			for range 1 + r.IntN(2) {
				did = append(did, mutateSlice(r, s))
			}
			var in resourceinternal.ResourceSlice
			upstream = upstreamResource(t, s, &in, func() field.ErrorList { return validation.ValidateResourceSlice(&in) })
			doc, err = yaml.Marshal(s)
			if err == nil {
				_, loadErr = dra.LoadSlices("slice.yaml", doc)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		if (loadErr != nil) != (len(upstream) > 0) {
			t.Errorf("%s %d (%s): gpunode: %v; API server: %q", kind, i, strings.Join(did, ", "), loadErr, upstream)
			continue
		}
		agreed++
		if loadErr != nil {
			refused[kind]++
		}
	}
	t.Logf("%d of 1000 decisions agree; refused by both: %v", agreed, refused)
	for _, k := range kinds {
		if refused[k] < 50 || refused[k] > 200 {
			t.Errorf("%s: %d of 250 refused: the mutations should refuse between 50 and 200", k, refused[k])
		}
	}
}
