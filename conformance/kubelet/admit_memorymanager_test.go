package kubelet_test

// Differential test (k8sadmit): gpunode's Memory Manager Static policy
// against kubelet v1.37.2's on random machines (1-8 NUMA nodes, memory and
// 1Gi hugepages per node, reservedMemory) and pods (init, sidecar and app
// containers; memory and hugepages). For every container it compares the
// hints (container and pod level), then allocates along a hint drawn from
// the hints, a random single NUMA node (which may need extension) or none,
// and compares errors, memory blocks and the machine state.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	cadvisorapi "github.com/google/cadvisor/lib/model"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	upmem "k8s.io/kubernetes/pkg/kubelet/cm/memorymanager"
	upmemstate "k8s.io/kubernetes/pkg/kubelet/cm/memorymanager/state"
	"k8s.io/kubernetes/pkg/kubelet/lifecycle"

	"github.com/gpunode/gpunode/internal/k8s/memorymanager"
	"github.com/gpunode/gpunode/internal/k8s/node"
)

const gi = 1 << 30

func TestAdmitMemoryManagerDifferential(t *testing.T) {
	logger := logr.Discard()
	ctx := context.Background()
	n := admitCases(t, 10000)
	for i := 0; i < n; i++ {
		seed := uint64(i)
		r := rand.New(rand.NewPCG(seed, 0x3e3))
		spec := randomMachine(r)
		spec.coresPerNUMA, spec.threads = 1, 1
		spec.socketsPerNUMA = 1
		mem := make([]int, spec.numa)
		huge := make([]int, spec.numa)
		for k := range mem {
			mem[k] = 4 + r.IntN(29)
			if r.IntN(3) == 0 {
				huge[k] = r.IntN(4)
			}
		}
		nd := mustNode(t, spec.build(mem, huge, nil))
		reserved := memorymanager.Reserved{}
		upReserved := map[int]map[v1.ResourceName]uint64{}
		for _, nn := range nd.NUMANodes {
			reserved[nn.ID] = map[v1.ResourceName]uint64{}
			upReserved[nn.ID] = map[v1.ResourceName]uint64{}
			if r.IntN(2) == 0 {
				v := uint64(r.IntN(1024)+1) << 20
				reserved[nn.ID][v1.ResourceMemory] = v
				upReserved[nn.ID][v1.ResourceMemory] = v
			}
		}
		name := fmt.Sprintf("case %d (seed %d, mem %v, huge %v)", i, seed, mem, huge)
		mi := &cadvisorapi.MachineInfo{}
		for _, nn := range nd.NUMANodes {
			cn := cadvisorapi.Node{Id: nn.ID, Memory: nn.MemoryBytes}
			for _, hp := range nn.HugePages {
				cn.HugePages = append(cn.HugePages, cadvisorapi.HugePagesInfo{PageSize: hp.PageSizeBytes / 1024, NumPages: hp.Count})
			}
			mi.Topology = append(mi.Topology, cn)
		}
		store := &fakeStore{policy: "best-effort"}
		upPolicy, upErr := upmem.NewPolicyStatic(logger, mi, upReserved, store)
		var total uint64
		for _, m := range reserved {
			total += m[v1.ResourceMemory]
		}
		if (upErr == nil) != (total > 0) {
			t.Fatalf("%s: NewPolicyStatic: %v with %d bytes reserved", name, upErr, total)
		}
		if upErr != nil {
			continue
		}
		st := upmemstate.NewMemoryState(logger)
		if err := upPolicy.Start(logger, st); err != nil {
			t.Fatal(err)
		}
		mine := memorymanager.NewStatic(nd, reserved)
		compareMachineState(t, name+" initial", st, mine, nd)
		for p := 0; p < 1+r.IntN(4); p++ {
			memQ := func() string { return fmt.Sprintf("%dGi", 1+r.IntN(24)) }
			extra := func() v1.ResourceList {
				if r.IntN(3) == 0 {
					return v1.ResourceList{"hugepages-1Gi": *resource.NewQuantity(int64(1+r.IntN(3))*gi, resource.BinarySI)}
				}
				return nil
			}
			pod := randomPod(r, fmt.Sprintf("pod%d", p), r.IntN(8) != 0, r.IntN(2), r.IntN(2), 1+r.IntN(2), func() string { return "1" }, memQ, extra)
			if r.IntN(3) == 0 {
				upH := upPolicy.GetPodTopologyHints(logger, st, pod, lifecycle.AddOperation)
				myH := mine.PodHints(pod)
				if !sameMaps(mapsUp(upH), mapsMine(myH)) {
					t.Fatalf("%s: pod hints for %s: upstream %v, gpunode %v", name, pod.Name, mapsUp(upH), mapsMine(myH))
				}
			}
			containers := append(append([]v1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...)
			for ci := range containers {
				c := &containers[ci]
				upH := upPolicy.GetTopologyHints(logger, st, pod, c, lifecycle.AddOperation)
				myH := mine.ContainerHints(pod, c)
				if !sameMaps(mapsUp(upH), mapsMine(myH)) {
					t.Fatalf("%s: hints for %s/%s: upstream %v, gpunode %v", name, pod.Name, c.Name, mapsUp(upH), mapsMine(myH))
				}
				var chosen node.Hint
				switch hs := myH["memory"]; {
				case len(hs) > 0 && r.IntN(4) != 0:
					chosen = hs[r.IntN(len(hs))]
				case r.IntN(2) == 0:
					m := node.MaskOf(nd.NUMAIDs()[r.IntN(len(nd.NUMANodes))])
					chosen = node.Hint{Affinity: &m, Preferred: r.IntN(2) == 0}
				default:
					chosen = node.Hint{Preferred: r.IntN(2) == 0}
				}
				store.hint = upHint(chosen)
				upErr := upPolicy.Allocate(ctx, st, pod, c, lifecycle.AddOperation)
				got, myErr := mine.Allocate(pod, c, chosen)
				if (upErr == nil) != (myErr == nil) || (upErr != nil && upErr.Error() != myErr.Error()) {
					t.Fatalf("%s: allocate %s/%s with %v: upstream err %v, gpunode err %v", name, pod.Name, c.Name, chosen, upErr, myErr)
				}
				if upErr != nil {
					continue
				}
				want := blocksString(st.GetMemoryBlocks(string(pod.UID), c.Name))
				if g := myBlocksString(got); g != want {
					t.Fatalf("%s: blocks of %s/%s with %v: upstream %s, gpunode %s", name, pod.Name, c.Name, chosen, want, g)
				}
				compareMachineState(t, fmt.Sprintf("%s after %s/%s", name, pod.Name, c.Name), st, mine, nd)
			}
		}
	}
}

func blocksString(bs []upmemstate.Block) string {
	var parts []string
	for _, b := range bs {
		a := append([]int(nil), b.NUMAAffinity...)
		sort.Ints(a)
		parts = append(parts, fmt.Sprintf("%s:%v:%d", b.Type, a, b.Size))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func myBlocksString(bs []memorymanager.Block) string {
	var parts []string
	for _, b := range bs {
		parts = append(parts, fmt.Sprintf("%s:%v:%d", b.Type, b.NUMAAffinity, b.Size))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func compareMachineState(t *testing.T, name string, st upmemstate.State, mine *memorymanager.Static, nd *node.Node) {
	t.Helper()
	ms := st.GetMachineState()
	for _, nn := range nd.NUMANodes {
		u, m := ms[nn.ID], mine.State(nn.ID)
		uc := append([]int(nil), u.Cells...)
		sort.Ints(uc)
		mc := append([]int(nil), m.Cells...)
		sort.Ints(mc)
		if u.NumberOfAssignments != m.NumberOfAssignments || fmt.Sprint(uc) != fmt.Sprint(mc) {
			t.Fatalf("%s: NUMA %d: upstream assignments %d cells %v, gpunode %d %v", name, nn.ID, u.NumberOfAssignments, uc, m.NumberOfAssignments, mc)
		}
		if len(u.MemoryMap) != len(m.Memory) {
			t.Fatalf("%s: NUMA %d: memory types upstream %d gpunode %d", name, nn.ID, len(u.MemoryMap), len(m.Memory))
		}
		for k, ut := range u.MemoryMap {
			mt := m.Memory[k]
			if mt == nil || ut.Free != mt.Free || ut.Reserved != mt.Reserved || ut.Allocatable != mt.Allocatable || ut.SystemReserved != mt.SystemReserved || ut.TotalMemSize != mt.Total {
				t.Fatalf("%s: NUMA %d %s: upstream %+v, gpunode %+v", name, nn.ID, k, *ut, mt)
			}
		}
	}
}
