package companion

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/bench"
	"github.com/gpunode/gpunode/internal/cli"
	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/testhost"
)

// TestExitCodeTableEveryCommand (issue 28 item 4): every gpunode-full
// command against the rows of README's exit-code table that apply to it
// (0, 1, 2, 3; nil where a row does not apply); every command also exits
// 2 on an unknown flag. 130/143: TestExitCodeSignals and
// TestAgentExitsOnSignal.
func TestExitCodeTableEveryCommand(t *testing.T) {
	dra := func(f string) string { return draSeed(f) }
	adm := filepath.Join("..", "..", "k8s", "admit", "testdata", "seed-5.5.4")
	place := func(c, f string) string { return filepath.Join("..", "..", "k8s", "place", "testdata", c, f) }
	kc := filepath.Join("..", "..", "k8s", "kubeletcfg", "testdata")
	rules := filepath.Join("..", "..", "..", "testdata", "manifests", "rules")
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const mergeSeed = `{"policy":"single-numa-node","numaNodes":[0,1],"providers":[{"cpu":[{"affinity":[0],"preferred":true},{"affinity":[0,1],"preferred":false}]},{"nvidia.com/gpu":%s}]}`
	fits := write("fits.json", fmt.Sprintf(mergeSeed, `[{"affinity":[0],"preferred":true}]`))
	nofit := write("nofit.json", fmt.Sprintf(mergeSeed, `[{"affinity":[0,1],"preferred":true}]`))
	code, rec, stderr := run(t, "k8s", "kubelet", "recommend", "--profile", "training", "--node", filepath.Join(kc, "node-2numa-smt.yaml"))
	if code != 0 {
		t.Fatalf("kubelet recommend: exit %d: %s", code, stderr)
	}
	recommended := write("recommended.yaml", rec)
	benchRoot := t.TempDir()
	fs, err := hostfs.New(benchRoot)
	if err != nil {
		t.Fatal(err)
	}
	r := &bench.AllocResult{SchemaVersion: bench.AllocSchema, Repeats: 1, Runs: []bench.AllocRun{{Allocator: bench.Glibc, WallSeconds: []float64{1}}}}
	for _, n := range []string{"a", "b"} {
		if _, err := bench.Save(fs, bench.DefaultDir, n, r); err != nil {
			t.Fatal(err)
		}
	}
	dgx := testhost.Path(t, "dgx-h100")
	v, u := "seed-5.7.3-volcano", "undecided-5-tasks"
	for _, row := range []struct {
		name                      string
		ok, findings, usage, fail []string
	}{
		{"k8s place", []string{"k8s", "place", "--nodes", place(v, "nodes.yaml"), "--pods", place(v, "pods.yaml"), "--topology", place(v, "topology.yaml"), "--workload", place(v, "workload.yaml")},
			[]string{"k8s", "place", "--nodes", place("kueue-nofit", "nodes.yaml"), "--pods", place("kueue-nofit", "pods.yaml"), "--topology", place("kueue-nofit", "topology.yaml"), "--workload", place("kueue-nofit", "workload.yaml")},
			[]string{"k8s", "place", "--nodes", place(v, "nodes.yaml")},
			[]string{"k8s", "place", "--nodes", place(u, "nodes.yaml"), "--levels", "kubernetes.io/hostname", "--workload", place(u, "workload.yaml")}},
		{"k8s dra allocate", []string{"k8s", "dra", "allocate", "--slices", dra("slices-dgx-h100.yaml"), "--classes", dra("classes.yaml"), "--claims", dra("5.3.1-shared-claim.yaml")},
			[]string{"k8s", "dra", "allocate", "--slices", dra("slices-dgx-h100.yaml"), "--classes", dra("classes.yaml"), "--claims", dra("5.5.5-claim.yaml")},
			[]string{"k8s", "dra", "allocate", "--slices", dra("slices-dgx-h100.yaml"), "--classes", dra("classes.yaml"), "--claims", dra("5.3.3-claim.yaml"), "--node", "no-such-node"}, nil},
		{"k8s dra slices", []string{"--root", dgx, "k8s", "dra", "slices", "--node-name", "dgx-h100", "--gpu-backend", "fake"}, nil,
			[]string{"--root", dgx, "k8s", "dra", "slices", "--node-name", "Bad_Name!", "--gpu-backend", "fake"}, nil},
		{"k8s admit", nil, []string{"k8s", "admit", "--node", filepath.Join(adm, "node.yaml"), "--kubelet-config", filepath.Join(adm, "kubelet-config.yaml"), "-f", filepath.Join(adm, "pods.yaml")},
			[]string{"k8s", "admit", "--node", filepath.Join(adm, "pods.yaml"), "--kubelet-config", filepath.Join(adm, "kubelet-config.yaml"), "-f", filepath.Join(adm, "pods.yaml")}, nil},
		{"k8s lint", []string{"k8s", "lint", "-f", filepath.Join(rules, "gpu.limits", "pass.yaml")}, []string{"k8s", "lint", "-f", filepath.Join(rules, "gpu.limits", "fail.yaml")},
			[]string{"k8s", "lint", "-f", filepath.Join(dir, "nonexistent.yaml")}, nil},
		{"k8s lint --rules", []string{"k8s", "lint", "--rules"}, nil, []string{"k8s", "lint", "--rules", "extra"}, nil},
		// a bad flag value is a usage error whatever else is given
		{"k8s lint --rules --fail-on", []string{"k8s", "lint", "--rules", "--fail-on", "info"}, nil, []string{"k8s", "lint", "--rules", "--fail-on", "banana"}, nil},
		{"k8s lint --rules --shm-min", []string{"k8s", "lint", "--rules", "--shm-min", "1Gi"}, nil, []string{"k8s", "lint", "--rules", "--shm-min", "-1"}, nil},
		{"k8s kubelet lint", []string{"k8s", "kubelet", "lint", recommended}, []string{"k8s", "kubelet", "lint", filepath.Join(kc, "broken.yaml")},
			[]string{"k8s", "kubelet", "lint", filepath.Join(dir, "nonexistent.yaml")}, nil},
		{"k8s kubelet recommend", []string{"k8s", "kubelet", "recommend", "--profile", "inference", "--node", filepath.Join(kc, "node-2numa-smt.yaml")}, nil,
			[]string{"k8s", "kubelet", "recommend", "--profile", "nosuch", "--node", filepath.Join(kc, "node-2numa-smt.yaml")}, nil},
		{"k8s merge", []string{"k8s", "merge", "-f", fits}, []string{"k8s", "merge", "-f", nofit}, []string{"k8s", "merge", "-f", filepath.Join(dir, "missing.json")}, nil},
		{"bench list", []string{"bench", "list", "--root", benchRoot}, nil, []string{"bench", "list", "--root", benchRoot, "extra"}, nil},
		{"bench compare", []string{"bench", "compare", "a", "b", "--root", benchRoot}, nil, []string{"bench", "compare", "a", "nothing", "--root", benchRoot}, nil},
		{"report", []string{"--root", dgx, "report", "--gpu-backend", "fake", "--html", filepath.Join(dir, "r.html")}, nil, []string{"--root", dgx, "report", "--gpu-backend", "fake"}, nil},
		{"report --gpu-backend", []string{"--root", dgx, "report", "--gpu-backend", "none", "--html", filepath.Join(dir, "r2.html")}, nil, []string{"--root", dgx, "report", "--gpu-backend", "banana", "--html", filepath.Join(dir, "r3.html")}, nil},
	} {
		for _, c := range []struct {
			args []string
			code int
		}{{row.ok, cli.ExitOK}, {row.findings, cli.ExitFindings}, {row.usage, cli.ExitUsage}, {row.fail, cli.ExitFailure}} {
			if c.args == nil {
				continue
			}
			got, out, stderr := run(t, c.args...)
			if got != c.code {
				t.Errorf("%s: gpunode %v: exit %d, want %d\nstdout: %.300s\nstderr: %s", row.name, c.args, got, c.code, out, stderr)
			}
			if got != cli.ExitUsage && strings.Contains(stderr, "for usage.") {
				t.Errorf("%s: gpunode %v: exit %d points to the help: %s", row.name, c.args, got, stderr)
			}
		}
		args := row.ok
		if args == nil {
			args = row.findings
		}
		args = append(append([]string{}, args...), "--no-such-flag")
		if got, _, stderr := run(t, args...); got != cli.ExitUsage || !strings.Contains(stderr, "--help' for usage.") {
			t.Errorf("%s: gpunode %v: exit %d, want 2 (%s)", row.name, args, got, stderr)
		}
	}
}

// TestExitCodeSignals: the commands that can block on their input (a pipe
// named with -f -) exit 130 on SIGINT and 143 on SIGTERM, as README's
// exit-code table says.
func TestExitCodeSignals(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	for _, args := range [][]string{{"k8s", "lint", "-f", "-"}, {"k8s", "merge", "-f", "-"}} {
		for _, tc := range []struct {
			sig  syscall.Signal
			code int
		}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
			stdinR, stdinW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestAgentSignalHelperProcess$")
			cmd.Env = append(os.Environ(), "GPUNODE_AGENT_SIGNAL_HELPER=1", "GPUNODE_SIGNAL_ARGS="+strings.Join(args, "\x1f"))
			cmd.Stdin = stdinR
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			stdinR.Close()
			if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
				t.Fatalf("helper: %q, %v", line, err)
			}
			time.Sleep(300 * time.Millisecond) // sequencing only: into the blocked read
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			var werr error
			select {
			case werr = <-exited:
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
				t.Fatalf("%v %v: still running 20 s after the signal", args, tc.sig)
			}
			stdinW.Close()
			code := 0
			var ee *exec.ExitError
			if errors.As(werr, &ee) {
				code = ee.ExitCode()
			}
			if code != tc.code {
				t.Errorf("%v %v: exit %d, want %d; stderr %s", args, tc.sig, code, tc.code, stderr.String())
			}
		}
	}
}
