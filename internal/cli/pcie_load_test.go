package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/testhost"
)

// TestPCIeLinkUnderLoad: GPU0 of the DGX fixture trained down to Gen1
// (sysfs and the fake GPU backend agree). Idle that is power saving: audit
// says ok. With the fake backend reporting it 97% busy, pcie.link is drift
// naming the utilisation and both speeds, and audit exits 1.
func TestPCIeLinkUnderLoad(t *testing.T) {
	root := testhost.Copy(t, "dgx-h100")
	speed := filepath.Join(root, "sys/bus/pci/devices/0000:18:00.0/current_link_speed")
	if err := os.WriteFile(speed, []byte("2.5 GT/s PCIe\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fake := filepath.Join(root, "etc/gpunode/fake-gpus.yaml")
	orig, err := os.ReadFile(fake)
	if err != nil {
		t.Fatal(err)
	}
	setFake := func(util int) {
		t.Helper()
		s := strings.Replace(string(orig), "  pcie:\n    gen: 5\n", "  pcie:\n    gen: 1\n", 1)
		s = strings.Replace(s, "  smCount: 132\n", "  smCount: 132\n  utilizationPct: "+strconv.Itoa(util)+"\n", 1)
		if s == string(orig) {
			t.Fatal("fake GPU file not edited")
		}
		if err := os.WriteFile(fake, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func() (int, check.Check) {
		t.Helper()
		code, r, errs := auditOf(t, "--root", root, "audit", "--gpu-backend", "fake")
		for _, c := range r.Checks {
			if c.ID == "pcie.link" {
				return code, c
			}
		}
		t.Fatalf("no pcie.link check (%s)", errs)
		return 0, check.Check{}
	}
	setFake(2)
	if _, c := link(); c.Status != check.OK || !strings.Contains(c.Detail, "GPU0 (0000:18:00.0) at 2.5 GT/s now (2% busy)") {
		t.Errorf("idle Gen1 GPU0: %s %q, want ok", c.Status, c.Detail)
	}
	setFake(97)
	code, c := link()
	if c.Status != check.Drift || code != ExitFindings ||
		!strings.Contains(c.Detail, "GPU0 (0000:18:00.0) at Gen1 (2.5 GT/s) while 97% busy (GPU backend), capable of Gen5 (32 GT/s)") {
		t.Errorf("busy Gen1 GPU0: exit %d, %s %q, want drift naming 97%% and both speeds", code, c.Status, c.Detail)
	}
}
