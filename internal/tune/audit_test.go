package tune

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/output"
)

var allProfiles = []string{ProfileBase, ProfileTraining, ProfileInference, ProfileInferenceIsolated}

// TestAuditGolden audits every fixture host against every built-in profile.
func TestAuditGolden(t *testing.T) {
	cat := NewCatalogue()
	for _, host := range fixtureHosts {
		fsys := mustFS(t, sharedHost(t, host))
		h := newHost(t, fsys)
		for _, prof := range allProfiles {
			t.Run(host+"/"+prof, func(t *testing.T) {
				opt := Options{}
				if host == "dgx-h100" {
					opt.PID = 4242
				}
				r, err := Audit(context.Background(), h, cat, mustLoad(t, cat, fsys, prof), opt)
				if err != nil {
					t.Fatal(err)
				}
				var b bytes.Buffer
				if err := r.WriteTable(&b, output.Options{}); err != nil {
					t.Fatal(err)
				}
				golden(t, "audit-"+host+"-"+prof+".txt", b.Bytes())
				// A stock host drifts under every profile.
				if !r.Drifted() {
					t.Error("stock host reports no drift")
				}
				sum := r.Summary
				if n := sum.OK + sum.Drift + sum.PendingReboot + sum.Absent + sum.Error; n != len(r.Checks) {
					t.Errorf("summary counts %d checks, report has %d", n, len(r.Checks))
				}
			})
		}
	}
}

func TestAuditJSONGolden(t *testing.T) {
	cat := NewCatalogue()
	fsys := mustFS(t, sharedHost(t, "dgx-h100"))
	r, err := Audit(context.Background(), newHost(t, fsys), cat, mustLoad(t, cat, fsys, ProfileTraining), Options{PID: 4242})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := output.Write(&b, output.JSON, r, output.Options{}); err != nil {
		t.Fatal(err)
	}
	golden(t, "audit-dgx-h100-training.json", b.Bytes())
	var back Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || back.SchemaVersion != SchemaAudit || len(back.Checks) != len(r.Checks) {
		t.Fatalf("JSON round trip: %v, %+v", err, back.Summary)
	}
}

func checkByID(r *Report, id string) *Check {
	for i := range r.Checks {
		if r.Checks[i].ID == id {
			return &r.Checks[i]
		}
	}
	return nil
}

// TestAuditStatuses covers each status on purpose-built hosts.
func TestAuditStatuses(t *testing.T) {
	cat := NewCatalogue()
	root, fsys := stockHost(t, "downgraded")
	write := func(p, c string) {
		t.Helper()
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Right now, but /etc/sysctl.d says otherwise for the next boot.
	write("proc/sys/vm/swappiness", "0\n")
	write("etc/sysctl.d/99-zz-local.conf", "vm.swappiness = 60\n")
	// Right live value and right boot value.
	write("proc/sys/kernel/numa_balancing", "0\n")
	write("etc/sysctl.d/50-numa.conf", "kernel.numa_balancing=0\n")
	// iommu=pt configured in grub, not booted yet.
	write("etc/default/grub", "GRUB_CMDLINE_LINUX=\"iommu=pt\"\n")
	// A kernel without zone reclaim (absent) and an unreadable knob (error).
	if err := os.Remove(filepath.Join(root, "proc/sys/vm/zone_reclaim_mode")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "proc/sys/net/core/rmem_max")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "proc/sys/net/core/rmem_max"), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := Audit(context.Background(), newHost(t, fsys), cat, mustLoad(t, cat, fsys, ProfileTraining), Options{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		id     string
		status Status
		detail string
	}{
		{"vm.swappiness", StatusDrift, "boot configuration says 60"},
		{"kernel.numa_balancing", StatusOK, ""},
		{"boot.iommu", StatusPendingReboot, "configured for the next boot"},
		{"vm.zone_reclaim_mode", StatusAbsent, "does not exist"},
		{"net.core.rmem_max", StatusError, "is a directory"},
		{"net.core.wmem_max", StatusDrift, ""}, // the others still run
		{"pcie.link", StatusDrift, "capable of"},
		{"gpu", StatusAbsent, "no GPU backend"},
	}
	for _, tt := range tests {
		c := checkByID(r, tt.id)
		if c == nil {
			t.Errorf("%s: missing", tt.id)
			continue
		}
		if c.Status != tt.status || !strings.Contains(c.Detail, tt.detail) {
			t.Errorf("%s: status %s detail %q; want %s containing %q", tt.id, c.Status, c.Detail, tt.status, tt.detail)
		}
	}
}

// fakeSource is a GPU or IRQ backend for tests.
type fakeSource struct {
	name   string
	checks []Check
}

func (f fakeSource) Name() string { return f.name }
func (f fakeSource) Checks(context.Context, *Host, *Profile) ([]Check, error) {
	return f.checks, nil
}

var _ GPUChecker = fakeSource{}

func TestAuditSources(t *testing.T) {
	cat := NewCatalogue()
	fsys := mustFS(t, sharedHost(t, "gh200"))
	gpu := fakeSource{"gpu", []Check{{ID: "gpu.persistence", Layer: LayerGPU, Status: StatusDrift, Current: "0", Expected: "1"}}}
	irq := fakeSource{"irq", []Check{{ID: "irq.off-node", Layer: LayerIRQ, Status: StatusOK}}}
	r, err := Audit(context.Background(), newHost(t, fsys), cat, mustLoad(t, cat, fsys, ProfileBase), Options{GPU: gpu, IRQ: irq})
	if err != nil {
		t.Fatal(err)
	}
	if checkByID(r, "gpu") != nil || checkByID(r, "gpu.persistence") == nil {
		t.Error("GPU backend checks not used")
	}
	if checkByID(r, "irq.numa-local") != nil || checkByID(r, "irq.off-node") == nil {
		t.Fatal("IRQ source does not replace irq.numa-local")
	}
	if got, want := checkByID(r, "irq.off-node").Reason, cat.Get("irq.numa-local").Why; got != want {
		t.Errorf("IRQ source check reason = %q, want irq.numa-local's %q", got, want)
	}
	// "report" for irq.numa-local keeps the IRQ source from drifting; the
	// GPU source is not affected.
	p := mustLoad(t, cat, fsys, ProfileBase)
	p.Settings["irq.numa-local"] = ValueReport
	irq.checks[0].Status = StatusDrift
	r, err = Audit(context.Background(), newHost(t, fsys), cat, p, Options{GPU: gpu, IRQ: irq})
	if err != nil {
		t.Fatal(err)
	}
	if c := checkByID(r, "irq.off-node"); c.Status != StatusOK || !strings.Contains(c.Detail, "report only") {
		t.Errorf("report-only IRQ check = %s %q, want ok, report only", c.Status, c.Detail)
	}
	if c := checkByID(r, "gpu.persistence"); c.Status != StatusDrift {
		t.Errorf("GPU check = %s, want drift", c.Status)
	}
}
