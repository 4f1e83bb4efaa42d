package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/container"
	"github.com/gpunode/gpunode/internal/testhost"
	"github.com/gpunode/gpunode/internal/tune/tunetest"
)

// fixCommands are the commands a printed fix may start with: tools present
// on stock Debian/Ubuntu and RHEL-family hosts (coreutils, sed, util-linux,
// systemd, pciutils, procps, grub/grubby, kernel-install), the tuners' own
// clients, NVIDIA's tools and gpunode itself.
var fixCommands = map[string]bool{
	"echo": true, "printf": true, "mkdir": true, "sed": true, "rm": true, "cp": true, "[": true,
	"swapoff": true, "mount": true, "systemctl": true, "update-grub": true, "grubby": true, "kernel-install": true,
	"setpci": true, "tuned-adm": true, "powerprofilesctl": true, "gpunode": true,
	"nvidia-smi": true, "nvidia-ctk": true, "dmesg": true, "grep": true,
	"apt-get": true, "dnf": true, // each on its family; the other is named in a comment
}

// fixExempt are layers whose advice is not yet written as comments (none
// today; the container layer's daemon.json advice became "# ..." notes).
var fixExempt = map[string]bool{}

var fixSplit = regexp.MustCompile(`&&|\|\||;|\|`)

// TestEveryFixIsACommand: every fix 'gpunode audit' prints on every fixture
// (all layers: tune, tuners, irq, gpu, containers) is a comment or a shell
// command line that parses (bash -n) and whose commands are tools a stock
// host has; advice is a "# ..." comment, never text that a pasted fix list
// would try to run ("upgrade the driver, or ...", "<command>").
func TestEveryFixIsACommand(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	// checkFixes runs gpunode with args (JSON output) and checks every
	// fix; it returns how many fixes checks with id printed.
	checkFixes := func(what, id string, args ...string) int {
		t.Helper()
		code, out, errs := run(t, append(args, "-o", "json")...)
		if code > ExitFindings {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		var rep struct {
			Checks []struct {
				ID, Subject, Layer string
				Fix                []string
			}
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		n := 0
		for _, c := range rep.Checks {
			if c.ID == id {
				n += len(c.Fix)
			}
			if fixExempt[c.Layer] {
				continue
			}
			for _, f := range c.Fix {
				if msg := badFix(bash, f); msg != "" {
					t.Errorf("%s %s/%s: fix %q: %s", what, c.ID, c.Subject, f, msg)
				}
			}
		}
		return n
	}
	for _, host := range []string{"dgx-h100", "gh200", "amd-8numa", "downgraded", "mixed-pcie"} {
		root := testhost.Copy(t, host)
		if err := tunetest.Overlay(root, tunetest.Options{Process: host == "dgx-h100", Tuners: host == "downgraded"}); err != nil {
			t.Fatal(err)
		}
		for _, profile := range []string{"base", "inference-isolated", "training"} {
			args := []string{"--root", root, "audit", "--profile", profile}
			if host == "dgx-h100" {
				args = append(args, "--pid", "4242")
			}
			checkFixes(host+"/"+profile, "", args...)
		}
	}
	// The overlay checks run only for given data paths or container
	// specs, which audit does not take: 'container check' with paths on
	// a container's overlay root (dgx-h100's mount table is a
	// container's) and with a Pod whose hostPath lies in an overlay
	// mount of the host (downgraded).
	dgx := testhost.Path(t, "dgx-h100")
	n := checkFixes("dgx-h100 container check", container.CheckOverlay, "--root", dgx, "container", "check",
		"--image-config", "/root/image-pytorch.json", "--container-spec", "/root/inspect-train.json", "--data", "/data,/workspace")
	dg := testhost.Copy(t, "downgraded")
	if err := os.MkdirAll(filepath.Join(dg, "root"), 0o755); err != nil {
		t.Fatal(err)
	}
	pod := "kind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    volumeMounts:\n    - {name: d, mountPath: /data}\n  volumes:\n  - name: d\n    hostPath: {path: /var/lib/docker/overlay2/77c4/merged/data}\n"
	if err := os.WriteFile(filepath.Join(dg, "root", "pod.yaml"), []byte(pod), 0o644); err != nil {
		t.Fatal(err)
	}
	n += checkFixes("downgraded container check", container.CheckOverlay, "--root", dg, "container", "check",
		"--container-spec", "/root/pod.yaml", "--data", "/data,/scratch")
	if n < 3 {
		t.Errorf("the container checks printed %d overlay fixes, want one for each of /workspace, the hostPath on overlay and /scratch", n)
	}
}

// badFix says what is wrong with fix f ("" when nothing).
func badFix(bash, f string) string {
	f = strings.TrimSpace(f)
	if strings.HasPrefix(f, "#") {
		return ""
	}
	if out, err := exec.Command(bash, "-n", "-c", f).CombinedOutput(); err != nil {
		return "does not parse: " + strings.TrimSpace(string(out))
	}
	// Drop a trailing comment and the contents of quotes (sed scripts).
	code := stripQuoted(f)
	if i := strings.Index(code, " #"); i >= 0 {
		code = code[:i]
	}
	if strings.ContainsAny(code, "<>") && !regexp.MustCompile(`^[^<]*(\d?>>?\s*\S+)?[^<]*$`).MatchString(code) {
		return "holds a placeholder (<...>)"
	}
	for _, seg := range fixSplit.Split(code, -1) {
		seg = strings.TrimSpace(seg)
		seg = strings.TrimPrefix(seg, "do ")
		w := strings.Fields(seg)
		if len(w) == 0 || w[0] == "done" || w[0] == "for" || w[0] == "]" {
			continue
		}
		if !fixCommands[w[0]] {
			return "runs " + w[0] + ", not a command of a stock host (make advice a # comment)"
		}
	}
	return ""
}

// stripQuoted blanks the contents of '...' and "..." (keeping the quotes).
func stripQuoted(s string) string {
	var b strings.Builder
	q := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case q == 0 && (c == '\'' || c == '"'):
			q = c
			b.WriteByte(c)
		case q != 0 && c == q:
			q = 0
			b.WriteByte(c)
		case q != 0:
			b.WriteByte('x')
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
