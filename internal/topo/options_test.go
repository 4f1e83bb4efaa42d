package topo

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/testhost"
)

// NoDevices reads no PCI device and leaves everything else as Discover
// finds it: CPUs, NUMA nodes (memory, distances, hugepages), caches.
func TestDiscoverNoDevices(t *testing.T) {
	for _, h := range goldenHosts {
		fs, err := hostfs.New(testhost.Path(t, h))
		if err != nil {
			t.Fatal(err)
		}
		fs.Record()
		full, err := Discover(context.Background(), fs)
		if err != nil {
			t.Fatal(err)
		}
		fs2, _ := hostfs.New(testhost.Path(t, h))
		fs2.Record()
		cpus, err := DiscoverWith(context.Background(), fs2, Options{NoDevices: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range fs2.Recorded() {
			if len(a.Path) >= 12 && a.Path[:12] == "/sys/bus/pci" {
				t.Errorf("%s: NoDevices read %s", h, a.Path)
			}
		}
		if len(cpus.GPUs)+len(cpus.NICs)+len(cpus.NVMe)+len(cpus.NVSwitches) != 0 {
			t.Errorf("%s: NoDevices found devices", h)
		}
		strip := func(x *Topology) string {
			c := *x
			c.GPUs, c.NICs, c.NVMe, c.NVSwitches, c.Links, c.Warnings = nil, nil, nil, nil, nil, nil
			c.NUMANodes = append([]NUMANode(nil), c.NUMANodes...)
			for i := range c.NUMANodes {
				c.NUMANodes[i].GPU = nil // GH200's GPU memory nodes are named from the GPUs
			}
			b, _ := json.Marshal(c)
			return string(b)
		}
		if a, b := strip(full), strip(cpus); a != b {
			t.Errorf("%s: CPUs and NUMA nodes differ without devices:\nfull %s\nnodev %s", h, a, b)
		}
	}
}

// NoHostInfo reads neither the host's description nor the hugepage pools.
func TestDiscoverNoHostInfo(t *testing.T) {
	fs, err := hostfs.New(testhost.Path(t, "dgx-h100"))
	if err != nil {
		t.Fatal(err)
	}
	fs.Record()
	tp, err := DiscoverWith(context.Background(), fs, Options{NoHostInfo: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range fs.Recorded() {
		if a.Path == "/proc/cpuinfo" || a.Path == "/proc/sys/kernel/hostname" || strings.Contains(a.Path, "/hugepages") {
			t.Errorf("NoHostInfo read %s", a.Path)
		}
	}
	if tp.Hostname != "" || tp.CPUModel != "" || len(tp.NUMANodes) == 0 || tp.NUMANodes[0].HugePages != nil || len(tp.GPUs) == 0 {
		t.Errorf("NoHostInfo: hostname %q, model %q, nodes %d, GPUs %d", tp.Hostname, tp.CPUModel, len(tp.NUMANodes), len(tp.GPUs))
	}
}
