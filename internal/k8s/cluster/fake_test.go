package cluster

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// fakeAPI is an API server: JSON lists with limit/continue paging over
// generated objects, and per-path faults. It records every request.
type fakeAPI struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	requests []string          // "GET /api/v1/nodes?limit=500"
	lists    map[string][]any  // path -> items
	objects  map[string]any    // path -> object
	faults   map[string]string // path -> 403, 401, 500, truncated, slow
	pages    map[string]int    // path -> pages served
}

func newFakeAPI(t *testing.T) *fakeAPI {
	f := &fakeAPI{t: t, lists: map[string][]any{}, objects: map[string]any{}, faults: map[string]string{}, pages: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) client(t *testing.T, timeout time.Duration) *Client {
	t.Helper()
	c, err := NewForConfig(&rest.Config{Host: f.srv.URL}, "team-a", timeout)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (f *fakeAPI) fault(path, kind string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults[path] = kind
}

func status(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason, "message": msg, "code": code})
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, r.Method+" "+r.URL.RequestURI())
	fault := f.faults[r.URL.Path]
	items, isList := f.lists[r.URL.Path]
	obj, isObj := f.objects[r.URL.Path]
	f.mu.Unlock()
	switch fault {
	case "403":
		status(w, 403, "Forbidden", fmt.Sprintf(`%s is forbidden: User "system:serviceaccount:x:y" cannot list resource`, r.URL.Path))
		return
	case "401":
		status(w, 401, "Unauthorized", "Unauthorized")
		return
	case "500":
		status(w, 500, "InternalError", "etcdserver: leader changed")
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
		status(w, 404, "NotFound", "the server could not find the requested resource")
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

func (f *fakeAPI) verbs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, r := range f.requests {
		out = append(out, strings.SplitN(r, " ", 2)[0])
	}
	return out
}

func node(name string, labels map[string]string) map[string]any {
	return map[string]any{"metadata": map[string]any{"name": name, "labels": labels},
		"status": map[string]any{"allocatable": map[string]any{"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8", "pods": "110"},
			"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}}
}

func pod(ns, name, nodeName, phase string) map[string]any {
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
