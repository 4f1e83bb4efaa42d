package bind

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/goldenfile"

	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/output"
	"github.com/gpunode/gpunode/internal/testhost"
	"github.com/gpunode/gpunode/internal/topo"
)

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name), got, *update)
}

// discover reads a fixture host's topology (read-only).
func discover(t *testing.T, name string) *topo.Topology {
	t.Helper()
	fsys, err := hostfs.New(testhost.Path(t, name))
	if err != nil {
		t.Fatal(err)
	}
	tp, err := topo.Discover(context.Background(), fsys)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

// fakeGPUs is a GPU driver source for tests.
type fakeGPUs struct {
	name string
	gpus []GPUInfo
	err  error
}

func (f fakeGPUs) Name() string                            { return f.name }
func (f fakeGPUs) GPUs(context.Context) ([]GPUInfo, error) { return f.gpus, f.err }

type countingGPUs struct {
	fakeGPUs
	n int
}

func (c *countingGPUs) GPUs(ctx context.Context) ([]GPUInfo, error) {
	c.n++
	return c.fakeGPUs.GPUs(ctx)
}

// fakePolicy answers the last step of the chain.
type fakePolicy struct{ node int }

func (f fakePolicy) CurrentNode(*topo.Topology) (int, string, error) {
	return f.node, fmt.Sprintf("NUMA node %d of the current memory policy (test)", f.node), nil
}

func ip(i int) *int       { return &i }
func sp(s string) *string { return &s }

// uuidsFor builds an NVML-like view of the fixture's GPUs with stable UUIDs.
func uuidsFor(tp *topo.Topology) []GPUInfo {
	var out []GPUInfo
	for i, g := range tp.GPUs {
		out = append(out, GPUInfo{Index: i, UUID: fmt.Sprintf("GPU-%08x-1111-2222-3333-%012d", 0xabc0+i, i), BDF: strings.ToUpper("0000" + g.BDF)})
	}
	return out
}

func TestPlanGolden(t *testing.T) {
	dgx := discover(t, "dgx-h100")
	amd := discover(t, "amd-8numa")
	gh := discover(t, "gh200")
	down := discover(t, "downgraded")
	ghNVML := fakeGPUs{name: "nvml", gpus: []GPUInfo{{Index: 0, UUID: "GPU-9a1b2c3d-0000-1111-2222-333344445555", BDF: "00000009:01:00.0", NUMANode: ip(1)}}}
	cases := []struct {
		name string
		t    *topo.Topology
		req  Request
		src  Sources
	}{
		// The 8 local ranks of a DGX: 4 per node, 14 cores each.
		{"dgx-rank0-of-8", dgx, Request{LocalRank: ip(0), LocalWorldSize: 8}, Sources{}},
		{"dgx-rank3-of-8", dgx, Request{LocalRank: ip(3), LocalWorldSize: 8}, Sources{}},
		{"dgx-rank7-of-8", dgx, Request{LocalRank: ip(7), LocalWorldSize: 8, Mem: "bind", Sched: &Sched{Policy: SchedFIFO, Value: 10}, Cgroup: "gpu-workload/rank7"}, Sources{}},
		// CUDA_VISIBLE_DEVICES index remapping: rank 1 gets physical GPU 6.
		{"dgx-visible-indices", dgx, Request{LocalRank: ip(1), LocalWorldSize: 2, CUDAVisibleDevices: sp("7,6")}, Sources{}},
		// UUID remapping through the driver.
		{"dgx-visible-uuids", dgx, Request{LocalRank: ip(0), CUDAVisibleDevices: sp("GPU-0000abc4-1111-2222-3333-000000000004,GPU-0000abc1")}, Sources{GPUs: fakeGPUs{name: "nvml", gpus: uuidsFor(dgx)}}},
		{"dgx-cpus-per-rank", dgx, Request{LocalRank: ip(2), LocalWorldSize: 8, CPUsPerRank: 8, ExcludeCPUs: cpuset.New(0, 112)}, Sources{}},
		{"dgx-nic", dgx, Request{NIC: "mlx5_6", Mem: "interleave"}, Sources{}},
		{"dgx-gpu-bdf", dgx, Request{GPU: "00000000:BA:00.0", Getenv: func(k string) string {
			if k == EnvOMP {
				return "4"
			}
			return ""
		}}, Sources{}},
		// AMD: GPU2 has numa_node -1 and is inferred from local_cpulist.
		{"amd-gpu2-numa-minus1", amd, Request{LocalRank: ip(2), LocalWorldSize: 4}, Sources{}},
		{"amd-rank0-of-4", amd, Request{LocalRank: ip(0), LocalWorldSize: 4}, Sources{}},
		// Grace Hopper: NVML names the HBM node 1; bind to CPU node 0.
		{"gh200-nvml", gh, Request{LocalRank: ip(0), LocalWorldSize: 1}, Sources{GPUs: ghNVML}},
		{"gh200-sysfs", gh, Request{}, Sources{}},
		// Isolated/nohz_full CPUs are left out unless asked.
		{"downgraded-isolated", down, Request{GPU: "1", Mem: "none"}, Sources{}},
		{"downgraded-include-isolated", down, Request{GPU: "1", IncludeIsolated: true}, Sources{}},
		{"downgraded-node", down, Request{Node: ip(0), LocalRank: ip(1), LocalWorldSize: 3, Sched: &Sched{Policy: SchedNice, Value: -5}}, Sources{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.req.Command = []string{"python", "train.py"}
			p, err := Resolve(context.Background(), c.t, c.req, c.src)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := output.Write(&b, output.JSON, p, output.Options{}); err != nil {
				t.Fatal(err)
			}
			golden(t, c.name+".json", b.Bytes())
			checkPlanProperties(t, c.t, c.req, p)
		})
	}
}

// TestRankSharesDisjoint checks, for every fixture and local world size,
// that the ranks of one node get disjoint whole cores inside the node, and
// that a rank's plan does not depend on which rank computes it.
func TestRankSharesDisjoint(t *testing.T) {
	for _, name := range []string{"dgx-h100", "amd-8numa", "downgraded"} {
		tp := discover(t, name)
		coreOf := map[int][2]int{}
		for _, c := range tp.CPUs {
			coreOf[c.ID] = [2]int{c.Socket, c.Core}
		}
		for _, lws := range []int{1, 2, 3, 4, 8} {
			for _, per := range []int{0, 4} {
				t.Run(fmt.Sprintf("%s/lws%d/per%d", name, lws, per), func(t *testing.T) {
					used := map[int]int{}
					coreRank := map[[2]int]int{}
					for r := 0; r < lws; r++ {
						req := Request{LocalRank: ip(r), LocalWorldSize: lws, CPUsPerRank: per}
						if len(tp.GPUs) < lws {
							req.Node = ip(0)
						}
						p, err := Resolve(context.Background(), tp, req, Sources{})
						if err != nil {
							if errors.Is(err, ErrInput) && strings.Contains(err.Error(), "cores") {
								return // too many ranks for the node: a clear input error
							}
							t.Fatalf("rank %d: %v", r, err)
						}
						if !p.CPUs.IsSubsetOf(p.NodeCPUs.CPUSet) {
							t.Fatalf("rank %d: CPUs %s outside node %d (%s)", r, p.CPUs, p.NUMANode, p.NodeCPUs)
						}
						if per > 0 && p.CPUs.Size() < per {
							t.Fatalf("rank %d: %d CPUs, want at least %d", r, p.CPUs.Size(), per)
						}
						for _, c := range p.CPUs.List() {
							if o, dup := used[c]; dup {
								t.Fatalf("CPU %d given to ranks %d and %d", c, o, r)
							}
							used[c] = r
							k := coreOf[c]
							if o, dup := coreRank[k]; dup && o != r {
								t.Fatalf("core %v split between ranks %d and %d", k, o, r)
							}
							coreRank[k] = r
						}
						if tp.IsolatedCPUs.Size() > 0 && !p.CPUs.Intersection(tp.IsolatedCPUs.CPUSet).IsEmpty() {
							t.Fatalf("rank %d got isolated CPUs", r)
						}
					}
				})
			}
		}
	}
}

func TestResolveErrors(t *testing.T) {
	dgx := discover(t, "dgx-h100")
	down := discover(t, "downgraded")
	vm := discover(t, "vm-2vcpu")
	cases := []struct {
		name string
		t    *topo.Topology
		req  Request
		src  Sources
		want string
	}{
		{"unknown gpu index", dgx, Request{GPU: "8"}, Sources{}, "GPU 8 does not exist (this host has 8 GPUs)"},
		{"unknown gpu bdf", dgx, Request{GPU: "0000:01:00.0"}, Sources{}, "no GPU at that PCI address"},
		{"unknown gpu word", dgx, Request{GPU: "fast"}, Sources{}, "want an index, a GPU- UUID or a PCI address"},
		{"uuid without driver", dgx, Request{GPU: "GPU-1234"}, Sources{}, "UUIDs need the NVIDIA driver"},
		{"unknown uuid", dgx, Request{GPU: "GPU-ffff"}, Sources{GPUs: fakeGPUs{name: "nvml", gpus: uuidsFor(dgx)}}, "no GPU has that UUID"},
		{"mig uuid without driver", dgx, Request{GPU: "MIG-1234"}, Sources{}, "MIG UUIDs need the NVIDIA driver"},
		{"unknown mig uuid", dgx, Request{GPU: "MIG-1234"}, Sources{GPUs: fakeGPUs{name: "nvml", gpus: uuidsFor(dgx)}}, "no GPU has a MIG device with that UUID"},
		{"rank beyond gpus", dgx, Request{LocalRank: ip(8)}, Sources{}, "local rank 8 is beyond the 8 GPUs"},
		{"rank beyond visible", dgx, Request{LocalRank: ip(2), CUDAVisibleDevices: sp("0,1")}, Sources{}, "beyond CUDA_VISIBLE_DEVICES=0,1"},
		{"visible bad entry", dgx, Request{LocalRank: ip(0), CUDAVisibleDevices: sp("0,x")}, Sources{}, `entry 1 ("x") is neither`},
		{"visible empty", dgx, Request{LocalRank: ip(0), CUDAVisibleDevices: sp("")}, Sources{}, "set but empty"},
		{"visible index beyond", dgx, Request{LocalRank: ip(0), CUDAVisibleDevices: sp("9")}, Sources{}, "GPU 9 does not exist"},
		{"rank not below world", dgx, Request{LocalRank: ip(4), LocalWorldSize: 4}, Sources{}, "not below the local world size"},
		{"empty after exclusions", down, Request{GPU: "0", ExcludeCPUs: cpuset.New(seq(0, 12)...).Union(cpuset.New(seq(16, 28)...))}, Sources{}, "empty CPU set: NUMA node 0 has CPUs 0-31; minus isolated 12-15,28-31"},
		{"too many ranks per node", down, Request{Node: ip(0), LocalRank: ip(0), LocalWorldSize: 13}, Sources{}, "12 usable physical cores cannot give 13 local ranks"},
		{"cpus per rank too many", dgx, Request{LocalRank: ip(3), LocalWorldSize: 8, CPUsPerRank: 40}, Sources{}, "need more whole cores"},
		{"no such node", dgx, Request{Node: ip(5)}, Sources{}, "--node 5: no such NUMA node (have 0,1)"},
		{"no such nic", dgx, Request{NIC: "eth9"}, Sources{}, `--nic "eth9": no such NIC`},
		{"exclusive targets", dgx, Request{GPU: "0", Node: ip(0)}, Sources{}, "exclusive"},
		{"bad mem", dgx, Request{Mem: "fast"}, Sources{}, `--mem "fast"`},
		{"bad cgroup", dgx, Request{Cgroup: "../x"}, Sources{}, "'..'"},
		{"absolute cgroup", dgx, Request{Cgroup: "/sys/fs/cgroup/x"}, Sources{}, "relative"},
		{"no gpus rank", vm, Request{LocalRank: ip(0)}, Sources{}, "this host has no GPUs"},
		{"no gpus no policy", vm, Request{}, Sources{}, "use --node"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Resolve(context.Background(), c.t, c.req, c.src)
			if err == nil {
				t.Fatalf("no error, want %q", c.want)
			}
			if !errors.Is(err, ErrInput) {
				t.Errorf("error %v does not wrap ErrInput", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestPolicyFallback(t *testing.T) {
	vm := discover(t, "vm-2vcpu")
	p, err := Resolve(context.Background(), vm, Request{}, Sources{Policy: fakePolicy{node: 0}})
	if err != nil {
		t.Fatal(err)
	}
	if p.NUMASource != SourcePolicy || p.NUMANode != 0 || len(p.Warnings) != 1 {
		t.Fatalf("plan %+v, want node 0 from policy with a warning", p)
	}
	// A driver error falls back to sysfs with a warning.
	dgx := discover(t, "dgx-h100")
	p, err = Resolve(context.Background(), dgx, Request{GPU: "4"}, Sources{GPUs: fakeGPUs{name: "nvml", err: errors.New("driver/library version mismatch")}, GPUsAlways: true})
	if err != nil {
		t.Fatal(err)
	}
	if p.NUMANode != 1 || p.NUMASource != topo.NUMAFromSysfs || len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "mismatch") {
		t.Fatalf("plan %+v", p)
	}
	// NVML CPU affinity answers before sysfs.
	infos := uuidsFor(dgx)
	infos[4].CPUAffinity = cpuset.New(0, 1, 2, 3)
	p, err = Resolve(context.Background(), dgx, Request{GPU: "4"}, Sources{GPUs: fakeGPUs{name: "nvml", gpus: infos}, GPUsAlways: true})
	if err != nil {
		t.Fatal(err)
	}
	if p.NUMANode != 0 || p.NUMASource != "nvml-cpu-affinity" {
		t.Fatalf("node %d from %s, want 0 from nvml-cpu-affinity", p.NUMANode, p.NUMASource)
	}
	// By default the driver is not asked when sysfs answers (NVML start-up
	// is slow), and is asked for UUIDs.
	calls := &countingGPUs{fakeGPUs: fakeGPUs{name: "nvml", gpus: infos}}
	if _, err := Resolve(context.Background(), dgx, Request{GPU: "4"}, Sources{GPUs: calls}); err != nil || calls.n != 0 {
		t.Fatalf("sysfs-only request: %v, %d driver calls", err, calls.n)
	}
	if _, err := Resolve(context.Background(), dgx, Request{LocalRank: ip(0), CUDAVisibleDevices: sp(infos[2].UUID)}, Sources{GPUs: calls}); err != nil || calls.n != 1 {
		t.Fatalf("UUID request: %v, %d driver calls", err, calls.n)
	}
}

func TestEnviron(t *testing.T) {
	p := &Plan{Env: []EnvVar{{Name: EnvCPUs, Value: "0-3"}, {Name: EnvOMP, Value: "8", Kept: true}}}
	got := p.Environ([]string{"PATH=/bin", "GPUNODE_CPUS=9", "OMP_NUM_THREADS=8"})
	want := []string{"PATH=/bin", "OMP_NUM_THREADS=8", "GPUNODE_CPUS=0-3"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestNormalizeBDF(t *testing.T) {
	for in, want := range map[string]string{
		"0000:c1:00.0": "0000:c1:00.0", "00000000:C1:00.0": "0000:c1:00.0", "c1:00.0": "0000:c1:00.0",
		"0009:01:00.0": "0009:01:00.0", "00010000:01:00.0": "", "c1:00": "", "zz:00.0": "", "3": "",
	} {
		if got := normalizeBDF(in); got != want {
			t.Errorf("normalizeBDF(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	p, err := Resolve(context.Background(), discover(t, "amd-8numa"), Request{GPU: "2"}, Sources{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(p)
	var q Plan
	if err := json.Unmarshal(b, &q); err != nil {
		t.Fatal(err)
	}
	if !q.CPUs.Equals(p.CPUs.CPUSet) || q.Line != p.Line {
		t.Fatalf("round trip changed the plan: %s vs %s", q.Line, p.Line)
	}
}

func seq(lo, hi int) []int {
	var out []int
	for i := lo; i < hi; i++ {
		out = append(out, i)
	}
	return out
}

// BenchmarkResolveDGX measures planning one of 8 local ranks on the DGX
// fixture (topology already discovered): the part of bind's start-up that
// is bind's own.
func BenchmarkResolveDGX(b *testing.B) {
	fsys, err := hostfs.New(testhost.Path(b, "dgx-h100"))
	if err != nil {
		b.Fatal(err)
	}
	tp, err := topo.Discover(context.Background(), fsys)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Resolve(context.Background(), tp, Request{LocalRank: ip(5), LocalWorldSize: 8, Command: []string{"true"}}, Sources{}); err != nil {
			b.Fatal(err)
		}
	}
}
