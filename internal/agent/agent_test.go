package agent

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/irq"
	"github.com/gpunode/gpunode/internal/testhost"
	"github.com/gpunode/gpunode/internal/tune"
)

// fixtureAudit audits a fixture root the way the CLI composes it (the
// catalogue, the IRQ source), plus topology and IRQ analysis.
func fixtureAudit(tb testing.TB, root string) AuditFunc {
	tb.Helper()
	return func(ctx context.Context) (Result, error) {
		fs, err := hostfs.New(root)
		if err != nil {
			return Result{}, err
		}
		cat := tune.NewCatalogue()
		p, err := (&tune.Loader{Cat: cat, Host: fs, Checks: irq.Source{}.Describe()}).Load(tune.ProfileBase)
		if err != nil {
			return Result{}, err
		}
		h := tune.NewHost(ctx, fs)
		// As agentcli.RunAudit: the IRQ series come from the analysis
		// the irq.off-node checks were made from.
		var q *irq.Report
		keep := func(r *irq.Report) { q = r }
		r, err := tune.Audit(ctx, h, cat, p, tune.Options{Sources: []check.Source{irq.Source{FS: fs, Topo: h.Topo, Keep: keep}}})
		if err != nil {
			return Result{}, err
		}
		return Result{Report: r, Topo: h.Topo, IRQ: q}, nil
	}
}

func newAgent(tb testing.TB, cfg Config) *Agent {
	tb.Helper()
	a, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

func get(tb testing.TB, h http.Handler, method, path string) (int, []byte) {
	tb.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec.Code, rec.Body.Bytes()
}

func parseMetrics(tb testing.TB, b []byte) map[string]*dto.MetricFamily {
	tb.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mf, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		tb.Fatalf("exposition does not parse: %v\n%s", err, b)
	}
	return mf
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func TestAgentDGX(t *testing.T) {
	root := testhost.Path(t, "dgx-h100")
	nfd := t.TempDir()
	a := newAgent(t, Config{Audit: fixtureAudit(t, root), Profile: "base", NFDDir: nfd, Build: Build{Version: "v9", GoVersion: "go"}})
	h := a.Handler()

	if code, _ := get(t, h, "GET", "/readyz"); code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz before the first audit: %d, want 503", code)
	}
	if code, _ := get(t, h, "GET", "/report"); code != http.StatusServiceUnavailable {
		t.Fatalf("/report before the first audit: %d, want 503", code)
	}
	if code, _ := get(t, h, "GET", "/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz: %d", code)
	}
	s := a.Cycle(context.Background())
	if s.Err != "" || !s.Ready() {
		t.Fatalf("cycle: err %q ready %v", s.Err, s.Ready())
	}
	if code, body := get(t, h, "GET", "/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz after an audit: %d %s", code, body)
	}

	// /report is the audit model, as 'gpunode audit -o json' prints it.
	_, body := get(t, h, "GET", "/report")
	var back tune.Report
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&back); err != nil {
		t.Fatalf("/report: %v", err)
	}
	if back.SchemaVersion != tune.SchemaAudit || len(back.Checks) != len(s.Result.Report.Checks) || back.Hostname != "dgx-h100-01" {
		t.Fatalf("/report: schema %q, %d checks (want %d), host %q", back.SchemaVersion, len(back.Checks), len(s.Result.Report.Checks), back.Hostname)
	}
	_, body = get(t, h, "GET", "/topo")
	var tp struct {
		SchemaVersion string            `json:"schemaVersion"`
		GPUs          []json.RawMessage `json:"gpus"`
	}
	if err := json.Unmarshal(body, &tp); err != nil || tp.SchemaVersion != "gpunode.topo/v1" || len(tp.GPUs) != 8 {
		t.Fatalf("/topo: %v schema %q gpus %d", err, tp.SchemaVersion, len(tp.GPUs))
	}

	_, body = get(t, h, "GET", "/metrics")
	mf := parseMetrics(t, body)
	// One gpunode_check_status series per check, value 1, with its status.
	cs := mf[MetricCheckStatus]
	if cs == nil || len(cs.Metric) != len(back.Checks) {
		t.Fatalf("%s: %d series, want %d", MetricCheckStatus, len(cs.GetMetric()), len(back.Checks))
	}
	want := map[string]string{}
	for _, c := range back.Checks {
		want[c.Key()] = string(c.Status)
	}
	for _, m := range cs.Metric {
		if m.GetGauge().GetValue() != 1 || want[label(m, "check")] != label(m, "status") {
			t.Fatalf("check series %v: want status %q value 1", m, want[label(m, "check")])
		}
	}
	counts := map[string]float64{}
	for _, m := range mf[MetricChecks].GetMetric() {
		counts[label(m, "status")] = m.GetGauge().GetValue()
	}
	sum := back.Summary
	if counts["ok"] != float64(sum.OK) || counts["drift"] != float64(sum.Drift) || counts["absent"] != float64(sum.Absent) || len(counts) != 6 {
		t.Fatalf("%s = %v, summary %+v", MetricChecks, counts, sum)
	}
	if n := len(mf[MetricGPUInfo].GetMetric()); n != 8 {
		t.Fatalf("%s: %d GPUs, want 8", MetricGPUInfo, n)
	}
	if n := len(mf[MetricPCIeWidth].GetMetric()); n != 8+12 {
		t.Fatalf("%s: %d devices, want 20", MetricPCIeWidth, n)
	}
	for _, m := range mf[MetricGPULocalNICs].GetMetric() {
		if m.GetGauge().GetValue() < 1 {
			t.Fatalf("DGX %s has no local NIC: %v", label(m, "gpu"), m)
		}
	}
	for _, m := range mf[MetricGPUNearestNIC].GetMetric() {
		if label(m, "class") != "PIX" {
			t.Fatalf("DGX GPUs share a switch with a NIC: %v", m)
		}
	}
	off := 0.0
	for _, m := range mf[MetricIRQsOffNode].GetMetric() {
		off += m.GetGauge().GetValue()
	}
	drifting := 0
	for _, c := range back.Checks {
		if c.ID == irq.CheckOffNode && c.Status == check.Drift {
			drifting++
		}
	}
	if (off > 0) != (drifting > 0) {
		t.Fatalf("IRQs off-node %v but %d irq.off-node checks drift", off, drifting)
	}
	for _, name := range []string{MetricAudits, MetricAuditErrors, MetricAuditDuration, MetricLastSuccess, MetricBuildInfo, MetricAuditUp, MetricNUMANodes} {
		if mf[name] == nil {
			t.Errorf("no %s", name)
		}
	}
	if v := mf[MetricBuildInfo].Metric[0]; label(v, "version") != "v9" {
		t.Errorf("build info %v", v)
	}

	// The NFD feature file, written atomically, no dot-file left.
	b, err := os.ReadFile(filepath.Join(nfd, "gpunode"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"gpunode.io/profile=base", "gpunode.io/numa.nodes=2", "gpunode.io/gpu-nic.aligned=true", "gpunode.io/audit.pass=false", "gpunode.io/gpu.count=8"} {
		if !strings.Contains(string(b), l+"\n") {
			t.Errorf("feature file lacks %q:\n%s", l, b)
		}
	}
	ents, _ := os.ReadDir(nfd)
	if len(ents) != 1 {
		t.Errorf("features dir holds %d entries, want the feature file alone", len(ents))
	}
}

func TestReadOnly(t *testing.T) {
	a := newAgent(t, Config{Audit: fixtureAudit(t, testhost.Path(t, "vm-2vcpu"))})
	for _, p := range []string{"/metrics", "/report", "/healthz", "/topo"} {
		for _, m := range []string{"POST", "PUT", "DELETE", "PATCH"} {
			if code, _ := get(t, a.Handler(), m, p); code != http.StatusMethodNotAllowed {
				t.Errorf("%s %s: %d, want 405", m, p, code)
			}
		}
	}
}

func TestAuditFailureAndPanic(t *testing.T) {
	good := fixtureAudit(t, testhost.Path(t, "vm-2vcpu"))
	mode := "good"
	a := newAgent(t, Config{Audit: func(ctx context.Context) (Result, error) {
		switch mode {
		case "panic":
			var m map[string]int
			m["backend"]++ // a nil-map write: a real runtime panic
		case "error":
			return Result{}, errors.New("backend exploded")
		}
		return good(ctx)
	}})
	first := a.Cycle(context.Background())
	if first.Err != "" {
		t.Fatal(first.Err)
	}
	mode = "panic"
	s := a.Cycle(context.Background())
	if !strings.Contains(s.Err, "panicked") || s.Errors != 1 || s.Result.Report != first.Result.Report {
		t.Fatalf("after a panic: err %q errors %d, report kept %v", s.Err, s.Errors, s.Result.Report == first.Result.Report)
	}
	mode = "error"
	s = a.Cycle(context.Background())
	if s.Err != "backend exploded" || s.Errors != 2 || s.Audits != 3 || !s.Ready() {
		t.Fatalf("after an error: %+v", s)
	}
	_, body := get(t, a.Handler(), "GET", "/metrics")
	mf := parseMetrics(t, body)
	if v := mf[MetricAuditErrors].Metric[0].GetCounter().GetValue(); v != 2 {
		t.Fatalf("%s = %v, want 2", MetricAuditErrors, v)
	}
	if v := mf[MetricAuditUp].Metric[0].GetGauge().GetValue(); v != 0 {
		t.Fatalf("%s = %v, want 0", MetricAuditUp, v)
	}
	if mf[MetricCheckStatus] == nil {
		t.Fatal("the last good snapshot's checks are gone")
	}
	if code, _ := get(t, a.Handler(), "GET", "/readyz"); code != 200 {
		t.Fatalf("/readyz after a later failure: %d (a good audit ran)", code)
	}
}

// A root that changes under the agent: devices disappear, files vanish.
func TestRootChanges(t *testing.T) {
	root := testhost.Copy(t, "downgraded")
	a := newAgent(t, Config{Audit: fixtureAudit(t, root)})
	s1 := a.Cycle(context.Background())
	gpus := len(s1.Result.Topo.GPUs)
	if s1.Err != "" || gpus == 0 {
		t.Fatalf("first: %q", s1.Err)
	}
	ents, err := os.ReadDir(filepath.Join(root, "sys/bus/pci/devices"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents[:len(ents)/2] {
		if err := os.Remove(filepath.Join(root, "sys/bus/pci/devices", e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"proc/interrupts", "proc/meminfo", "sys/kernel/mm/transparent_hugepage/enabled"} {
		_ = os.Remove(filepath.Join(root, p))
	}
	s2 := a.Cycle(context.Background())
	if s2.Err != "" {
		t.Fatalf("after removing files: %q", s2.Err)
	}
	if len(s2.Result.Topo.GPUs) >= gpus {
		t.Fatalf("removed half the PCI devices, still %d GPUs", len(s2.Result.Topo.GPUs))
	}
	_, body := get(t, a.Handler(), "GET", "/metrics")
	mf := parseMetrics(t, body)
	if n := len(mf[MetricGPUInfo].GetMetric()); n != len(s2.Result.Topo.GPUs) {
		t.Fatalf("gpu_info %d series for %d GPUs", n, len(s2.Result.Topo.GPUs))
	}
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	s3 := a.Cycle(context.Background())
	if s3.Err == "" || s3.Errors != 1 || !s3.Ready() {
		t.Fatalf("root gone: err %q errors %d", s3.Err, s3.Errors)
	}
}

func TestRunStopsWithinASecond(t *testing.T) {
	started := make(chan struct{}, 1)
	a := newAgent(t, Config{Interval: 20 * time.Millisecond, Audit: func(ctx context.Context) (Result, error) {
		select {
		case started <- struct{}{}:
		default:
		}
		<-ctx.Done() // an audit that blocks until cancelled
		return Result{}, ctx.Err()
	}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, ln) }()
	<-started
	// A client holding a connection open does not delay shutdown.
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	resp, err := http.Get("http://" + ln.Addr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	t0 := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(t0); d > time.Second {
			t.Fatalf("Run returned %s after cancel", d)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Run did not return within 3s of cancel")
	}
}

func TestNewRejects(t *testing.T) {
	for _, c := range []Config{{}, {Audit: fixtureAudit(t, "/nonexistent"), Interval: time.Nanosecond}, {Audit: fixtureAudit(t, "/x"), Jitter: 2}} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) accepted", c)
		}
	}
}

func TestJitter(t *testing.T) {
	a := newAgent(t, Config{Audit: fixtureAudit(t, "/x"), Interval: time.Second, Jitter: 0.2})
	lo, hi := time.Hour, time.Duration(0)
	for range 200 {
		d := a.nextWait()
		lo, hi = min(lo, d), max(hi, d)
	}
	if lo < 900*time.Millisecond || hi > 1100*time.Millisecond || hi-lo < 50*time.Millisecond {
		t.Fatalf("waits in [%s, %s], want spread inside 1s+-10%%", lo, hi)
	}
}

// promtool (Debian's prometheus package) lints the exposition when present.
func TestPromtoolCheckMetrics(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed")
	}
	a := newAgent(t, Config{Audit: fixtureAudit(t, testhost.Path(t, "dgx-h100"))})
	a.Cycle(context.Background())
	_, body := get(t, a.Handler(), "GET", "/metrics")
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}

// The cached exposition is what promhttp itself encodes, gzip or not.
func TestCachedExpositionIsPromhttps(t *testing.T) {
	a := newAgent(t, Config{Audit: fixtureAudit(t, testhost.Path(t, "dgx-h100"))})
	a.Cycle(context.Background())
	if a.expo.Load() == nil {
		t.Fatal("no cached exposition")
	}
	direct := promhttp.HandlerFor(a.Registry(), promhttp.HandlerOpts{})
	want := httptest.NewRecorder()
	direct.ServeHTTP(want, httptest.NewRequest("GET", "/metrics", nil))
	got := httptest.NewRecorder()
	a.Handler().ServeHTTP(got, httptest.NewRequest("GET", "/metrics", nil))
	if got.Body.String() != want.Body.String() || got.Header().Get("Content-Type") != want.Header().Get("Content-Type") {
		t.Fatalf("cached exposition differs from promhttp's (%q vs %q, body equal %v)", got.Header().Get("Content-Type"), want.Header().Get("Content-Type"), got.Body.String() == want.Body.String())
	}
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	gz := httptest.NewRecorder()
	a.Handler().ServeHTTP(gz, req)
	zr, err := gzip.NewReader(gz.Body)
	if err != nil || gz.Header().Get("Content-Encoding") != "gzip" {
		t.Fatalf("gzip: %v %q", err, gz.Header().Get("Content-Encoding"))
	}
	plain, _ := io.ReadAll(zr)
	if string(plain) != want.Body.String() {
		t.Fatal("gzip body differs")
	}
	// A protobuf scrape goes to promhttp.
	req = httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Accept", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited")
	pb := httptest.NewRecorder()
	a.Handler().ServeHTTP(pb, req)
	if !strings.Contains(pb.Header().Get("Content-Type"), "protobuf") {
		t.Fatalf("protobuf scrape: %q", pb.Header().Get("Content-Type"))
	}
}
