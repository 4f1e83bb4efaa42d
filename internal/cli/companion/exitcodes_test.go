package companion

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/cli"
	"github.com/gpunode/gpunode/internal/testhost"
)

// TestExitCodeTableCompanion: the rows of README's exit-code table that
// gpunode-full's commands own. A --listen that cannot be served and an
// --html FILE that cannot be written are usage errors (2), not failures.
func TestExitCodeTableCompanion(t *testing.T) {
	dgx := testhost.Path(t, "dgx-h100")
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"--root", dgx, "agent", "--listen", "not-an-address", "--gpu-backend", "fake", "--nfd-features-dir", ""}, cli.ExitUsage, "--listen not-an-address"},
		{[]string{"--root", dgx, "agent", "--listen", "127.0.0.1:99999", "--gpu-backend", "fake", "--nfd-features-dir", ""}, cli.ExitUsage, "--listen 127.0.0.1:99999"},
		{[]string{"--root", dgx, "report", "--gpu-backend", "fake", "--html", filepath.Join(t.TempDir(), "no", "such", "dir", "r.html")}, cli.ExitUsage, "--html"},
		{[]string{"--root", dgx, "report", "--gpu-backend", "fake", "--html", t.TempDir()}, cli.ExitUsage, "--html"},
	} {
		code, _, stderr := run(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("gpunode %v: exit %d stderr %q; want exit %d with %q", tc.args, code, stderr, tc.code, tc.stderr)
		}
	}
}

func TestAgentSignalHelperProcess(t *testing.T) {
	if os.Getenv("GPUNODE_AGENT_SIGNAL_HELPER") != "1" {
		t.Skip("helper process for TestAgentExitsOnSignal")
	}
	signal.Notify(make(chan os.Signal, 1), os.Interrupt, syscall.SIGTERM)
	args := strings.Split(os.Getenv("GPUNODE_SIGNAL_ARGS"), "\x1f")
	os.Stdout.WriteString("ready\n")
	os.Exit(cli.MainWithSignals(cli.OSEnv(args), Commands()...))
}

// TestAgentExitsOnSignal: the agent stopped by SIGINT or SIGTERM exits
// 130 or 143, as README's exit-code table says (it exited 0).
func TestAgentExitsOnSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	dgx := testhost.Path(t, "dgx-h100")
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		args := []string{"--root", dgx, "agent", "--listen", "127.0.0.1:0", "--interval", "1h", "--gpu-backend", "fake", "--nfd-features-dir", "", "--log-format", "text"}
		cmd := exec.Command(os.Args[0], "-test.run=^TestAgentSignalHelperProcess$")
		cmd.Env = append(os.Environ(), "GPUNODE_AGENT_SIGNAL_HELPER=1", "GPUNODE_SIGNAL_ARGS="+strings.Join(args, "\x1f"))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
			t.Fatalf("helper: %q, %v", line, err)
		}
		// Let it get into its loop (sequencing only: a signal earlier
		// stops it the same way).
		time.Sleep(time.Second)
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
			t.Fatalf("%v: agent still running 20 s after the signal", tc.sig)
		}
		code := 0
		var ee *exec.ExitError
		if errors.As(werr, &ee) {
			code = ee.ExitCode()
		}
		if code != tc.code {
			t.Errorf("%v: agent exit %d, want %d; stderr %s", tc.sig, code, tc.code, stderr.String())
		}
	}
}
