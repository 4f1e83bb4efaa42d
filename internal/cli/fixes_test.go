package cli

import (
	"encoding/json"
	"os/exec"
	"regexp"
	"strings"
	"testing"

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
	for _, host := range []string{"dgx-h100", "gh200", "amd-8numa", "downgraded", "mixed-pcie"} {
		root := testhost.Copy(t, host)
		if err := tunetest.Overlay(root, tunetest.Options{Process: host == "dgx-h100", Tuners: host == "downgraded"}); err != nil {
			t.Fatal(err)
		}
		for _, profile := range []string{"base", "inference-isolated", "training"} {
			args := []string{"--root", root, "audit", "--profile", profile, "-o", "json"}
			if host == "dgx-h100" {
				args = append(args, "--pid", "4242")
			}
			code, out, errs := run(t, args...)
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
			for _, c := range rep.Checks {
				if fixExempt[c.Layer] {
					continue
				}
				for _, f := range c.Fix {
					if msg := badFix(bash, f); msg != "" {
						t.Errorf("%s/%s %s/%s: fix %q: %s", host, profile, c.ID, c.Subject, f, msg)
					}
				}
			}
		}
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
