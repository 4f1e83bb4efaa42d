// Package cluster reads gpunode's k8s inputs from a live API server, the
// way kubectl finds and talks to it: --kubeconfig, KUBECONFIG,
// ~/.kube/config or the pod's service account, --context, -n/--namespace
// and --request-timeout. It only reads (every request is a GET: list, get
// or watch; anything else is refused before it leaves the process), lists
// in pages of PageSize, and turns every failure into an error that names
// the server, the verb and the resource.
//
// What it returns is what the file loaders of package objects return, so
// the planners ('k8s place', 'k8s dra allocate', 'k8s lint', 'k8s admit')
// run unchanged on a cluster's objects.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Limits of a live read.
const (
	// PageSize is the limit of each list request; the rest comes with
	// continue tokens.
	PageSize = 500
	// DefaultRequestTimeout bounds each request (--request-timeout).
	DefaultRequestTimeout = 10 * time.Second
	// MaxPages bounds the pages of one list (a server that hands out
	// continue tokens forever is an error, not a hang).
	MaxPages = 4000
	// MaxResponseBytes bounds one response body.
	MaxResponseBytes = 1 << 30
)

// Flags are kubectl's connection flags.
type Flags struct {
	Kubeconfig     string
	Context        string
	Namespace      string
	RequestTimeout time.Duration
}

// Register adds --kubeconfig, --context, -n/--namespace and
// --request-timeout to fs, spelt as kubectl spells them.
func (f *Flags) Register(fs *pflag.FlagSet) {
	fs.StringVar(&f.Kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the pod's service account)")
	fs.StringVar(&f.Context, "context", "", "the kubeconfig context to use (default: its current-context)")
	fs.StringVarP(&f.Namespace, "namespace", "n", "", "namespace of the workload and its objects (default: the context's namespace, else \"default\")")
	fs.DurationVar(&f.RequestTimeout, "request-timeout", DefaultRequestTimeout, "bound on each request to the API server (a list is paged; each page is one request)")
}

// Client reads from one API server.
type Client struct {
	cs        kubernetes.Interface
	raw       rest.Interface // unversioned: AbsPath requests
	server    string
	namespace string
	timeout   time.Duration
}

// Server is the API server's URL.
func (c *Client) Server() string { return c.server }

// Namespace is the namespace in effect (-n, else the context's, else
// "default").
func (c *Client) Namespace() string { return c.namespace }

// ConfigError is a kubeconfig that cannot be used (exit 2: the caller's
// input).
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// New builds the client as kubectl would: nothing is sent until the first
// read.
func (f *Flags) New() (*Client, error) {
	if f.RequestTimeout < 0 {
		return nil, &ConfigError{fmt.Errorf("--request-timeout %s: must not be negative", f.RequestTimeout)}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if f.Kubeconfig != "" {
		rules.ExplicitPath = f.Kubeconfig
	}
	over := &clientcmd.ConfigOverrides{CurrentContext: f.Context}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, over)
	cfg, err := cc.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, &ConfigError{errors.New("no cluster: no kubeconfig ($KUBECONFIG, ~/.kube/config or --kubeconfig) and not in a pod with a service account; give the input files instead")}
		}
		if f.Kubeconfig != "" {
			return nil, &ConfigError{fmt.Errorf("--kubeconfig %s: %w", f.Kubeconfig, err)}
		}
		return nil, &ConfigError{fmt.Errorf("kubeconfig: %w", err)}
	}
	ns := f.Namespace
	if ns == "" {
		if n, _, err := cc.Namespace(); err == nil && n != "" {
			ns = n
		} else {
			ns = "default"
		}
	}
	return NewForConfig(cfg, ns, f.RequestTimeout)
}

// NewForConfig builds the client for a rest.Config (tests, the
// conformance module). timeout 0 means DefaultRequestTimeout.
func NewForConfig(cfg *rest.Config, namespace string, timeout time.Duration) (*Client, error) {
	if timeout == 0 {
		timeout = DefaultRequestTimeout
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = timeout
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 50, 100
	}
	cfg.UserAgent = "gpunode (read-only)"
	// Built-in kinds travel as protobuf (several times faster to decode
	// than JSON on 10,000 nodes); JSON is accepted too.
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return readOnly{rt} })
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, &ConfigError{fmt.Errorf("kubeconfig: %w", err)}
	}
	if namespace == "" {
		namespace = "default"
	}
	return &Client{cs: cs, raw: cs.Discovery().RESTClient(), server: cfg.Host, namespace: namespace, timeout: timeout}, nil
}

// ErrWrite is returned for any request other than a read.
var ErrWrite = errors.New("gpunode only reads from the API server")

// readOnly refuses every request that is not a GET (list, get, watch),
// before it is sent, and bounds what a response may hold.
type readOnly struct{ next http.RoundTripper }

func (r readOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet {
		return nil, fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, ErrWrite)
	}
	resp, err := r.next.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	resp.Body = &boundedBody{rc: resp.Body, left: MaxResponseBytes}
	return resp, nil
}

// CancelRequest forwards to the transport (older client-go paths cancel
// this way).
func (r readOnly) CancelRequest(req *http.Request) {
	if c, ok := r.next.(interface{ CancelRequest(*http.Request) }); ok {
		c.CancelRequest(req)
	}
}

type boundedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, fmt.Errorf("response larger than %d bytes", int64(MaxResponseBytes))
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }

// Resource names what a request reads, for messages: "nodes",
// "resourceslices.resource.k8s.io", and where ("" cluster scope).
type Resource struct {
	Group, Version, Name string
	Namespace            string
	Namespaced           bool
}

func (r Resource) String() string {
	if r.Group == "" {
		return r.Name
	}
	return r.Name + "." + r.Group
}

func (r Resource) scope() string {
	if r.Namespaced && r.Namespace != "" {
		return fmt.Sprintf("in the namespace %q", r.Namespace)
	}
	return "at the cluster scope"
}

// Error is a failed read: the verb, the resource, the server and why.
type Error struct {
	Verb     string // list, get
	Resource Resource
	Object   string // get: the name
	Server   string
	Reason   string // forbidden, unauthorized, timeout, unreachable, ...
	Err      error
}

func (e *Error) Error() string {
	what := e.Resource.String()
	if e.Object != "" {
		what += " " + fmt.Sprintf("%q", e.Object)
	}
	msg := fmt.Sprintf("cannot %s %s %s: %s (API server %s)", e.Verb, what, e.Resource.scope(), e.Reason, e.Server)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// NotFound says whether err is a read of something that is not there
// (an object, or a resource the cluster does not serve).
func NotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Reason == "not found"
}

// explain turns a client-go error into an Error.
func (c *Client) explain(ctx context.Context, err error, verb string, res Resource, name string) error {
	if err == nil {
		return nil
	}
	e := &Error{Verb: verb, Resource: res, Object: name, Server: c.server, Err: err}
	var se apierrors.APIStatus
	var ue *url.Error
	var ne net.Error
	switch {
	case ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("%s %s: %w", verb, res, ctx.Err())
	case errors.Is(err, ErrWrite):
		e.Reason = "refused"
	case apierrors.IsForbidden(err):
		e.Reason, e.Err = "forbidden", errors.New(statusMessage(err))
	case apierrors.IsUnauthorized(err):
		e.Reason, e.Err = "unauthorized (the server rejected the credentials)", errors.New(statusMessage(err))
	case apierrors.IsNotFound(err):
		e.Reason, e.Err = "not found", nil
	case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
		e.Reason = "the list changed too much while paging (continue token expired); run again"
	case isTimeout(err) || (errors.As(err, &ne) && ne.Timeout()):
		e.Reason = fmt.Sprintf("no answer within %s (--request-timeout)", c.timeout)
		e.Err = nil
	case errors.As(err, &se) && se.Status().Code != 0:
		e.Reason = fmt.Sprintf("the server answered %d %s", se.Status().Code, http.StatusText(int(se.Status().Code)))
		e.Err = errors.New(statusMessage(err))
	case errors.As(err, &ue):
		e.Reason = "unreachable"
		e.Err = ue.Err
	default:
		e.Reason = "unreadable answer"
	}
	return e
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	s := err.Error()
	return strings.Contains(s, "Client.Timeout exceeded") || strings.Contains(s, "context deadline exceeded") || strings.Contains(s, "i/o timeout")
}

func statusMessage(err error) string {
	var se apierrors.APIStatus
	if errors.As(err, &se) && se.Status().Message != "" {
		return se.Status().Message
	}
	return err.Error()
}
