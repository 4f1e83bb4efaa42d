package tune

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/topo"
)

// fullWidthGPU1 repairs every narrow link of the downgraded host at root
// (current width := maximum width) and returns GPU1 as discovered before,
// whose idle Gen1 speed is then the only thing below capability.
func fullWidthGPU1(t *testing.T, root string, fsys *hostfs.FS) topo.PCIDevice {
	t.Helper()
	tp, err := topo.Discover(context.Background(), fsys)
	if err != nil {
		t.Fatal(err)
	}
	var gpu1 topo.PCIDevice
	for _, d := range pcieDevices(tp) {
		if d.MaxLinkWidth > 0 {
			p := filepath.Join(root, "sys/bus/pci/devices", d.BDF, "current_link_width")
			if err := os.WriteFile(p, []byte(strconv.Itoa(d.MaxLinkWidth)+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if d.Name == "GPU1" {
			gpu1 = d
		}
	}
	if gpu1.LinkSpeed.Gen != 1 {
		t.Fatalf("fixture GPU1 link %q, want Gen1", gpu1.LinkSpeed)
	}
	return gpu1
}

// TestPCIeLinkIdleSpeed: a GPU trained down to Gen1 at full width is idle
// power saving, not drift (every idle GPU node exited 1 with "reseat the
// card"); a narrow link, or an upstream port slower than the device, is.
func TestPCIeLinkIdleSpeed(t *testing.T) {
	cat := NewCatalogue()
	root, fsys := stockHost(t, "downgraded")
	dev := func(bdf, f string) string { return filepath.Join(root, "sys/bus/pci/devices", bdf, f) }
	gpu1 := fullWidthGPU1(t, root, fsys)
	audit := func() *Check {
		t.Helper()
		r, err := Audit(context.Background(), newHost(t, fsys), cat, mustLoad(t, cat, fsys, ProfileBase), Options{})
		if err != nil {
			t.Fatal(err)
		}
		return checkByID(r, "pcie.link")
	}
	c := audit()
	if c.Status != StatusOK || !strings.Contains(c.Detail, "GPU1") || !strings.Contains(c.Detail, "pcie.link.gen.current") {
		t.Errorf("idle Gen1 GPU: %s %q, want ok with how to check under load", c.Status, c.Detail)
	}
	// The port above GPU1 tops out at Gen3: the link can never reach Gen5.
	if len(gpu1.PCIePath) < 2 || strings.HasPrefix(gpu1.PCIePath[len(gpu1.PCIePath)-2], "pci") {
		t.Skipf("GPU1 has no upstream bridge in the fixture: %v", gpu1.PCIePath)
	}
	up := gpu1.PCIePath[len(gpu1.PCIePath)-2]
	if err := os.WriteFile(dev(up, "max_link_speed"), []byte("8.0 GT/s PCIe\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c := audit(); c.Status != StatusDrift || !strings.Contains(c.Detail, "upstream port tops out at 8 GT/s") {
		t.Errorf("Gen3 upstream port: %s %q, want drift", c.Status, c.Detail)
	}
	// A narrow link is drift whatever the speed.
	if err := os.WriteFile(dev(gpu1.BDF, "current_link_width"), []byte("8\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c := audit(); c.Status != StatusDrift || !strings.Contains(c.Detail, "trained x8, capable of x16") {
		t.Errorf("x8 link: %s %q, want drift", c.Status, c.Detail)
	}
}

// TestPCIeLinkUnderLoad: the downgraded host's GPU1 runs at Gen1 with its
// links at full width. Idle (or with no GPU reading) that is power saving,
// ok; when the GPU backend reports the GPU busy (>= BusyPct) while its link
// is below the maximum, pcie.link is drift naming the utilisation and both
// speeds; busy at full speed is ok.
func TestPCIeLinkUnderLoad(t *testing.T) {
	cat := NewCatalogue()
	root, fsys := stockHost(t, "downgraded")
	gpu1 := fullWidthGPU1(t, root, fsys)
	p := mustLoad(t, cat, fsys, ProfileBase)
	audit := func(load ...GPULoad) *Check {
		t.Helper()
		h := newHost(t, fsys)
		h.GPULoad = load
		r, err := Audit(context.Background(), h, cat, p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return checkByID(r, "pcie.link")
	}
	for _, tc := range []struct {
		name   string
		load   []GPULoad
		status Status
		want   string
		not    string // absent from current and detail
	}{
		{"no reading", nil, StatusOK, "GPU1 (" + gpu1.BDF + ") at 2.5 GT/s now, capable of", ""},
		{"idle", []GPULoad{{BDF: gpu1.BDF, UtilizationPct: 3, LinkGen: 1, MaxLinkGen: 5}}, StatusOK, "at 2.5 GT/s now (3% busy)", ""},
		{"busy, backend gens", []GPULoad{{BDF: gpu1.BDF, UtilizationPct: 97, LinkGen: 1, MaxLinkGen: 5}}, StatusDrift,
			"GPU1 (" + gpu1.BDF + ") at Gen1 (2.5 GT/s) while 97% busy (GPU backend), capable of Gen5 (32 GT/s): the link stays slow under load", ""},
		{"busy, sysfs speeds", []GPULoad{{BDF: gpu1.BDF, UtilizationPct: 80}}, StatusDrift, "at 2.5 GT/s while 80% busy (GPU backend), capable of 32 GT/s", ""},
		// Only the NIC (mlx5_0, idle at Gen3) is left below its maximum.
		{"busy at full speed", []GPULoad{{BDF: gpu1.BDF, UtilizationPct: 99, LinkGen: 5, MaxLinkGen: 5}}, StatusOK, "links at full width, 1 below max speed now", "GPU1"},
		{"another GPU busy", []GPULoad{{BDF: "0000:ff:00.0", UtilizationPct: 99, LinkGen: 1, MaxLinkGen: 5}}, StatusOK, "GPU1", ""},
	} {
		c := audit(tc.load...)
		text := c.Current + " " + c.Detail
		if c.Status != tc.status || !strings.Contains(text, tc.want) || (tc.not != "" && strings.Contains(text, tc.not)) {
			t.Errorf("%s: %s %q %q, want %s with %q and without %q", tc.name, c.Status, c.Current, c.Detail, tc.status, tc.want, tc.not)
		}
	}
}
