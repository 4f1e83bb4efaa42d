package bind

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/topo"
)

// runLocked runs f on a fresh goroutine that Exec locks to its OS thread and
// never unlocks, so the thread (with its changed affinity and memory policy)
// is discarded when the goroutine ends and the test process is unaffected.
func runLocked(f func() error) error {
	done := make(chan error)
	go func() { done <- f() }()
	return <-done
}

// TestExecBindsCallingThread applies a plan with the real system calls and a
// fake execve that inspects the thread the command would inherit.
func TestExecBindsCallingThread(t *testing.T) {
	var cpus unix.CPUSet
	if err := unix.SchedGetaffinity(0, &cpus); err != nil {
		t.Skip(err)
	}
	var first int = -1
	for i := 0; i < 1024; i++ {
		if cpus.IsSet(i) {
			first = i
			break
		}
	}
	_, node, err := Getcpu()
	if err != nil {
		t.Skip(err)
	}
	p := &Plan{CPUs: topo.NewCPUList(cpuset.New(first)), Mem: MemPolicy{Mode: MemBind, Nodes: []int{node}}, Command: []string{"true"},
		Env: []EnvVar{{Name: EnvCPUs, Value: cpuset.New(first).String()}}}
	var gotArgv0 string
	var gotEnv []string
	var gotAff unix.CPUSet
	var gotPol MemPolicyState
	err = runLocked(func() error {
		return Exec(p, Runtime{Environ: []string{"PATH=/usr/bin:/bin", "GPUNODE_CPUS=stale"}, Exec: func(argv0 string, argv, envv []string) error {
			gotArgv0, gotEnv = argv0, envv
			if err := unix.SchedGetaffinity(0, &gotAff); err != nil {
				return err
			}
			gotPol, err = GetMemPolicy()
			return err
		}})
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(gotArgv0, "/true") {
		t.Errorf("argv0 %q, want a path to true", gotArgv0)
	}
	if gotAff.Count() != 1 || !gotAff.IsSet(first) {
		t.Errorf("thread affinity has %d CPUs, want only CPU %d", gotAff.Count(), first)
	}
	if gotPol.Mode != "bind" || len(gotPol.Nodes) != 1 || gotPol.Nodes[0] != node {
		t.Errorf("memory policy %+v, want bind [%d]", gotPol, node)
	}
	if strings.Join(gotEnv, " ") != "PATH=/usr/bin:/bin GPUNODE_CPUS="+cpuset.New(first).String() {
		t.Errorf("env %v", gotEnv)
	}
	// The test's own thread is untouched: the bound thread died with its
	// locked goroutine (and Go starts new threads from a clean template
	// thread, not from a locked one).
	var now unix.CPUSet
	if err := unix.SchedGetaffinity(0, &now); err != nil {
		t.Fatal(err)
	}
	if now != cpus {
		t.Errorf("this goroutine's thread has %d CPUs after Exec, had %d: the binding leaked", now.Count(), cpus.Count())
	}
}

func TestExecStopsBeforeRunning(t *testing.T) {
	ran := false
	fake := func(string, []string, []string) error { ran = true; return nil }
	// Unknown command: nothing changes, input error.
	err := runLocked(func() error {
		return Exec(&Plan{CPUs: topo.NewCPUList(cpuset.New(0)), Command: []string{"no-such-command-gpunode"}}, Runtime{Environ: []string{"PATH=/usr/bin"}, Exec: fake})
	})
	if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), "not found in PATH") || ran {
		t.Fatalf("err %v ran %v", err, ran)
	}
	// Missing command.
	err = Exec(&Plan{}, Runtime{Exec: fake})
	if !errors.Is(err, ErrInput) || ran {
		t.Fatalf("err %v ran %v", err, ran)
	}
	// A real-time policy without CAP_SYS_NICE: the capability is named.
	if os.Geteuid() != 0 {
		err = runLocked(func() error {
			return Exec(&Plan{CPUs: topo.NewCPUList(cpuset.New(0)), Mem: MemPolicy{Mode: MemNone}, Sched: &Sched{Policy: SchedFIFO, Value: 10}, Command: []string{"true"}},
				Runtime{Environ: []string{"PATH=/usr/bin:/bin"}, Exec: fake})
		})
		if !errors.Is(err, ErrPrivilege) || !strings.Contains(err.Error(), "CAP_SYS_NICE") || ran {
			t.Fatalf("fifo without privilege: err %v ran %v", err, ran)
		}
	}
}

// TestJoinCgroup runs the cgroup steps against a fake cgroup v2 tree.
func TestJoinCgroup(t *testing.T) {
	root := t.TempDir()
	cg := filepath.Join(root, "sys/fs/cgroup")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(cg, "gpu"), 0o755))
	for _, f := range []string{"cgroup.controllers", "cgroup.subtree_control", "gpu/cgroup.subtree_control"} {
		must(os.WriteFile(filepath.Join(cg, f), []byte("cpu memory\n"), 0o644))
	}
	// The kernel creates these when the directory is made; pre-create them.
	must(os.MkdirAll(filepath.Join(cg, "gpu/rank0"), 0o755))
	for _, f := range []string{"cpuset.cpus", "cpuset.mems", "cgroup.procs"} {
		must(os.WriteFile(filepath.Join(cg, "gpu/rank0", f), nil, 0o644))
	}
	fsys, err := hostfs.New(root)
	must(err)
	c := &Cgroup{Name: "gpu/rank0", Path: DefaultCgFS + "/gpu/rank0", CPUs: topo.NewCPUList(cpuset.New(0, 1, 2, 3)), Mems: "0"}
	must(joinCgroup(fsys, c))
	for f, want := range map[string]string{"cgroup.subtree_control": "+cpuset", "gpu/cgroup.subtree_control": "+cpuset", "gpu/rank0/cpuset.cpus": "0-3", "gpu/rank0/cpuset.mems": "0"} {
		b, _ := os.ReadFile(filepath.Join(cg, f))
		if string(b) != want {
			t.Errorf("%s = %q, want %q", f, b, want)
		}
	}
	if os.Geteuid() != 0 {
		must(os.Chmod(filepath.Join(cg, "gpu/rank0/cpuset.cpus"), 0o444))
		err = joinCgroup(fsys, c)
		if !errors.Is(err, ErrPrivilege) || !strings.Contains(err.Error(), "write access to the cgroup v2 filesystem") {
			t.Fatalf("read-only cpuset.cpus: %v", err)
		}
	}
	// Not a cgroup v2 mount.
	must(os.Remove(filepath.Join(cg, "cgroup.controllers")))
	if err := joinCgroup(fsys, c); err == nil || !strings.Contains(err.Error(), "not a cgroup v2 filesystem") {
		t.Fatalf("no cgroup.controllers: %v", err)
	}
}

func TestLookPath(t *testing.T) {
	if p, err := LookPath("sh", "/nonexistent:/usr/bin:/bin"); err != nil || !strings.HasSuffix(p, "/sh") {
		t.Fatalf("LookPath(sh) = %q, %v", p, err)
	}
	plain := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(plain, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LookPath(plain, ""); !errors.Is(err, ErrInput) {
		t.Fatalf("non-executable: %v", err)
	}
	if _, err := LookPath("./nope", ""); !errors.Is(err, ErrInput) {
		t.Fatalf("missing: %v", err)
	}
}
