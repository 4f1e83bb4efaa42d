package tune

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/journal/journaltest"
	"github.com/gpunode/gpunode/internal/testhost"
	"github.com/gpunode/gpunode/internal/tune/tunetest"
)

func bootHost(t *testing.T, boot string) string {
	t.Helper()
	root := testhost.Copy(t, "downgraded")
	if err := tunetest.Overlay(root, tunetest.Options{Boot: boot}); err != nil {
		t.Fatal(err)
	}
	return root
}

var bootCases = []struct {
	overlay, kind string
	// source of boot.iommu's boot value and what it is before a fix.
	iommuFrom, iommuBoot string
	// files apply --bootloader writes.
	files []string
}{
	{tunetest.BootGRUB, BootGRUB, "", "", []string{fileGrubBak, grubFile}},
	{tunetest.BootGRUBDropins, BootGRUB, "/etc/default/grub.d/60-site.cfg", "on", []string{"/etc/default/grub.d/60-site.cfg"}},
	{tunetest.BootBLS, BootGRUBBLS, "", "",
		[]string{"/boot/loader/entries/4f3a9c1e2b7d4e8a9c1b5d6e7f8a9b0c-5.14.0-362.8.1.el9_3.x86_64.conf", "/boot/loader/entries/4f3a9c1e2b7d4e8a9c1b5d6e7f8a9b0c-5.14.0-427.13.1.el9_4.x86_64.conf", fileKernelCmd}},
	{tunetest.BootSystemdBoot, BootSystemdBoot, "", "", []string{fileKernelCmd}},
}

// TestBootLoaders: each boot loader is detected, boot parameters are read
// from the file that wins, and apply --bootloader writes that loader's
// files (journaled: rollback restores the tree byte for byte).
func TestBootLoaders(t *testing.T) {
	ctx := context.Background()
	for _, bc := range bootCases {
		name := bc.overlay
		if name == "" {
			name = "grub"
		}
		t.Run(name, func(t *testing.T) {
			root := bootHost(t, bc.overlay)
			fs := mustFS(t, root)
			h := NewHost(ctx, fs)
			if got := h.BootLoader(); got != bc.kind {
				t.Fatalf("boot loader %q, want %q", got, bc.kind)
			}
			cat := NewCatalogue()
			p := mustLoad(t, cat, fs, ProfileTraining)
			rep, err := Audit(ctx, h, cat, p, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var iommu *Check
			for i := range rep.Checks {
				if rep.Checks[i].ID == "boot.iommu" {
					iommu = &rep.Checks[i]
				}
			}
			if iommu == nil || iommu.Status != StatusDrift {
				t.Fatalf("boot.iommu: %+v, want drift", iommu)
			}
			if bc.iommuFrom != "" && !strings.Contains(iommu.Detail, bc.iommuFrom) {
				t.Errorf("boot.iommu detail %q does not name %s", iommu.Detail, bc.iommuFrom)
			}
			if v := NewHost(ctx, fs).bootConf().params["iommu"]; v != bc.iommuBoot {
				t.Errorf("configured iommu=%q, want %q", v, bc.iommuBoot)
			}

			before := snapshot(t, root)
			req := ApplyRequest{Profile: p, StateDir: "/var/lib/gpunode", Bootloader: true, Command: "test", Clock: testClock}
			ar, err := Apply(ctx, NewHost(ctx, fs), cat, req)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(ar.Boot, " ") != "iommu=pt" {
				t.Errorf("plan's kernel parameters %q, want [iommu=pt]", ar.Boot)
			}
			var wrote []string
			for _, f := range ar.Files {
				if f.Action != "unchanged" && f.Action != "remove" && !strings.Contains(f.Path, "90-gpunode") && f.Path != fileFstab {
					wrote = append(wrote, f.Path)
				}
			}
			if strings.Join(wrote, " ") != strings.Join(bc.files, " ") {
				t.Errorf("apply --bootloader wrote %q, want %q", wrote, bc.files)
			}
			for _, f := range bc.files {
				if f == fileGrubBak {
					continue
				}
				b, err := os.ReadFile(filepath.Join(root, f))
				if err != nil || !strings.Contains(string(b), "iommu=pt") {
					t.Errorf("%s after apply: %v\n%s", f, err, b)
				}
			}
			after, err := Audit(ctx, NewHost(ctx, fs), cat, p, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range after.Checks {
				if c.ID == "boot.iommu" && c.Status != StatusPendingReboot {
					t.Errorf("boot.iommu after apply: %s (%s), want pending-reboot", c.Status, c.Detail)
				}
			}
			if _, err := Rollback(ctx, fs, "/var/lib/gpunode", false); err != nil {
				t.Fatal(err)
			}
			if d := journaltest.Diff(before, snapshot(t, root)); len(d) > 0 {
				t.Errorf("rollback left differences:\n%s", strings.Join(d, "\n"))
			}
		})
	}
}

// TestBootFixesRun: the printed boot fixes of each loader run and leave
// the parameters configured for the next boot.
func TestBootFixesRun(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	stubs := fixStubDir(t)
	for _, bc := range bootCases {
		name := bc.overlay
		if name == "" {
			name = "grub"
		}
		t.Run(name, func(t *testing.T) {
			root := bootHost(t, bc.overlay)
			runFixes(t, bash, stubs, root, nil, ProfileTraining)
		})
	}
}

// TestBLSReadsRunningEntry: the boot value comes from the entry of the
// running kernel, not another entry, and $tuned_params stays in place.
func TestBLSReadsRunningEntry(t *testing.T) {
	root := bootHost(t, tunetest.BootBLS)
	old := filepath.Join(root, "/boot/loader/entries/4f3a9c1e2b7d4e8a9c1b5d6e7f8a9b0c-5.14.0-362.8.1.el9_3.x86_64.conf")
	b, err := os.ReadFile(old)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(old, []byte(strings.Replace(string(b), "options ", "options iommu=off ", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	h := NewHost(context.Background(), mustFS(t, root))
	bc := h.bootConf()
	if _, ok := bc.params["iommu"]; ok {
		t.Errorf("iommu read from the old kernel's entry (%s)", bc.source["iommu"])
	}
	if bc.source["root"] == "" || !strings.Contains(bc.source["root"], "427.13.1") {
		t.Errorf("root= source %q, want the running kernel's entry", bc.source["root"])
	}
	nb, err := editBLSEntry([]byte("title x\noptions ro quiet $tuned_params\n"), [][2]string{{"iommu", "pt"}})
	if err != nil || string(nb) != "title x\noptions ro quiet $tuned_params iommu=pt\n" {
		t.Errorf("editBLSEntry = %q, %v", nb, err)
	}
	if _, err := editBLSEntry([]byte("options $kernelopts\n"), [][2]string{{"iommu", "pt"}}); err == nil {
		t.Error("editBLSEntry accepted $kernelopts")
	}
}
