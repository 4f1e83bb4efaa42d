package agent

import (
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// routes builds the read-only handler: every route answers GET and HEAD
// only and reads the current snapshot.
func (a *Agent) routes() http.Handler {
	mux := http.NewServeMux()
	metrics := promhttp.HandlerFor(a.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, MaxRequestsInFlight: 64,
		Timeout: 10 * time.Second})
	mux.Handle("/metrics", metrics)
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
	mux.HandleFunc("/report", a.serveBytes("application/json", func(s *Snapshot) []byte { return s.reportJSON }))
	mux.HandleFunc("/topo", a.serveBytes("application/json", func(s *Snapshot) []byte { return s.topoJSON }))
	mux.HandleFunc("/report.html", a.serveBytes("text/html; charset=utf-8", func(s *Snapshot) []byte { return s.html }))
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "gpunode agent: /metrics /healthz /readyz /report /report.html /topo")
	})
	return readOnly(mux)
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
