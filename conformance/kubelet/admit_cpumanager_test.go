package kubelet_test

// Differential test (k8sadmit): gpunode's CPU Manager static policy against
// kubelet v1.37.2's on random machines (1-8 NUMA nodes, SMT on/off, sockets
// above or below NUMA nodes, split uncore caches), random policy options,
// reservations and pods with init, sidecar and app containers. For every
// container it compares the topology hints, then allocates along a randomly
// chosen hint (or none) on both sides and compares the CPU sets and errors.

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/kubernetes/pkg/features"
	upcpu "k8s.io/kubernetes/pkg/kubelet/cm/cpumanager"
	upcpustate "k8s.io/kubernetes/pkg/kubelet/cm/cpumanager/state"
	uptm "k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"
	"k8s.io/kubernetes/pkg/kubelet/lifecycle"
	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/k8s/cpumanager"
	"github.com/gpunode/gpunode/internal/k8s/node"
)

var cpuOptionSets = []map[string]string{
	{},
	{"full-pcpus-only": "true"},
	{"distribute-cpus-across-numa": "true"},
	{"distribute-cpus-across-numa": "true", "full-pcpus-only": "true"},
	{"align-by-socket": "true"},
	{"distribute-cpus-across-cores": "true"},
	{"strict-cpu-reservation": "true"},
	{"prefer-align-cpus-by-uncorecache": "true"},
	{"prefer-align-cpus-by-uncorecache": "true", "full-pcpus-only": "true"},
	{"align-by-socket": "true", "distribute-cpus-across-numa": "true"},
}

func TestAdmitCPUManagerDifferential(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.CPUManagerPolicyAlphaOptions, true)
	n := admitCases(t, 10000)
	perOption := map[int]int{}
	for i := 0; i < n; i++ {
		seed := uint64(i)
		r := rand.New(rand.NewPCG(seed, 0xc9))
		spec := randomMachine(r)
		nd := mustNode(t, spec.build(nil, nil, nil))
		optIdx := i % len(cpuOptionSets)
		opts := cpuOptionSets[optIdx]
		perOption[optIdx]++
		runCPUCase(t, r, nd, opts, fmt.Sprintf("case %d (seed %d, %+v)", i, seed, spec))
	}
	t.Logf("cases per option set: %v", perOption)
	_ = uptm.TopologyHint{}
}

// namedMachines loads the named machine shapes (real CPUs: Xeon, EPYC,
// Grace, ...) that the product's cpumanager tests generate as node files.
func namedMachines(t *testing.T) map[string]*node.Node {
	t.Helper()
	files, err := filepath.Glob("../../internal/k8s/cpumanager/testdata/shapes/*.yaml")
	if err != nil || len(files) < 20 {
		t.Fatalf("named topologies: %v (%d files)", err, len(files))
	}
	out := map[string]*node.Node{}
	for _, f := range files {
		n, err := node.Load(f, 0)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".yaml")] = n
	}
	return out
}

// TestAdmitCPUManagerNamedTopologies runs the differential cases on each of
// the named machine shapes with every option set.
func TestAdmitCPUManagerNamedTopologies(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.CPUManagerPolicyAlphaOptions, true)
	per := max(1, admitCases(t, 10000)/2000)
	for name, nd := range namedMachines(t) {
		for oi, opts := range cpuOptionSets {
			for k := 0; k < per; k++ {
				r := rand.New(rand.NewPCG(uint64(k), uint64(oi)))
				runCPUCase(t, r, nd, opts, fmt.Sprintf("%s case %d", name, k))
			}
		}
	}
}

// runCPUCase runs one differential case (random policy, reservation and
// pods) on machine nd with CPU Manager options opts.
func runCPUCase(t *testing.T, r *rand.Rand, nd *node.Node, opts map[string]string, label string) {
	t.Helper()
	logger := logr.Discard()
	policyName := []string{"best-effort", "restricted", "single-numa-node", "none"}[r.IntN(4)]
	if policyName == "single-numa-node" && opts["align-by-socket"] == "true" {
		policyName = "restricted"
	}
	all := nd.AllCPUs()
	numReserved := 1 + r.IntN(2)
	reserved := cpuset.New()
	if r.IntN(3) == 0 {
		l := all.List()
		reserved = cpuset.New(l[r.IntN(len(l))])
		numReserved = 1
	}
	if numReserved >= all.Size() {
		return
	}
	name := fmt.Sprintf("%s (opts %v, reserved %d/%s)", label, opts, numReserved, reserved)

	upTopo := upstreamTopology(nd)
	store := &fakeStore{policy: policyName}
	upPolicy, upErr := upcpu.NewStaticPolicy(logger, upTopo, numReserved, reserved, store, opts)
	myOpts, err := cpumanager.ParseOptions(opts, cpumanager.Gates{AlphaOptions: true, BetaOptions: true})
	if err != nil {
		t.Fatalf("%s: ParseOptions: %v", name, err)
	}
	mine, myErr := cpumanager.NewStatic(cpumanager.FromNode(nd), numReserved, reserved, myOpts, policyName)
	if (upErr == nil) != (myErr == nil) {
		t.Fatalf("%s: NewStaticPolicy: upstream %v, gpunode %v", name, upErr, myErr)
	}
	if upErr != nil {
		return
	}
	st := upcpustate.NewMemoryState(logger)
	if err := upPolicy.Start(logger, st); err != nil {
		t.Fatalf("%s: start: %v", name, err)
	}
	if !st.GetDefaultCPUSet().Equals(mine.DefaultSet()) {
		t.Fatalf("%s: default set: upstream %s, gpunode %s (reserved %s)", name, st.GetDefaultCPUSet(), mine.DefaultSet(), mine.Reserved())
	}
	for p := 0; p < 1+r.IntN(4); p++ {
		cpu := func() string {
			if r.IntN(8) == 0 {
				return "1500m"
			}
			return fmt.Sprint(1 + r.IntN(1+all.Size()/2))
		}
		pod := randomPod(r, fmt.Sprintf("pod%d", p), r.IntN(6) != 0, r.IntN(2), r.IntN(2), 1+r.IntN(2), cpu, func() string { return "1Gi" }, func() v1.ResourceList { return nil })
		containers := append(append([]v1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...)
		scopePod := r.IntN(3) == 0
		if scopePod {
			upH := upPolicy.GetPodTopologyHints(logger, st, pod, lifecycle.AddOperation)
			myH := mine.PodHints(pod)
			if !sameMaps(mapsUp(upH), mapsMine(myH)) {
				t.Fatalf("%s: pod hints for %s: upstream %v, gpunode %v", name, pod.Name, mapsUp(upH), mapsMine(myH))
			}
		}
		var chosen node.Hint
		for ci := range containers {
			c := &containers[ci]
			upH := upPolicy.GetTopologyHints(logger, st, pod, c, lifecycle.AddOperation)
			myH := mine.ContainerHints(pod, c)
			if !sameMaps(mapsUp(upH), mapsMine(myH)) {
				t.Fatalf("%s: hints for %s/%s: upstream %v, gpunode %v", name, pod.Name, c.Name, mapsUp(upH), mapsMine(myH))
			}
			if !scopePod || ci == 0 {
				chosen = node.Hint{}
				if hs := myH["cpu"]; len(hs) > 0 && r.IntN(5) != 0 {
					chosen = hs[r.IntN(len(hs))]
				} else if r.IntN(2) == 0 {
					m := node.MaskOf(nd.NUMAIDs()[r.IntN(len(nd.NUMANodes))])
					chosen = node.Hint{Affinity: &m}
				}
			}
			store.hint = upHint(chosen)
			upErr := upPolicy.Allocate(logger, st, pod, c, lifecycle.AddOperation)
			got, myErr := mine.Allocate(pod, c, chosen.Affinity)
			if (upErr == nil) != (myErr == nil) || (upErr != nil && upErr.Error() != myErr.Error()) {
				t.Fatalf("%s: allocate %s/%s with %v: upstream err %v, gpunode err %v", name, pod.Name, c.Name, chosen, upErr, myErr)
			}
			if upErr != nil {
				continue
			}
			want, _ := st.GetCPUSet(string(pod.UID), c.Name)
			if !want.Equals(got) && !(want.IsEmpty() && got.IsEmpty()) {
				t.Fatalf("%s: CPUs of %s/%s with hint %v: upstream %s, gpunode %s", name, pod.Name, c.Name, chosen, want, got)
			}
			if !st.GetDefaultCPUSet().Equals(mine.DefaultSet()) {
				t.Fatalf("%s: shared pool after %s/%s: upstream %s, gpunode %s", name, pod.Name, c.Name, st.GetDefaultCPUSet(), mine.DefaultSet())
			}
		}
	}

}
