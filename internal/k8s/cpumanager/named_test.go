package cpumanager

import (
	"flag"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/cpuset"
	"sigs.k8s.io/yaml"

	"github.com/gpunode/gpunode/internal/k8s/node"
)

var update = flag.Bool("update", false, "rewrite golden files")

// namedTopologies are kubelet's named test machines (policy_test.go).
func namedTopologies() map[string]*CPUTopology {
	return map[string]*CPUTopology{
		"topoSingleSocketHT":                                         topoSingleSocketHT,
		"topoDualSocketHT":                                           topoDualSocketHT,
		"topoUncoreDualSocketNoSMT":                                  topoUncoreDualSocketNoSMT,
		"topoUncoreSingleSocketMultiNuma":                            topoUncoreSingleSocketMultiNuma,
		"topoUncoreSingleSocketSMT":                                  topoUncoreSingleSocketSMT,
		"topoUncoreSingleSocketNoSMT":                                topoUncoreSingleSocketNoSMT,
		"topoDualSocketNoHT":                                         topoDualSocketNoHT,
		"topoTripleSocketHT":                                         topoTripleSocketHT,
		"topoQuadSocketFourWayHT":                                    topoQuadSocketFourWayHT,
		"topoDualSocketMultiNumaPerSocketHT":                         topoDualSocketMultiNumaPerSocketHT,
		"topoDualSocketMultiNumaPerSocketHTLarge":                    topoDualSocketMultiNumaPerSocketHTLarge,
		"topoDualSocketSingleNumaPerSocketSMTUncore":                 topoDualSocketSingleNumaPerSocketSMTUncore,
		"topoSingleSocketSingleNumaPerSocketSMTSmallUncore":          topoSingleSocketSingleNumaPerSocketSMTSmallUncore,
		"topoSingleSocketSingleNumaPerSocketNoSMTSmallUncore":        topoSingleSocketSingleNumaPerSocketNoSMTSmallUncore,
		"topoSmallDualSocketSingleNumaPerSocketNoSMTUncore":          topoSmallDualSocketSingleNumaPerSocketNoSMTUncore,
		"topoSmallSingleSocketSingleNumaPerSocketNoSMTUncore":        topoSmallSingleSocketSingleNumaPerSocketNoSMTUncore,
		"topoLargeSingleSocketSingleNumaPerSocketSMTUncore":          topoLargeSingleSocketSingleNumaPerSocketSMTUncore,
		"topoDualSocketMultiNumaPerSocketUncore":                     topoDualSocketMultiNumaPerSocketUncore,
		"topoDualSocketSubNumaPerSocketHTMonolithicUncore":           topoDualSocketSubNumaPerSocketHTMonolithicUncore,
		"topoSingleSocketSingleNumaPerSocketPCoreHTMonolithicUncore": topoSingleSocketSingleNumaPerSocketPCoreHTMonolithicUncore,
		"topoLargeSingleSocketSingleNumaPerSocketUncore":             topoLargeSingleSocketSingleNumaPerSocketUncore,
		"topoSingleSocketSingleNumaPerSocketUncore":                  topoSingleSocketSingleNumaPerSocketUncore,
	}
}

// toNodeFile writes a kubelet test machine as a node file (64Gi per NUMA
// node), so that the conformance module and users can run it.
func toNodeFile(name string, topo *CPUTopology) *node.File {
	f := &node.File{APIVersion: node.FileAPIVersion, Kind: node.FileKind, Name: name}
	group := func(key func(CPUInfo) int) map[int][]int {
		out := map[int][]int{}
		for id, info := range topo.CPUDetails {
			out[key(info)] = append(out[key(info)], id)
		}
		return out
	}
	keys := func(m map[int][]int) []int {
		var out []int
		for k := range m {
			out = append(out, k)
		}
		sort.Ints(out)
		return out
	}
	numas := group(func(i CPUInfo) int { return i.NUMANodeID })
	for _, k := range keys(numas) {
		f.NUMANodes = append(f.NUMANodes, node.NUMANodeSpec{ID: k, CPUs: cpuset.New(numas[k]...).String(), Memory: resource.MustParse("64Gi")})
	}
	// Core ids are per socket in a few tables (cAdvisor's numbering); kubelet's
	// Discover makes them unique, so group siblings by socket and core.
	cores := group(func(i CPUInfo) int { return i.SocketID<<20 | i.CoreID })
	var coreSets []string
	for _, k := range keys(cores) {
		coreSets = append(coreSets, cpuset.New(cores[k]...).String())
	}
	sort.Slice(coreSets, func(i, j int) bool {
		a, _ := cpuset.Parse(coreSets[i])
		b, _ := cpuset.Parse(coreSets[j])
		return a.List()[0] < b.List()[0]
	})
	f.Cores = coreSets
	sockets := group(func(i CPUInfo) int { return i.SocketID })
	for _, k := range keys(sockets) {
		f.Sockets = append(f.Sockets, node.GroupSpec{ID: k, CPUs: cpuset.New(sockets[k]...).String()})
	}
	uncores := group(func(i CPUInfo) int { return i.UncoreCacheID })
	for _, k := range keys(uncores) {
		f.UncoreCaches = append(f.UncoreCaches, node.GroupSpec{ID: k, CPUs: cpuset.New(uncores[k]...).String()})
	}
	return f
}

// TestNamedTopologiesAsNodeFiles checks that every named kubelet test machine
// survives the node model (same CPUs, sockets, NUMA nodes and uncore caches;
// core ids become the lowest sibling, as kubelet's Discover makes them) and
// keeps the node files in testdata/named current.
func TestNamedTopologiesAsNodeFiles(t *testing.T) {
	for name, topo := range namedTopologies() {
		t.Run(name, func(t *testing.T) {
			f := toNodeFile(name, topo)
			n, err := f.Build()
			if err != nil {
				t.Fatal(err)
			}
			got := FromNode(n)
			// kubelet's test tables spell some counts by hand (several say 0
			// NUMA nodes); compare with the counts the CPUs imply, as kubelet's
			// Discover computes them on a real machine.
			d := topo.CPUDetails
			if got.NumCPUs != len(d) || got.NumSockets != d.Sockets().Size() || got.NumNUMANodes != d.NUMANodes().Size() || got.NumUncoreCache != d.UncoreCaches().Size() {
				t.Fatalf("counts differ: got %d/%d/%d/%d/%d", got.NumCPUs, got.NumSockets, got.NumNUMANodes, got.NumCores, got.NumUncoreCache)
			}
			for id, info := range topo.CPUDetails {
				g := got.CPUDetails[id]
				if g.NUMANodeID != info.NUMANodeID || g.SocketID != info.SocketID || g.UncoreCacheID != info.UncoreCacheID {
					t.Fatalf("CPU %d: got %+v, want %+v", id, g, info)
				}
				want := cpuset.New()
				for cpu, i2 := range topo.CPUDetails {
					if i2.SocketID == info.SocketID && i2.CoreID == info.CoreID {
						want = want.Union(cpuset.New(cpu))
					}
				}
				if !got.CPUDetails.CPUsInCores(g.CoreID).Equals(want) {
					t.Fatalf("CPU %d: siblings differ", id)
				}
			}
			b, err := yaml.Marshal(f)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "named", name+".yaml")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if string(want) != string(b) {
				t.Errorf("%s is stale (run with -update)", path)
			}
		})
	}
}
