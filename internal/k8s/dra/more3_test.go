package dra

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/mig"
	"github.com/gpunode/gpunode/internal/topo"
)

// TestMatchesNoCEL: a selector without CEL is an error of matches.
func TestMatchesNoCEL(t *testing.T) {
	in := &Input{}
	in.init()
	d := &device{id: deviceID{"gpu.nvidia.com", "p", "gpu-0"}, dev: &resourceapi.Device{Name: "gpu-0"}}
	_, err := in.matches(context.Background(), d, []resourceapi.DeviceSelector{{}}, "class x")
	if err == nil || err.Error() != "class x: selector #0: CEL expression empty (unsupported selector type?)" {
		t.Fatalf("err %v", err)
	}
}

// TestPodClaimsErrors: a pod claim naming both a claim and a template, or
// a template that is not given, is refused by field.
func TestPodClaimsErrors(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("a"), ResourceClaimTemplateName: ptr.To("b")}}
	_, err := PodClaims(pod, "pod.yaml", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "spec.resourceClaims[0]: Invalid value: exactly one of resourceClaimName and resourceClaimTemplateName") {
		t.Fatalf("both: %v", err)
	}
	pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("b")}}
	_, err = PodClaims(pod, "pod.yaml", nil, nil)
	if err == nil || !strings.Contains(err.Error(), `spec.resourceClaims[0].resourceClaimTemplateName: Not found: ResourceClaimTemplate "ns/b" in --templates`) {
		t.Fatalf("missing template: %v", err)
	}
}

// TestMIGCapacityNames: a MIG device's capacities by the driver's names.
func TestMIGCapacityNames(t *testing.T) {
	for _, s := range synthNode(t, "n1", 1, 1, MIGDynamic) {
		for _, d := range s.Spec.Devices {
			if !strings.Contains(d.Name, "-mig-") {
				continue
			}
			var names []string
			for k := range d.Capacity {
				names = append(names, string(k))
			}
			slices.Sort(names)
			if got := strings.Join(names, ","); got != "copyEngines,decoders,encoders,jpegEngines,memory,multiprocessors,ofaEngines" {
				t.Fatalf("%s: capacities %s", d.Name, got)
			}
			return
		}
	}
	t.Fatal("no MIG device")
}

// TestPCIeRootNeedsRootComplex: the pcieRoot attribute comes from a PCIe
// path that starts at a root complex ("pci..."); a GPU without one gets no
// attribute and a warning.
func TestPCIeRootNeedsRootComplex(t *testing.T) {
	for _, c := range []struct {
		path []string
		want bool
	}{{[]string{"pci0000:15", "0000:18:00.0"}, true}, {[]string{"0000:18:00.0"}, false}, {nil, false}} {
		st := gpu.Status{DriverVersion: "550.54.15", CUDAVersion: "12.4", GPUs: []gpu.GPU{{Index: 0, Name: "NVIDIA H100 80GB HBM3",
			UUID: "GPU-1", PCIAddress: "0000:18:00.0", Architecture: "Hopper", ComputeCapability: "9.0", MemoryBytes: 81559 << 20, SMCount: 132}}}
		tp := &topo.Topology{GPUs: []topo.PCIDevice{{BDF: "0000:18:00.0", PCIePath: c.path}}}
		l, err := Slices(SliceOptions{NodeName: "n1", MIG: MIGNone, Topology: tp, Status: st, Catalog: mig.Builtin()})
		if err != nil {
			t.Fatal(err)
		}
		_, has := l.Items[0].Spec.Devices[0].Attributes["resource.kubernetes.io/pcieRoot"]
		if has != c.want || (len(l.Warnings) == 0) == !c.want {
			t.Fatalf("path %v: attribute %v, warnings %q", c.path, has, l.Warnings)
		}
	}
}

// TestValidateCountAndRequestRefs: Validate (inputs built in process)
// names a negative count and a constraint naming no request by field.
func TestValidateCountAndRequestRefs(t *testing.T) {
	neg := exact("r", "gpu.nvidia.com", -1)
	err := validateClaim(t, claimOf("c", []resourceapi.DeviceRequest{neg}))
	if err == nil || err.Error() != `ResourceClaim "default/c": spec.devices.requests[0].exactly.count: Invalid value: -1: must be greater than zero` {
		t.Fatalf("count: %v", err)
	}
	err = validateClaim(t, claimOf("c", []resourceapi.DeviceRequest{exact("r", "gpu.nvidia.com", 1)}, matchAttr("resource.kubernetes.io/pcieRoot", "nope")))
	if err == nil || !strings.HasPrefix(err.Error(), `ResourceClaim "default/c": spec.devices.constraints[0].requests[0]: Invalid value: "nope"`) {
		t.Fatalf("request ref: %v", err)
	}
}
