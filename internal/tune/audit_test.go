package tune

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/gpunode/gpunode/internal/check"
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
	write := func(p, c string) { t.Helper(); writeUnder(t, root, p, c) }
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

// fakeSource is a GPU or IRQ source for tests.
type fakeSource struct {
	name   string
	checks []Check
}

func (f fakeSource) Name() string { return f.name }
func (f fakeSource) Checks(context.Context) ([]Check, error) {
	return f.checks, nil
}

// TestAuditSources: sources compose with the catalogue; a profile's rules
// disable one subject (gpu.persistence/gpu7) or report a whole check.
func TestAuditSources(t *testing.T) {
	cat := NewCatalogue()
	fsys := mustFS(t, sharedHost(t, "gh200"))
	gpu := fakeSource{"gpu", []Check{
		{ID: "gpu.persistence", Subject: "gpu6", Layer: LayerGPU, Status: StatusDrift},
		{ID: "gpu.persistence", Subject: "gpu7", Layer: LayerGPU, Status: StatusDrift},
	}}
	irq := fakeSource{"irq", []Check{{ID: "irq.off-node", Subject: "0000:01:00.0", Layer: LayerIRQ, Status: StatusDrift}}}
	opt := Options{Sources: []check.Source{gpu, irq}}
	r, err := Audit(context.Background(), newHost(t, fsys), cat, mustLoad(t, cat, fsys, ProfileBase), opt)
	if err != nil {
		t.Fatal(err)
	}
	if checkByKey(r, "gpu.persistence/gpu7") == nil || checkByKey(r, "irq.off-node/0000:01:00.0") == nil {
		t.Fatal("source checks not used")
	}
	if checkByID(r, "irq.numa-local") != nil {
		t.Error("tune still has its own IRQ locality check")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	prof := "name: p\ninclude: base\nsettings:\n  gpu.persistence/gpu7: null\n  irq.numa-local: report\n"
	if err := os.WriteFile(file, []byte(prof), 0o644); err != nil {
		t.Fatal(err)
	}
	l := &Loader{Cat: cat, Host: fsys, Checks: []check.Description{{ID: "gpu.persistence"}, {ID: "irq.off-node"}}}
	p, err := l.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	r, err = Audit(context.Background(), newHost(t, fsys), cat, p, opt)
	if err != nil {
		t.Fatal(err)
	}
	if checkByKey(r, "gpu.persistence/gpu7") != nil || checkByKey(r, "gpu.persistence/gpu6") == nil {
		t.Error("gpu.persistence/gpu7 not disabled alone")
	}
	if c := checkByKey(r, "irq.off-node/0000:01:00.0"); c == nil || c.Status != StatusOK || !strings.Contains(c.Detail, "report only") {
		t.Errorf("irq.numa-local: report (the retired id) does not report irq.off-node: %+v", c)
	}
	// A profile naming a check no source has is an error.
	if err := os.WriteFile(file, []byte("name: p\ndisable: [gpu.nope]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Load(file); err == nil || !strings.Contains(err.Error(), "gpu.nope") {
		t.Errorf("unknown check accepted: %v", err)
	}
}

func checkByKey(r *Report, key string) *Check {
	for i := range r.Checks {
		if r.Checks[i].Key() == key {
			return &r.Checks[i]
		}
	}
	return nil
}

// TestAuditCancelled: Audit stops in its loop when the context ends.
func TestAuditCancelled(t *testing.T) {
	cat := NewCatalogue()
	fsys := mustFS(t, sharedHost(t, "gh200"))
	ctx, cancel := context.WithCancel(context.Background())
	h := newHost(t, fsys)
	cancel()
	if _, err := Audit(ctx, h, cat, mustLoad(t, cat, fsys, ProfileTraining), Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled audit: %v", err)
	}
}

// TestSpecKinds: every catalogue spec kind is known, and an unknown kind
// validates nothing (it accepted anything).
func TestSpecKinds(t *testing.T) {
	for _, k := range []valueKind{0, valCPUList + 1} {
		if err := (spec{kind: k}).validate("anything"); err == nil {
			t.Errorf("unknown spec kind %d accepted a value", k)
		}
	}
	cat := NewCatalogue()
	for _, s := range cat.Settings() {
		for prof, v := range s.Desired {
			if v == valueOff || v == ValueReport {
				continue
			}
			if err := s.knob.validate(v); err != nil {
				t.Errorf("%s: built-in %s value %q: %v", s.ID, prof, v, err)
			}
		}
	}
}
