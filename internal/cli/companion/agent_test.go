package companion

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/cli"
	"github.com/gpunode/gpunode/internal/cli/agentcli"
	"github.com/gpunode/gpunode/internal/testhost"
)

func TestNPDCheck(t *testing.T) {
	dgx := testhost.Path(t, "dgx-h100")
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"gpu.ecc.mode"}, 0, "8 checks pass"},
		{[]string{"gpu.clocks.locked", "gpu.persistence"}, 1, "2 of 16 failing: gpu.clocks.locked/gpu5 drift, gpu.persistence/gpu7 drift"},
		{[]string{"no.such.check"}, 2, "no check matched no.such.check"},
		{[]string{"irq.off-node/*"}, 1, "failing: irq.off-node/"},
	} {
		args := append([]string{"--root", dgx, "agent", "npd-check", "--gpu-backend", "fake"}, tc.args...)
		code, out, errb := run(t, args...)
		if code != tc.code || !strings.Contains(out, tc.msg) {
			t.Errorf("npd-check %v: exit %d stdout %q stderr %q, want %d and %q", tc.args, code, out, errb, tc.code, tc.msg)
		}
		if len(strings.TrimRight(out, "\n")) > 80 || strings.Count(out, "\n") != 1 {
			t.Errorf("npd-check %v: message %q: want one line of at most 80 characters", tc.args, out)
		}
	}
	if code, _, _ := run(t, "agent", "npd-check"); code != 2 {
		t.Errorf("npd-check with no check: exit %d, want 2", code)
	}
}

// The agent on loopback: /report is 'gpunode audit -o json' (same
// profile, same root) plus the pods' k8s.pod.numa checks, /readyz turns ready, SIGTERM-like cancel
// stops it.
func TestAgentCommandReportIsAuditJSON(t *testing.T) {
	dgx := testhost.Path(t, "dgx-h100")
	_, want, _ := run(t, "--root", dgx, "audit", "--gpu-backend", "fake", "-o", "json")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var errb bytes.Buffer
	env := cli.Env{Args: []string{"--root", dgx, "agent", "--listen", addr, "--interval", "1h", "--gpu-backend", "fake", "--nfd-features-dir", "", "--log-format", "text"},
		Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &errb, Getenv: func(string) string { return "" }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- mainFull(ctx, env) }()
	var body []byte
	for i := 0; i < 100; i++ { // bounded: 10 s
		time.Sleep(100 * time.Millisecond)
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == 200 {
			r, err := http.Get("http://" + addr + "/report")
			if err != nil {
				t.Fatal(err)
			}
			body, _ = io.ReadAll(r.Body)
			r.Body.Close()
			h, err := http.Get("http://" + addr + "/report.html")
			if err != nil {
				t.Fatal(err)
			}
			page, _ := io.ReadAll(h.Body)
			h.Body.Close()
			if h.StatusCode != 200 || strings.Count(string(page), `<g class="gpu`) != 8 {
				t.Errorf("/report.html: %d, %d GPU elements", h.StatusCode, strings.Count(string(page), `<g class="gpu`))
			}
			break
		}
	}
	cancel()
	select {
	case code := <-done:
		// Stopped by its context (a signal through MainWithSignals, which
		// turns the failure into 130 or 143): a failure, never 0.
		if code != cli.ExitFailure || !strings.Contains(errb.String(), "agent stopped") {
			t.Fatalf("agent exit %d: %s; want %d (130/143 through MainWithSignals) saying it stopped", code, errb.String(), cli.ExitFailure)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("agent did not stop")
	}
	if body == nil {
		t.Fatalf("agent never ready: %s", errb.String())
	}
	var a, b any
	if err := json.Unmarshal(body, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &b); err != nil {
		t.Fatal(err)
	}
	// The agent adds the pods' checks (k8s.pod.numa): this fixture is a
	// captured tree (no --live-root), so one info check and no dial, which
	// 'gpunode audit' lacks.
	rep := a.(map[string]any)
	var kept []any
	pods := 0
	for _, c := range rep["checks"].([]any) {
		m := c.(map[string]any)
		if m["id"] == "k8s.pod.numa" {
			pods++
			if m["status"] != "info" || m["current"] != "captured tree: the kubelet pod-resources socket is read only on a live host" {
				t.Errorf("pods check without a socket: %v", m)
			}
			continue
		}
		kept = append(kept, c)
	}
	if pods != 1 {
		t.Errorf("%d k8s.pod.numa checks, want 1", pods)
	}
	rep["checks"] = kept
	sum := rep["summary"].(map[string]any)
	sum["info"] = sum["info"].(float64) - float64(pods)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("/report differs from 'audit -o json' (less k8s.pod.numa):\n%s\n---\n%s", body, want)
	}
	if !strings.Contains(errb.String(), "msg=audit") || !strings.Contains(errb.String(), "drift=") {
		t.Fatalf("no audit log line: %s", errb.String())
	}
}

func TestReportCommand(t *testing.T) {
	dgx := testhost.Path(t, "dgx-h100")
	out := t.TempDir() + "/r.html"
	code, stdout, errb := run(t, "--root", dgx, "report", "--gpu-backend", "fake", "--html", out)
	if code != 0 || !strings.HasPrefix(stdout, "wrote "+out) {
		t.Fatalf("report: exit %d %q %q", code, stdout, errb)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(b), `<g class="gpu`) != 8 || !strings.Contains(string(b), "gpu.persistence/gpu7") {
		t.Fatal("report lacks the DGX GPUs or the GPU layer's checks")
	}
	if code, _, _ := run(t, "--root", dgx, "report"); code != 2 {
		t.Fatalf("report without --html: exit %d, want 2", code)
	}
}

// --enforce on a copy of the DGX fixture: the first drifting audit
// re-applies the profile through the journal, and the next audit drifts less.
func TestAgentEnforce(t *testing.T) {
	root := testhost.Copy(t, "dgx-h100")
	_, before, _ := run(t, "--root", root, "audit", "--gpu-backend", "fake", "-o", "json")
	addr := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return ln.Addr().String()
	}()
	var errb bytes.Buffer
	env := cli.Env{Args: []string{"--root", root, "agent", "--listen", addr, "--interval", "1h", "--gpu-backend", "fake", "--nfd-features-dir", "", "--enforce", "--log-format", "text"},
		Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &errb, Getenv: func(string) string { return "" }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- mainFull(ctx, env) }()
	var metrics string
	for i := 0; i < 100 && !strings.Contains(metrics, `gpunode_enforce_actions_total{outcome="applied"} 1`); i++ { // bounded: 10 s
		time.Sleep(100 * time.Millisecond)
		if r, err := http.Get("http://" + addr + "/metrics"); err == nil {
			b, _ := io.ReadAll(r.Body)
			r.Body.Close()
			metrics = string(b)
		}
	}
	cancel()
	<-done
	if !strings.Contains(metrics, `gpunode_enforce_actions_total{outcome="applied"} 1`) {
		t.Fatalf("no applied enforce action:\n%s\n%s", errb.String(), metrics)
	}
	if !strings.Contains(errb.String(), "msg=enforce outcome=applied") {
		t.Errorf("enforce action not logged: %s", errb.String())
	}
	_, after, _ := run(t, "--root", root, "audit", "--gpu-backend", "fake", "-o", "json")
	var rb, ra struct{ Summary struct{ Drift int } }
	if json.Unmarshal([]byte(before), &rb) != nil || json.Unmarshal([]byte(after), &ra) != nil || ra.Summary.Drift >= rb.Summary.Drift {
		t.Fatalf("drift %d before --enforce, %d after", rb.Summary.Drift, ra.Summary.Drift)
	}
	if code, out, _ := run(t, "--root", root, "tune", "status"); code > 1 || !strings.Contains(out, "base") {
		t.Errorf("tune status after --enforce: exit %d\n%s", code, out)
	}
}

// TestNFDDirOnlyForTheRunningHost: the default NFD directory is this
// machine's, written for --root / or --live-root only; a flag always wins.
func TestNFDDirOnlyForTheRunningHost(t *testing.T) {
	for _, tc := range []struct {
		flag        string
		given, live bool
		want        string
	}{
		{agentcli.DefaultNFDDir, false, false, ""},
		{agentcli.DefaultNFDDir, false, true, agentcli.DefaultNFDDir},
		{"/tmp/x", true, false, "/tmp/x"},
		{"/tmp/x", true, true, "/tmp/x"},
		{"", true, true, ""},
	} {
		if got := agentcli.NFDDir(tc.flag, tc.given, tc.live); got != tc.want {
			t.Errorf("agentcli.NFDDir(%q, given %v, live %v) = %q, want %q", tc.flag, tc.given, tc.live, got, tc.want)
		}
	}
}

// TestAgentCapturedRootWritesNoNFDDefault runs the agent on a captured
// tree without --nfd-features-dir: it must not write this machine's NFD
// directory (it did: .gpunode.tmp under /etc/kubernetes/...), and says so
// in its start line.
func TestAgentCapturedRootWritesNoNFDDefault(t *testing.T) {
	dgx := testhost.Path(t, "dgx-h100")
	featureFile := agentcli.DefaultNFDDir + "/gpunode"
	_, existed := os.Stat(featureFile)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var errb syncBuffer
	env := cli.Env{Args: []string{"--root", dgx, "agent", "--listen", addr, "--interval", "1h", "--gpu-backend", "fake", "--log-format", "text"},
		Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &errb, Getenv: func(string) string { return "" }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- mainFull(ctx, env) }()
	ready := false
	for i := 0; i < 100 && !ready; i++ { // bounded: 10 s
		time.Sleep(100 * time.Millisecond)
		if resp, err := http.Get("http://" + addr + "/readyz"); err == nil {
			resp.Body.Close()
			ready = resp.StatusCode == 200
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("agent did not stop")
	}
	if !ready {
		t.Fatalf("agent never ready: %s", errb.String())
	}
	if !strings.Contains(errb.String(), `nfdDir=""`) {
		t.Errorf("start line does not say nfdDir=\"\":\n%s", errb.String())
	}
	if existed != nil {
		if _, err := os.Stat(featureFile); err == nil {
			t.Errorf("the agent on a captured root wrote %s on this machine", featureFile)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the agent's logger and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
