package dra

import (
	"math/rand/v2"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	core "k8s.io/kubernetes/pkg/apis/core"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
	"sigs.k8s.io/yaml"

	"github.com/gpunode/gpunode/internal/k8s/objects"
)

// Values the mutations draw from: valid and invalid names, label keys and
// values, resource names and quantities, at and around every limit.
var (
	mutNames = []string{"a", "node-1", "dgx-01.example.com", "Bad_Name!", "UPPER", "-a", "a-", "a..b", "a.b", "0",
		strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("a", 253), strings.Repeat("a", 254),
		strings.Repeat("a", 64) + ".b", "a_b", "a b", "é"}
	mutLabelKeys = []string{"a", "example.com/rack", "nvidia.com/gpu.product", "kubernetes.io/hostname", "a/b/c", "/a", "a/",
		"Example.com/x", "x_y", "_x", "x.", strings.Repeat("k", 63), strings.Repeat("k", 64), "p/" + strings.Repeat("k", 64), "a b"}
	mutLabelValues = []string{"", "v", "NVIDIA-H100-80GB-HBM3", "a_b.c-d", "-v", "v-", "b c", strings.Repeat("v", 63),
		strings.Repeat("v", 64), "a/b", "é"}
	mutResources = []string{"cpu", "memory", "ephemeral-storage", "nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "example.com/foo",
		"gpu", "pods", "requests.foo", "kubernetes.io/x", "a/b/c", "Example.com/x", "rdma/hca_shared_devices_a"}
	mutQuantities = []string{"-1", "0", "1", "8", "500m", "1.5", "2", "100Mi", "-100Mi", "1e3", "0.001"}
)

func pick[T any](r *rand.Rand, s []T) T { return s[r.IntN(len(s))] }

func basePod() *v1.Pod {
	return &v1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "train-0", Namespace: "default", Labels: map[string]string{"app": "train"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "main", Image: "nvcr.io/nvidia/pytorch:25.01-py3",
			Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{"cpu": resource.MustParse("4"), "nvidia.com/gpu": resource.MustParse("1")},
				Limits:   v1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}}},
	}
}

func baseNode() *v1.Node {
	return &v1.Node{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: "dgx-01", Labels: map[string]string{"kubernetes.io/hostname": "dgx-01"}},
		Status: v1.NodeStatus{
			Capacity:    v1.ResourceList{"cpu": resource.MustParse("224"), "nvidia.com/gpu": resource.MustParse("8")},
			Allocatable: v1.ResourceList{"cpu": resource.MustParse("220"), "nvidia.com/gpu": resource.MustParse("8")},
		},
	}
}

func mutateMeta(r *rand.Rand, m *metav1.ObjectMeta, namespaced bool) string {
	switch r.IntN(4) {
	case 0:
		m.Name = pick(r, mutNames)
		return "name " + m.Name
	case 1:
		if namespaced {
			m.Namespace = pick(r, mutNames)
			return "namespace " + m.Namespace
		}
		fallthrough
	case 2:
		k, v := pick(r, mutLabelKeys), pick(r, mutLabelValues)
		m.Labels[k] = v
		return "label " + k + "=" + v
	default:
		k := pick(r, mutLabelKeys)
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[k] = "x"
		return "annotation " + k
	}
}

func mutateList(r *rand.Rand, l *v1.ResourceList) string {
	if *l == nil {
		*l = v1.ResourceList{}
	}
	n, q := pick(r, mutResources), pick(r, mutQuantities)
	(*l)[v1.ResourceName(n)] = resource.MustParse(q)
	return n + "=" + q
}

func mutatePod(r *rand.Rand, p *v1.Pod) []string {
	var did []string
	for range 1 + r.IntN(2) {
		c := &p.Spec.Containers[0]
		switch r.IntN(7) {
		case 0, 1:
			did = append(did, mutateMeta(r, &p.ObjectMeta, true))
		case 2:
			did = append(did, "request "+mutateList(r, &c.Resources.Requests))
		case 3:
			did = append(did, "limit "+mutateList(r, &c.Resources.Limits))
		case 4:
			p.Spec.NodeName = pick(r, mutNames)
			did = append(did, "nodeName "+p.Spec.NodeName)
		case 5:
			k, v := pick(r, mutLabelKeys), pick(r, mutLabelValues)
			p.Spec.NodeSelector = map[string]string{k: v}
			did = append(did, "nodeSelector "+k+"="+v)
		default:
			if r.IntN(3) == 0 {
				p.Spec.InitContainers = []v1.Container{{Name: c.Name, Image: "busybox"}}
				did = append(did, "duplicate container name")
			} else {
				c.Name = pick(r, mutNames)
				did = append(did, "container name "+c.Name)
			}
		}
	}
	return did
}

func mutateNode(r *rand.Rand, n *v1.Node) []string {
	var did []string
	for range 1 + r.IntN(2) {
		switch r.IntN(4) {
		case 0, 1:
			did = append(did, mutateMeta(r, &n.ObjectMeta, false))
		case 2:
			did = append(did, "capacity "+mutateList(r, &n.Status.Capacity))
		default:
			did = append(did, "allocatable "+mutateList(r, &n.Status.Allocatable))
		}
	}
	return did
}

// upstreamPod is the API server's verdict on a created Pod: defaulted, converted
// to the internal type, then ValidatePodCreate.
func upstreamPod(t *testing.T, p *v1.Pod) []string {
	p = p.DeepCopy()
	legacyscheme.Scheme.Default(p)
	var in core.Pod
	if err := legacyscheme.Scheme.Convert(p, &in, nil); err != nil {
		t.Fatalf("convert: %v", err)
	}
	var msgs []string
	for _, e := range corevalidation.ValidatePodCreate(&in, corevalidation.PodValidationOptions{}) {
		msgs = append(msgs, e.Error())
	}
	return msgs
}

func upstreamNode(t *testing.T, n *v1.Node) []string {
	n = n.DeepCopy()
	legacyscheme.Scheme.Default(n)
	var in core.Node
	if err := legacyscheme.Scheme.Convert(n, &in, nil); err != nil {
		t.Fatalf("convert: %v", err)
	}
	var msgs []string
	for _, e := range corevalidation.ValidateNode(&in) {
		msgs = append(msgs, e.Error())
	}
	return msgs
}

// TestValidationMatchesAPIServer feeds gpunode's loaders (objects.LoadPods,
// objects.LoadNodes: what k8s place, admit, lint and dra read) and the API
// server's validation (k8s.io/kubernetes/pkg/apis/core/validation) the same
// 1,000 mutated objects, 500 Pods and 500 Nodes, and requires the same
// accept/refuse decision on each. The mutations touch the fields gpunode
// validates: names, namespaces, label keys and values, annotation keys,
// nodeName, nodeSelector, container names, and resource names and
// quantities in requests, limits, capacity and allocatable (hugepages,
// whose page-size rules gpunode does not check, are left out).
func TestValidationMatchesAPIServer(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 2))
	refused, agreed := 0, 0
	for i := range 1000 {
		var (
			did      []string
			upstream []string
			loadErr  error
			doc      []byte
			err      error
		)
		if i%2 == 0 {
			p := basePod()
			did = mutatePod(r, p)
			upstream = upstreamPod(t, p)
			if doc, err = yaml.Marshal(p); err != nil {
				t.Fatal(err)
			}
			_, loadErr = objects.LoadPods("pod.yaml", doc)
		} else {
			n := baseNode()
			did = mutateNode(r, n)
			upstream = upstreamNode(t, n)
			if doc, err = yaml.Marshal(n); err != nil {
				t.Fatal(err)
			}
			_, loadErr = objects.LoadNodes("node.yaml", doc)
		}
		if (loadErr != nil) != (len(upstream) > 0) {
			t.Errorf("object %d (%s): gpunode: %v; API server: %q", i, strings.Join(did, ", "), loadErr, upstream)
			continue
		}
		agreed++
		if loadErr != nil {
			refused++
		}
	}
	t.Logf("%d of 1000 decisions agree (%d refused by both)", agreed, refused)
	if refused < 200 || refused > 800 {
		t.Errorf("%d of 1000 refused: the mutations should refuse between 200 and 800", refused)
	}
}
