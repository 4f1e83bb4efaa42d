package cpumanager

// Machine shapes for the CPU Manager tests, written as the hardware facts of
// real processors (sockets, cores, SMT threads, NUMA nodes per socket, which
// cores share an L3 cache, how Linux numbers the logical CPUs) and expanded
// into node files by hwShape.file. The files under testdata/shapes are the
// output of `go test ./internal/k8s/cpumanager -run TestShapesFiles -update`
// (the conformance module runs kubelet's own CPU Manager on them);
// TestShapesFiles fails when they are stale.
//
// Only NUMA nodes with CPUs are modelled: GH200 and GB200 also expose GPU
// memory (and empty MIG placeholder nodes) as CPU-less NUMA nodes, which the
// CPU Manager never looks at. Memory per NUMA node is nominal (64Gi) except
// where the memory is on the package (Grace's LPDDR5X).

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/cpuset"
	"sigs.k8s.io/yaml"

	"github.com/gpunode/gpunode/internal/k8s/node"
)

var update = flag.Bool("update", false, "rewrite testdata/shapes")

// hwNumbering is how the kernel numbers the logical CPUs of a machine.
type hwNumbering int

const (
	// hwThreadMajor: x86 (ACPI MADT order): thread 0 of every core, socket
	// by socket, then the second thread of every core in the same order.
	hwThreadMajor hwNumbering = iota
	// hwSocketInterleaved: x86 BIOSes that list the sockets round-robin:
	// thread 0 of core k on socket s is CPU k*sockets+s, so socket 0 owns
	// the even CPUs of each thread block (lscpu "node0: 0,2,4,...").
	hwSocketInterleaved
	// hwSiblingsAdjacent: POWER and SMT Arm cores: a core's threads are
	// consecutive CPU numbers.
	hwSiblingsAdjacent
)

func (n hwNumbering) String() string {
	return [...]string{"thread 0 of every core first, then the siblings", "thread 0 of every core first, sockets interleaved", "a core's threads consecutive"}[n]
}

// hwShape is one machine: counts per socket, the NUMA split of a socket
// (AMD NPS, Intel SNC) and the L3 domain.
type hwShape struct {
	name           string
	sockets        int
	coresPerSocket int
	threadsPerCore int
	numaPerSocket  int // NPS1/SNC off = 1, NPS4/SNC4 = 4
	// coresPerL3 is the number of cores sharing one L3 (an AMD CCX); 0
	// means one L3 for the whole socket (Intel, Grace; also under SNC, where
	// the kernel still reports the L3 as shared by the whole socket: Linux's
	// resctrl selftests detect SNC as more CPUs sharing CPU 0's L3 than
	// NUMA node 0 holds).
	coresPerL3 int
	numbering  hwNumbering
	// memPerNUMA is the memory of each NUMA node ("" = 64Gi nominal).
	memPerNUMA string
	facts      string // where the numbers come from
}

// hwShapes are the named fixtures.
func hwShapes() []hwShape {
	return []hwShape{
		{name: "desktop-1s-4c8t", sockets: 1, coresPerSocket: 4, threadsPerCore: 2, numaPerSocket: 1,
			facts: "Intel Core i7-7700 class desktop: 4 cores, Hyper-Threading, one 8 MB L3, one NUMA node"},
		{name: "tiny-2s-3c-smt2-interleaved", sockets: 2, coresPerSocket: 3, threadsPerCore: 2, numaPerSocket: 1, numbering: hwSocketInterleaved,
			facts: "scaled-down dual socket (not a product): 3 cores per socket, SMT2, sockets interleaved in the CPU numbering as many 2S Xeon servers enumerate them"},
		{name: "xeon-e5-2680v4-2s-interleaved", sockets: 2, coresPerSocket: 14, threadsPerCore: 2, numaPerSocket: 1, numbering: hwSocketInterleaved,
			facts: "Intel Xeon E5-2680 v4 (Broadwell-EP), 2S: 14 cores, HT, 35 MB L3 per socket, COD off; socket-interleaved numbering (even CPUs on node 0)"},
		{name: "xeon-8358-2s-smt-off", sockets: 2, coresPerSocket: 32, threadsPerCore: 1, numaPerSocket: 1,
			facts: "Intel Xeon Platinum 8358 (Ice Lake-SP), 2S, Hyper-Threading disabled in BIOS: 32 cores, 48 MB L3 per socket, SNC off"},
		{name: "xeon-8480p-2s", sockets: 2, coresPerSocket: 56, threadsPerCore: 2, numaPerSocket: 1,
			facts: "Intel Xeon Platinum 8480+ (Sapphire Rapids), 2S: 56 cores, HT, 105 MB L3 per socket, SNC off"},
		{name: "xeon-8480p-2s-snc2", sockets: 2, coresPerSocket: 56, threadsPerCore: 2, numaPerSocket: 2,
			facts: "Intel Xeon Platinum 8480+, 2S, SNC2: 2 NUMA nodes of 28 cores per socket; L3 reported per socket"},
		{name: "xeon-8480p-2s-snc4", sockets: 2, coresPerSocket: 56, threadsPerCore: 2, numaPerSocket: 4,
			facts: "Intel Xeon Platinum 8480+, 2S, SNC4: 4 NUMA nodes of 14 cores per socket (one per compute tile); L3 reported per socket"},
		{name: "xeon-8380h-4s", sockets: 4, coresPerSocket: 28, threadsPerCore: 2, numaPerSocket: 1,
			facts: "Intel Xeon Platinum 8380H (Cooper Lake), 4S: 28 cores, HT, 38.5 MB L3 per socket"},
		{name: "epyc-9654-2s-nps1", sockets: 2, coresPerSocket: 96, threadsPerCore: 2, numaPerSocket: 1, coresPerL3: 8,
			facts: "AMD EPYC 9654 (Genoa), 2S, NPS1: 96 cores = 12 CCDs x 8 cores, SMT2, one 32 MB L3 per CCD (one CCX per CCD)"},
		{name: "epyc-9654-2s-nps4", sockets: 2, coresPerSocket: 96, threadsPerCore: 2, numaPerSocket: 4, coresPerL3: 8,
			facts: "AMD EPYC 9654, 2S, NPS4: 4 NUMA nodes of 3 CCDs (24 cores) per socket, SMT2, 32 MB L3 per CCD"},
		{name: "epyc-9754-1s", sockets: 1, coresPerSocket: 128, threadsPerCore: 2, numaPerSocket: 1, coresPerL3: 8,
			facts: "AMD EPYC 9754 (Bergamo), 1S, NPS1: 128 Zen 4c cores = 8 CCDs x 2 CCX x 8 cores, SMT2, 16 MB L3 per CCX"},
		{name: "epyc-7763-2s-nps1", sockets: 2, coresPerSocket: 64, threadsPerCore: 2, numaPerSocket: 1, coresPerL3: 8,
			facts: "AMD EPYC 7763 (Milan), 2S, NPS1: 64 cores = 8 CCDs x 8 cores, SMT2, 32 MB L3 per CCD"},
		{name: "epyc-7763-1s-nps4", sockets: 1, coresPerSocket: 64, threadsPerCore: 2, numaPerSocket: 4, coresPerL3: 8,
			facts: "AMD EPYC 7763, 1S, NPS4: 4 NUMA nodes of 2 CCDs (16 cores), SMT2, 32 MB L3 per CCD"},
		{name: "epyc-7763-2s-nps2-smt-off", sockets: 2, coresPerSocket: 64, threadsPerCore: 1, numaPerSocket: 2, coresPerL3: 8,
			facts: "AMD EPYC 7763, 2S, NPS2, SMT disabled: 2 NUMA nodes of 4 CCDs (32 cores) per socket, 32 MB L3 per CCD"},
		{name: "epyc-7302p-1s", sockets: 1, coresPerSocket: 16, threadsPerCore: 2, numaPerSocket: 1, coresPerL3: 2,
			facts: "AMD EPYC 7302P (Rome), 1S, NPS1: 16 cores = 4 CCDs x 2 CCX x 2 cores, SMT2, 16 MB L3 per CCX"},
		{name: "epyc-9355p-1s", sockets: 1, coresPerSocket: 32, threadsPerCore: 2, numaPerSocket: 1, coresPerL3: 4,
			facts: "AMD EPYC 9355P (Turin), 1S, NPS1: 32 cores = 8 CCDs x 4 enabled cores, SMT2, the full 32 MB L3 per CCD"},
		{name: "ryzen-7950x", sockets: 1, coresPerSocket: 16, threadsPerCore: 2, numaPerSocket: 1, coresPerL3: 8,
			facts: "AMD Ryzen 9 7950X: 16 cores = 2 CCDs x 8 cores, SMT2, 32 MB L3 per CCD"},
		{name: "ryzen-3700x", sockets: 1, coresPerSocket: 8, threadsPerCore: 2, numaPerSocket: 1, coresPerL3: 4,
			facts: "AMD Ryzen 7 3700X (Zen 2): 8 cores = 1 CCD x 2 CCX x 4 cores, SMT2, 16 MB L3 per CCX"},
		{name: "grace-superchip", sockets: 2, coresPerSocket: 72, threadsPerCore: 1, numaPerSocket: 1, memPerNUMA: "480Gi",
			facts: "NVIDIA Grace CPU Superchip (also the CPU side of a GB200 compute tray): 2 Grace dies x 72 Neoverse V2 cores, no SMT, one L3 per die shared by its 72 cores (117 MB at Hot Chips 34), one NUMA node per die"},
		{name: "gh200", sockets: 1, coresPerSocket: 72, threadsPerCore: 1, numaPerSocket: 1, memPerNUMA: "480Gi",
			facts: "NVIDIA GH200 Grace Hopper Superchip, CPU side: 72 Neoverse V2 cores, no SMT, one L3 shared by all cores, 480 GB LPDDR5X (the HBM is a CPU-less NUMA node, left out)"},
		{name: "power-4s-smt4", sockets: 4, coresPerSocket: 10, threadsPerCore: 4, numaPerSocket: 1, numbering: hwSiblingsAdjacent,
			facts: "POWER9-like 4-socket machine: 10 SMT4 cores per socket, threads of a core numbered consecutively, L3 grouped per socket"},
	}
}

// Derived counts.
func (s hwShape) cores() int         { return s.sockets * s.coresPerSocket }
func (s hwShape) cpus() int          { return s.cores() * s.threadsPerCore }
func (s hwShape) numas() int         { return s.sockets * s.numaPerSocket }
func (s hwShape) coresPerNUMA() int  { return s.coresPerSocket / s.numaPerSocket }
func (s hwShape) cpusPerNUMA() int   { return s.coresPerNUMA() * s.threadsPerCore }
func (s hwShape) cpusPerSocket() int { return s.coresPerSocket * s.threadsPerCore }
func (s hwShape) l3PerSocket() int   { return s.coresPerSocket / s.l3Cores() }
func (s hwShape) l3s() int           { return s.sockets * s.l3PerSocket() }
func (s hwShape) cpusPerL3() int     { return s.l3Cores() * s.threadsPerCore }
func (s hwShape) l3WithinNUMA() bool { return s.coresPerNUMA()%s.l3Cores() == 0 }
func (s hwShape) String() string     { return s.name }
func (s hwShape) l3Cores() int {
	if s.coresPerL3 == 0 {
		return s.coresPerSocket
	}
	return s.coresPerL3
}

func (s hwShape) check() error {
	switch {
	case s.sockets < 1 || s.coresPerSocket < 1 || s.threadsPerCore < 1 || s.numaPerSocket < 1:
		return fmt.Errorf("%s: counts must be positive", s.name)
	case s.coresPerSocket%s.numaPerSocket != 0:
		return fmt.Errorf("%s: %d cores do not split into %d NUMA nodes", s.name, s.coresPerSocket, s.numaPerSocket)
	case s.coresPerSocket%s.l3Cores() != 0:
		return fmt.Errorf("%s: %d cores do not split into L3 groups of %d", s.name, s.coresPerSocket, s.l3Cores())
	case !s.l3WithinNUMA() && s.l3Cores() != s.coresPerSocket:
		return fmt.Errorf("%s: an L3 group of %d cores straddles NUMA nodes of %d cores", s.name, s.l3Cores(), s.coresPerNUMA())
	}
	return nil
}

// hwMap is the ground truth of a shape: for every logical CPU (ids are
// dense, 0..cpus-1) its socket, NUMA node, physical core (global index) and
// L3 group, computed from the shape's parameters alone.
type hwMap struct {
	shape                  hwShape
	socket, numa, core, l3 []int
	coreCPUs               [][]int // logical CPUs of each core, ascending
	numaCPUs, socketCPUs   [][]int
	l3CPUs                 [][]int
}

// cpuID is the kernel's number of thread t of core c on socket s.
func (s hwShape) cpuID(sock, c, t int) int {
	switch s.numbering {
	case hwSocketInterleaved:
		return t*s.cores() + c*s.sockets + sock
	case hwSiblingsAdjacent:
		return (sock*s.coresPerSocket+c)*s.threadsPerCore + t
	}
	return t*s.cores() + sock*s.coresPerSocket + c
}

func (s hwShape) hw() *hwMap {
	n := s.cpus()
	m := &hwMap{shape: s, socket: make([]int, n), numa: make([]int, n), core: make([]int, n), l3: make([]int, n),
		coreCPUs: make([][]int, s.cores()), numaCPUs: make([][]int, s.numas()), socketCPUs: make([][]int, s.sockets), l3CPUs: make([][]int, s.l3s())}
	for sock := 0; sock < s.sockets; sock++ {
		for c := 0; c < s.coresPerSocket; c++ {
			g := sock*s.coresPerSocket + c
			nu := sock*s.numaPerSocket + c/s.coresPerNUMA()
			l3 := sock*s.l3PerSocket() + c/s.l3Cores()
			for t := 0; t < s.threadsPerCore; t++ {
				id := s.cpuID(sock, c, t)
				m.socket[id], m.numa[id], m.core[id], m.l3[id] = sock, nu, g, l3
				m.coreCPUs[g] = append(m.coreCPUs[g], id)
				m.numaCPUs[nu] = append(m.numaCPUs[nu], id)
				m.socketCPUs[sock] = append(m.socketCPUs[sock], id)
				m.l3CPUs[l3] = append(m.l3CPUs[l3], id)
			}
		}
	}
	for _, l := range [][][]int{m.coreCPUs, m.numaCPUs, m.socketCPUs, m.l3CPUs} {
		for _, g := range l {
			slices.Sort(g)
		}
	}
	return m
}

func hwSetString(ids []int) string { return cpuset.New(ids...).String() }

// file is the shape as a node file. shuffle (may be nil) permutes the order
// in which groups are listed, to show that nothing depends on it.
func (s hwShape) file(shuffle *rand.Rand) *node.File {
	m := s.hw()
	mem := s.memPerNUMA
	if mem == "" {
		mem = "64Gi"
	}
	f := &node.File{APIVersion: node.FileAPIVersion, Kind: node.FileKind, Name: s.name}
	for id, cpus := range m.numaCPUs {
		f.NUMANodes = append(f.NUMANodes, node.NUMANodeSpec{ID: id, CPUs: hwSetString(cpus), Memory: resource.MustParse(mem)})
	}
	if s.threadsPerCore > 1 {
		for _, cpus := range m.coreCPUs {
			f.Cores = append(f.Cores, hwSetString(cpus))
		}
	}
	if s.numaPerSocket > 1 {
		for id, cpus := range m.socketCPUs {
			f.Sockets = append(f.Sockets, node.GroupSpec{ID: id, CPUs: hwSetString(cpus)})
		}
	}
	if s.l3PerSocket() > 1 {
		for id, cpus := range m.l3CPUs {
			f.UncoreCaches = append(f.UncoreCaches, node.GroupSpec{ID: id, CPUs: hwSetString(cpus)})
		}
	}
	if shuffle != nil {
		shuffle.Shuffle(len(f.NUMANodes), func(i, j int) { f.NUMANodes[i], f.NUMANodes[j] = f.NUMANodes[j], f.NUMANodes[i] })
		shuffle.Shuffle(len(f.Cores), func(i, j int) { f.Cores[i], f.Cores[j] = f.Cores[j], f.Cores[i] })
		shuffle.Shuffle(len(f.Sockets), func(i, j int) { f.Sockets[i], f.Sockets[j] = f.Sockets[j], f.Sockets[i] })
		shuffle.Shuffle(len(f.UncoreCaches), func(i, j int) { f.UncoreCaches[i], f.UncoreCaches[j] = f.UncoreCaches[j], f.UncoreCaches[i] })
	}
	return f
}

// topology builds the CPU Manager's view of the shape through the node
// model, as the product does for a node file.
func (s hwShape) topology(t testing.TB, shuffle *rand.Rand) *CPUTopology {
	t.Helper()
	n, err := s.file(shuffle).Build()
	if err != nil {
		t.Fatalf("%s: %v", s.name, err)
	}
	return FromNode(n)
}

// hwNamed returns the named shape.
func hwNamed(t testing.TB, name string) hwShape {
	t.Helper()
	for _, s := range hwShapes() {
		if s.name == name {
			return s
		}
	}
	t.Fatalf("no shape %q", name)
	return hwShape{}
}

// hwRandomShape draws a machine of up to 4 sockets with the same kinds of
// parameters as the named ones (NUMA split, L3 groups, numbering).
func hwRandomShape(r *rand.Rand, i int) hwShape {
	for {
		s := hwShape{
			sockets:        1 + r.IntN(4),
			threadsPerCore: []int{1, 2, 2, 4}[r.IntN(4)],
			numaPerSocket:  []int{1, 1, 2, 4}[r.IntN(4)],
			numbering:      hwNumbering(r.IntN(3)),
		}
		s.coresPerSocket = s.numaPerSocket * (1 + r.IntN(8))
		if r.IntN(2) == 0 {
			// L3 groups: a divisor of the cores of a NUMA node.
			var divs []int
			for d := 1; d <= s.coresPerNUMA(); d++ {
				if s.coresPerNUMA()%d == 0 {
					divs = append(divs, d)
				}
			}
			s.coresPerL3 = divs[r.IntN(len(divs))]
		}
		s.name = fmt.Sprintf("random-%d-%ds%dc%dt-nps%d-l3x%d-%d", i, s.sockets, s.coresPerSocket, s.threadsPerCore, s.numaPerSocket, s.coresPerL3, s.numbering)
		if s.check() == nil && s.cpus() <= 128 && s.numas() <= 8 {
			return s
		}
	}
}

// TestShapesAreSound checks each named shape against its own facts: the node
// model keeps every CPU's socket, NUMA node, L3 and siblings, and the counts
// the CPU Manager derives match the parameters.
func TestShapesAreSound(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	shapes := hwShapes()
	for i := 0; i < 200; i++ {
		shapes = append(shapes, hwRandomShape(r, i))
	}
	names := map[string]bool{}
	for _, s := range shapes {
		if names[s.name] {
			t.Fatalf("duplicate shape name %s", s.name)
		}
		names[s.name] = true
		if err := s.check(); err != nil {
			t.Fatal(err)
		}
		m := s.hw()
		topo := s.topology(t, r)
		if topo.NumCPUs != s.cpus() || topo.NumCores != s.cores() || topo.NumSockets != s.sockets || topo.NumNUMANodes != s.numas() || topo.NumUncoreCache != s.l3s() {
			t.Fatalf("%s: counts %d cpus/%d cores/%d sockets/%d numa/%d l3, want %d/%d/%d/%d/%d", s.name,
				topo.NumCPUs, topo.NumCores, topo.NumSockets, topo.NumNUMANodes, topo.NumUncoreCache, s.cpus(), s.cores(), s.sockets, s.numas(), s.l3s())
		}
		if topo.CPUsPerCore() != s.threadsPerCore {
			t.Fatalf("%s: %d CPUs per core, want %d", s.name, topo.CPUsPerCore(), s.threadsPerCore)
		}
		for id := 0; id < s.cpus(); id++ {
			info, ok := topo.CPUDetails[id]
			if !ok {
				t.Fatalf("%s: CPU %d missing", s.name, id)
			}
			// Core ids are the lowest sibling, as kubelet's discovery names them.
			if info.SocketID != m.socket[id] || info.NUMANodeID != m.numa[id] || info.UncoreCacheID != m.l3[id] || info.CoreID != m.coreCPUs[m.core[id]][0] {
				t.Fatalf("%s: CPU %d is %+v, want socket %d numa %d l3 %d core %d", s.name, id, info, m.socket[id], m.numa[id], m.l3[id], m.coreCPUs[m.core[id]][0])
			}
		}
	}
	// The numbering schemes put CPUs where the kernel does.
	x := hwNamed(t, "xeon-8480p-2s").hw()
	if x.socket[55] != 0 || x.socket[56] != 1 || x.core[112] != x.core[0] || x.core[168] != x.core[56] {
		t.Error("thread-major numbering: want CPUs 0-55 on socket 0, 56-111 on socket 1, 112 the sibling of 0")
	}
	e := hwNamed(t, "xeon-e5-2680v4-2s-interleaved").hw()
	if e.socket[0] != 0 || e.socket[1] != 1 || e.socket[2] != 0 || e.core[28] != e.core[0] {
		t.Error("interleaved numbering: want even CPUs on socket 0 and CPU 28 the sibling of 0")
	}
	p := hwNamed(t, "power-4s-smt4").hw()
	if !slices.Equal(p.coreCPUs[0], []int{0, 1, 2, 3}) || p.socket[40] != 1 {
		t.Error("POWER numbering: want CPUs 0-3 one core and socket 1 starting at CPU 40")
	}
	g := hwNamed(t, "epyc-9654-2s-nps4").hw()
	if len(g.l3CPUs) != 24 || len(g.l3CPUs[0]) != 16 || len(g.numaCPUs) != 8 || len(g.numaCPUs[0]) != 48 {
		t.Error("EPYC 9654 NPS4: want 24 L3s of 16 CPUs and 8 NUMA nodes of 48 CPUs")
	}
}

// TestShapesFiles keeps testdata/shapes/*.yaml equal to the generated node
// files (run with -update to rewrite them) and checks that each file loads
// back into the same machine.
func TestShapesFiles(t *testing.T) {
	dir := filepath.Join("testdata", "shapes")
	want := map[string]bool{}
	for _, s := range hwShapes() {
		want[s.name+".yaml"] = true
		b, err := yaml.Marshal(s.file(nil))
		if err != nil {
			t.Fatal(err)
		}
		header := fmt.Sprintf("# %s: %s.\n# %d sockets x %d cores x %d threads, %d NUMA node(s) per socket, L3 shared by %d cores; numbering: %s.\n# Generated by TestShapesFiles (shapes_test.go); rewrite with: go test ./internal/k8s/cpumanager -run TestShapesFiles -update\n",
			s.name, s.facts, s.sockets, s.coresPerSocket, s.threadsPerCore, s.numaPerSocket, s.l3Cores(), s.numbering)
		b = append([]byte(header), b...)
		path := filepath.Join(dir, s.name+".yaml")
		if *update {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update)", err)
		}
		if string(got) != string(b) {
			t.Errorf("%s is stale (run with -update)", path)
			continue
		}
		n, err := node.Load(path, 0)
		if err != nil {
			t.Fatal(err)
		}
		a, b2 := FromNode(n), s.topology(t, nil)
		if a.NumCPUs != b2.NumCPUs || len(a.CPUDetails) != len(b2.CPUDetails) {
			t.Fatalf("%s: loads as %d CPUs, want %d", path, a.NumCPUs, b2.NumCPUs)
		}
		for id, info := range b2.CPUDetails {
			if a.CPUDetails[id] != info {
				t.Fatalf("%s: CPU %d loads as %+v, want %+v", path, id, a.CPUDetails[id], info)
			}
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !want[e.Name()] {
			if *update && strings.HasSuffix(e.Name(), ".yaml") {
				if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
					t.Fatal(err)
				}
				continue
			}
			t.Errorf("%s/%s is not a shape (run with -update to remove it)", dir, e.Name())
		}
	}
}
