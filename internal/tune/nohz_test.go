package tune

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNohzFullMatchesIsolcpus: where a host sets both isolcpus and
// nohz_full, every profile judges boot.nohz_full against isolcpus; the
// mixed-pcie fixture isolates 4-15,20-31 but runs tickless on 8-15,24-31
// only. A host that sets neither (or only isolcpus) gets no row from base.
func TestNohzFullMatchesIsolcpus(t *testing.T) {
	cat := NewCatalogue()
	find := func(t *testing.T, root, profile string) (Check, bool) {
		t.Helper()
		fsys := mustFS(t, root)
		r, err := Audit(context.Background(), newHost(t, fsys), cat, mustLoad(t, cat, fsys, profile), Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range r.Checks {
			if c.ID == "boot.nohz_full" {
				return c, true
			}
		}
		return Check{}, false
	}
	mixed, _ := stockHost(t, "mixed-pcie")
	for _, prof := range []string{ProfileBase, ProfileTraining, ProfileInferenceIsolated} {
		c, ok := find(t, mixed, prof)
		if !ok || c.Status != StatusDrift {
			t.Fatalf("%s: boot.nohz_full %+v (found %v), want drift", prof, c, ok)
		}
		for _, want := range []string{"nohz_full=8-15,24-31 differs from isolcpus=4-15,20-31", "CPUs 4-7,20-23 are in isolcpus but not in nohz_full"} {
			if !strings.Contains(c.Detail, want) {
				t.Errorf("%s: detail %q lacks %q", prof, c.Detail, want)
			}
		}
		if prof != ProfileInferenceIsolated && (c.Current != "8-15,24-31" || c.Expected != "4-15,20-31" || len(c.Fix) == 0) {
			t.Errorf("%s: current %q expected %q fix %q", prof, c.Current, c.Expected, c.Fix)
		}
	}
	// Both set and equal: ok. Neither set (dgx-h100): no row.
	same := filepath.Join(mixed, "proc/cmdline")
	if err := os.WriteFile(same, []byte("BOOT_IMAGE=/vmlinuz root=/dev/sda2 ro isolcpus=managed_irq,domain,4-15,20-31 nohz_full=4-15,20-31\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mixed, "etc/default/grub"), []byte("GRUB_CMDLINE_LINUX_DEFAULT=\"quiet splash isolcpus=managed_irq,domain,4-15,20-31 nohz_full=4-15,20-31\"\nGRUB_CMDLINE_LINUX=\"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, ok := find(t, mixed, ProfileBase); !ok || c.Status != StatusOK || strings.Contains(c.Detail, "differs") {
		t.Errorf("equal lists: %+v (found %v), want ok", c, ok)
	}
	dgx, _ := stockHost(t, "downgraded")
	if c, ok := find(t, dgx, ProfileBase); ok {
		t.Errorf("downgraded (no isolcpus on the command line): base printed %+v", c)
	}
}
