package topo

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/goldenfile"
	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/output"
	"github.com/gpunode/gpunode/internal/testhost"
)

var update = flag.Bool("update", false, "rewrite golden files")

// goldenHosts are the fixture hosts with golden topology output.
var goldenHosts = []string{"dgx-h100", "gh200", "amd-8numa", "downgraded", "vm-2vcpu"}

func discover(t testing.TB, root string) *Topology {
	t.Helper()
	fs, err := hostfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := Discover(context.Background(), fs)
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", "golden", name), got, *update)
}

func TestGolden(t *testing.T) {
	for _, h := range goldenHosts {
		t.Run(h, func(t *testing.T) {
			topo := discover(t, testhost.Path(t, h))
			for _, f := range []output.Format{output.JSON, output.Table} {
				var buf bytes.Buffer
				if err := output.Write(&buf, f, topo, output.Options{}); err != nil {
					t.Fatal(err)
				}
				ext := map[output.Format]string{output.JSON: "json", output.Table: "txt"}[f]
				golden(t, h+"."+ext, buf.Bytes())
			}
		})
	}
}

func TestDGXH100(t *testing.T) {
	topo := discover(t, testhost.Path(t, "dgx-h100"))
	if len(topo.NUMANodes) != 2 || len(topo.Sockets) != 2 || topo.OnlineCPUs.Size() != 224 || topo.Cores() != 112 || !topo.SMTActive {
		t.Fatalf("nodes=%d sockets=%d cpus=%d cores=%d smt=%v", len(topo.NUMANodes), len(topo.Sockets), topo.OnlineCPUs.Size(), topo.Cores(), topo.SMTActive)
	}
	if got := topo.NUMANodes[0].CPUs.String(); got != "0-55,112-167" {
		t.Errorf("node0 cpus = %s", got)
	}
	if d := topo.NUMANodes[1].Distances; len(d) != 2 || d[0] != 21 || d[1] != 10 {
		t.Errorf("node1 distances = %v", d)
	}
	if len(topo.GPUs) != 8 || len(topo.NVSwitches) != 4 || len(topo.NVMe) != 4 {
		t.Fatalf("gpus=%d nvswitches=%d nvme=%d", len(topo.GPUs), len(topo.NVSwitches), len(topo.NVMe))
	}
	// GPUs are numbered in PCI order.
	for i := 1; i < len(topo.GPUs); i++ {
		if topo.GPUs[i-1].BDF >= topo.GPUs[i].BDF {
			t.Errorf("GPU order: %s before %s", topo.GPUs[i-1].BDF, topo.GPUs[i].BDF)
		}
	}
	cpu := topo.CPUs[112]
	if cpu.Core != 0 || cpu.Socket != 0 || cpu.NUMANode != 0 || cpu.Siblings.String() != "0,112" {
		t.Errorf("cpu112 = %+v", cpu)
	}
	if c := topo.CPUs[223]; c.Socket != 1 || c.NUMANode != 1 || c.Core != 55 {
		t.Errorf("cpu223 = %+v", c)
	}
	for _, tc := range []struct{ a, b, want string }{
		{"GPU0", "GPU1", LinkPIX}, {"GPU0", "GPU2", LinkNODE}, {"GPU0", "GPU4", LinkSYS},
		{"GPU0", "mlx5_0", LinkPIX}, {"GPU2", "mlx5_2", LinkPIX}, {"GPU0", "mlx5_2", LinkNODE}, {"GPU7", "mlx5_0", LinkSYS},
		{"GPU3", "GPU3", LinkSelf},
	} {
		if got := topo.LinkClass(tc.a, tc.b); got != tc.want {
			t.Errorf("%s-%s = %q, want %s", tc.a, tc.b, got, tc.want)
		}
	}
	g := topo.Device("GPU5")
	if g == nil || g.LinkWidth != 16 || g.MaxLinkSpeed.Text != "32.0 GT/s PCIe" || g.MaxLinkSpeed.GTs != 32 || g.MaxLinkSpeed.Gen != 5 || g.Driver != "nvidia" || len(g.PCIePath) != 5 || g.PCIePath[0] != "pci0000:97" {
		t.Errorf("GPU5 = %+v", g)
	}
	nic := topo.Device("mlx5_0")
	if nic == nil || nic.LinkLayer != "infiniband" || len(nic.IRQs) != 8 || nic.NetDevs[0] != "ibp26s0" {
		t.Errorf("mlx5_0 = %+v", nic)
	}
	if len(topo.Warnings) != 0 {
		t.Errorf("unexpected warnings: %v", topo.Warnings)
	}
}

func TestAMDInfersUnknownNUMA(t *testing.T) {
	topo := discover(t, testhost.Path(t, "amd-8numa"))
	if len(topo.NUMANodes) != 8 || len(topo.L3Caches) != 16 {
		t.Fatalf("nodes=%d l3=%d", len(topo.NUMANodes), len(topo.L3Caches))
	}
	gpu2 := topo.GPUs[2]
	if gpu2.NUMANode != 5 || gpu2.NUMASource != NUMAFromLocalCPUList {
		t.Errorf("GPU2 numa=%d source=%s, want 5 from local_cpulist", gpu2.NUMANode, gpu2.NUMASource)
	}
	if e := topo.Device("eno1"); e == nil || e.NUMANode != -1 || e.NUMASource != NUMAUnknown {
		t.Errorf("eno1 = %+v, want unknown NUMA", e)
	}
	if !hasWarning(topo, "NUMA node unknown") || !hasWarning(topo, "inferred NUMA node 5") {
		t.Errorf("warnings = %v", topo.Warnings)
	}
	// GPUs on nodes 1,3,5,7 share no node with the NICs on 0 and 4.
	if !hasWarning(topo, "GPU0 (0000:21:00.0) is on NUMA node 1 but no NIC is") {
		t.Errorf("missing GPU/NIC locality warning: %v", topo.Warnings)
	}
	if got := topo.LinkClass("GPU0", "GPU1"); got != LinkSYS {
		t.Errorf("GPU0 (node 1) - GPU1 (node 3) on different root complexes and nodes = %s, want SYS", got)
	}
}

func TestGH200MemoryNode(t *testing.T) {
	topo := discover(t, testhost.Path(t, "gh200"))
	if len(topo.NUMANodes) != 9 || topo.SMTActive {
		t.Fatalf("nodes=%d smt=%v", len(topo.NUMANodes), topo.SMTActive)
	}
	g := topo.GPUs[0]
	if g.NUMANode != 0 || g.MemoryNUMANode == nil || *g.MemoryNUMANode != 1 {
		t.Errorf("GPU0 numa=%d memory node=%v, want 0 and 1", g.NUMANode, g.MemoryNUMANode)
	}
	if n := topo.NodeByID(1); n.CPUs.Size() != 0 || n.GPU == nil || *n.GPU != 0 || n.MemTotalBytes != 96<<30 {
		t.Errorf("node1 = %+v", n)
	}
}

func TestDowngradedLinks(t *testing.T) {
	topo := discover(t, testhost.Path(t, "downgraded"))
	want := map[string]bool{"GPU0": true, "GPU1": true, "mlx5_0": true, "nvme0": true}
	for name := range want {
		d := topo.Device(name)
		if d == nil || !d.LinkDowngraded {
			t.Errorf("%s: want a downgraded link, got %+v", name, d)
		}
	}
	if !hasWarning(topo, "GPU0 (0000:17:00.0): PCIe link x8 Gen5 (32.0 GT/s) below its capability x16 Gen5") {
		t.Errorf("GPU0 warning missing: %v", topo.Warnings)
	}
	if !hasWarning(topo, "GPU1 (0000:38:00.0): PCIe link x16 Gen1 (2.5 GT/s) below its capability x16 Gen5 (32.0 GT/s) (GPUs lower the link speed when idle") {
		t.Errorf("GPU1 idle warning missing: %v", topo.Warnings)
	}
	if topo.IsolatedCPUs.String() != "12-15,28-31" || !topo.CPUs[13].Isolated || !topo.CPUs[13].NohzFull || topo.CPUs[11].Isolated {
		t.Errorf("isolated = %s", topo.IsolatedCPUs)
	}
	if hp := topo.NUMANodes[0].HugePages; len(hp) != 2 || hp[0].SizeBytes != 2<<20 || hp[0].Total != 1024 {
		t.Errorf("hugepages = %+v", hp)
	}
}

func TestClass(t *testing.T) {
	dev := func(numa int, path ...string) *PCIDevice {
		return &PCIDevice{BDF: path[len(path)-1], NUMANode: numa, PCIePath: path}
	}
	rc := "pci0000:00"
	for _, tc := range []struct {
		name string
		a, b *PCIDevice
		want string
	}{
		{"same switch", dev(0, rc, "0000:00:01.0", "0000:01:00.0", "0000:02:00.0", "0000:03:00.0"), dev(0, rc, "0000:00:01.0", "0000:01:00.0", "0000:02:01.0", "0000:04:00.0"), LinkPIX},
		{"two functions", dev(0, rc, "0000:00:01.0", "0000:01:00.0"), dev(0, rc, "0000:00:01.0", "0000:01:00.1"), LinkPIX},
		{"cascaded switches", dev(0, rc, "0000:00:01.0", "0000:01:00.0", "0000:02:00.0", "0000:03:00.0", "0000:04:00.0", "0000:05:00.0"), dev(0, rc, "0000:00:01.0", "0000:01:00.0", "0000:02:01.0", "0000:06:00.0"), LinkPXB},
		{"root ports", dev(0, rc, "0000:00:01.0", "0000:01:00.0"), dev(0, rc, "0000:00:02.0", "0000:02:00.0"), LinkPHB},
		{"on root bus", dev(0, rc, "0000:00:05.0"), dev(0, rc, "0000:00:02.0", "0000:02:00.0"), LinkPHB},
		{"host bridges one node", dev(1, "pci0000:00", "0000:00:01.0", "0000:01:00.0"), dev(1, "pci0000:80", "0000:80:01.0", "0000:81:00.0"), LinkNODE},
		{"host bridges two nodes", dev(0, "pci0000:00", "0000:00:01.0", "0000:01:00.0"), dev(1, "pci0000:80", "0000:80:01.0", "0000:81:00.0"), LinkSYS},
		{"unknown node", dev(-1, "pci0000:00", "0000:00:01.0", "0000:01:00.0"), dev(-1, "pci0000:80", "0000:80:01.0", "0000:81:00.0"), LinkSYS},
	} {
		if got := Class(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
		if got := Class(tc.b, tc.a); got != tc.want {
			t.Errorf("%s (swapped): %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestMalformedFilesBecomeWarnings corrupts files one at a time and checks
// that discovery names the file and keeps the rest of the report.
func TestMalformedFilesBecomeWarnings(t *testing.T) {
	root := minimalCopy(t, "dgx-h100")
	for _, tc := range []struct {
		file, content, want string
		check               func(*Topology) bool
	}{
		{"sys/devices/system/node/node1/distance", "10 x\n", "bad entry", func(t *Topology) bool { return len(t.NUMANodes[1].CPUs.List()) == 112 }},
		{"sys/devices/system/node/node0/meminfo", "garbage\n", "want \"Node N Key", func(t *Topology) bool { return t.NUMANodes[1].MemTotalBytes > 0 }},
		{"sys/devices/system/node/node0/cpulist", "0-x\n", "bad CPU id", func(t *Topology) bool { return len(t.GPUs) == 8 }},
		{"sys/devices/system/cpu/cpu5/topology/core_id", "five\n", "invalid syntax", func(t *Topology) bool { return t.CPUs[6].Core == 6 }},
		{"sys/bus/pci/devices/0000:18:00.0/numa_node", "", "invalid syntax", func(t *Topology) bool {
			return t.GPUs[0].NUMANode == 0 && t.GPUs[0].NUMASource == NUMAFromLocalCPUList
		}},
		{"sys/bus/pci/devices/0000:18:00.0/local_cpulist", "zz\n", "bad CPU id", func(t *Topology) bool { return t.GPUs[0].NUMANode == 0 }},
	} {
		t.Run(tc.file, func(t *testing.T) {
			p := filepath.Join(root, tc.file)
			if resolved, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
				p = filepath.Join(resolved, filepath.Base(p))
			}
			orig, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			defer os.WriteFile(p, orig, 0o644)
			topo := discover(t, root)
			found := false
			for _, w := range topo.Warnings {
				if w.Path == "/"+tc.file && strings.Contains(w.Message, tc.want) {
					found = true
				}
			}
			if !found {
				t.Errorf("no warning naming %s with %q: %v", tc.file, tc.want, topo.Warnings)
			}
			if !tc.check(topo) {
				t.Errorf("rest of the report damaged")
			}
		})
	}
}

func TestMissingOptionalFiles(t *testing.T) {
	root := minimalCopy(t, "downgraded")
	for _, p := range []string{"sys/devices/system/node", "sys/bus/pci", "sys/class/net", "proc/cpuinfo"} {
		if err := os.RemoveAll(filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "proc/meminfo"), []byte("MemTotal:  1024 kB\nMemFree: 512 kB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	topo := discover(t, root)
	if len(topo.NUMANodes) != 1 || topo.NUMANodes[0].CPUs.Size() != 32 || topo.NUMANodes[0].MemTotalBytes != 1<<20 || topo.NUMANodes[0].MemFreeBytes != 512<<10 {
		t.Errorf("fallback node = %+v", topo.NUMANodes)
	}
	if len(topo.GPUs) != 0 || !hasWarning(topo, "no NUMA nodes listed") {
		t.Errorf("gpus=%d warnings=%v", len(topo.GPUs), topo.Warnings)
	}
	// A malformed /proc/meminfo is a warning naming it.
	if err := os.WriteFile(filepath.Join(root, "proc/meminfo"), []byte("MemTotal: lots\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if bad := discover(t, root); !hasWarning(bad, "/proc/meminfo: line 1: MemTotal: bad value") {
		t.Errorf("no warning for a malformed /proc/meminfo: %v", bad.Warnings)
	}
	// JSON arrays stay arrays.
	b, _ := json.Marshal(topo)
	if !strings.Contains(string(b), `"gpus":[]`) {
		t.Errorf("gpus not an empty array: %s", b[:200])
	}
}

func TestNoCPUInformationFails(t *testing.T) {
	root := t.TempDir()
	fs, _ := hostfs.New(root)
	if _, err := Discover(context.Background(), fs); err == nil {
		t.Fatal("want an error for a root without /sys/devices/system/cpu")
	}
}

func TestCancelled(t *testing.T) {
	fs, _ := hostfs.New(testhost.Path(t, "dgx-h100"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Discover(ctx, fs); err == nil {
		t.Fatal("want context error")
	}
}

// TestCaptureRoundTrip captures a fixture host and checks that the capture
// reads back to the same topology.
func TestCaptureRoundTrip(t *testing.T) {
	for _, h := range []string{"dgx-h100", "amd-8numa", "gh200"} {
		t.Run(h, func(t *testing.T) {
			captureRoundTrip(t, testhost.Path(t, h))
		})
	}
}

// TestCaptureRoundTripLive captures this machine: 'topo --root capture'
// must equal what the capture run itself saw on the live machine.
func TestCaptureRoundTripLive(t *testing.T) {
	if _, err := os.Stat("/sys/devices/system/cpu"); err != nil {
		t.Skip("no live sysfs")
	}
	captureRoundTrip(t, "/")
}

func captureRoundTrip(t *testing.T, root string) {
	t.Helper()
	fs, err := hostfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	fs.Record()
	live, err := Discover(context.Background(), fs)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if err := fs.CopyRecorded(out); err != nil {
		t.Fatal(err)
	}
	replay := discover(t, out)
	a, _ := json.MarshalIndent(live, "", " ")
	b, _ := json.MarshalIndent(replay, "", " ")
	if !bytes.Equal(a, b) {
		t.Errorf("capture of %s reads back differently:\n--- live ---\n%s\n--- capture ---\n%s", root, a, b)
	}
}

// minimalCopy captures fixture host name into a temporary directory: only
// the files discovery reads, which is much faster to copy than the whole tree.
func minimalCopy(t *testing.T, name string) string {
	t.Helper()
	fs, err := hostfs.New(testhost.Path(t, name))
	if err != nil {
		t.Fatal(err)
	}
	fs.Record()
	if _, err := Discover(context.Background(), fs); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if err := fs.CopyRecorded(out); err != nil {
		t.Fatal(err)
	}
	return out
}

func hasWarning(t *Topology, substr string) bool {
	for _, w := range t.Warnings {
		if strings.Contains(w.String(), substr) {
			return true
		}
	}
	return false
}

func TestCoreGroups(t *testing.T) {
	topo := discover(t, testhost.Path(t, "dgx-h100"))
	set := cpuset.New(1, 0, 112, 113, 57, 9999)
	var got []string
	for _, g := range topo.CoreGroups(set) {
		got = append(got, g.String())
	}
	// Cores in order of their lowest CPU; an unknown CPU is a core of its own.
	if want := "0,112 1,113 57 9999"; strings.Join(got, " ") != want {
		t.Errorf("CoreGroups = %q, want %q", strings.Join(got, " "), want)
	}
}
