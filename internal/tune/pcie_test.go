package tune

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/topo"
)

// TestPCIeLinkIdleSpeed: a GPU trained down to Gen1 at full width is idle
// power saving, not drift (every idle GPU node exited 1 with "reseat the
// card"); a narrow link, or an upstream port slower than the device, is.
func TestPCIeLinkIdleSpeed(t *testing.T) {
	cat := NewCatalogue()
	root, fsys := stockHost(t, "downgraded")
	dev := func(bdf, f string) string { return filepath.Join(root, "sys/bus/pci/devices", bdf, f) }
	// Repair every narrow link: only GPU1's idle Gen1 speed is left.
	tp, err := topo.Discover(context.Background(), fsys)
	if err != nil {
		t.Fatal(err)
	}
	var gpu1 topo.PCIDevice
	for _, d := range pcieDevices(tp) {
		if d.MaxLinkWidth > 0 {
			if err := os.WriteFile(dev(d.BDF, "current_link_width"), []byte(strconv.Itoa(d.MaxLinkWidth)+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if d.Name == "GPU1" {
			gpu1 = d
		}
	}
	if !strings.HasPrefix(gpu1.LinkSpeed, "2.5") {
		t.Fatalf("fixture GPU1 link %q, want Gen1", gpu1.LinkSpeed)
	}
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
