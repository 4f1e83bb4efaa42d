package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/testhost"
)

func freeLoopback(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

type promResult struct {
	Status string `json:"status"`
	Data   struct {
		Result []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	} `json:"data"`
}

func promQuery(base, q string) (*promResult, error) {
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r promResult
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, err
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("query %q: status %q", q, r.Status)
	}
	return &r, nil
}

// TestRealPrometheus starts the agent on a fixture root on 127.0.0.1, a
// real Prometheus (Debian's package) scraping it every second, and reads
// the metrics back through Prometheus's HTTP API. Skipped without the
// prometheus binary; everything listens on loopback and stops by itself.
func TestRealPrometheus(t *testing.T) {
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus not installed")
	}
	a := newAgent(t, Config{Audit: fixtureAudit(t, testhost.Path(t, "dgx-h100")), Interval: time.Second, Profile: "base"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	agentDone := make(chan error, 1)
	go func() { agentDone <- a.Run(ctx, ln) }()
	defer func() {
		cancel()
		<-agentDone
	}()

	cfg, err := os.ReadFile("testdata/prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgFile, bytes.ReplaceAll(cfg, []byte("TARGET"), []byte(ln.Addr().String())), 0o644); err != nil {
		t.Fatal(err)
	}
	promAddr := freeLoopback(t)
	pctx, pcancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer pcancel()
	cmd := exec.CommandContext(pctx, prom, "--config.file="+cfgFile, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+promAddr, "--log.level=warn")
	var plog bytes.Buffer
	cmd.Stdout, cmd.Stderr = &plog, &plog
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()

	base := "http://" + promAddr
	var drift *promResult
	for i := 0; i < 120; i++ { // bounded: 60 s
		time.Sleep(500 * time.Millisecond)
		r, err := promQuery(base, `gpunode_checks{status="drift"}`)
		if err == nil && len(r.Data.Result) == 1 {
			drift = r
			break
		}
	}
	if drift == nil {
		t.Fatalf("Prometheus never had gpunode_checks; its log:\n%s", plog.String())
	}
	s := a.Snapshot()
	if got := fmt.Sprint(drift.Data.Result[0].Value[1]); got != fmt.Sprint(s.Result.Report.Summary.Drift) {
		t.Errorf("Prometheus says %s checks drift, the snapshot %d", got, s.Result.Report.Summary.Drift)
	}
	if drift.Data.Result[0].Metric["node"] != "fixture-dgx-h100" || drift.Data.Result[0].Metric["job"] != "gpunode" {
		t.Errorf("labels %v", drift.Data.Result[0].Metric)
	}
	for q, want := range map[string]int{
		`gpunode_gpu_info`:                                    8,
		`gpunode_check_status == 1`:                           len(s.Result.Report.Checks),
		`gpunode_pcie_link_width{kind="nic"}`:                 12,
		`gpunode_gpu_local_nics >= 1`:                         8,
		`up{job="gpunode"} == 1`:                              1,
		`gpunode_last_successful_audit_timestamp_seconds > 0`: 1,
		`gpunode_build_info`:                                  1,
	} {
		r, err := promQuery(base, q)
		if err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		if len(r.Data.Result) != want {
			t.Errorf("%s: %d series, want %d", q, len(r.Data.Result), want)
		}
	}
	r, err := promQuery(base, `gpunode_gpu_info{gpu="GPU4"}`)
	if err != nil || len(r.Data.Result) != 1 || r.Data.Result[0].Metric["numa_node"] != "1" || !strings.HasPrefix(r.Data.Result[0].Metric["bdf"], "0000:") {
		t.Errorf("GPU4 info: %v %+v", err, r)
	}
}
