package cli

import (
	"encoding/json"
	"fmt"
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
	// The fixes are collected and checked at the end, each distinct text
	// once, their syntax in one bash run (one bash per fix made this the
	// slowest test of the package).
	type printed struct{ what, id, subject, fix string }
	var all []printed
	defer func() {
		parses := parseAll(t, bash, all, func(p printed) string { return p.fix })
		for _, p := range all {
			if msg := badFix(parses, p.fix); msg != "" {
				t.Errorf("%s %s/%s: fix %q: %s", p.what, p.id, p.subject, p.fix, msg)
			}
		}
	}()
	// checkFixes runs gpunode with args (JSON output) and collects every
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
				all = append(all, printed{what, c.ID, c.Subject, f})
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

// parseAll runs 'bash -n' over the distinct fixes of items and returns,
// for each fix, "" when it parses and bash's message when it does not. The
// fixes are first checked together, each as the body of its own function;
// when that fails, each is checked alone (so that one bad fix cannot hide
// or break another).
func parseAll[T any](t *testing.T, bash string, items []T, fix func(T) string) map[string]string {
	t.Helper()
	out := map[string]string{}
	var distinct []string
	for _, it := range items {
		f := strings.TrimSpace(fix(it))
		if _, ok := out[f]; ok || strings.HasPrefix(f, "#") {
			continue
		}
		out[f] = ""
		distinct = append(distinct, f)
	}
	var script strings.Builder
	for i, f := range distinct {
		fmt.Fprintf(&script, "gpunode_fix_%d() {\n%s\n}\n", i, f)
	}
	if err := exec.Command(bash, "-n", "-c", script.String()).Run(); err == nil {
		return out
	}
	for _, f := range distinct {
		if b, err := exec.Command(bash, "-n", "-c", f).CombinedOutput(); err != nil {
			out[f] = "does not parse: " + strings.TrimSpace(string(b))
		}
	}
	return out
}

// badFix says what is wrong with fix f ("" when nothing); parses holds
// bash's verdicts (see parseAll).
func badFix(parses map[string]string, f string) string {
	f = strings.TrimSpace(f)
	if strings.HasPrefix(f, "#") {
		return ""
	}
	if msg, ok := parses[f]; !ok {
		return "not checked by bash -n"
	} else if msg != "" {
		return msg
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

// TestParseAllFindsBadFix: the batched syntax check still names each fix
// that does not parse, next to ones that do.
func TestParseAllFindsBadFix(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	fixes := []string{"echo 0 > /proc/sys/vm/swappiness", "sed -i 's/a/b/' /etc/x", "echo 'unterminated", "# advice", "for x in a; do echo $x; done"}
	got := parseAll(t, bash, fixes, func(s string) string { return s })
	if len(got) != 4 || got["echo 'unterminated"] == "" || got["echo 0 > /proc/sys/vm/swappiness"] != "" || got["for x in a; do echo $x; done"] != "" {
		t.Fatalf("parseAll = %q", got)
	}
	if msg := badFix(got, "echo 'unterminated"); !strings.HasPrefix(msg, "does not parse") {
		t.Fatalf("badFix = %q", msg)
	}
	if msg := badFix(got, "nvidia-smi -pm 1"); msg != "not checked by bash -n" {
		t.Fatalf("badFix of an unchecked fix = %q", msg)
	}
}
