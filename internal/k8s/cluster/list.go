package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// pagedList is a typed list (*v1.NodeList, ...).
type pagedList interface {
	runtime.Object
	GetContinue() string
}

// listTyped lists res page by page (limit PageSize, then continue) into
// new lists of type L, handing each page to each.
func listTyped[L any, PL interface {
	*L
	pagedList
}](ctx context.Context, c *Client, rc rest.Interface, res Resource, opts metav1.ListOptions, each func(PL)) error {
	cont := ""
	for page := 0; ; page++ {
		if page >= MaxPages {
			return &Error{Verb: "list", Resource: res, Server: c.server, Reason: fmt.Sprintf("more than %d pages of %d", MaxPages, PageSize)}
		}
		o := opts
		o.Limit, o.Continue = PageSize, cont
		l := PL(new(L))
		req := rc.Get().Resource(res.Name)
		if res.Namespaced && res.Namespace != "" {
			req = req.Namespace(res.Namespace)
		}
		if err := req.VersionedParams(&o, scheme.ParameterCodec).Do(ctx).Into(l); err != nil {
			return c.explain(ctx, err, "list", res, "")
		}
		each(l)
		next := l.GetContinue()
		if next == "" {
			return nil
		}
		if next == cont {
			return &Error{Verb: "list", Resource: res, Server: c.server, Reason: "the server repeated its continue token"}
		}
		cont = next
	}
}

func (r Resource) absPath() string {
	p := []string{"/apis", r.Group, r.Version}
	if r.Group == "" {
		p = []string{"/api", r.Version}
	}
	if r.Namespaced && r.Namespace != "" {
		p = append(p, "namespaces", r.Namespace)
	}
	return path.Join(append(p, r.Name)...)
}

func (r Resource) apiVersion() string {
	if r.Group == "" {
		return r.Version
	}
	return r.Group + "/" + r.Version
}

// rawPage is one page of a JSON list.
type rawPage struct {
	Metadata struct {
		Continue string `json:"continue"`
	} `json:"metadata"`
	Items []json.RawMessage `json:"items"`
}

// listRaw lists res as JSON, page by page; every item carries apiVersion
// and kind (the server leaves them out of a built-in list's items).
func (c *Client) listRaw(ctx context.Context, res Resource, kind string, opts map[string]string) ([]json.RawMessage, error) {
	var out []json.RawMessage
	cont := ""
	for page := 0; ; page++ {
		if page >= MaxPages {
			return nil, &Error{Verb: "list", Resource: res, Server: c.server, Reason: fmt.Sprintf("more than %d pages of %d", MaxPages, PageSize)}
		}
		req := c.raw.Get().AbsPath(res.absPath()).SetHeader("Accept", "application/json").Param("limit", fmt.Sprint(PageSize))
		for k, v := range opts {
			req = req.Param(k, v)
		}
		if cont != "" {
			req = req.Param("continue", cont)
		}
		b, err := req.DoRaw(ctx)
		if err != nil {
			return nil, c.explain(ctx, err, "list", res, "")
		}
		var p rawPage
		if err := json.Unmarshal(b, &p); err != nil {
			return nil, &Error{Verb: "list", Resource: res, Server: c.server, Reason: "unreadable answer", Err: err}
		}
		for _, it := range p.Items {
			out = append(out, withTypeMeta(it, res.apiVersion(), kind))
		}
		if p.Metadata.Continue == "" {
			return out, nil
		}
		if p.Metadata.Continue == cont {
			return nil, &Error{Verb: "list", Resource: res, Server: c.server, Reason: "the server repeated its continue token"}
		}
		cont = p.Metadata.Continue
	}
}

// getRaw reads one object as JSON.
func (c *Client) getRaw(ctx context.Context, res Resource, name string) (json.RawMessage, error) {
	b, err := c.raw.Get().AbsPath(res.absPath(), name).SetHeader("Accept", "application/json").DoRaw(ctx)
	if err != nil {
		return nil, c.explain(ctx, err, "get", res, name)
	}
	if !json.Valid(b) {
		return nil, &Error{Verb: "get", Resource: res, Object: name, Server: c.server, Reason: "unreadable answer", Err: fmt.Errorf("not JSON (%d bytes)", len(b))}
	}
	return withTypeMeta(b, res.apiVersion(), kind(res)), nil
}

// kind is the kind of the resources gpunode reads, by resource name.
func kind(res Resource) string {
	for _, k := range lintKinds {
		if k.res.Name == res.Name && k.res.Group == res.Group {
			return k.kind
		}
	}
	return ""
}

// withTypeMeta adds apiVersion and kind to an object that lacks them.
func withTypeMeta(b json.RawMessage, apiVersion, kind string) json.RawMessage {
	var tm metav1.TypeMeta
	if err := json.Unmarshal(b, &tm); err != nil || tm.APIVersion != "" || tm.Kind != "" || kind == "" {
		return b
	}
	b = bytes.TrimSpace(b)
	if len(b) < 2 || b[0] != '{' {
		return b
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, `{"apiVersion":%q,"kind":%q`, apiVersion, kind)
	if tail := bytes.TrimSpace(b[1:]); len(tail) > 0 && tail[0] != '}' {
		buf.WriteByte(',')
	}
	buf.Write(b[1:])
	return buf.Bytes()
}

// asList wraps items in a v1 List document, as 'kubectl get -o json'
// prints several kinds.
func asList(items []json.RawMessage) []byte {
	var buf bytes.Buffer
	buf.WriteString(`{"apiVersion":"v1","kind":"List","metadata":{},"items":[`)
	for i, it := range items {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(it)
	}
	buf.WriteString("]}")
	return buf.Bytes()
}
