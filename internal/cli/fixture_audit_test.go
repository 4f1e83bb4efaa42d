package cli

import (
	"testing"

	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/testhost"
)

// TestFixtureAuditComplete: the generated fixture hosts carry the stock OS
// that audit reads, so 'gpunode audit --root testdata/hosts/NAME' (no
// overlay, no demo tree) finds every kernel/OS setting of the base profile:
// none is absent or an error (the trees held only what topology discovery
// reads, and 17 checks of dgx-h100 were absent, shm.size an error).
func TestFixtureAuditComplete(t *testing.T) {
	osLayers := map[string]bool{"cpu": true, "memory": true, "limits": true, "network": true, "boot": true, "pcie": true}
	for _, host := range []string{"dgx-h100", "amd-8numa", "gh200", "downgraded", "mixed-pcie"} {
		_, r, _ := auditOf(t, "--root", testhost.Path(t, host), "audit")
		n := 0
		for _, c := range r.Checks {
			if !osLayers[c.Layer] {
				continue
			}
			n++
			// Hosts without PCIe switches have no switch port to judge.
			noSwitch := host == "amd-8numa" || host == "gh200" || host == "downgraded"
			if (c.Status == check.Absent || c.Status == check.Error) && !(noSwitch && c.ID == "pcie.acs" && c.Status == check.Absent) {
				t.Errorf("%s: %s %s: %s", host, c.Key(), c.Status, c.Detail)
			}
		}
		if n < 18 {
			t.Errorf("%s: %d kernel/OS checks, want the base profile's (18 or more)", host, n)
		}
	}
}
