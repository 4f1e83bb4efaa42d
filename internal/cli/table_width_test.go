package cli

import (
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gpunode/gpunode/internal/output"
	"github.com/gpunode/gpunode/internal/testhost"
)

// tableCommands are the commands with table output that read only --root
// (the k8s commands, which read files, are in companion's tests).
var tableCommands = [][]string{
	{"topo"}, {"audit"}, {"audit", "--profile", "training"}, {"gpu", "status"}, {"gpu", "audit"},
	{"container", "check"}, {"container", "flags", "--runtime", "docker", "--gpu", "0"}, {"irq", "plan"},
	{"tune", "plan", "--profile", "inference-isolated"}, {"tune", "status"}, {"tune", "show", "training"},
	{"tune", "profiles"}, {"mig", "live-profiles"}, {"mig", "export"}, {"mps", "status"},
	{"gpu", "rollback", "--dry-run"}, {"tune", "rollback", "--dry-run"}, {"irq", "rollback", "--dry-run"},
	{"audit", "--list-checks"}, {"bind", "--node", "0", "--dry-run", "--", "true"}, {"version"},
	{"gpu", "persistence", "on", "--dry-run"}, {"gpu", "clocks", "reset", "--dry-run"},
}

// TestTablesFitTerminal (issue 28 item 1): every table command on every
// fixture host prints lines of at most 160 columns by default. The only
// lines exempt are the commands of a Fixes section and a script's lines,
// printed whole so that they work when pasted. --no-headers drops the
// header line.
func TestTablesFitTerminal(t *testing.T) {
	dir, err := testhost.HostsDir()
	if err != nil {
		t.Fatal(err)
	}
	hosts, err := os.ReadDir(dir)
	if err != nil || len(hosts) < 6 {
		t.Fatalf("fixture hosts: %d, %v", len(hosts), err)
	}
	for _, h := range hosts {
		root := testhost.Path(t, h.Name())
		for _, c := range tableCommands {
			args := append([]string{"--root", root}, c...)
			code, out, stderr := run(t, args...)
			if h.Name() == "vm-2vcpu" && (strings.Contains(stderr, "this host has no GPUs") || strings.Contains(stderr, "cannot plan every setting")) {
				continue // a 2-vCPU VM capture: no GPUs, no /proc/cmdline
			}
			if code == ExitFailure && strings.Contains(stderr, "no NVIDIA driver") {
				continue // a fixture without GPUs: mig reads them live
			}
			if code > ExitFindings {
				t.Errorf("%s %v: exit %d: %s", h.Name(), c, code, stderr)
				continue
			}
			if out == "" {
				t.Errorf("%s %v: no output", h.Name(), c)
			}
			inCode := false
			for n, l := range strings.Split(out, "\n") {
				switch {
				case strings.HasPrefix(l, "Fixes") || strings.Contains(l, "with this script:"):
					inCode = true
				case !strings.HasPrefix(l, " "):
					inCode = false
				}
				if inCode && strings.HasPrefix(l, "    ") {
					continue
				}
				if w := utf8.RuneCountInString(l); w > output.DefaultWidth {
					t.Errorf("%s %v: line %d is %d columns: %.100s...", h.Name(), c, n+1, w, l)
				}
			}
		}
	}
}

// TestNoHeadersDropsHeader: --no-headers leaves out the header line and
// everything under the table, as kubectl's does.
func TestNoHeadersDropsHeader(t *testing.T) {
	root := testhost.Path(t, "dgx-h100")
	for _, tc := range []struct {
		args   []string
		header string
	}{
		{[]string{"gpu", "audit"}, "STATUS  CHECK"},
		{[]string{"container", "check"}, "STATUS  CHECK"},
		{[]string{"irq", "plan"}, "DEVICE   BDF"},
		{[]string{"tune", "profiles"}, "NAME "},
	} {
		_, with, _ := run(t, append([]string{"--root", root}, tc.args...)...)
		_, without, _ := run(t, append([]string{"--root", root, "--no-headers"}, tc.args...)...)
		if !strings.Contains(with, tc.header) {
			t.Errorf("%v: no header %q in\n%s", tc.args, tc.header, with)
		}
		if strings.Contains(without, tc.header) || strings.Contains(without, "Findings:") || strings.Contains(without, " ok, ") {
			t.Errorf("%v --no-headers: header, sections or summary left in\n%s", tc.args, without)
		}
		if without == "" {
			t.Errorf("%v --no-headers: no rows", tc.args)
		}
	}
}
