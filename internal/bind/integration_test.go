package bind_test

// Integration tests: the real gpunode binary, the real kernel calls and the
// real tools (numactl, taskset, chrt; skipped when missing). The binary is
// built once in TestMain.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/sysfmt"
	"github.com/gpunode/gpunode/internal/testhost"
)

var gpunodeBin, bindOnlyBin string

func TestMain(m *testing.M) {
	code := func() int {
		dir, err := os.MkdirTemp("", "gpunode-bind-it-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		root, err := testhost.RepoRoot()
		if err == nil {
			bin := filepath.Join(dir, "gpunode")
			cmd := exec.Command("go", "build", "-o", bin, "./cmd/gpunode")
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err == nil {
				gpunodeBin = bin
			} else {
				fmt.Fprintf(os.Stderr, "building gpunode for integration tests failed (they will skip): %v\n%s", err, out)
			}
			if isBench() {
				only := filepath.Join(dir, "bindonly")
				cmd := exec.Command("go", "build", "-o", only, "./internal/bind/testdata/bindonly")
				cmd.Dir = root
				if out, err := cmd.CombinedOutput(); err == nil {
					bindOnlyBin = only
				} else {
					fmt.Fprintf(os.Stderr, "building bindonly failed: %v\n%s", err, out)
				}
			}
		}
		return m.Run()
	}()
	os.Exit(code)
}

// isBench reports whether benchmarks were asked for (-test.bench).
func isBench() bool {
	for _, a := range os.Args[1:] {
		if strings.HasPrefix(a, "-test.bench") {
			return true
		}
	}
	return false
}

func needBin(t testing.TB) {
	t.Helper()
	if gpunodeBin == "" {
		t.Skip("gpunode binary not built")
	}
}

func needTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not installed (apt-get install %s)", name, map[string]string{"numactl": "numactl", "taskset": "util-linux", "chrt": "util-linux"}[name])
	}
	return p
}

// run runs gpunode with args and returns stdout, stderr and the exit code.
func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	needBin(t)
	cmd := exec.Command(gpunodeBin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}

// node0 is NUMA node 0's CPUs that this test process may use (a container
// may restrict them).
func node0(t *testing.T) cpuset.CPUSet {
	t.Helper()
	b, err := os.ReadFile("/sys/devices/system/node/node0/cpulist")
	if err != nil {
		t.Skipf("no NUMA node 0 in sysfs: %v", err)
	}
	set, err := sysfmt.ParseCPUList(string(b))
	if err != nil {
		t.Fatal(err)
	}
	var mine unix.CPUSet
	if err := unix.SchedGetaffinity(0, &mine); err != nil {
		t.Fatal(err)
	}
	var ids []int
	for _, c := range set.List() {
		if mine.IsSet(c) {
			ids = append(ids, c)
		}
	}
	if len(ids) == 0 {
		t.Skip("this process may not run on node 0")
	}
	return cpuset.New(ids...)
}

func TestNumactlShowsBindPolicy(t *testing.T) {
	needTool(t, "numactl")
	want := node0(t)
	out, errOut, code := run(t, "bind", "--node", "0", "--mem", "bind", "--", "numactl", "--show")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	fields := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			fields[k] = strings.TrimSpace(v)
		}
	}
	if fields["policy"] != "bind" || fields["membind"] != "0" {
		t.Errorf("numactl --show: policy %q membind %q, want bind / 0:\n%s", fields["policy"], fields["membind"], out)
	}
	var phys []int
	for _, f := range strings.Fields(fields["physcpubind"]) {
		n, _ := strconv.Atoi(f)
		phys = append(phys, n)
	}
	if got := cpuset.New(phys...); !got.Equals(want) {
		t.Errorf("physcpubind %s, want node 0's CPUs %s", got, want)
	}
	line := fmt.Sprintf("NUMA 0 -> CPUs %s mem=bind", want)
	if !strings.Contains(errOut, line) {
		t.Errorf("stderr %q, want the line %q", errOut, line)
	}
	// preferred is the default.
	out, _, code = run(t, "bind", "--node", "0", "-q", "--", "numactl", "--show")
	if code != 0 || !strings.Contains(out, "policy: preferred") || !strings.Contains(out, "preferred node: 0") {
		t.Errorf("default policy: exit %d\n%s", code, out)
	}
	// interleave.
	out, _, code = run(t, "bind", "--node", "0", "-q", "--mem", "interleave", "--", "numactl", "--show")
	if code != 0 || !strings.Contains(out, "policy: interleave") {
		t.Errorf("interleave: exit %d\n%s", code, out)
	}
}

func TestTasksetAndStatusAgree(t *testing.T) {
	needTool(t, "taskset")
	all := node0(t)
	want := all
	excl := ""
	if all.Size() > 1 {
		last := all.List()[all.Size()-1]
		excl = strconv.Itoa(last)
		want = all.Difference(cpuset.New(last))
	}
	args := []string{"bind", "--node", "0", "-q"}
	if excl != "" {
		args = append(args, "--exclude-cpus", excl)
	}
	args = append(args, "--", "sh", "-c", `taskset -cp $$; grep Cpus_allowed_list /proc/$$/status; echo "env $GPUNODE_CPUS $OMP_NUM_THREADS"`)
	out, errOut, code := run(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("output %q", out)
	}
	_, tsList, _ := strings.Cut(lines[0], "current affinity list: ")
	_, stList, _ := strings.Cut(lines[1], ":")
	ts, err1 := sysfmt.ParseCPUList(tsList)
	st, err2 := sysfmt.ParseCPUList(stList)
	if err1 != nil || err2 != nil || !ts.Equals(st) || !ts.Equals(want) {
		t.Fatalf("taskset %q, Cpus_allowed_list %q, want both %s", tsList, stList, want)
	}
	if f := strings.Fields(lines[2]); len(f) != 3 || f[1] != want.String() {
		t.Fatalf("env line %q, want GPUNODE_CPUS=%s", lines[2], want)
	}
}

// TestExecInPlace: the command has gpunode's PID (no wrapper process).
func TestExecInPlace(t *testing.T) {
	needBin(t)
	cmd := exec.Command(gpunodeBin, "bind", "--node", "0", "-q", "--", "sh", "-c", "echo $$")
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out.String()); got != strconv.Itoa(pid) {
		t.Fatalf("command PID %s, gpunode PID %d: a wrapper process was left", got, pid)
	}
}

func TestBadInputRunsNothing(t *testing.T) {
	marker := []string{"--", "sh", "-c", "echo RAN"}
	cases := []struct {
		args []string
		code int
		want string
	}{
		{append([]string{"bind", "--gpu", "99"}, marker...), 2, "GPU"},
		{append([]string{"bind", "--local-rank", "42"}, marker...), 2, "local rank 42"},
		{append([]string{"bind", "--node", "0", "--exclude-cpus", "1-0"}, marker...), 2, "--exclude-cpus"},
		{append([]string{"bind", "--node", "0", "--exclude-cpus", "0-4095"}, marker...), 2, "empty CPU set"},
		{append([]string{"bind", "--node", "77"}, marker...), 2, "no such NUMA node"},
		{append([]string{"bind", "--node", "0", "--sched", "fifo:100"}, marker...), 2, "outside 1..99"},
		{append([]string{"bind", "--node", "0", "--mem", "fast"}, marker...), 2, "--mem"},
		{[]string{"bind", "--node", "0", "--"}, 2, "missing command"},
		{[]string{"bind", "--node", "0", "echo", "RAN"}, 2, "put the command after --"},
		{[]string{"bind", "--node", "0", "--", "no-such-cmd-gpunode"}, 2, "not found in PATH"},
	}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
		// A host without a cgroup v2 root: --cgroup fails clearly.
		cases = append(cases, struct {
			args []string
			code int
			want string
		}{append([]string{"bind", "--node", "0", "--cgroup", "gpunode-it"}, marker...), 3, "not a cgroup v2 filesystem"})
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args[1:min(4, len(c.args))], " "), func(t *testing.T) {
			out, errOut, code := run(t, c.args...)
			if code != c.code || !strings.Contains(errOut, c.want) || strings.Contains(out, "RAN") {
				t.Fatalf("exit %d (want %d), stdout %q, stderr %q (want %q)", code, c.code, out, errOut, c.want)
			}
		})
	}
}

func TestSchedFIFO(t *testing.T) {
	needTool(t, "chrt")
	out, errOut, code := run(t, "bind", "--node", "0", "-q", "--sched", "fifo:10", "--", "chrt", "-p", "0")
	if os.Geteuid() != 0 {
		if code != 3 || !strings.Contains(errOut, "CAP_SYS_NICE") || out != "" {
			t.Fatalf("unprivileged fifo: exit %d, stderr %q", code, errOut)
		}
		return
	}
	if code != 0 {
		// Containers may deny real-time scheduling even to root.
		if strings.Contains(errOut, "CAP_SYS_NICE") {
			t.Skipf("real-time scheduling denied here: %s", errOut)
		}
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "SCHED_FIFO") || !strings.Contains(out, "priority: 10") {
		t.Fatalf("chrt -p: %s", out)
	}
}

// TestShowOtherProcess binds a sleeping process and reads it back.
func TestShowOtherProcess(t *testing.T) {
	needBin(t)
	want := node0(t)
	cmd := exec.Command(gpunodeBin, "bind", "--node", "0", "-q", "--mem", "bind", "--sched", "nice:5", "--", "sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	pid := cmd.Process.Pid
	var show struct {
		PID    int    `json:"pid"`
		Comm   string `json:"comm"`
		CPUs   string `json:"cpus"`
		Policy struct {
			Mode  string `json:"mode"`
			Nodes []int  `json:"nodes"`
		} `json:"policy"`
		Threads []struct {
			TID  int    `json:"tid"`
			Nice int    `json:"nice"`
			Pol  string `json:"policy"`
		} `json:"threads"`
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, errOut, code := run(t, "bind", "--show", strconv.Itoa(pid), "-o", "json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if err := json.Unmarshal([]byte(out), &show); err != nil {
			t.Fatal(err)
		}
		if show.Comm == "sleep" || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond) // not exec'd yet
	}
	if show.PID != pid || show.Comm != "sleep" || show.CPUs != want.String() || show.Policy.Mode != "bind" || len(show.Threads) != 1 || show.Threads[0].Nice != 5 || show.Threads[0].Pol != "TS" {
		t.Fatalf("show %+v, want sleep on %s with bind and nice 5", show, want)
	}
	// Unknown PID: a usage error.
	if _, errOut, code := run(t, "bind", "--show", "999999999"); code != 2 || !strings.Contains(errOut, "no process") {
		t.Fatalf("unknown pid: exit %d %s", code, errOut)
	}
}

// BenchmarkExecOverhead measures whole-process wall time of
// 'gpunode bind -- true' against 'true' and reports the medians, the added
// time and the ratio.
func BenchmarkExecOverhead(b *testing.B) {
	needBin(b)
	truePath, err := exec.LookPath("true")
	if err != nil {
		b.Skip(err)
	}
	timeit := func(name string, args ...string) time.Duration {
		cmd := exec.Command(name, args...)
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	var plain, bound, version, only []time.Duration
	for i := 0; i < b.N; i++ {
		plain = append(plain, timeit(truePath))
		bound = append(bound, timeit(gpunodeBin, "bind", "-q", "--", truePath))
		version = append(version, timeit(gpunodeBin, "version"))
		if bindOnlyBin != "" {
			only = append(only, timeit(bindOnlyBin, truePath))
		}
	}
	median := func(d []time.Duration) time.Duration {
		s := append([]time.Duration(nil), d...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return s[len(s)/2]
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	mp, mb, mv := median(plain), median(bound), median(version)
	b.ReportMetric(ms(mp), "true-ms")
	b.ReportMetric(ms(mb), "bind-ms")
	b.ReportMetric(ms(mb-mp), "added-ms")
	b.ReportMetric(float64(mb)/float64(mp), "ratio")
	// 'gpunode version' is the binary's bare start-up; bindonly is bind's
	// work in a binary without the other commands' dependencies.
	b.ReportMetric(ms(mv-mp), "startup-added-ms")
	if len(only) > 0 {
		b.ReportMetric(ms(median(only)-mp), "bindonly-added-ms")
	}
}
