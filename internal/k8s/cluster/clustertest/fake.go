// Package clustertest is a fake API server for tests: JSON lists paged by
// limit and continue, single objects, per-path faults (403, 401, 500, a
// truncated body, an answer that never comes), and a record of every
// request.
package clustertest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeAPI is an API server: JSON lists with limit/continue paging over
// generated objects, and per-path faults. It records every request.
type Server struct {
	t   testing.TB
	srv *httptest.Server

	mu       sync.Mutex
	requests []string          // "GET /api/v1/nodes?limit=500"
	lists    map[string][]any  // path -> items
	objects  map[string]any    // path -> object
	faults   map[string]string // path -> 403, 401, 500, truncated, slow
	pages    map[string]int    // path -> pages served
}

// New starts a server, closed at the end of the test.
func New(t testing.TB) *Server {
	f := &Server{t: t, lists: map[string][]any{}, objects: map[string]any{}, faults: map[string]string{}, pages: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// URL is the server's address.
func (f *Server) URL() string { return f.srv.URL }

// SetHandler replaces the server's handler.
func (f *Server) SetHandler(h http.Handler) { f.srv.Config.Handler = h }

// List sets the items listed at path.
func (f *Server) List(path string, items ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists[path] = append([]any{}, items...)
}

// Append adds items to the list at path.
func (f *Server) Append(path string, items ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists[path] = append(f.lists[path], items...)
}

// Object sets the object got at path.
func (f *Server) Object(path string, obj any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.objects[path] = obj
}

// Requests are the requests served so far ("GET /api/v1/nodes?limit=500").
func (f *Server) Requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.requests...)
}

// Pages is the number of list pages served at path.
func (f *Server) Pages(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pages[path]
}

// Kubeconfig writes a kubeconfig whose current context "one" points at the
// server with namespace ns; context "two" points at an address where
// nothing listens.
func (f *Server) Kubeconfig(t testing.TB, ns string) string {
	t.Helper()
	return WriteKubeconfig(t, f.srv.URL, ns)
}

// WriteKubeconfig writes a kubeconfig for server.
func WriteKubeconfig(t testing.TB, server, ns string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
current-context: one
contexts:
- name: one
  context: {cluster: c1, user: u, namespace: %q}
- name: two
  context: {cluster: c2, user: u, namespace: other}
clusters:
- name: c1
  cluster: {server: %q, insecure-skip-tls-verify: true}
- name: c2
  cluster: {server: "http://127.0.0.2:1"}
users:
- name: u
  user: {token: abc}
`, ns, server)
	if err := os.WriteFile(p, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Fault makes path answer with kind: "403", "401", "500", "truncated",
// "slow" (no answer until the client gives up), "" none.
func (f *Server) Fault(path, kind string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults[path] = kind
}

func writeStatus(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason, "message": msg, "code": code})
}

func (f *Server) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, r.Method+" "+r.URL.RequestURI())
	fault := f.faults[r.URL.Path]
	items, isList := f.lists[r.URL.Path]
	obj, isObj := f.objects[r.URL.Path]
	f.mu.Unlock()
	switch fault {
	case "403":
		writeStatus(w, 403, "Forbidden", fmt.Sprintf(`%s is forbidden: User "system:serviceaccount:x:y" cannot list resource`, r.URL.Path))
		return
	case "401":
		writeStatus(w, 401, "Unauthorized", "Unauthorized")
		return
	case "500":
		writeStatus(w, 500, "InternalError", "etcdserver: leader changed")
		return
	case "truncated":
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "4000")
		_, _ = w.Write([]byte(`{"kind":"List","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"a"`))
		return
	case "slow":
		select {
		case <-r.Context().Done():
		case <-time.After(20 * time.Second):
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if isObj {
		_ = json.NewEncoder(w).Encode(obj)
		return
	}
	if !isList {
		writeStatus(w, 404, "NotFound", "the server could not find the requested resource")
		return
	}
	q := r.URL.Query()
	limit, _ := strconv.Atoi(q.Get("limit"))
	off, _ := strconv.Atoi(q.Get("continue"))
	end := len(items)
	if limit > 0 && off+limit < end {
		end = off + limit
	}
	meta := map[string]any{"resourceVersion": "7"}
	if end < len(items) {
		meta["continue"] = strconv.Itoa(end)
	}
	f.mu.Lock()
	f.pages[r.URL.Path]++
	f.mu.Unlock()
	_ = json.NewEncoder(w).Encode(map[string]any{"kind": listKind(r.URL.Path), "apiVersion": apiVersionOf(r.URL.Path), "metadata": meta, "items": items[off:end]})
}

// Verbs are the HTTP methods of the requests served so far.
func (f *Server) Verbs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, r := range f.requests {
		out = append(out, strings.SplitN(r, " ", 2)[0])
	}
	return out
}

// Node is a Ready GPU node: 64 CPUs, 512Gi, 8 nvidia.com/gpu.
func Node(name string, labels map[string]string) map[string]any {
	return map[string]any{"metadata": map[string]any{"name": name, "labels": labels},
		"status": map[string]any{"allocatable": map[string]any{"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8", "pods": "110"},
			"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}}
}

// Pod is a pod asking for 4 GPUs, bound to nodeName ("" none).
func Pod(ns, name, nodeName, phase string) map[string]any {
	return map[string]any{"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":   map[string]any{"nodeName": nodeName, "containers": []any{map[string]any{"name": "c", "image": "x", "resources": map[string]any{"requests": map[string]any{"nvidia.com/gpu": "4"}, "limits": map[string]any{"nvidia.com/gpu": "4"}}}}},
		"status": map[string]any{"phase": phase}}
}

// listKind is the kind of a list at path, as a real server names it.
func listKind(path string) string {
	res := path[strings.LastIndex(path, "/")+1:]
	kinds := map[string]string{"nodes": "Node", "pods": "Pod", "resourceslices": "ResourceSlice", "deviceclasses": "DeviceClass",
		"resourceclaims": "ResourceClaim", "resourceclaimtemplates": "ResourceClaimTemplate", "hypernodes": "HyperNode", "jobs": "Job"}
	if k, ok := kinds[res]; ok {
		return k + "List"
	}
	return "List"
}

func apiVersionOf(path string) string {
	if strings.HasPrefix(path, "/api/") {
		return "v1"
	}
	parts := strings.Split(path, "/")
	return parts[2] + "/" + parts[3]
}
