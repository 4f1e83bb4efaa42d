package bind

// Decisions of bind pinned at their edges, with the user-facing texts
// written out as the spec has them.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/topo"
)

func TestParseCPUsNamesTheFlag(t *testing.T) {
	for _, in := range []string{"x", "3-1", "0,,1", "-1"} {
		_, err := ParseCPUs("--avoid", in)
		if err == nil || !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), ": --avoid: cpulist ") {
			t.Errorf("ParseCPUs(--avoid, %q): %v, want an input error naming --avoid", in, err)
		}
	}
	for in, want := range map[string]string{"": "", "3-3": "3", "0-2,8": "0-2,8"} {
		set, err := ParseCPUs("--avoid", in)
		if err != nil || set.String() != want {
			t.Errorf("ParseCPUs(%q) = %s, %v, want %s", in, set, err, want)
		}
	}
}

// Every empty, "." or ".." element of a --cgroup name is refused, wherever
// it stands.
func TestCgroupNameElements(t *testing.T) {
	dgx := discover(t, "dgx-h100")
	for _, name := range []string{"a//b", "a/./b", "a/../b", "a/", "./a", "..", "."} {
		_, err := Resolve(context.Background(), dgx, Request{GPU: "0", Cgroup: name, Command: []string{"true"}}, Sources{})
		if err == nil || !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), "empty, '.' or '..' path element") {
			t.Errorf("--cgroup %q: %v", name, err)
		}
	}
	for _, name := range []string{"a", "gpu-workload/rank.0", "a..b/c"} {
		if _, err := Resolve(context.Background(), dgx, Request{GPU: "0", Cgroup: name, Command: []string{"true"}}, Sources{}); err != nil {
			t.Errorf("--cgroup %q refused: %v", name, err)
		}
	}
}

// An unreadable cgroup.subtree_control stops the join, naming the file.
func TestJoinCgroupUnreadableSubtreeControl(t *testing.T) {
	root := t.TempDir()
	cg := filepath.Join(root, "sys/fs/cgroup")
	if err := os.MkdirAll(filepath.Join(cg, "gpu"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cg, "cgroup.controllers"), []byte("cpuset\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fsys, err := hostfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	c := &Cgroup{Name: "gpu", Path: DefaultCgFS + "/gpu", CPUs: topo.NewCPUList(cpuset.New(0)), Mems: "0"}
	err = joinCgroup(fsys, c)
	if err == nil || !strings.Contains(err.Error(), "--cgroup gpu: /sys/fs/cgroup/cgroup.subtree_control: ") {
		t.Fatalf("no subtree_control: %v", err)
	}
	if _, serr := os.Stat(filepath.Join(cg, "gpu", "cpuset.cpus")); serr == nil {
		t.Error("cpuset.cpus written after the failure")
	}
	// Already enabled: not written again. (The kernel creates the cpuset
	// files with the directory; pre-create them.)
	for _, f := range []string{"cpuset.cpus", "cpuset.mems", "cgroup.procs"} {
		if err := os.WriteFile(filepath.Join(cg, "gpu", f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(cg, "cgroup.subtree_control"), []byte("cpu cpuset memory\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := joinCgroup(fsys, c); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(cg, "cgroup.subtree_control")); string(b) != "cpu cpuset memory\n" {
		t.Errorf("subtree_control rewritten: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(cg, "gpu", "cpuset.cpus")); string(b) != "0" {
		t.Errorf("cpuset.cpus = %q, want 0", b)
	}
}

// ParseTaskStat counts fields as proc(5) does (pid is 1, comm 2).
func TestParseTaskStatFieldCount(t *testing.T) {
	_, err := ParseTaskStat([]byte("1 (a b) S 2 3"))
	if err == nil || err.Error() != "only 5 fields, want field 19" {
		t.Errorf("short stat: %v", err)
	}
	f := make([]string, 39) // fields 3..41
	for i := range f {
		f[i] = "0"
	}
	f[19-3], f[39-3], f[40-3], f[41-3] = "-5", "7", "10", "1"
	th, err := ParseTaskStat([]byte("42 (x) y) " + strings.Join(f, " ")))
	if err != nil {
		t.Fatal(err)
	}
	if th.Comm != "x) y" || th.Nice != -5 || th.LastCPU != 7 || th.RTPrio != 10 || th.Policy != "FF" {
		t.Errorf("parsed %+v", th)
	}
}

// Without CAP_SYS_NICE, a negative nice value is a privilege error that
// says how much RLIMIT_NICE it would need (20 - nice). Capabilities are
// per thread: the test drops CAP_SYS_NICE on a locked thread that dies
// with its goroutine.
func TestNegativeNiceNeedsPrivilege(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (to drop the capability it has)") // CI runs as root
	}
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NICE, &rl); err != nil || rl.Cur > 20 {
		t.Skipf("RLIMIT_NICE %d allows negative nice values without the capability", rl.Cur)
	}
	err := runLocked(func() error {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			return err
		}
		data[unix.CAP_SYS_NICE/32].Effective &^= 1 << (unix.CAP_SYS_NICE % 32)
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			return err
		}
		return setSched(Sched{Policy: SchedNice, Value: -5})
	})
	if err == nil || !errors.Is(err, ErrPrivilege) || !strings.Contains(err.Error(), "--sched nice:-5: a negative nice value needs CAP_SYS_NICE (or RLIMIT_NICE of at least 25)") {
		t.Fatalf("nice -5 without CAP_SYS_NICE: %v", err)
	}
}
