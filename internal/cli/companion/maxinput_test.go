package companion

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/cli"
)

// TestMaxInputBytesEveryUserFile: every file flag of every command that
// reads a user's file is read under the one --max-input-bytes bound (issue
// 26 item 3): with the bound set below the file's size, the file is refused
// from its size, naming it and the flag, and nothing else is done. The other
// files of each command are small fixtures under the bound, so the refusal
// is the flagged file's. The bound is in every command's help.
func TestMaxInputBytesEveryUserFile(t *testing.T) {
	const bound = 8192
	big := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(big, []byte("#"+strings.Repeat("x", bound)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const (
		adm  = "../../k8s/admit/testdata/seed-5.5.4/"
		plc  = "../../k8s/place/testdata/levels-plain/"
		dra  = "../../k8s/dra/testdata/seed/"
		host = "../../../testdata/hosts/dgx-h100"
	)
	for _, args := range [][]string{
		{"k8s", "admit", "--node", big, "--kubelet-config", adm + "kubelet-config.yaml", "-f", adm + "pods.yaml"},
		{"k8s", "admit", "--node", adm + "node.yaml", "--kubelet-config", big, "-f", adm + "pods.yaml"},
		{"k8s", "admit", "--node", adm + "node.yaml", "--kubelet-config", adm + "kubelet-config.yaml", "-f", big},
		{"k8s", "lint", "-f", big},
		{"k8s", "lint", "-f", adm + "pods.yaml", "--node-file", big},
		{"k8s", "lint", "-f", adm + "pods.yaml", "--kubelet-config", big},
		{"k8s", "lint", "-f", adm + "pods.yaml", "--nodes", big},
		{"k8s", "place", "--nodes", big, "--workload", plc + "workload.yaml", "--levels", "zone"},
		{"k8s", "place", "--nodes", plc + "nodes.yaml", "--pods", big, "--workload", plc + "workload.yaml", "--levels", "zone"},
		{"k8s", "place", "--nodes", plc + "nodes.yaml", "--workload", big, "--levels", "zone"},
		{"k8s", "place", "--nodes", plc + "nodes.yaml", "--workload", plc + "workload.yaml", "--topology", big},
		{"k8s", "merge", "-f", big},
		{"k8s", "kubelet", "lint", big},
		{"k8s", "kubelet", "lint", adm + "kubelet-config.yaml", "--node", big},
		{"k8s", "kubelet", "recommend", "--node", big},
		{"k8s", "dra", "allocate", "--slices", big, "--classes", dra + "classes.yaml", "--claims", dra + "5.3.1-shared-claim.yaml"},
		{"k8s", "dra", "allocate", "--slices", dra + "slices-dgx-h100.yaml", "--classes", big, "--claims", dra + "5.3.1-shared-claim.yaml"},
		{"k8s", "dra", "allocate", "--slices", dra + "slices-dgx-h100.yaml", "--classes", dra + "classes.yaml", "--claims", big},
		{"mig", "validate", "-f", big},
		{"--root", host, "audit", "--profile", big},
		{"--root", host, "tune", "plan", "--profile", big},
	} {
		name := strings.Join(args, " ")
		t.Run(name, func(t *testing.T) {
			code, out, stderr := run(t, append([]string{"--max-input-bytes", strconv.Itoa(bound)}, args...)...)
			want := big + ": input too large: " + strconv.Itoa(bound+2) + " bytes, the limit is 8192 bytes (8Ki); raise it with --max-input-bytes"
			if code != cli.ExitUsage || !strings.Contains(stderr, want) {
				t.Errorf("exit %d, want %d with %q\nstdout: %.300s\nstderr: %.600s", code, cli.ExitUsage, want, out, stderr)
			}
			// At the edge the same file is read (whatever the command
			// then makes of it).
			_, _, stderr = run(t, append([]string{"--max-input-bytes", strconv.Itoa(bound + 2)}, args...)...)
			if strings.Contains(stderr, "input too large") {
				t.Errorf("at the bound: %s", stderr)
			}
		})
	}
	// container check reads its user files as host paths under --root,
	// under the same bound; a refused one is a usage error (exit 2), and
	// nothing is checked.
	for _, flag := range []string{"--image-config", "--container-spec"} {
		file := map[string]string{"--image-config": "/root/image-pytorch.json", "--container-spec": "/root/inspect-train.json"}[flag]
		fi, err := os.Stat(host + file)
		if err != nil {
			t.Fatal(err)
		}
		n := fi.Size()
		code, out, stderr := run(t, "--root", host, "--max-input-bytes", strconv.FormatInt(n-1, 10), "container", "check", flag, file, "-o", "json")
		want := file + ": input too large: " + strconv.FormatInt(n, 10) + " bytes, the limit is " + strconv.FormatInt(n-1, 10) + " bytes"
		if code != cli.ExitUsage || !strings.Contains(stderr, want) || out != "" {
			t.Errorf("container check %s, bound %d: exit %d, want 2 with %q and no output\n%.2000s%s", flag, n-1, code, want, out, stderr)
		}
		_, out, _ = run(t, "--root", host, "--max-input-bytes", strconv.FormatInt(n, 10), "container", "check", flag, file, "-o", "json")
		if strings.Contains(out, "input too large") {
			t.Errorf("container check %s at the bound %d: %.2000s", flag, n, out)
		}
	}
	// Announced: the flag and its default are in a command's help.
	for _, args := range [][]string{{"k8s", "place", "--help"}, {"container", "check", "--help"}, {"mig", "validate", "--help"}} {
		_, out, _ := run(t, args...)
		if !strings.Contains(out, "--max-input-bytes bytes") || !strings.Contains(out, `(default 256Mi)`) {
			t.Errorf("%v: the help does not announce --max-input-bytes (default 256Mi):\n%s", args, out)
		}
	}
}
