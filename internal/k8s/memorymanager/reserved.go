package memorymanager

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpunode/gpunode/internal/k8s/node"
)

// MemoryReservation is one reservedMemory entry of a KubeletConfiguration.
type MemoryReservation struct {
	NumaNode int32
	Limits   v1.ResourceList
}

// SystemReserved checks reservedMemory the way kubelet does when it starts
// the Static policy and returns it per NUMA node in bytes. The rules:
//   - every entry names a NUMA node of the machine;
//   - for memory and each hugepages size named on either side, the entries
//     add up to the node allocatable reservation (kubeReserved +
//     systemReserved + hard eviction) of that type;
//   - some memory (not hugepages) is reserved somewhere.
//
// Types are checked in name order (kubelet walks a map, so with several
// mismatches the one it names may differ). A later entry for the same node
// and type replaces an earlier one in the result, as in kubelet.
func SystemReserved(n *node.Node, nodeAllocatableReservation v1.ResourceList, reserved []MemoryReservation) (Reserved, error) {
	sums, err := sumReservations(n, reserved)
	if err != nil {
		return nil, err
	}
	if err := matchAllocatable(sums, nodeAllocatableReservation); err != nil {
		return nil, err
	}
	perNUMA := make(Reserved, len(n.NUMANodes))
	for _, nn := range n.NUMANodes {
		perNUMA[nn.ID] = map[v1.ResourceName]uint64{}
	}
	everyKind := func(v1.ResourceName) bool { return true }
	for _, r := range reserved {
		b, err := inBytes(r.Limits, everyKind, quoteReservedNotInt64)
		if err != nil {
			return nil, err
		}
		maps.Copy(perNUMA[int(r.NumaNode)], b)
	}
	if !slices.ContainsFunc(n.NUMANodes, func(nn node.NUMANode) bool { return perNUMA[nn.ID][v1.ResourceMemory] > 0 }) {
		return nil, errors.New(quoteReservedMissing)
	}
	return perNUMA, nil
}

// sumReservations adds up the entries per memory type, failing on the
// first entry for a NUMA node the machine lacks.
func sumReservations(n *node.Node, reserved []MemoryReservation) (map[v1.ResourceName]resource.Quantity, error) {
	stray := slices.IndexFunc(reserved, func(r MemoryReservation) bool { return n.NUMA(int(r.NumaNode)) == nil })
	if stray >= 0 {
		return nil, fmt.Errorf(quoteReservedNoSuchNUMA, reserved[stray].NumaNode)
	}
	sums := map[v1.ResourceName]resource.Quantity{}
	add := func(name v1.ResourceName, q resource.Quantity) {
		next := q.DeepCopy()
		// The newest entry is the receiver: the total keeps its format
		// (the one kubelet prints), unless it is zero.
		if prev, seen := sums[name]; seen {
			next.Add(prev)
		}
		sums[name] = next
	}
	for _, r := range reserved {
		for name, q := range r.Limits {
			add(name, q)
		}
	}
	return sums, nil
}

// matchAllocatable compares the reservedMemory totals with the node
// allocatable reservation for every memory type either side names.
func matchAllocatable(sums map[v1.ResourceName]resource.Quantity, want v1.ResourceList) error {
	var kinds []v1.ResourceName
	for name := range sums {
		kinds = append(kinds, name)
	}
	for name := range want {
		if _, dup := sums[name]; !dup && isMemoryKind(name) {
			kinds = append(kinds, name)
		}
	}
	slices.Sort(kinds)
	for _, name := range kinds {
		// Both sides are printed as zero plus the value, as kubelet does,
		// so an absent side reads "0" and a present one keeps its format.
		got, exp := resource.Quantity{Format: resource.DecimalSI}, resource.Quantity{Format: resource.DecimalSI}
		if q, ok := sums[name]; ok {
			got.Add(q)
		}
		if q, ok := want[name]; ok {
			exp.Add(q)
		}
		if got.Cmp(exp) != 0 {
			return fmt.Errorf(quoteReservedTotal, got.String(), name, exp.String())
		}
	}
	return nil
}
