package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpunode/gpunode/internal/irq"
	"github.com/gpunode/gpunode/internal/podresources"
	"github.com/gpunode/gpunode/internal/topo"
	"github.com/gpunode/gpunode/internal/tune"
)

// DefaultListen is the agent's default listen address. 9847 is not
// dcgm-exporter's 9400 nor node_exporter's 9100.
const DefaultListen = ":9847"

// DefaultInterval is the default time between audits.
const DefaultInterval = 60 * time.Second

// MinInterval bounds --interval from below (a tight loop would burn the CPU
// the node's jobs need).
const MinInterval = 10 * time.Millisecond

// ShutdownGrace bounds how long in-flight requests may run after the
// context is cancelled (SIGTERM): the agent returns within it.
const ShutdownGrace = 500 * time.Millisecond

// GPU is what the GPU backend says about one GPU (the topology has the rest).
type GPU struct {
	Index int    `json:"index"`
	BDF   string `json:"bdf"`
	UUID  string `json:"uuid,omitempty"`
	Model string `json:"model,omitempty"`
}

// Result is one audit: the audit report ('gpunode audit -o json'), the
// topology it ran on and, when they could be read, the IRQ analysis and the
// GPU backend's facts. Only Report is required.
type Result struct {
	Report *tune.Report
	Topo   *topo.Topology
	IRQ    *irq.Report
	GPUs   []GPU
	// Pods is the kubelet pod-resources view (nil when not read): which
	// container holds each GPU, and the k8s.pod.numa verdicts.
	Pods *podresources.Report
}

// AuditFunc runs discovery and the full audit once.
type AuditFunc func(ctx context.Context) (Result, error)

// Build is the build information exported as gpunode_build_info.
type Build struct {
	Version, Commit, GoVersion string
}

// Config configures an Agent.
type Config struct {
	// Audit runs one audit (required).
	Audit AuditFunc
	// Interval between audits (DefaultInterval when 0); each wait is
	// jittered by up to Jitter of it (0.1 when 0, none when negative).
	Interval time.Duration
	Jitter   float64
	// Profile is the profile name the audit uses (an NFD label).
	Profile string
	// NFDDir is the NFD features.d directory; empty: no feature file.
	NFDDir string
	// NFDFile is the feature file's name in NFDDir (default "gpunode").
	NFDFile string
	// Enforce, when set, re-applies the profile after an audit that
	// drifts (--enforce), rate-limited.
	Enforce *Enforcer
	// HTML renders /report.html from a snapshot; nil: 404.
	HTML func(*Snapshot) ([]byte, error)
	// Listener: see http.go (WebConfigFile: exporter-toolkit's web
	// configuration, TLS and authentication; NoReportEndpoints: no
	// /report, /report.html or /topo).
	WebConfigFile     string
	NoReportEndpoints bool
	Build             Build
	Logger            *slog.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Snapshot is the immutable result of one audit cycle. Handlers read it;
// nothing modifies it after it is published.
type Snapshot struct {
	// Seq counts audit cycles (successful or not) since start.
	Seq uint64
	// At is when the last audit finished, Duration how long it took.
	At       time.Time
	Duration time.Duration
	// Err is the last audit's error ("" when it succeeded).
	Err string
	// Result is the last successful audit (zero before the first one);
	// LastSuccess when it finished.
	Result      Result
	LastSuccess time.Time
	// Audits and Errors count audit cycles and failed ones.
	Audits, Errors uint64
	// Enforced counts --enforce actions by outcome (never modified after
	// publication: a cycle that adds one copies the map).
	Enforced map[string]uint64

	reportJSON, topoJSON []byte
	html                 []byte
	metrics              []prometheus.Metric
}

// Ready reports whether an audit has succeeded.
func (s *Snapshot) Ready() bool { return s != nil && s.Result.Report != nil }

// Agent runs the audit loop and serves snapshots.
type Agent struct {
	cfg     Config
	log     *slog.Logger
	snap    atomic.Pointer[Snapshot]
	expo    atomic.Pointer[exposition]
	reg     *prometheus.Registry
	handler http.Handler
	descs   descs
	// metricErrors counts series buildMetrics could not make.
	metricErrors atomic.Int64
}

// New builds an agent: its own Prometheus registry and collector, and the
// HTTP handler. It starts nothing.
func New(cfg Config) (*Agent, error) {
	if cfg.Audit == nil {
		return nil, errors.New("agent: no audit function")
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Interval < MinInterval {
		return nil, fmt.Errorf("agent: interval %s below %s", cfg.Interval, MinInterval)
	}
	if cfg.Jitter == 0 {
		cfg.Jitter = 0.1
	}
	if cfg.Jitter < 0 {
		cfg.Jitter = 0
	}
	if cfg.Jitter > 1 {
		return nil, fmt.Errorf("agent: jitter %g above 1", cfg.Jitter)
	}
	if cfg.NFDFile == "" {
		cfg.NFDFile = "gpunode"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if err := checkListener(cfg); err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg, log: cfg.Logger, reg: prometheus.NewRegistry(), descs: newDescs()}
	a.snap.Store(&Snapshot{})
	if err := a.reg.Register(collector{a}); err != nil {
		return nil, fmt.Errorf("agent: register collector: %w", err)
	}
	a.handler = a.routes()
	return a, nil
}

// Snapshot returns the current snapshot (never nil).
func (a *Agent) Snapshot() *Snapshot { return a.snap.Load() }

// Registry is the agent's Prometheus registry (for tests and promtool).
func (a *Agent) Registry() *prometheus.Registry { return a.reg }

// Handler is the agent's read-only HTTP handler.
func (a *Agent) Handler() http.Handler { return a.handler }

// Cycle runs one audit and publishes its snapshot. A panic in the audit is
// recovered and recorded as an audit error.
func (a *Agent) Cycle(ctx context.Context) *Snapshot {
	start := a.cfg.Now()
	res, err := a.safeAudit(ctx)
	end := a.cfg.Now()
	prev := a.snap.Load()
	s := &Snapshot{Seq: prev.Seq + 1, At: end, Duration: end.Sub(start), Result: prev.Result, LastSuccess: prev.LastSuccess,
		Audits: prev.Audits + 1, Errors: prev.Errors, Enforced: prev.Enforced,
		reportJSON: prev.reportJSON, topoJSON: prev.topoJSON, html: prev.html}
	if err == nil && res.Report == nil {
		err = errors.New("audit returned no report")
	}
	if err != nil {
		s.Err = err.Error()
		s.Errors++
		a.log.Error("audit failed", "seq", s.Seq, "durationSeconds", s.Duration.Seconds(), "err", err)
	} else {
		s.Result = res
		s.LastSuccess = end
		s.reportJSON = marshal(res.Report)
		s.topoJSON = nil
		if res.Topo != nil {
			s.topoJSON = marshal(res.Topo)
		}
		sum := res.Report.Summary
		a.log.Info("audit", "seq", s.Seq, "durationSeconds", s.Duration.Seconds(), "profile", res.Report.Profile,
			"ok", sum.OK, "drift", sum.Drift, "pendingReboot", sum.PendingReboot, "absent", sum.Absent,
			"error", sum.Error, "info", sum.Info)
		if a.cfg.Enforce != nil && res.Report.Drifted() {
			outcome := a.cfg.Enforce.maybeApply(ctx, end, a.log)
			m := make(map[string]uint64, len(s.Enforced)+1)
			for k, v := range s.Enforced {
				m[k] = v
			}
			m[outcome]++
			s.Enforced = m
		}
	}
	s.metrics = a.buildMetrics(s)
	if err == nil && a.cfg.HTML != nil {
		if b, herr := a.safeHTML(s); herr != nil {
			a.log.Warn("report.html", "err", herr)
		} else {
			s.html = b
		}
	}
	if err == nil && a.cfg.NFDDir != "" {
		if werr := WriteNFDFile(a.cfg.NFDDir, a.cfg.NFDFile, NFDFeatures(s.Result, a.cfg.Profile)); werr != nil {
			a.log.Warn("nfd feature file", "dir", a.cfg.NFDDir, "err", werr)
		}
	}
	a.snap.Store(s)
	if e, eerr := a.encodeExposition(s.Seq); eerr != nil {
		a.log.Warn("metrics exposition", "err", eerr) // scrapes fall back to promhttp
	} else {
		a.expo.Store(e)
	}
	return s
}

func (a *Agent) safeAudit(ctx context.Context) (res Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			a.log.Error("audit panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			res, err = Result{}, fmt.Errorf("audit panicked: %v", p)
		}
	}()
	return a.cfg.Audit(ctx)
}

func (a *Agent) safeHTML(s *Snapshot) (b []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			b, err = nil, fmt.Errorf("html report panicked: %v", p)
		}
	}()
	return a.cfg.HTML(s)
}

func marshal(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	return append(b, '\n')
}

// Loop audits now and then every jittered interval until ctx ends.
func (a *Agent) Loop(ctx context.Context) {
	for {
		if ctx.Err() != nil {
			return
		}
		a.Cycle(ctx)
		t := time.NewTimer(a.nextWait())
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// nextWait is the interval, jittered by +-Jitter/2 of it.
func (a *Agent) nextWait() time.Duration {
	d := a.cfg.Interval
	if a.cfg.Jitter > 0 {
		span := float64(d) * a.cfg.Jitter
		d += time.Duration(span*rand.Float64() - span/2)
	}
	return d
}

// Run serves on ln and runs the audit loop until ctx is cancelled; it then
// stops accepting, gives in-flight requests ShutdownGrace, and returns.
func (a *Agent) Run(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: a.handler, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 60 * time.Second, MaxHeaderBytes: 16 << 10}
	serveErr := make(chan error, 1)
	go func() { serveErr <- a.serve(srv, ln) }()
	loopDone := make(chan struct{})
	go func() { a.Loop(ctx); close(loopDone) }()
	a.log.Info("agent started", "listen", ln.Addr().String(), "interval", a.cfg.Interval.String(), "profile", a.cfg.Profile, "nfdDir", a.cfg.NFDDir)
	var err error
	select {
	case <-ctx.Done():
		// The time of this line is when the stop began (a signal cancels
		// ctx): scripts/fleet-image-test.sh measures the stop from it.
		a.log.Info("agent stopping", "cause", context.Cause(ctx).Error())
	case err = <-serveErr:
	}
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
	defer cancel()
	if serr := srv.Shutdown(sctx); serr != nil {
		_ = srv.Close()
	}
	select {
	case <-loopDone:
	case <-sctx.Done():
		a.log.Warn("audit still running at shutdown; leaving it")
	}
	a.log.Info("agent stopped")
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
