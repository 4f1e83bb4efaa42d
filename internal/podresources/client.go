package podresources

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	api "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpunode/gpunode/internal/hostfs"
)

// DefaultSocket is the kubelet's pod-resources socket, a host path (read
// under --root).
const DefaultSocket = "/var/lib/kubelet/pod-resources/kubelet.sock"

// DefaultTimeout bounds one read of the API (dial and both calls): kubelet
// answers from memory in milliseconds; a socket that takes longer is a
// kubelet that is stuck, not slow.
const DefaultTimeout = 5 * time.Second

// MaxMessageSize bounds one response, as kubelet's own client does (16 MiB;
// a node with hundreds of pods needs a few hundred KiB).
const MaxMessageSize = 16 << 20

// ErrNoSocket marks a pod-resources socket that is not there: not a kubelet
// node, or the directory is not mounted into the agent's pod.
var ErrNoSocket = errors.New("kubelet pod-resources socket not mounted")

// ErrCapturedRoot marks a root that is a captured tree (--root DIR without
// --live-root): its pods are not this host's, and a socket copied into it
// is dead, so the socket is not dialled unless it was named explicitly.
var ErrCapturedRoot = errors.New("captured tree: the kubelet pod-resources socket is read only on a live host")

// ErrUnreachable marks a socket that is there but did not answer: refused
// (kubelet stopped), timed out, or answered with an error.
var ErrUnreachable = errors.New("kubelet pod-resources API did not answer")

// Resources is what one read of the kubelet's PodResources API v1 returned.
type Resources struct {
	// Socket is the host path read.
	Socket string
	// Pods is List's answer.
	Pods []*api.PodResources
	// Allocatable is GetAllocatableResources' answer; nil when the call
	// failed (AllocatableErr says why): List alone still says which pod
	// holds what.
	Allocatable    *api.AllocatableResourcesResponse
	AllocatableErr string
}

// Read calls List and GetAllocatableResources on the socket at host path
// socket under fs's root, within timeout (DefaultTimeout when 0) and ctx.
// A socket that does not exist is ErrNoSocket; one that refuses, never
// answers or answers garbage is an error naming the socket. Nothing here
// waits longer than the timeout.
func Read(ctx context.Context, host *hostfs.FS, socket string, timeout time.Duration) (*Resources, error) {
	if socket == "" {
		socket = DefaultSocket
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// The first connection is made here, so that a missing or refusing
	// socket is reported as such, not as a gRPC "unavailable".
	first, err := host.DialUnix(ctx, socket)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", socket, ErrNoSocket)
		}
		return nil, fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	d := &dialer{host: host, socket: socket, first: first}
	conn, err := grpc.NewClient("passthrough:///kubelet-pod-resources",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(d.dial),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessageSize)))
	if err != nil {
		first.Close()
		return nil, fmt.Errorf("%w: client: %w", ErrUnreachable, err)
	}
	defer conn.Close()
	defer d.close()
	cl := api.NewPodResourcesListerClient(conn)
	list, err := cl.List(ctx, &api.ListPodResourcesRequest{})
	if err != nil {
		return nil, fmt.Errorf("%w: %s: List: %w", ErrUnreachable, socket, callError(ctx, err, timeout))
	}
	r := &Resources{Socket: socket, Pods: list.GetPodResources()}
	alloc, err := cl.GetAllocatableResources(ctx, &api.AllocatableResourcesRequest{})
	if err != nil {
		r.AllocatableErr = "GetAllocatableResources: " + callError(ctx, err, timeout).Error()
	} else {
		r.Allocatable = alloc
	}
	return r, nil
}

// callError words a failed call: a deadline is the kubelet not answering
// within the timeout.
func callError(ctx context.Context, err error, timeout time.Duration) error {
	if status.Code(err) == codes.DeadlineExceeded || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no answer within %s: %w", timeout, context.DeadlineExceeded)
	}
	return err
}

// dialer hands gRPC the connection Read made first, then dials again
// through hostfs if gRPC reconnects.
type dialer struct {
	host   *hostfs.FS
	socket string
	mu     sync.Mutex
	first  net.Conn
}

func (d *dialer) dial(ctx context.Context, _ string) (net.Conn, error) {
	d.mu.Lock()
	c := d.first
	d.first = nil
	d.mu.Unlock()
	if c != nil {
		return c, nil
	}
	return d.host.DialUnix(ctx, d.socket)
}

// close closes the first connection if gRPC never took it.
func (d *dialer) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.first != nil {
		d.first.Close()
		d.first = nil
	}
}
