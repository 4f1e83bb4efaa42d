package tunetest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/testhost"
)

func TestOverlay(t *testing.T) {
	root := testhost.Copy(t, "vm-2vcpu")
	if err := Overlay(root, Options{Stock: true, Process: true}); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{
		"proc/sys/vm/swappiness":                               "60\n",
		"sys/devices/system/cpu/cpu1/cpufreq/scaling_governor": "powersave\n",
		"sys/devices/system/cpu/cpu0/cpuidle/state3/latency":   "170\n",
	} {
		if b, err := os.ReadFile(filepath.Join(root, p)); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", p, b, err, want)
		}
	}
	if l, err := os.Readlink(filepath.Join(root, "etc/sysctl.d/99-sysctl.conf")); err != nil || l != "../sysctl.conf" {
		t.Errorf("99-sysctl.conf link = %q, %v", l, err)
	}
	if l, _ := os.Readlink(filepath.Join(root, "proc/4242/fd/8")); !strings.HasPrefix(l, "/dev/nvidia") {
		t.Errorf("process fd link = %q", l)
	}
}

// TestWriteDemo writes a stocked fixture to $GPUNODE_DEMO_DIR (used to
// produce the README examples: GPUNODE_DEMO_DIR=/tmp/dgx go test
// ./internal/tune/tunetest -run WriteDemo).
func TestWriteDemo(t *testing.T) {
	dir := os.Getenv("GPUNODE_DEMO_DIR")
	if dir == "" {
		t.Skip("GPUNODE_DEMO_DIR not set")
	}
	src, err := testhost.HostsDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := testhost.CopyTree(filepath.Join(src, "dgx-h100"), dir); err != nil {
		t.Fatal(err)
	}
	if err := Overlay(dir, Options{Process: true}); err != nil {
		t.Fatal(err)
	}
}
