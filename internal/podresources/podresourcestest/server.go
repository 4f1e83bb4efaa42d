// Package podresourcestest serves the kubelet's PodResources API v1 from
// fixed answers on a unix socket inside a test tree, for the tests of the
// packages that read it (podresources, the agent, the CLI). Test support
// only: no product code imports it.
package podresourcestest

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	api "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// Kubelet implements the upstream v1 service (api.PodResourcesListerServer)
// from fixed answers.
type Kubelet struct {
	api.UnimplementedPodResourcesListerServer
	Pods        []*api.PodResources
	Allocatable *api.AllocatableResourcesResponse
	// Block makes every call wait until the caller gives up.
	Block bool
}

// List answers Pods.
func (k *Kubelet) List(ctx context.Context, _ *api.ListPodResourcesRequest) (*api.ListPodResourcesResponse, error) {
	if k.Block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &api.ListPodResourcesResponse{PodResources: k.Pods}, nil
}

// GetAllocatableResources answers Allocatable (an error when it is nil).
func (k *Kubelet) GetAllocatableResources(ctx context.Context, _ *api.AllocatableResourcesRequest) (*api.AllocatableResourcesResponse, error) {
	if k.Block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if k.Allocatable == nil {
		return nil, errors.New("not served")
	}
	return k.Allocatable, nil
}

// Listen makes a unix listener at host path p under root (directories
// created). It binds through the directory's /proc/self/fd name, so a long
// t.TempDir() path does not hit the 108-byte socket address limit. The
// socket file stays when the listener closes (a stale socket).
func Listen(t testing.TB, root, p string) net.Listener {
	t.Helper()
	dir := filepath.Join(root, filepath.Dir(p))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	ln, err := net.Listen("unix", "/proc/self/fd/"+strconv.Itoa(fd)+"/"+filepath.Base(p))
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	t.Cleanup(func() { ln.Close() })
	return ln
}

// Serve runs srv (a Kubelet, or kubelet's own server) on a gRPC server at
// host path p under root until the test ends.
func Serve(t testing.TB, root, p string, srv api.PodResourcesListerServer) {
	t.Helper()
	ln := Listen(t, root, p)
	s := grpc.NewServer()
	api.RegisterPodResourcesListerServer(s, srv)
	go s.Serve(ln)
	t.Cleanup(s.Stop)
}
