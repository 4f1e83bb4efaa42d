package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/testhost"
)

type execCall struct {
	argv0 string
	argv  []string
	env   []string
}

// runBind runs gpunode on a goroutine of its own (bind locks its OS thread
// and changes the thread's affinity; the thread dies with the goroutine)
// with the given environment, recording exec calls instead of exec'ing.
func runBind(t *testing.T, environ []string, args ...string) (int, string, string, []execCall) {
	t.Helper()
	var out, errb bytes.Buffer
	var calls []execCall
	get := func(k string) string {
		for _, kv := range environ {
			if key, v, ok := strings.Cut(kv, "="); ok && key == k {
				return v
			}
		}
		return ""
	}
	env := Env{
		Args: args, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		Getenv: get, Environ: func() []string { return environ },
		Exec: func(argv0 string, argv, envv []string) error {
			calls = append(calls, execCall{argv0, argv, envv})
			return nil
		},
	}
	done := make(chan int)
	go func() { done <- Main(context.Background(), env) }()
	code := <-done
	return code, out.String(), errb.String(), calls
}

func TestBindDryRunOnFixture(t *testing.T) {
	dgx := testhost.Path(t, "dgx-h100")
	env := []string{"LOCAL_RANK=5", "LOCAL_WORLD_SIZE=8", "CUDA_VISIBLE_DEVICES=0,1,2,3,4,6,5,7", "OMP_NUM_THREADS=1"}
	code, out, errOut, calls := runBind(t, env, "bind", "--root", dgx, "--dry-run", "-o", "json", "--", "python", "train.py")
	if code != 0 || len(calls) != 0 {
		t.Fatalf("exit %d calls %d: %s", code, len(calls), errOut)
	}
	var p struct {
		Rank   int    `json:"rank"`
		Line   string `json:"line"`
		Target struct {
			Index   int    `json:"index"`
			Visible string `json:"visible"`
		} `json:"target"`
		Env []struct {
			Name  string `json:"name"`
			Value string `json:"value"`
			Kept  bool   `json:"kept"`
		} `json:"env"`
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	// Rank 5 maps through CUDA_VISIBLE_DEVICES to physical GPU 6 (node 1),
	// the second of the four ranks on node 1.
	want := "rank 5 -> GPU 6 (0000:ba:00.0) -> NUMA 1 -> CPUs 70-83,182-195 mem=preferred"
	if p.Rank != 5 || p.Target.Index != 6 || p.Target.Visible != "6" || p.Line != want {
		t.Fatalf("plan %+v, want %q", p, want)
	}
	if len(p.Env) != 3 || p.Env[2].Name != "OMP_NUM_THREADS" || !p.Env[2].Kept || p.Env[2].Value != "1" {
		t.Fatalf("env %+v: OMP_NUM_THREADS=1 must be kept", p.Env)
	}
	// Table form.
	code, out, _, _ = runBind(t, nil, "bind", "--root", dgx, "--dry-run", "--gpu", "3", "--", "python", "train.py")
	if code != 0 || !strings.Contains(out, "GPU 3 (0000:3b:00.0) -> NUMA 0 -> CPUs 0-55,112-167 mem=preferred") || !strings.Contains(out, "numa node  0 (from sysfs)") {
		t.Fatalf("table: exit %d\n%s", code, out)
	}
	// A dry run without a command is a usage error (it printed a plan, exit 0).
	code, out, errOut, _ = runBind(t, nil, "bind", "--root", dgx, "--dry-run", "--gpu", "3")
	if code != 2 || out != "" || !strings.Contains(errOut, "--dry-run: missing command") {
		t.Fatalf("dry run without a command: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// --root without --dry-run is refused.
	code, _, errOut, calls = runBind(t, nil, "bind", "--root", dgx, "--gpu", "3", "--", "true")
	if code != 2 || len(calls) != 0 || !strings.Contains(errOut, "only with --dry-run") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

func TestBindExecsLive(t *testing.T) {
	code, _, errOut, calls := runBind(t, []string{"PATH=/usr/bin:/bin", "OMP_NUM_THREADS="}, "bind", "--node", "0", "--mem", "bind", "--", "sh", "-c", "exit 0")
	if code != 0 || len(calls) != 1 {
		t.Fatalf("exit %d, %d exec calls: %s", code, len(calls), errOut)
	}
	c := calls[0]
	if !strings.HasSuffix(c.argv0, "/sh") || strings.Join(c.argv, " ") != "sh -c exit 0" {
		t.Fatalf("exec %q %q", c.argv0, c.argv)
	}
	if !strings.Contains(errOut, "NUMA 0 -> CPUs ") || !strings.Contains(errOut, "mem=bind") {
		t.Fatalf("stderr %q", errOut)
	}
	env := strings.Join(c.env, "\n")
	for _, k := range []string{"GPUNODE_CPUS=", "GPUNODE_NUMA_NODE=0", "OMP_NUM_THREADS="} {
		if !strings.Contains(env, k) {
			t.Errorf("env lacks %s: %v", k, c.env)
		}
	}
	// --quiet prints nothing.
	_, _, errOut, _ = runBind(t, []string{"PATH=/bin"}, "bind", "--node", "0", "-q", "--", "sh")
	if errOut != "" {
		t.Fatalf("--quiet printed %q", errOut)
	}
}

func TestBindUsageErrors(t *testing.T) {
	dgx := testhost.Path(t, "dgx-h100")
	cases := []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"bind", "--root", dgx, "--dry-run", "--gpu", "12"}, "GPU 12 does not exist"},
		{[]string{"LOCAL_RANK=x"}, []string{"bind", "--root", dgx, "--dry-run"}, `LOCAL_RANK="x"`},
		{[]string{"LOCAL_WORLD_SIZE=-2", "LOCAL_RANK=0"}, []string{"bind", "--root", dgx, "--dry-run"}, "LOCAL_WORLD_SIZE"},
		{[]string{"LOCAL_RANK=9"}, []string{"bind", "--root", dgx, "--dry-run"}, "local rank 9 is beyond the 8 GPUs"},
		{[]string{"LOCAL_RANK=2", "CUDA_VISIBLE_DEVICES=0,1"}, []string{"bind", "--root", dgx, "--dry-run"}, "beyond CUDA_VISIBLE_DEVICES"},
		{nil, []string{"bind", "--root", dgx, "--dry-run", "--local-rank", "-1"}, "--local-rank -1"},
		{nil, []string{"bind", "--root", dgx, "--dry-run", "--exclude-cpus", "x"}, "--exclude-cpus"},
		{nil, []string{"bind", "--root", dgx, "--dry-run", "--sched", "rr:0"}, "outside 1..99"},
		{nil, []string{"bind", "--root", dgx, "--dry-run", "--gpu-backend", "nvidia-smi"}, "too slow for bind"},
		{nil, []string{"bind", "--root", dgx, "--dry-run", "--gpu-backend", "cuda"}, `--gpu-backend "cuda"`},
		{nil, []string{"bind", "--node", "0", "--", "definitely-not-a-command"}, "not found in PATH"},
		{nil, []string{"bind", "--node", "0"}, "missing command"},
		{nil, []string{"bind", "--show", "1", "--", "x"}, "--show takes at most a PID"},
		{nil, []string{"bind", "--show", "abc"}, "want a process id"},
	}
	for _, c := range cases {
		code, _, errOut, calls := runBind(t, c.env, c.args...)
		if code != ExitUsage || len(calls) != 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v %v: exit %d, %d execs, stderr %q; want exit 2 and %q", c.env, c.args, code, len(calls), errOut, c.want)
		}
	}
}

func TestIRQCommands(t *testing.T) {
	// dgx-h100 has GPU IRQs served off-node: plan computes a plan and
	// exits 0 (so 'gpunode irq plan && gpunode irq apply' would apply);
	// --exit-code makes it exit 1, like git diff.
	code, out, errOut := run(t, "irq", "plan", "--root", testhost.Path(t, "dgx-h100"), "--devices", "gpu", "--exit-code")
	if code != ExitFindings {
		t.Fatalf("plan --exit-code dgx: exit %d, want 1\n%s", code, errOut)
	}
	code, out, errOut = run(t, "irq", "plan", "--root", testhost.Path(t, "dgx-h100"), "--devices", "gpu")
	if code != ExitOK || !strings.Contains(out, "OFF-NODE") || !strings.Contains(out, "irqbalance is running (pid 1432)") {
		t.Fatalf("plan dgx: exit %d\n%s\n%s", code, out, errOut)
	}
	code, _, _ = run(t, "irq", "plan", "--root", testhost.Path(t, "gh200"))
	if code != ExitOK {
		t.Fatalf("plan gh200: exit %d, want 0", code)
	}
	code, _, errOut = run(t, "irq", "plan", "--root", testhost.Path(t, "gh200"), "--devices", "tpu")
	if code != ExitUsage || !strings.Contains(errOut, "tpu") {
		t.Fatalf("bad --devices: exit %d %s", code, errOut)
	}
	code, _, errOut = run(t, "irq", "plan", "--root", testhost.Path(t, "gh200"), "--avoid", "3-1")
	if code != ExitUsage || !strings.Contains(errOut, "--avoid") {
		t.Fatalf("bad --avoid: exit %d %s", code, errOut)
	}
	// --ranks/--cpus-per-rank keep the ranks' bind shares free of IRQs.
	code, out, errOut = run(t, "irq", "plan", "--root", testhost.Path(t, "dgx-h100"), "--devices", "gpu", "--ranks", "8", "--cpus-per-rank", "16", "-o", "json")
	if code != ExitOK || !strings.Contains(out, `"rankCPUs": "0-31,56-87,112-143,168-199"`) || !strings.Contains(out, `"planned": "88"`) {
		t.Fatalf("--ranks: exit %d\n%s\n%s", code, out, errOut)
	}
	code, _, errOut = run(t, "irq", "plan", "--root", testhost.Path(t, "dgx-h100"), "--ranks", "8")
	if code != ExitUsage || !strings.Contains(errOut, "--cpus-per-rank") {
		t.Fatalf("--ranks without --cpus-per-rank: exit %d %s", code, errOut)
	}
	// apply then rollback on a copy: byte-identical outside the journal.
	root := testhost.Copy(t, "amd-8numa")
	before, _ := testhost.Snapshot(root)
	// Global flags before the subcommand: the journal records the command
	// line as given.
	code, out, errOut = run(t, "-o", "json", "--root", root, "irq", "apply")
	if code != 0 || !strings.Contains(out, `"transaction": "000001-irq"`) {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out, errOut)
	}
	jb, err := os.ReadFile(filepath.Join(root, "var/lib/gpunode/000001-irq.journal"))
	if want := `"command": "gpunode -o json --root ` + root + ` irq apply"`; err != nil || !strings.Contains(string(jb), want) {
		t.Fatalf("journal %v, want %s:\n%s", err, want, jb)
	}
	b, err := os.ReadFile(filepath.Join(root, "proc/irq/400/smp_affinity_list"))
	if err != nil || strings.TrimSpace(string(b)) != "8" {
		t.Fatalf("IRQ 400 affinity %q %v, want 8", b, err)
	}
	code, out, errOut = run(t, "irq", "rollback", "--root", root)
	if code != 0 || !strings.Contains(out, "000001-irq") {
		t.Fatalf("rollback: exit %d\n%s\n%s", code, out, errOut)
	}
	after, _ := testhost.Snapshot(root)
	var diffs []string
	for _, d := range testhost.DiffSnapshots(before, after) {
		if !strings.Contains(d, "var") {
			diffs = append(diffs, d)
		}
	}
	if len(diffs) > 0 {
		t.Fatalf("rollback left %v", diffs)
	}
}
