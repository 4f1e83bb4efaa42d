package tune

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/hostfs"
)

// TestRealKernel applies a profile subset to the running kernel's /proc and
// /sys (swappiness, the dirty pair in both modes, THP enabled/defrag,
// numa_balancing when present), verifies it with sysctl(8), rolls back and
// verifies that every original value is back. It changes the machine it
// runs on, so it runs only as root with GPUNODE_REAL_KERNEL=1 (.ci/run on a
// disposable VM); otherwise it skips.
//
//	GPUNODE_REAL_KERNEL=1 go test ./internal/tune/ -run RealKernel -v
func TestRealKernel(t *testing.T) {
	if os.Getenv("GPUNODE_REAL_KERNEL") != "1" {
		t.Skip("set GPUNODE_REAL_KERNEL=1 (as root, on a disposable machine) to change the live kernel")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	ctx := context.Background()
	fsys, err := hostfs.New("/")
	if err != nil {
		t.Fatal(err)
	}
	if !fsys.IsKernelFile("/proc/sys/vm/swappiness") {
		t.Skip("/proc is not procfs here")
	}
	cat := NewCatalogue()
	h := NewHost(ctx, fsys)

	// Files whose exact contents must come back.
	files := []string{"/proc/sys/vm/swappiness", "/proc/sys/vm/dirty_ratio", "/proc/sys/vm/dirty_bytes",
		"/proc/sys/vm/dirty_background_ratio", "/proc/sys/vm/dirty_background_bytes",
		"/sys/kernel/mm/transparent_hugepage/enabled", "/sys/kernel/mm/transparent_hugepage/defrag",
		"/proc/sys/kernel/numa_balancing", fileSysctl, fileTmpfiles}
	orig := map[string]string{}
	for _, f := range files {
		b, err := fsys.ReadFile(f)
		if err != nil {
			orig[f] = "<absent>"
			continue
		}
		orig[f] = string(b)
	}

	// Desired values that differ from the current ones.
	settings := map[string]string{}
	other := func(cur string, a, b string) string {
		if cur == a {
			return b
		}
		return a
	}
	sw, _ := fsys.ReadString("/proc/sys/vm/swappiness")
	settings["vm.swappiness"] = other(sw, "13", "17")
	d, err := dirtyKnob{}.read(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	settings["vm.dirty"] = other(d.Current, "17%", "19%") // ratio mode
	settings["vm.dirty-background"] = "67108864"          // bytes mode: exercises tune.dirty revert
	for _, id := range []string{"mm.thp.enabled", "mm.thp.defrag"} {
		k := cat.Get(id).knob.(sysfsKnob)
		cur, err := k.current(h)
		if err != nil {
			t.Logf("%s: %v; skipped", id, err)
			continue
		}
		settings[id] = other(cur, "never", "madvise")
	}
	if nb, err := fsys.ReadString("/proc/sys/kernel/numa_balancing"); err == nil {
		settings["kernel.numa_balancing"] = other(nb, "0", "1")
	}
	p := &Profile{Name: "real-kernel-test", Source: "test", Settings: settings, Origin: map[string]string{}}
	stateDir := t.TempDir()
	t.Logf("applying %v", settings)

	rep, err := Apply(ctx, h, cat, ApplyRequest{Profile: p, StateDir: stateDir, Command: "TestRealKernel"})
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	t.Logf("journal %s, %d steps", rep.Journal, rep.Steps)
	t.Cleanup(func() {
		// Whatever happened, put the machine back.
		if _, err := Rollback(context.Background(), fsys, stateDir, false); err != nil {
			t.Errorf("cleanup rollback: %v", err)
		}
	})

	// Verify with sysctl(8) where available, else through /proc.
	sysctl := func(key string) string {
		if path, err := exec.LookPath("sysctl"); err == nil {
			out, err := exec.Command(path, "-n", key).Output()
			if err == nil {
				return normSpace(string(out))
			}
		}
		v, _ := fsys.ReadString(sysctlPath(key))
		return normSpace(v)
	}
	if got := sysctl("vm.swappiness"); got != settings["vm.swappiness"] {
		t.Errorf("sysctl vm.swappiness = %s, want %s", got, settings["vm.swappiness"])
	}
	if got := sysctl("vm.dirty_ratio"); got+"%" != settings["vm.dirty"] {
		t.Errorf("sysctl vm.dirty_ratio = %s, want %s", got, settings["vm.dirty"])
	}
	if got := sysctl("vm.dirty_background_bytes"); got != settings["vm.dirty-background"] {
		t.Errorf("sysctl vm.dirty_background_bytes = %s, want %s", got, settings["vm.dirty-background"])
	}
	if got := sysctl("vm.dirty_background_ratio"); got != "0" {
		t.Errorf("the kernel did not zero vm.dirty_background_ratio: %s", got)
	}
	if v, ok := settings["kernel.numa_balancing"]; ok {
		if got := sysctl("kernel.numa_balancing"); got != v {
			t.Errorf("sysctl kernel.numa_balancing = %s, want %s", got, v)
		}
	}
	audit, err := Audit(ctx, NewHost(ctx, fsys), cat, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range audit.Checks {
		if _, ok := settings[c.ID]; ok && c.Status != StatusOK {
			t.Errorf("audit after apply: %s is %s (%s, want %s): %s", c.ID, c.Status, c.Current, c.Expected, c.Detail)
		}
	}

	rb, err := Rollback(ctx, fsys, stateDir, false)
	if err != nil {
		t.Fatalf("rollback: %v", err)
	}
	t.Logf("rolled back %d transactions", len(rb.Transactions))
	for _, f := range files {
		got := "<absent>"
		if b, err := fsys.ReadFile(f); err == nil {
			got = string(b)
		}
		if got != orig[f] {
			t.Errorf("%s after rollback = %q, want %q", f, got, orig[f])
		}
	}
	for key, want := range map[string]string{"vm.swappiness": strings.TrimSpace(orig["/proc/sys/vm/swappiness"]),
		"vm.dirty_background_bytes": strings.TrimSpace(orig["/proc/sys/vm/dirty_background_bytes"])} {
		if got := sysctl(key); got != want {
			t.Errorf("sysctl %s after rollback = %s, want %s", key, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(stateDir, rep.Journal+".journal")); err != nil {
		t.Errorf("journal gone: %v", err)
	}
}
