package agent

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/exporter-toolkit/web"
)

// routes builds the read-only handler: every route answers GET and HEAD
// only and reads the current snapshot.
func (a *Agent) routes() http.Handler {
	mux := http.NewServeMux()
	metrics := promhttp.HandlerFor(a.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, MaxRequestsInFlight: 64,
		Timeout: 10 * time.Second})
	mux.Handle("/metrics", a.metricsHandler(metrics))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		s := a.snap.Load()
		if !s.Ready() {
			w.WriteHeader(http.StatusServiceUnavailable)
			if s.Err != "" {
				fmt.Fprintf(w, "not ready: no successful audit yet (last: %s)\n", s.Err)
				return
			}
			fmt.Fprintln(w, "not ready: first audit running")
			return
		}
		fmt.Fprintf(w, "ready: audit %d at %s\n", s.Seq, s.LastSuccess.UTC().Format(time.RFC3339))
	})
	index := "gpunode agent: /metrics /healthz /readyz /report /report.html /topo"
	if a.cfg.NoReportEndpoints {
		// The report pages carry the hostname, kernel, topology and the
		// full audit; --no-report-endpoints leaves only what a scraper
		// and the kubelet's probes need.
		index = "gpunode agent: /metrics /healthz /readyz (report endpoints off)"
	} else {
		mux.HandleFunc("/report", a.serveBytes("application/json", func(s *Snapshot) []byte { return s.reportJSON }))
		mux.HandleFunc("/topo", a.serveBytes("application/json", func(s *Snapshot) []byte { return s.topoJSON }))
		mux.HandleFunc("/report.html", a.serveBytes("text/html; charset=utf-8", func(s *Snapshot) []byte { return s.html }))
	}
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, index)
	})
	return readOnly(mux)
}

// ErrWebConfig marks a --web.config.file that cannot be used (unreadable,
// bad YAML, a certificate that does not load, a password that is not a
// bcrypt hash): the agent does not start.
var ErrWebConfig = errors.New("web configuration")

// checkListener validates the listener configuration before anything
// starts: the web configuration file is read, its certificates loaded and
// its users' hashes checked (exporter-toolkit's web.Validate).
func checkListener(cfg Config) error {
	if cfg.WebConfigFile == "" {
		return nil
	}
	if err := web.Validate(cfg.WebConfigFile); err != nil {
		return fmt.Errorf("%w %s: %w", ErrWebConfig, cfg.WebConfigFile, err)
	}
	return nil
}

// serve serves srv on ln: plain HTTP without a web configuration file,
// otherwise as the file says, by exporter-toolkit as every Prometheus
// exporter does (tls_server_config: TLS, client certificates with
// client_auth_type RequireAndVerifyClientCert; basic_auth_users: bcrypt
// hashes; http_server_config). The file is read again on each new TLS
// connection, so renewed certificates are picked up without a restart.
func (a *Agent) serve(srv *http.Server, ln net.Listener) error {
	file := a.cfg.WebConfigFile
	return web.Serve(ln, srv, &web.FlagConfig{WebConfigFile: &file}, a.log)
}

func (a *Agent) serveBytes(ctype string, get func(*Snapshot) []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		b := get(a.snap.Load())
		if b == nil {
			http.Error(w, "not available yet (no successful audit, or not configured)", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", ctype)
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(b)
	}
}

// readOnly refuses every method but GET and HEAD.
func readOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "read-only endpoint", http.StatusMethodNotAllowed)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// exposition is one snapshot's /metrics in the text format, encoded once by
// client_golang (registry Gather + expfmt) right after the snapshot is
// published: a scrape then copies bytes instead of re-encoding ~300 series
// (0.7 ms of CPU each on the DGX fixture; see BenchmarkScrape).
type exposition struct {
	seq       uint64
	plain, gz []byte
}

// encodeExposition gathers the registry (the current snapshot's metrics)
// and encodes it for snapshot seq.
func (a *Agent) encodeExposition(seq uint64) (*exposition, error) {
	mfs, err := a.reg.Gather()
	if err != nil {
		return nil, err
	}
	f := expfmt.NewFormat(expfmt.TypeTextPlain)
	var plain bytes.Buffer
	enc := expfmt.NewEncoder(&plain, f)
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return nil, err
		}
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write(plain.Bytes()); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return &exposition{seq: seq, plain: plain.Bytes(), gz: gz.Bytes()}, nil
}

// metricsHandler serves the cached exposition to text-format scrapers
// and hands anything else (protobuf, a stale cache) to promhttp.
func (a *Agent) metricsHandler(fallback http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e := a.expo.Load()
		f := expfmt.Negotiate(r.Header)
		if e == nil || e.seq != a.snap.Load().Seq || f.FormatType() != expfmt.TypeTextPlain {
			fallback.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		// The negotiated type names the escaping scheme the client asked
		// for; every gpunode metric and label name is a legacy name, so
		// the body is the same under any scheme.
		h.Set("Content-Type", string(f))
		body := e.plain
		if acceptsGzip(r.Header.Get("Accept-Encoding")) {
			h.Set("Content-Encoding", "gzip")
			body = e.gz
		}
		h.Set("Content-Length", fmt.Sprint(len(body)))
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(body)
	})
}

func acceptsGzip(ae string) bool {
	for _, part := range strings.Split(ae, ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.TrimSpace(enc) == "gzip" && strings.ReplaceAll(strings.TrimSpace(params), " ", "") != "q=0" {
			return true
		}
	}
	return false
}
