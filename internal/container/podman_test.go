package container_test

// The real runtime test: rootful Podman runs a busybox-static image with
// the flags 'gpunode container flags --runtime podman' prints on this
// machine, and the container reports what it got. It runs when podman is
// on PATH (or GPUNODE_REAL_PODMAN=1, which .ci/run's podman step sets:
// then it never skips); without podman, or not as root, it skips, except
// that with GPUNODE_REAL_PODMAN=1 it fails with the reason.
// Once podman is there and the user is root, every problem (no image, no
// container, a flag refused) is a failure.

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gpunode/gpunode/internal/container"
	"github.com/gpunode/gpunode/internal/sysfmt"
	"github.com/gpunode/gpunode/internal/testhost"
)

func TestRealPodman(t *testing.T) {
	must := os.Getenv("GPUNODE_REAL_PODMAN") == "1"
	podman, err := exec.LookPath("podman")
	if err != nil {
		if must {
			t.Fatalf("GPUNODE_REAL_PODMAN=1 but podman is not installed: %v", err)
		}
		if os.Getenv("CI") == "true" {
			t.Skip("podman not installed yet: .ci/run's podman step installs it and runs this test with GPUNODE_REAL_PODMAN=1")
		}
		t.Skip("podman not installed (apt-get install -y podman busybox-static runc)")
	}
	if os.Getuid() != 0 {
		if must {
			t.Fatal("GPUNODE_REAL_PODMAN=1 needs root (rootful podman)")
		}
		t.Skip("rootful podman: not root")
	}
	// Podman is here and we are root: from now on anything that goes
	// wrong is a failure, in CI or not (a skip would pass a broken run).
	fail := t.Fatalf
	dir := t.TempDir()
	root, err := testhost.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "gpunode")
	if out, err := exec.Command("go", "build", "-o", bin, filepath.Join(root, "cmd", "gpunode")).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	// The flags for this machine: no GPU here, so placement on the node of
	// the first CPU gpunode may run on.
	node := firstNode(t)
	out, err := exec.Command(bin, "container", "flags", "--runtime", "podman", "--node", strconv.Itoa(node), "--shm-size", "1g", "-o", "json").Output()
	if err != nil {
		t.Fatalf("gpunode container flags: %v\n%s", err, exitStderr(err))
	}
	var fl container.Flags
	if err := json.Unmarshal(out, &fl); err != nil {
		t.Fatalf("flags JSON: %v\n%s", err, out)
	}
	for _, want := range [][2]string{{"--cpuset-cpus", fl.CPUs.String()}, {"--cpuset-mems", fl.Mems}, {"--ulimit", "memlock=-1:-1"}, {"--shm-size", "1g"}} {
		if !hasPair(fl.Args, want[0], want[1]) {
			t.Fatalf("flags %q lack %s %s", fl.Args, want[0], want[1])
		}
	}

	// Podman as it works on this kind of machine: runc (crun refuses a
	// hybrid cgroup layout), cgroupfs, no default ulimits (the sandbox
	// cannot raise rlimits).
	conf := filepath.Join(dir, "containers.conf")
	if err := os.WriteFile(conf, []byte("[containers]\ndefault_ulimits = []\n\n[engine]\ncgroup_manager = \"cgroupfs\"\nruntime = \"runc\"\nevents_logger = \"file\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "CONTAINERS_CONF="+conf)
	run := func(timeout time.Duration, args ...string) ([]byte, error) {
		cmd := exec.Command(podman, append([]string{"--cgroup-manager=cgroupfs", "--runtime", "runc"}, args...)...)
		cmd.Env = env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				return stdout.Bytes(), fmt.Errorf("podman %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
			}
			return stdout.Bytes(), nil
		case <-time.After(timeout):
			_ = cmd.Process.Kill()
			<-done
			return nil, fmt.Errorf("podman %s: no answer in %s", strings.Join(args, " "), timeout)
		}
	}
	image := "localhost/gpunode-busybox:test"
	tarball := filepath.Join(dir, "rootfs.tar")
	if err := busyboxRootfs(tarball); err != nil {
		fail("busybox-static rootfs: %v", err)
		return
	}
	if _, err := run(2*time.Minute, "import", tarball, image); err != nil {
		fail("podman cannot import an image here: %v", err)
		return
	}
	t.Cleanup(func() { _, _ = run(time.Minute, "rmi", "-f", image) })

	script := `grep -E '^(Cpus|Mems)_allowed_list' /proc/self/status; echo "memlock $(ulimit -l)"; df -k /dev/shm | tail -1`
	args := append([]string{"run", "--rm"}, fl.Args...)
	got, err := run(2*time.Minute, append(args, image, "/bin/sh", "-c", script)...)
	wantMemlock := "unlimited"
	if err != nil && strings.Contains(err.Error(), "rlimit") {
		// Memlock above the caller's hard limit cannot be granted here:
		// the flag is there; run with the limit the machine allows.
		var lim unix.Rlimit
		if gerr := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &lim); gerr != nil {
			t.Fatal(gerr)
		}
		if lim.Max == unix.RLIM_INFINITY {
			fail("podman refused memlock=-1:-1 although the hard limit is unlimited: %v", err)
			return
		}
		// Once any --ulimit is given Podman also sets nofile and nproc,
		// and this sandbox refuses setrlimit for those even at their
		// current values: the flag is there (checked above); run without
		// it and expect the limit the container inherits.
		t.Logf("--ulimit memlock=-1:-1 refused (%v); the caller's memlock limit is %d:%d bytes: running without --ulimit", err, lim.Cur, lim.Max)
		var kept []string
		for i := 0; i < len(args); i++ {
			if args[i] == "--ulimit" && i+1 < len(args) && args[i+1] == "memlock=-1:-1" {
				i++
				continue
			}
			kept = append(kept, args[i])
		}
		args = kept
		wantMemlock = strconv.FormatUint(lim.Cur/1024, 10)
		got, err = run(2*time.Minute, append(args, image, "/bin/sh", "-c", script)...)
	}
	if err != nil {
		fail("podman cannot run a container here: %v", err)
		return
	}
	t.Logf("flags: %s\ninside:\n%s", fl.Line, got)
	fields := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(got)), "\n") {
		k, v, _ := strings.Cut(line, ":")
		fields[strings.TrimSpace(k)] = strings.TrimSpace(v)
		if f := strings.Fields(line); len(f) == 2 && f[0] == "memlock" {
			fields["memlock"] = f[1]
		}
		if f := strings.Fields(line); len(f) >= 6 && f[5] == "/dev/shm" {
			fields["shm"] = f[1]
		}
	}
	cpus, err := sysfmt.ParseCPUList(fields["Cpus_allowed_list"])
	if err != nil || !cpus.Equals(fl.CPUs.CPUSet) {
		t.Errorf("Cpus_allowed_list %q, want %s (%v)", fields["Cpus_allowed_list"], fl.CPUs.String(), err)
	}
	if fields["Mems_allowed_list"] != fl.Mems {
		t.Errorf("Mems_allowed_list %q, want %s", fields["Mems_allowed_list"], fl.Mems)
	}
	if fields["memlock"] != wantMemlock {
		t.Errorf("memlock %q, want %s", fields["memlock"], wantMemlock)
	}
	if fields["shm"] != "1048576" {
		t.Errorf("/dev/shm is %q KiB, want 1048576 (1g)", fields["shm"])
	}
}

func hasPair(args []string, k, v string) bool {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == k && args[i+1] == v {
			return true
		}
	}
	return false
}

func exitStderr(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

var nodeDir = regexp.MustCompile(`^node(\d+)$`)

// firstNode is the NUMA node of the lowest CPU this process may run on.
func firstNode(t *testing.T) int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	cpu := 0
	for cpu < 1024 && !set.IsSet(cpu) {
		cpu++
	}
	ents, err := os.ReadDir(fmt.Sprintf("/sys/devices/system/cpu/cpu%d", cpu))
	if err != nil {
		return 0
	}
	for _, e := range ents {
		if m := nodeDir.FindStringSubmatch(e.Name()); m != nil {
			n, _ := strconv.Atoi(m[1])
			return n
		}
	}
	return 0
}

// busyboxRootfs writes a tarball of a rootfs holding Debian's
// busybox-static as /bin/busybox and /bin/sh.
func busyboxRootfs(path string) error {
	src := "/bin/busybox"
	data, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("%w (apt-get install -y busybox-static)", err)
	}
	if bytes.Contains(data, []byte("/lib64/ld-linux")) || bytes.Contains(data, []byte("/lib/ld-linux")) {
		return fmt.Errorf("%s is dynamically linked: install busybox-static", src)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range []string{"bin/", "dev/", "proc/", "sys/", "tmp/", "etc/"} {
		if err := tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
			return err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Name: "bin/busybox", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(data))}); err != nil {
		return err
	}
	if _, err := tw.Write(data); err != nil {
		return err
	}
	for _, l := range []string{"sh", "grep", "df", "tail", "cat"} {
		if err := tw.WriteHeader(&tar.Header{Name: "bin/" + l, Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777}); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}
