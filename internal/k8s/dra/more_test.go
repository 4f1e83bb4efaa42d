package dra

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"
)

// TestBoundMarkWraps: when the bound's 32-bit mark wraps, the stamps are
// cleared and the mark restarts at 1 (0 is the stamp of a device never
// seen, so a mark of 0 would see every device as seen).
func TestBoundMarkWraps(t *testing.T) {
	b := &boundScratch{mark: ^uint32(0) - 1, stamp: []uint32{7, ^uint32(0)}, setMark: []uint32{3}}
	b.next()
	if b.mark != ^uint32(0) || b.stamp[0] != 7 {
		t.Fatalf("before the wrap: mark %d, stamps %v", b.mark, b.stamp)
	}
	b.next()
	if b.mark != 1 || b.stamp[0] != 0 || b.stamp[1] != 0 || b.setMark[0] != 0 {
		t.Fatalf("after the wrap: mark %d, stamps %v, set marks %v", b.mark, b.stamp, b.setMark)
	}
}

// TestSharedStateLeftToUpstream: a scheduler state (Input.State) with a
// shared allocation is what gpunode's search leaves to the upstream
// allocator; an empty one is not.
func TestSharedStateLeftToUpstream(t *testing.T) {
	ctx := context.Background()
	for _, shared := range []bool{false, true} {
		in := loadSeedInput(t, "slices-dgx-h100.yaml", "5.3.1-shared-claim.yaml")
		st := structured.AllocatedState{AllocatedDevices: sets.New[structured.DeviceID](),
			AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](), AggregatedCapacity: structured.NewConsumedCapacityCollection()}
		if shared {
			id := structured.MakeDeviceID("gpu.nvidia.com", "dgx-h100", "gpu-7")
			st.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, ptr.To(types.UID("0123"))))
		}
		in.State = &st
		got := in.Unmodelled(ctx, NodeObject("dgx-h100"))
		want := ""
		if shared {
			want = "shared (consumable-capacity) allocations in --allocated"
		}
		if got != want {
			t.Fatalf("shared %v: %q, want %q", shared, got, want)
		}
	}
}

// TestDuplicateClaims: two claims of one namespace/name are refused; the
// same name in two namespaces is not.
func TestDuplicateClaims(t *testing.T) {
	c := func(ns string) string {
		return "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c, namespace: " + ns + "}\nspec: {devices: {requests: [{name: r, exactly: {deviceClassName: gpu.nvidia.com}}]}}\n"
	}
	_, err := LoadClaims("c.yaml", []byte(c("a")+"---\n"+c("a")))
	if err == nil || !strings.Contains(err.Error(), `ResourceClaim "a/c": metadata.name: Duplicate value: "a/c"`) {
		t.Fatalf("duplicate: %v", err)
	}
	cs, err := LoadClaims("c.yaml", []byte(c("a")+"---\n"+c("b")))
	if err != nil || len(cs) != 2 {
		t.Fatalf("two namespaces: %v %d", err, len(cs))
	}
}
