package dra

import (
	"context"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
)

// migClaim: count 1g.10gb MIG devices (56 exist on a dynamic-MIG node of 8
// H100s: seven per GPU).
func migClaim(t testing.TB, count int64) *Input {
	return &Input{Slices: synthNode(t, "n1", 8, 4, MIGDynamic), Classes: gpuClasses(),
		Claims: []*resourceapi.ResourceClaim{claimOf("c", []resourceapi.DeviceRequest{
			exact("mig", "mig.nvidia.com", count, "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'")})}}
}

// TestClaimDeviceLimitEdge: a claim may hold 32 devices (the API's
// AllocationResultsMaxSize): 31 and 32 fit, 33 does not, for gpunode's
// search and for the upstream allocator (whose error names the limit).
func TestClaimDeviceLimitEdge(t *testing.T) {
	for _, n := range []int64{31, 32} {
		nr := runOne(t, migClaim(t, n), Options{})
		if !nr.Fits || len(nr.Allocations) != 1 || int64(len(nr.Allocations[0].Results)) != n {
			t.Fatalf("%d devices: %+v", n, nr)
		}
	}
	for _, s := range []Solver{SolverAuto, SolverGpunode, SolverUpstream} {
		nr := runOne(t, migClaim(t, 33), Options{Solver: s})
		if nr.Fits || nr.Undecided || nr.Explain == nil {
			t.Fatalf("33 devices, solver %q: %+v", s, nr)
		}
		if s == SolverUpstream && !strings.Contains(nr.Explain.Reason, "exceeds the claim limit of 32") {
			t.Fatalf("33 devices, upstream: %q", nr.Explain.Reason)
		}
	}
}

// TestGpunodeBudgetIsAnError: gpunode's search alone, its node budget
// spent, is an error naming the node, never an answer.
func TestGpunodeBudgetIsAnError(t *testing.T) {
	_, err := Run(context.Background(), hardDistinct(), Options{Solver: SolverGpunode, SearchBudget: 1000})
	if err == nil || !strings.HasPrefix(err.Error(), "node n1: ") {
		t.Fatalf("err %v", err)
	}
}

// TestSolverNames: the solvers by their documented names.
func TestSolverNames(t *testing.T) {
	for _, s := range []string{"upstream", "gpunode"} {
		in := loadSeedInput(t, "slices-dgx-h100.yaml", "5.3.1-shared-claim.yaml")
		nr := runOne(t, in, Options{Solver: Solver(s), Explain: true})
		if !nr.Fits || nr.Explain == nil || nr.Explain.Solver != s {
			t.Fatalf("%s: %+v %+v", s, nr, nr.Explain)
		}
	}
}

// TestAllModeNoCandidates: an All request that matches no device does not
// fit (All needs at least one device).
func TestAllModeNoCandidates(t *testing.T) {
	r := resourceapi.DeviceRequest{Name: "all", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu.nvidia.com",
		AllocationMode: resourceapi.DeviceAllocationModeAll,
		Selectors:      []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: "device.attributes['gpu.nvidia.com'].productName == 'none'"}}}}}
	in := &Input{Slices: synthNode(t, "n1", 2, 2, MIGNone), Classes: gpuClasses(), Claims: []*resourceapi.ResourceClaim{claimOf("c", []resourceapi.DeviceRequest{r})}}
	if nr := runOne(t, in, Options{}); nr.Fits {
		t.Fatalf("fits: %+v", nr)
	}
	up := &Input{Slices: synthNode(t, "n1", 2, 2, MIGNone), Classes: gpuClasses(), Claims: []*resourceapi.ResourceClaim{claimOf("c", []resourceapi.DeviceRequest{r})}}
	if nr := runOne(t, up, Options{Solver: SolverUpstream}); nr.Fits {
		t.Fatalf("upstream fits: %+v", nr)
	}
}

// TestMatchesCompileError: a selector that does not compile is an error of
// matches, not a device that does not match.
func TestMatchesCompileError(t *testing.T) {
	in := &Input{}
	in.init()
	d := &device{id: deviceID{"gpu.nvidia.com", "p", "gpu-0"}, dev: &resourceapi.Device{Name: "gpu-0"}}
	_, err := in.matches(context.Background(), d, []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: "device.driver == "}}}, "class x")
	if err == nil || !strings.Contains(err.Error(), "class x: selector #0: CEL compile error") {
		t.Fatalf("err %v", err)
	}
}

// TestValidateNoRequests: the message for a claim without requests.
func TestValidateNoRequests(t *testing.T) {
	err := validateClaim(t, claimOf("c", nil))
	if err == nil || err.Error() != `ResourceClaim "default/c": spec.devices.requests: Required value: the claim requests no devices` {
		t.Fatalf("err %v", err)
	}
}

// TestLoadPodErrors: a pod file that does not decode says why (not "found
// 0"); two pods are refused.
func TestLoadPodErrors(t *testing.T) {
	_, err := LoadPod("pod.yaml", []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containerz: []}\n"))
	if err == nil || !strings.Contains(err.Error(), "containerz") {
		t.Fatalf("unknown field: %v", err)
	}
	two := "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, image: i}]}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: b}\nspec: {containers: [{name: c, image: i}]}\n"
	if _, err := LoadPod("pod.yaml", []byte(two)); err == nil || !strings.Contains(err.Error(), "want exactly one Pod, found 2") {
		t.Fatalf("two pods: %v", err)
	}
	p, err := LoadPod("pod.yaml", []byte(two[:strings.Index(two, "---")]))
	if err != nil || p.Name != "a" || p.Namespace != "default" {
		t.Fatalf("one pod: %v %+v", err, p)
	}
}

// TestV1beta1FirstAvailable: a v1beta1 request with firstAvailable keeps
// its subrequests; one without moves its fields under exactly.
func TestV1beta1FirstAvailable(t *testing.T) {
	doc := `apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata: {name: c, namespace: ns}
spec:
  devices:
    requests:
    - name: any
      firstAvailable:
      - {name: big, deviceClassName: gpu.nvidia.com}
      - {name: small, deviceClassName: mig.nvidia.com, count: 2}
    - name: one
      deviceClassName: gpu.nvidia.com
`
	cs, err := LoadClaims("c.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	reqs := cs[0].Obj.Spec.Devices.Requests
	if reqs[0].Exactly != nil || len(reqs[0].FirstAvailable) != 2 || reqs[0].FirstAvailable[1].Count != 2 || reqs[0].FirstAvailable[1].DeviceClassName != "mig.nvidia.com" {
		t.Fatalf("firstAvailable: %+v", reqs[0])
	}
	if reqs[1].Exactly == nil || reqs[1].Exactly.DeviceClassName != "gpu.nvidia.com" || reqs[1].Exactly.Count != 1 {
		t.Fatalf("exactly: %+v", reqs[1])
	}
}

// TestLoadersJudgeLikeAPIServer: the loaders' checks at each edge, with
// the API server's field paths (as literals from the API).
func TestLoadersJudgeLikeAPIServer(t *testing.T) {
	claim := func(req string) string {
		return "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c, namespace: ns}\nspec:\n  devices:\n    requests:\n    - " + req + "\n"
	}
	slice := func(spec string) string {
		return "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s}\nspec: {" + spec + "}\n"
	}
	pool := "pool: {name: p, generation: 0, resourceSliceCount: 1}, "
	long := func(n int) string { return strings.Repeat("a", n) }
	for _, c := range []struct {
		kind, doc string
		field     string // "" accepted
	}{
		{"claim", claim("{name: r, exactly: {deviceClassName: gpu.nvidia.com, count: 1}}"), ""},
		{"claim", claim("{name: r, exactly: {deviceClassName: gpu.nvidia.com, count: 0}}"), ""}, // defaulted to 1
		{"claim", claim("{name: r, exactly: {deviceClassName: gpu.nvidia.com, count: -1}}"), "spec.devices.requests[0].exactly.count"},
		{"claim", claim("{name: r, exactly: {deviceClassName: gpu.nvidia.com, count: 33}}"), ""}, // the limit is the allocator's
		{"claim", claim("{name: r, exactly: {deviceClassName: gpu.nvidia.com, allocationMode: All}}"), ""},
		{"claim", claim("{name: r, exactly: {deviceClassName: gpu.nvidia.com, allocationMode: All, count: 1}}"), "spec.devices.requests[0].exactly.count"},
		{"claim", claim("{name: r, exactly: {deviceClassName: gpu.nvidia.com, allocationMode: Some}}"), "spec.devices.requests[0].exactly.allocationMode"},
		{"claim", claim("{name: R, exactly: {deviceClassName: gpu.nvidia.com}}"), "spec.devices.requests[0].name"},
		{"claim", claim("{name: " + long(63) + ", exactly: {deviceClassName: gpu.nvidia.com}}"), ""},
		{"claim", claim("{name: " + long(64) + ", exactly: {deviceClassName: gpu.nvidia.com}}"), "spec.devices.requests[0].name"},
		{"claim", claim("{name: r, exactly: {deviceClassName: ''}}"), "spec.devices.requests[0].exactly.deviceClassName"},
		{"claim", claim("{name: r, exactly: {deviceClassName: Bad_Class}}"), "spec.devices.requests[0].exactly.deviceClassName"},
		{"claim", claim("{name: r, firstAvailable: [{name: a, deviceClassName: gpu.nvidia.com, count: -2}]}"), "spec.devices.requests[0].firstAvailable[0].count"},
		{"claim", claim("{name: r, firstAvailable: [{name: A, deviceClassName: gpu.nvidia.com}]}"), "spec.devices.requests[0].firstAvailable[0].name"},
		{"claim", claim("{name: r, firstAvailable: [{name: a, deviceClassName: x_y}]}"), "spec.devices.requests[0].firstAvailable[0].deviceClassName"},
		{"claim", strings.Replace(claim("{name: r, exactly: {deviceClassName: c}}"), "namespace: ns", "namespace: NS", 1), "metadata.namespace"},
		{"claim", strings.Replace(claim("{name: r, exactly: {deviceClassName: c}}"), "name: c,", "name: C,", 1), "metadata.name"},
		{"claim", strings.Replace(claim("{name: r, exactly: {deviceClassName: c}}"), "name: c,", "name: c, labels: {a: -x},", 1), "metadata.labels"},
		{"claim", strings.Replace(claim("{name: r, exactly: {deviceClassName: c}}"), "name: c,", "name: c, annotations: {/x: y},", 1), "metadata.annotations"},
		{"template", "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: t}\nspec: {spec: {devices: {requests: [{name: r, exactly: {deviceClassName: c, count: -1}}]}}}\n", "spec.spec.devices.requests[0].exactly.count"},
		{"template", "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: T}\nspec: {spec: {devices: {requests: [{name: r, exactly: {deviceClassName: c}}]}}}\n", "metadata.name"},
		{"class", "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: Gpu}\nspec: {}\n", "metadata.name"},
		{"class", "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu.nvidia.com}\nspec: {}\n", ""},
		{"slice", slice("driver: d.io, nodeName: node-1, " + pool + "devices: [{name: gpu-0}]"), ""},
		{"slice", slice("driver: " + long(63) + ", nodeName: node-1, " + pool + "devices: []"), ""},
		{"slice", slice("driver: " + long(64) + ", nodeName: node-1, " + pool + "devices: []"), "spec.driver"},
		{"slice", slice("driver: D.io, nodeName: node-1, " + pool + "devices: []"), ""}, // compared lower-cased
		{"slice", slice("driver: d_io, nodeName: node-1, " + pool + "devices: []"), "spec.driver"},
		{"slice", slice("driver: '', nodeName: node-1, " + pool + "devices: []"), "spec.driver"},
		{"slice", slice("driver: d.io, nodeName: node-1, pool: {name: " + long(253) + ", resourceSliceCount: 1}"), ""},
		{"slice", slice("driver: d.io, nodeName: node-1, pool: {name: " + long(254) + ", resourceSliceCount: 1}"), "spec.pool.name"},
		{"slice", slice("driver: d.io, nodeName: node-1, pool: {name: a/b, resourceSliceCount: 1}"), ""},
		{"slice", slice("driver: d.io, nodeName: node-1, pool: {name: a//b, resourceSliceCount: 1}"), "spec.pool.name"},
		{"slice", slice("driver: d.io, nodeName: node-1, pool: {name: '', resourceSliceCount: 1}"), "spec.pool.name"},
		{"slice", slice("driver: d.io, nodeName: node-1, pool: {name: p, generation: -1, resourceSliceCount: 1}"), "spec.pool.generation"},
		{"slice", slice("driver: d.io, nodeName: node-1, pool: {name: p, resourceSliceCount: 0}"), "spec.pool.resourceSliceCount"},
		{"slice", slice("driver: d.io, nodeName: node-1, " + pool + "devices: [{name: GPU-0}]"), "spec.devices[0].name"},
		{"slice", slice("driver: d.io, nodeName: node-1, " + pool + "devices: [{name: ''}]"), "spec.devices[0].name"},
		{"slice", slice("driver: d.io, nodeName: N_1, " + pool + "devices: []"), "spec.nodeName"},
		{"slice", slice("driver: d.io, nodeName: '', " + pool + "devices: []"), "spec.nodeName"},
		{"slice", slice("driver: d.io, allNodes: true, " + pool + "devices: []"), ""},
		{"slice", slice("driver: d.io, allNodes: false, " + pool + "devices: []"), "spec.allNodes"},
		{"slice", slice("driver: d.io, perDeviceNodeSelection: true, " + pool + "devices: []"), ""},
		{"slice", slice("driver: d.io, perDeviceNodeSelection: false, " + pool + "devices: []"), "spec.perDeviceNodeSelection"},
		{"slice", slice("driver: d.io, nodeSelector: {nodeSelectorTerms: [{}]}, " + pool + "devices: []"), ""},
		{"slice", slice("driver: d.io, " + pool + "devices: []"), "spec"},
		{"slice", slice("driver: d.io, nodeName: node-1, allNodes: true, " + pool + "devices: []"), "spec"},
		{"slice", slice("driver: d.io, nodeSelector: {nodeSelectorTerms: [{}]}, perDeviceNodeSelection: true, " + pool + "devices: []"), "spec"},
	} {
		var err error
		switch c.kind {
		case "claim":
			_, err = LoadClaims("f.yaml", []byte(c.doc))
		case "template":
			_, err = LoadTemplates("f.yaml", []byte(c.doc))
		case "class":
			_, err = LoadClasses("f.yaml", []byte(c.doc))
		default:
			_, err = LoadSlices("f.yaml", []byte(c.doc))
		}
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%s refused: %v\n%s", c.kind, err, c.doc)
		case c.field != "" && err == nil:
			t.Errorf("%s accepted, want %s refused:\n%s", c.kind, c.field, c.doc)
		case c.field != "" && !strings.Contains(err.Error(), ": "+c.field+": "):
			t.Errorf("%s: error %q does not name %s", c.kind, err, c.field)
		}
	}
	// The messages for the node selection, as the API server words them.
	_, err := LoadSlices("f.yaml", []byte(slice("driver: d.io, "+pool+"devices: []")))
	if err == nil || !strings.Contains(err.Error(), "spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required") {
		t.Errorf("none: %v", err)
	}
	_, err = LoadSlices("f.yaml", []byte(slice("driver: d.io, nodeName: node-1, allNodes: true, "+pool+"devices: []")))
	if err == nil || !strings.Contains(err.Error(), "but multiple fields are set") {
		t.Errorf("two: %v", err)
	}
}
