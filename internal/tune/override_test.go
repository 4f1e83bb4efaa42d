package tune

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBootOverrideNamed: /etc/sysctl.conf (read after every sysctl.d file)
// sets vm.swappiness back to 60 at boot, and a limits.d file after
// gpunode's sets memlock. Audit drifts naming the winning file, the first
// fix comments out its line, and plan says the value cannot persist (it
// suggested appending to the losing file, and apply said "changed").
func TestBootOverrideNamed(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	cat := NewCatalogue()
	root, fsys := stockHost(t, "gh200")
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
	write("proc/sys/vm/swappiness", "0\n")
	write("etc/sysctl.d/90-gpunode.conf", "vm.swappiness = 0\n")
	write("etc/sysctl.conf", "# local\nvm.swappiness = 60\n")
	write("etc/security/limits.d/99-site.conf", "* soft memlock 65536\n* hard memlock 65536\n")
	p := mustLoad(t, cat, fsys, ProfileTraining)
	audit := func() *Report {
		t.Helper()
		r, err := Audit(context.Background(), newHost(t, fsys), cat, p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := audit()
	sw := checkByID(r, "vm.swappiness")
	if sw.Status != StatusDrift || !strings.Contains(sw.Detail, "/etc/sysctl.conf, which is read after /etc/sysctl.d/90-gpunode.conf") {
		t.Errorf("vm.swappiness: %s %q, want drift naming /etc/sysctl.conf", sw.Status, sw.Detail)
	}
	if len(sw.Fix) == 0 || !strings.Contains(sw.Fix[0], "/etc/sysctl.conf") {
		t.Fatalf("vm.swappiness fixes %q: the first must edit /etc/sysctl.conf", sw.Fix)
	}
	ml := checkByID(r, "limits.memlock")
	if ml.Status != StatusDrift || !strings.Contains(ml.Detail, "99-site.conf (applies at the next login), which is read after") || !strings.Contains(ml.Fix[0], "99-site.conf") {
		t.Errorf("limits.memlock: %s %q %q, want drift naming 99-site.conf", ml.Status, ml.Detail, ml.Fix)
	}
	pr, err := Plan(context.Background(), newHost(t, fsys), cat, ApplyRequest{Profile: p, StateDir: "/var/lib/gpunode"})
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(pr.Notes, "\n")
	if !strings.Contains(notes, "vm.swappiness = 0: not persistent: /etc/sysctl.conf sets 60") || !strings.Contains(notes, "limits memlock unlimited: not persistent") {
		t.Errorf("plan notes:\n%s\nwant the two overrides", notes)
	}
	// Run the printed sed fixes against the copy: the overriding lines
	// are commented out and the verdict follows.
	for _, fix := range []string{sw.Fix[0], ml.Fix[0]} {
		cmd := strings.ReplaceAll(strings.ReplaceAll(fix, " /etc/", " "+root+"/etc/"), "@{", "")
		if out, err := exec.Command("sh", "-c", cmd).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v %s", cmd, err, out)
		}
	}
	b, _ := os.ReadFile(filepath.Join(root, "etc/sysctl.conf"))
	if !strings.Contains(string(b), "#gpunode# vm.swappiness = 60") || !strings.Contains(string(b), "# local") {
		t.Errorf("sysctl.conf after the fix:\n%s", b)
	}
	r = audit()
	if c := checkByID(r, "vm.swappiness"); c.Status != StatusOK {
		t.Errorf("after the fix vm.swappiness is %s: %s", c.Status, c.Detail)
	}
}
