package kubelet_test

// Differential test (k8sadmit): gpunode's Device Manager (hints and
// allocation) against kubelet v1.37.2's own devicemanager.ManagerImpl, run
// in this process. The manager is fed by an in-process device plugin
// (fakeDevicePlugin: it answers the plugin API calls the manager makes and
// its device list is handed over as a ListAndWatch update), and asked for
// hints and allocations exactly as the Topology Manager and kubelet's
// admission ask it.
//
// kubelet's manager keeps its registration socket and checkpoint under the
// fixed /var/lib/kubelet/device-plugins. So that the test touches nothing on
// the host, it re-runs itself as root in a private mount namespace with a
// tmpfs over /var/lib (privateKubeletDir).

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	cadvisorapi "github.com/google/cadvisor/lib/model"
	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	"k8s.io/kubernetes/pkg/kubelet/cm/containermap"
	updm "k8s.io/kubernetes/pkg/kubelet/cm/devicemanager"
	uptm "k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"
	"k8s.io/kubernetes/pkg/kubelet/lifecycle"

	"github.com/gpunode/gpunode/internal/k8s/devicemanager"
	"github.com/gpunode/gpunode/internal/k8s/node"
)

const gpuResource = "nvidia.com/gpu"

// fakeDevicePlugin is the plugin end kubelet's manager talks to. It offers
// GetPreferredAllocation; prefer (nil: no preference) is what it answers.
type fakeDevicePlugin struct {
	pluginapi.DevicePluginClient // calls the manager never makes panic

	mu     sync.Mutex
	prefer []string
}

func (p *fakeDevicePlugin) API() pluginapi.DevicePluginClient { return p }
func (p *fakeDevicePlugin) Resource() string                  { return gpuResource }
func (p *fakeDevicePlugin) SocketPath() string                { return "/gpunode-fake-device-plugin.sock" }

func (p *fakeDevicePlugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty, ...grpc.CallOption) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{GetPreferredAllocationAvailable: true}, nil
}

func (p *fakeDevicePlugin) GetPreferredAllocation(_ context.Context, in *pluginapi.PreferredAllocationRequest, _ ...grpc.CallOption) (*pluginapi.PreferredAllocationResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := &pluginapi.PreferredAllocationResponse{}
	for range in.ContainerRequests {
		out.ContainerResponses = append(out.ContainerResponses, &pluginapi.ContainerPreferredAllocationResponse{DeviceIDs: slices.Clone(p.prefer)})
	}
	return out, nil
}

func (p *fakeDevicePlugin) Allocate(_ context.Context, in *pluginapi.AllocateRequest, _ ...grpc.CallOption) (*pluginapi.AllocateResponse, error) {
	out := &pluginapi.AllocateResponse{}
	for range in.ContainerRequests {
		out.ContainerResponses = append(out.ContainerResponses, &pluginapi.ContainerAllocateResponse{})
	}
	return out, nil
}

func (p *fakeDevicePlugin) setPreference(ids []string) {
	p.mu.Lock()
	p.prefer = ids
	p.mu.Unlock()
}

// affinityStore stands in for the Topology Manager: the merged hint of the
// one pod being admitted, none for any other.
type affinityStore struct {
	mu   sync.Mutex
	pod  string
	hint uptm.TopologyHint
}

func (s *affinityStore) set(pod string, h uptm.TopologyHint) {
	s.mu.Lock()
	s.pod, s.hint = pod, h
	s.mu.Unlock()
}

func (s *affinityStore) GetAffinity(_ klog.Logger, podUID, _ string) uptm.TopologyHint {
	s.mu.Lock()
	defer s.mu.Unlock()
	if podUID == s.pod {
		return s.hint
	}
	return uptm.TopologyHint{}
}
func (s *affinityStore) GetPolicy() uptm.Policy { return nil }
func (s *affinityStore) Name() string           { return "gpunode-conformance" }

type allSourcesReady struct{}

func (allSourcesReady) AddSource(string) {}
func (allSourcesReady) AllReady() bool   { return true }

// privateKubeletDir makes sure the test runs where /var/lib is a private
// tmpfs. Outside it, it re-runs this test there and reports false (the
// caller returns); inside, it reports true.
func privateKubeletDir(t *testing.T, cases int) bool {
	const inside = "GPUNODE_CONFORMANCE_PRIVATE_VARLIB"
	if os.Getenv(inside) == "1" {
		return true
	}
	if os.Geteuid() != 0 {
		t.Skip("kubelet's device manager needs root: it keeps its socket and checkpoint in /var/lib/kubelet/device-plugins, which this test puts on a private tmpfs")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Fatalf("unshare (util-linux) is needed to give kubelet's device manager a private /var/lib: %v", err)
	}
	args := []string{"--mount", "--propagation", "private", "sh", "-c", `mount -t tmpfs gpunode-conformance /var/lib && exec "$@"`, "sh",
		os.Args[0], "-test.run=^" + t.Name() + "$", "-test.count=1"}
	if testing.Verbose() {
		args = append(args, "-test.v")
	}
	cmd := exec.Command(unshare, args...)
	cmd.Env = append(os.Environ(), inside+"=1", "GPUNODE_ADMIT_CASES="+strconv.Itoa(cases))
	out, err := cmd.CombinedOutput()
	t.Logf("private /var/lib run:\n%s", out)
	if err != nil {
		t.Fatalf("the run in a private mount namespace failed: %v", err)
	}
	return false
}

// deviceClass sorts a device for an allocation under affinity: 0 when one
// of its NUMA nodes is in the affinity, 1 when it has NUMA nodes but none
// in the affinity, 2 when it reports none. Without an affinity, or when no
// device of the resource reports a NUMA node, every device is class 2:
// kubelet then has no preference among them.
func deviceClass(dev *pluginapi.Device, affinity *node.Mask, anyTopology bool) int {
	nodes := dev.GetTopology().GetNodes()
	inAffinity := func(n *pluginapi.NUMANode) bool { return affinity.IsSet(int(n.ID)) }
	switch {
	case affinity == nil || !anyTopology || len(nodes) == 0:
		return 2
	case slices.ContainsFunc(nodes, inAffinity):
		return 0
	}
	return 1
}

// randomGPUMachine draws a machine: 1-8 NUMA nodes, 1-10 GPUs, some
// unhealthy, some without NUMA information, some on two NUMA nodes. It
// returns gpunode's node document and the plugin's device list.
func randomGPUMachine(r *rand.Rand) (doc string, numa int, devs []*pluginapi.Device) {
	numa = 1 + r.IntN(8)
	nDev := 1 + r.IntN(10)
	b := []byte("apiVersion: gpunode.io/v1\nkind: Node\nnumaNodes:\n")
	for k := range numa {
		b = fmt.Appendf(b, "- {id: %d, memory: 1Gi}\n", k)
	}
	b = fmt.Appendf(b, "devices:\n  %s:\n", gpuResource)
	for d := range nDev {
		dev := &pluginapi.Device{ID: fmt.Sprintf("gpu%d", d), Health: pluginapi.Healthy}
		health := ""
		if r.IntN(6) == 0 {
			dev.Health, health = pluginapi.Unhealthy, ", health: Unhealthy"
		}
		switch x := r.IntN(8); {
		case x == 0:
			b = fmt.Appendf(b, "  - {id: %s%s}\n", dev.ID, health)
		case x == 1 && numa > 1:
			a, c := r.IntN(numa), r.IntN(numa)
			if a == c {
				c = (a + 1) % numa
			}
			dev.Topology = &pluginapi.TopologyInfo{Nodes: []*pluginapi.NUMANode{{ID: int64(a)}, {ID: int64(c)}}}
			b = fmt.Appendf(b, "  - {id: %s, numaNodes: [%d, %d]%s}\n", dev.ID, a, c, health)
		default:
			a := r.IntN(numa)
			dev.Topology = &pluginapi.TopologyInfo{Nodes: []*pluginapi.NUMANode{{ID: int64(a)}}}
			b = fmt.Appendf(b, "  - {id: %s, numaNode: %d%s}\n", dev.ID, a, health)
		}
		devs = append(devs, dev)
	}
	return string(b), numa, devs
}

func gpuPod(uid string, n int) (*v1.Pod, *v1.Container) {
	rl := v1.ResourceList{gpuResource: *resource.NewQuantity(int64(n), resource.DecimalSI)}
	pod := &v1.Pod{}
	pod.Name, pod.UID = uid, types.UID(uid)
	pod.Spec.Containers = []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: rl, Limits: rl}}}
	return pod, &pod.Spec.Containers[0]
}

func TestAdmitDeviceManagerDifferential(t *testing.T) {
	n := admitCases(t, 10000)
	if !privateKubeletDir(t, n) {
		return
	}
	logger := logr.Discard()
	ctx := klog.NewContext(context.Background(), logger)
	checkpoint := filepath.Join(filepath.Dir(pluginapi.KubeletSocket), "kubelet_internal_checkpoint")
	var steps, rejected, allocated, hinted, aligned int
	for i := range n {
		seed := uint64(i)
		r := rand.New(rand.NewPCG(seed, 0xde7))
		doc, numa, devs := randomGPUMachine(r)
		name := fmt.Sprintf("case %d (seed %d)\n%s", i, seed, doc)
		mine := devicemanager.New(mustNode(t, doc))

		var topo []cadvisorapi.Node
		for k := range numa {
			topo = append(topo, cadvisorapi.Node{Id: k})
		}
		store := &affinityStore{}
		up, err := updm.NewManagerImpl(logger, topo, store)
		if err != nil {
			t.Fatalf("kubelet's NewManagerImpl: %v", err)
		}
		var active []*v1.Pod // what kubelet's pod manager would list
		activePods := func() []*v1.Pod { return slices.Clone(active) }
		if err := os.Remove(checkpoint); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if err := up.Start(logger, activePods, allSourcesReady{}, containermap.NewContainerMap(), sets.New[string]()); err != nil {
			t.Fatalf("kubelet's device manager Start: %v", err)
		}
		plugin := &fakeDevicePlugin{}
		if err := up.PluginConnected(ctx, gpuResource, plugin); err != nil {
			t.Fatalf("PluginConnected: %v", err)
		}
		up.PluginListAndWatchReceiver(logger, gpuResource, &pluginapi.ListAndWatchResponse{Devices: devs})
		byID := map[string]*pluginapi.Device{}
		anyTopology := false
		for _, d := range devs {
			byID[d.ID] = d
			anyTopology = anyTopology || len(d.GetTopology().GetNodes()) > 0
		}

		for p := 0; p < 1+r.IntN(4); p++ {
			steps++
			request := 1 + r.IntN(len(devs))
			pod, c := gpuPod(fmt.Sprintf("case%d-pod%d", i, p), request)

			upHints := up.GetTopologyHints(logger, pod, c, lifecycle.AddOperation)[gpuResource]
			myHints := mine.ContainerHints(pod, c)[gpuResource]
			if hintSetUp(upHints) != hintSetMine(myHints) {
				t.Fatalf("%s: pod %d, %d GPUs: hints kubelet %s, gpunode %s", name, p, request, hintSetUp(upHints), hintSetMine(myHints))
			}

			if len(upHints) > 0 {
				hinted++
			}
			// Admit along one of the hints (or none), as the Topology
			// Manager's merge might hand down.
			var chosen node.Hint
			if len(myHints) > 0 && r.IntN(4) != 0 {
				chosen = myHints[r.IntN(len(myHints))]
			}
			store.set(string(pod.UID), upHint(chosen))
			plugin.setPreference(nil)
			got, myErr := mine.Allocate(pod, c, chosen.Affinity)
			active = append(active, pod)
			upErr := up.Allocate(ctx, pod, c, lifecycle.AddOperation)
			if errText(myErr) != errText(upErr) {
				t.Fatalf("%s: pod %d, %d GPUs, hint %v: gpunode error %q, kubelet %q", name, p, request, chosen, errText(myErr), errText(upErr))
			}
			if upErr != nil {
				rejected++
				active = active[:len(active)-1]
				continue
			}
			allocated++
			myIDs := got[gpuResource]
			upIDs := slices.Sorted(maps.Keys(up.GetDevices(string(pod.UID), c.Name)[gpuResource]))
			if len(myIDs) != request || len(upIDs) != request || sets.New(myIDs...).Len() != request {
				t.Fatalf("%s: pod %d, %d GPUs: gpunode took %v, kubelet %v", name, p, request, myIDs, upIDs)
			}
			// kubelet picks at random within a class; what it fixes is how
			// many devices of each class it takes.
			var myCount, upCount [3]int
			for _, id := range myIDs {
				dev := byID[id]
				if dev == nil || dev.Health != pluginapi.Healthy {
					t.Fatalf("%s: pod %d: gpunode allocated %q, not a healthy device", name, p, id)
				}
				myCount[deviceClass(dev, chosen.Affinity, anyTopology)]++
			}
			for _, id := range upIDs {
				upCount[deviceClass(byID[id], chosen.Affinity, anyTopology)]++
			}
			if myCount[0] > 0 {
				aligned++
			}
			if myCount != upCount {
				t.Fatalf("%s: pod %d, %d GPUs, hint %v: gpunode took %v (aligned/unaligned/no NUMA %v), kubelet %v (%v)", name, p, request, chosen, myIDs, myCount, upIDs, upCount)
			}

			// Make kubelet's state gpunode's: drop the pod and admit a
			// stand-in with no affinity whose plugin prefers gpunode's
			// devices; kubelet takes a preferred allocation as given.
			shadow, sc := gpuPod(string(pod.UID)+"-as-gpunode", request)
			active[len(active)-1] = shadow
			plugin.setPreference(myIDs)
			if err := up.Allocate(ctx, shadow, sc, lifecycle.AddOperation); err != nil {
				t.Fatalf("%s: pod %d: replaying gpunode's allocation %v in kubelet: %v", name, p, myIDs, err)
			}
			if replayed := slices.Sorted(maps.Keys(up.GetDevices(string(shadow.UID), sc.Name)[gpuResource])); !slices.Equal(replayed, slices.Sorted(slices.Values(myIDs))) {
				t.Fatalf("%s: pod %d: kubelet replayed gpunode's %v as %v", name, p, myIDs, replayed)
			}
		}
		if err := up.Stop(logger); err != nil {
			t.Fatalf("kubelet's device manager Stop: %v", err)
		}
	}
	if rejected == 0 || allocated == 0 || hinted == 0 || aligned == 0 {
		t.Fatalf("%d admissions: %d allocated, %d rejected, %d with hints, %d with NUMA-aligned devices; all must occur", steps, allocated, rejected, hinted, aligned)
	}
	t.Logf("%d machines, %d admissions against kubelet's device manager: %d with hints, %d allocated (%d taking aligned devices), %d rejected", n, steps, hinted, allocated, aligned, rejected)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
