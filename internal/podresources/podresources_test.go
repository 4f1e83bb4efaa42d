package podresources

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	api "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/podresources/podresourcestest"
	"github.com/gpunode/gpunode/internal/topo"
)

const fixture = "../../testdata/hosts/dgx-h100"

// uuid is GPU i's UUID in the dgx-h100 fixture's fake GPU file.
func uuid(i int) string { return "GPU-5b1a3c2e-7d4f-4e8a-9c1b-0000a0b1000" + strconv.Itoa(i) }

type fakeKubelet = podresourcestest.Kubelet

func listen(t *testing.T, root, p string) net.Listener { return podresourcestest.Listen(t, root, p) }

// serve runs k on the default socket under root.
func serve(t *testing.T, root string, k api.PodResourcesListerServer) {
	podresourcestest.Serve(t, root, DefaultSocket, k)
}

type host struct {
	topo *topo.Topology
	gpus []HostGPU
}

func dgx(t *testing.T) host {
	t.Helper()
	fs, err := hostfs.New(fixture)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := topo.Discover(context.Background(), fs)
	if err != nil {
		t.Fatal(err)
	}
	b, err := gpu.OpenFake(fs, gpu.FakeFile)
	if err != nil {
		t.Fatal(err)
	}
	st, err := b.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return host{tp, HostGPUs(tp, &st)}
}

func gpus(resource string, numa []int64, ids ...string) *api.ContainerDevices {
	d := &api.ContainerDevices{ResourceName: resource, DeviceIds: ids}
	if numa != nil {
		d.Topology = &api.TopologyInfo{}
		for _, n := range numa {
			d.Topology.Nodes = append(d.Topology.Nodes, &api.NUMANode{ID: n})
		}
	}
	return d
}

func memory(size uint64, numa ...int64) *api.ContainerMemory {
	m := &api.ContainerMemory{MemoryType: MemoryTypeMemory, Size: size, Topology: &api.TopologyInfo{}}
	for _, n := range numa {
		m.Topology.Nodes = append(m.Topology.Nodes, &api.NUMANode{ID: n})
	}
	return m
}

func cpus(a, b int64) []int64 {
	var v []int64
	for i := a; i <= b; i++ {
		v = append(v, i)
	}
	return v
}

func pod(ns, name string, cs ...*api.ContainerResources) *api.PodResources {
	return &api.PodResources{Namespace: ns, Name: name, Containers: cs}
}

// read serves k under a fresh root and analyses what Read gets.
func read(t *testing.T, n host, root string, k *fakeKubelet) *Report {
	t.Helper()
	if root == "" {
		root = t.TempDir()
	}
	serve(t, root, k)
	fs, err := hostfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Read(context.Background(), fs, "", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return Analyze(res, Options{Topo: n.topo, GPUs: n.gpus, Host: fs})
}

func only(t *testing.T, r *Report, subject string) check.Check {
	t.Helper()
	for _, c := range r.Checks {
		if c.Subject == subject {
			if c.ID != "k8s.pod.numa" {
				t.Errorf("check id %q, want k8s.pod.numa", c.ID)
			}
			return c
		}
	}
	t.Fatalf("no check for %s in %+v", subject, r.Checks)
	return check.Check{}
}

func TestAlignedAndMisaligned(t *testing.T) {
	n := dgx(t)
	k := &fakeKubelet{
		Pods: []*api.PodResources{
			pod("ml", "train-0", &api.ContainerResources{Name: "trainer",
				Devices: []*api.ContainerDevices{gpus("nvidia.com/gpu", []int64{0}, uuid(0), uuid(1))},
				CpuIds:  cpus(0, 7), Memory: []*api.ContainerMemory{memory(64<<30, 0)}}),
			pod("ml", "infer-1", &api.ContainerResources{Name: "server",
				Devices: []*api.ContainerDevices{gpus("nvidia.com/gpu", []int64{0}, uuid(0), uuid(1))},
				CpuIds:  cpus(64, 95), Memory: []*api.ContainerMemory{memory(32<<30, 1)}}),
			// CPUs right, memory on the other node.
			pod("ml", "infer-2", &api.ContainerResources{Name: "server",
				Devices: []*api.ContainerDevices{gpus("nvidia.com/gpu", nil, uuid(4))},
				CpuIds:  cpus(56, 59), Memory: []*api.ContainerMemory{memory(8<<30, 0)}}),
			// No GPU: listed, not judged.
			pod("kube-system", "coredns", &api.ContainerResources{Name: "coredns"}),
		},
		Allocatable: &api.AllocatableResourcesResponse{CpuIds: cpus(2, 223)},
	}
	r := read(t, n, "", k)
	if r.SchemaVersion != "gpunode.pods/v1" || r.State != StateRead {
		t.Fatalf("schema %q state %q", r.SchemaVersion, r.State)
	}
	if len(r.Checks) != 3 {
		t.Fatalf("%d checks, want 3 (coredns holds no GPU): %+v", len(r.Checks), r.Checks)
	}
	ok := only(t, r, "ml/train-0/trainer")
	if ok.Status != check.OK || ok.Current != "GPUs 0,1 on NUMA 0; CPUs 0-7 on NUMA 0; memory on NUMA 0" {
		t.Errorf("aligned: %s %q", ok.Status, ok.Current)
	}
	bad := only(t, r, "ml/infer-1/server")
	if bad.Status != check.Drift {
		t.Fatalf("misaligned: %s", bad.Status)
	}
	if want := "GPUs 0,1 on NUMA 0; CPUs 64-95 on NUMA 1; memory on NUMA 1"; bad.Current != want {
		t.Errorf("current %q, want %q", bad.Current, want)
	}
	if bad.Expected != "CPUs and memory on NUMA 0" {
		t.Errorf("expected %q", bad.Expected)
	}
	fix := strings.Join(bad.Fix, "\n")
	for _, w := range []string{"topologyManagerPolicy single-numa-node", "topologyManagerScope pod", "cpuManagerPolicy static (full-pcpus-only=true)",
		"memoryManagerPolicy Static", "gpunode k8s kubelet recommend --profile inference", "kubectl delete pod -n ml infer-1"} {
		if !strings.Contains(fix, w) {
			t.Errorf("fix lacks %q:\n%s", w, fix)
		}
	}
	mem := only(t, r, "ml/infer-2/server")
	if mem.Status != check.Drift || mem.Current != "GPU 4 on NUMA 1; CPUs 56-59 on NUMA 1; memory on NUMA 0" {
		t.Errorf("memory misaligned: %s %q", mem.Status, mem.Current)
	}
	if r.Summary.OK != 1 || r.Summary.Drift != 2 {
		t.Errorf("summary %+v", r.Summary)
	}
	if r.Allocatable == nil || r.Allocatable.CPUs != "2-223" {
		t.Errorf("allocatable %+v", r.Allocatable)
	}
	// The GPU's NUMA node comes from the host when the id matches one.
	for _, p := range r.Pods {
		if p.Name == "infer-1" {
			g := p.Containers[0].GPUs[0]
			if g.Index == nil || *g.Index != 0 || g.BDF != "0000:18:00.0" || g.NUMASource != SourceHost {
				t.Errorf("GPU placed %+v", g)
			}
			if a := p.Containers[0].Aligned; a == nil || *a {
				t.Errorf("aligned %v", a)
			}
		}
	}
}

func TestTrainingPodAcrossNodesIsAligned(t *testing.T) {
	n := dgx(t)
	var ids []string
	for i := range 8 {
		ids = append(ids, uuid(i))
	}
	k := &fakeKubelet{Pods: []*api.PodResources{
		pod("ml", "big", &api.ContainerResources{Name: "t",
			Devices: []*api.ContainerDevices{gpus("nvidia.com/gpu", nil, ids...)},
			CpuIds:  append(cpus(0, 55), cpus(56, 111)...), Memory: []*api.ContainerMemory{memory(1<<40, 0, 1)}}),
		pod("ml", "half", &api.ContainerResources{Name: "t",
			Devices: []*api.ContainerDevices{gpus("nvidia.com/gpu", nil, ids...)},
			CpuIds:  cpus(0, 55), Memory: []*api.ContainerMemory{memory(1<<40, 0, 1)}}),
	}}
	r := read(t, n, "", k)
	if c := only(t, r, "ml/big/t"); c.Status != check.OK {
		t.Errorf("8 GPUs on NUMA 0,1 with CPUs on both: %s %q", c.Status, c.Current)
	}
	c := only(t, r, "ml/half/t")
	if c.Status != check.Drift || c.Current != "GPUs 0,1,2,3,4,5,6,7 on NUMA 0,1; CPUs 0-55 on NUMA 0; memory on NUMA 0,1" {
		t.Errorf("8 GPUs, CPUs on one node: %s %q", c.Status, c.Current)
	}
	if fix := strings.Join(c.Fix, "\n"); !strings.Contains(fix, "topologyManagerPolicy restricted") || !strings.Contains(fix, "--profile training") {
		t.Errorf("GPUs on two nodes: the training profile's restricted policy; fix:\n%s", fix)
	}
}

func TestMIGAndTimeSlicedIDs(t *testing.T) {
	n := dgx(t)
	// The fixture's GPUs are not in MIG mode: give GPU 5 a MIG device.
	for i := range n.gpus {
		if n.gpus[i].Index == 5 {
			n.gpus[i].MIG = []string{"MIG-0f2e5b6c-1111-5d2a-9a7e-3c4b5a6d7e8f"}
		}
	}
	k := &fakeKubelet{Pods: []*api.PodResources{
		pod("a", "mig", &api.ContainerResources{Name: "c",
			Devices: []*api.ContainerDevices{gpus("nvidia.com/mig-1g.10gb", nil, "MIG-0f2e5b6c-1111-5d2a-9a7e-3c4b5a6d7e8f")},
			CpuIds:  cpus(60, 61), Memory: []*api.ContainerMemory{memory(1<<30, 1)}}),
		pod("a", "mig-legacy", &api.ContainerResources{Name: "c",
			Devices: []*api.ContainerDevices{gpus("nvidia.com/mig-1g.10gb", nil, "MIG-"+uuid(2)+"/7/0")},
			CpuIds:  cpus(60, 61), Memory: []*api.ContainerMemory{memory(1<<30, 1)}}),
		pod("a", "shared", &api.ContainerResources{Name: "c",
			Devices: []*api.ContainerDevices{gpus("nvidia.com/gpu.shared", nil, uuid(6)+"::3")},
			CpuIds:  cpus(60, 61), Memory: []*api.ContainerMemory{memory(1<<30, 1)}}),
		pod("a", "index", &api.ContainerResources{Name: "c",
			Devices: []*api.ContainerDevices{gpus("nvidia.com/gpu", nil, "7")},
			CpuIds:  cpus(0, 1), Memory: []*api.ContainerMemory{memory(1<<30, 0)}}),
		// An id this node does not have: kubelet's topology places it.
		pod("a", "foreign", &api.ContainerResources{Name: "c",
			Devices: []*api.ContainerDevices{gpus("nvidia.com/gpu", []int64{1}, "GPU-ffffffff-0000-0000-0000-000000000000")},
			CpuIds:  cpus(60, 61), Memory: []*api.ContainerMemory{memory(1<<30, 1)}}),
		// Neither: the check cannot decide.
		pod("a", "lost", &api.ContainerResources{Name: "c",
			Devices: []*api.ContainerDevices{gpus("nvidia.com/gpu", nil, "GPU-ffffffff-0000-0000-0000-000000000001")},
			CpuIds:  cpus(60, 61), Memory: []*api.ContainerMemory{memory(1<<30, 1)}}),
	}}
	r := read(t, n, "", k)
	for _, tc := range []struct{ subject, status, current string }{
		{"a/mig/c", "ok", "GPU 5/MIG-0f2e5b6c-1111-5d2a-9a7e-3c4b5a6d7e8f on NUMA 1; CPUs 60-61 on NUMA 1; memory on NUMA 1"},
		{"a/mig-legacy/c", "drift", "GPU 2/MIG-" + uuid(2) + "/7/0 on NUMA 0; CPUs 60-61 on NUMA 1; memory on NUMA 1"},
		{"a/shared/c", "ok", "GPU 6#3 on NUMA 1; CPUs 60-61 on NUMA 1; memory on NUMA 1"},
		{"a/index/c", "drift", "GPU 7 on NUMA 1; CPUs 0-1 on NUMA 0; memory on NUMA 0"},
		{"a/foreign/c", "ok", "GPU GPU-ffffffff-0000-0000-0000-000000000000 on NUMA 1; CPUs 60-61 on NUMA 1; memory on NUMA 1"},
		{"a/lost/c", "error", "GPU GPU-ffffffff-0000-0000-0000-000000000001 on NUMA ?; CPUs 60-61 on NUMA 1; memory on NUMA 1"},
	} {
		c := only(t, r, tc.subject)
		if string(c.Status) != tc.status || c.Current != tc.current {
			t.Errorf("%s: %s %q, want %s %q", tc.subject, c.Status, c.Current, tc.status, tc.current)
		}
	}
	for _, p := range r.Pods {
		g := p.Containers[0].GPUs[0]
		switch p.Name {
		case "shared":
			if g.Replica == nil || *g.Replica != 3 || g.UUID != uuid(6) {
				t.Errorf("time-sliced replica: %+v", g)
			}
		case "mig":
			if !g.MIG || g.Index == nil || *g.Index != 5 {
				t.Errorf("MIG device: %+v", g)
			}
		case "foreign":
			if g.NUMASource != SourceKubelet || g.Index != nil {
				t.Errorf("foreign id: %+v", g)
			}
		}
	}
}

func TestParseDeviceID(t *testing.T) {
	for _, tc := range []struct {
		in, kind, value string
		replica, index  int
		parent          string
	}{
		{"GPU-abc", IDGPU, "GPU-abc", -1, -1, ""},
		{"GPU-abc::0", IDGPU, "GPU-abc", 0, -1, ""},
		{"GPU-abc::12", IDGPU, "GPU-abc", 12, -1, ""},
		{"GPU-abc::x", IDGPU, "GPU-abc::x", -1, -1, ""},
		{"MIG-1234", IDMIG, "MIG-1234", -1, -1, ""},
		{"MIG-GPU-abc/1/0", IDMIG, "MIG-GPU-abc/1/0", -1, -1, "GPU-abc"},
		{"3", IDIndex, "3", -1, 3, ""},
		{"3:1", IDIndex, "3:1", -1, 3, ""},
		{"03", IDUnknown, "03", -1, -1, ""},
		{"-1", IDUnknown, "-1", -1, -1, ""},
		{"3:x", IDUnknown, "3:x", -1, -1, ""},
		{"65535", IDIndex, "65535", -1, 65535, ""},
		{"65536", IDUnknown, "65536", -1, -1, ""},
		{"", IDUnknown, "", -1, -1, ""},
	} {
		d := ParseDeviceID(tc.in)
		if d.Kind != tc.kind || d.Value != tc.value || d.Replica != tc.replica || d.Index != tc.index || d.ParentUUID != tc.parent {
			t.Errorf("ParseDeviceID(%q) = %+v", tc.in, d)
		}
	}
}

func FuzzParseDeviceID(f *testing.F) {
	for _, s := range []string{"GPU-a::1", "MIG-GPU-a/1/0", "3:1", "::", "MIG-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d := ParseDeviceID(s)
		if d.Kind == IDIndex && (d.Index < 0 || d.Index >= 1<<16) {
			t.Fatalf("%q: index %d", s, d.Index)
		}
		if d.Replica >= 0 && !strings.HasPrefix(s, d.Value+"::") || d.Replica < 0 && d.Value != s {
			t.Fatalf("%q: value %q replica %d", s, d.Value, d.Replica)
		}
		// A second reader of the kinds: by prefix, else a decimal GPU index
		// (optionally ":N" after it).
		var kind string
		switch v := d.Value; {
		case strings.HasPrefix(v, "MIG-"):
			kind = IDMIG
		case strings.HasPrefix(v, "GPU-"):
			kind = IDGPU
		default:
			kind = IDUnknown
			idx, rest, mig := strings.Cut(v, ":")
			n, err := strconv.Atoi(idx)
			_, merr := strconv.Atoi(rest)
			if err == nil && idx == strconv.Itoa(n) && n >= 0 && n < 1<<16 && (!mig || merr == nil) {
				kind = IDIndex
				if d.Index != n {
					t.Fatalf("%q: index %d, want %d", s, d.Index, n)
				}
			}
		}
		if d.Kind != kind {
			t.Fatalf("%q: kind %v, the second reader %v", s, d.Kind, kind)
		}
		// Written back (value, then "::replica"), it reads the same.
		back := d.Value
		if d.Replica >= 0 {
			back += "::" + strconv.Itoa(d.Replica)
		}
		if again := ParseDeviceID(back); again != d {
			t.Fatalf("%q -> %+v -> %q -> %+v", s, d, back, again)
		}
	})
}

func TestSocketMissingIsInfo(t *testing.T) {
	fs, err := hostfs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, err = Read(context.Background(), fs, "", time.Second)
	if !errors.Is(err, ErrNoSocket) {
		t.Fatalf("err %v, want ErrNoSocket", err)
	}
	r := FromError("", err)
	if r.State != StateNotMounted || len(r.Checks) != 1 {
		t.Fatalf("%+v", r)
	}
	c := r.Checks[0]
	if c.ID != "k8s.pod.numa" || c.Status != check.Info || c.Current != "kubelet pod-resources socket not mounted" {
		t.Errorf("missing socket: %+v", c)
	}
	if r.Summary.Failing() {
		t.Errorf("a missing socket fails: %+v", r.Summary)
	}
}

func TestSocketNotASocket(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, DefaultSocket)
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, nil, 0o644)
	fs, _ := hostfs.New(root)
	_, err := Read(context.Background(), fs, "", time.Second)
	if err == nil || errors.Is(err, ErrNoSocket) || !errors.Is(err, hostfs.ErrNotSocket) {
		t.Fatalf("regular file at the socket path: %v", err)
	}
	if c := FromError("", err).Checks[0]; c.Status != check.Error {
		t.Errorf("status %s", c.Status)
	}
}

func TestStaleSocketRefuses(t *testing.T) {
	root := t.TempDir()
	ln := listen(t, root, DefaultSocket)
	ln.Close() // the file stays, nobody listens: kubelet stopped
	fs, _ := hostfs.New(root)
	_, err := Read(context.Background(), fs, "", time.Second)
	if err == nil || errors.Is(err, ErrNoSocket) || !errors.Is(err, unix.ECONNREFUSED) {
		t.Fatalf("stale socket: %v", err)
	}
}

// A server that accepts and never speaks, and one whose calls never return:
// Read gives up at its timeout, not later.
func TestServerThatNeverAnswers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(t *testing.T, root string)
	}{
		{"silent listener", func(t *testing.T, root string) {
			ln := listen(t, root, DefaultSocket)
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					t.Cleanup(func() { c.Close() })
				}
			}()
		}},
		{"blocked call", func(t *testing.T, root string) { serve(t, root, &fakeKubelet{Block: true}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			tc.start(t, root)
			fs, _ := hostfs.New(root)
			const timeout = 200 * time.Millisecond
			start := time.Now()
			_, err := Read(context.Background(), fs, "", timeout)
			took := time.Since(start)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err %v, want a deadline", err)
			}
			if !strings.Contains(err.Error(), "no answer within 200ms") {
				t.Errorf("error text: %v", err)
			}
			if took > timeout+time.Second {
				t.Errorf("took %s with a %s timeout", took, timeout)
			}
			if c := FromError("", err).Checks[0]; c.Status != check.Error {
				t.Errorf("status %s", c.Status)
			}
		})
	}
}

// Cancelling the caller's context ends a read at once.
func TestReadHonoursContext(t *testing.T) {
	root := t.TempDir()
	serve(t, root, &fakeKubelet{Block: true})
	fs, _ := hostfs.New(root)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	if _, err := Read(ctx, fs, "", time.Minute); err == nil {
		t.Fatal("no error after cancel")
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("cancel took %s", took)
	}
}

// A socket link planted in the tree resolves inside the root.
func TestSocketLinkStaysInRoot(t *testing.T) {
	outside := t.TempDir()
	serve(t, outside, &fakeKubelet{})
	root := t.TempDir()
	p := filepath.Join(root, DefaultSocket)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.Symlink(filepath.Join(outside, DefaultSocket), p); err != nil {
		t.Fatal(err)
	}
	fs, _ := hostfs.New(root)
	if _, err := Read(context.Background(), fs, "", time.Second); !errors.Is(err, ErrNoSocket) {
		t.Fatalf("a link to a socket outside the root was followed: %v", err)
	}
}

func TestFromErrorStates(t *testing.T) {
	for _, tc := range []struct {
		err     error
		state   string
		status  check.Status
		current string
	}{
		{fmt.Errorf("x: %w", ErrNoSocket), StateNotMounted, check.Info, "kubelet pod-resources socket not mounted"},
		{ErrCapturedRoot, StateCaptured, check.Info, "captured tree: the kubelet pod-resources socket is read only on a live host"},
		{fmt.Errorf("%w: refused", ErrUnreachable), StateUnreachable, check.Error, "kubelet pod-resources API did not answer"},
		{errors.New("discover topology: no /sys"), StateFailed, check.Error, "pods not checked"},
	} {
		r := FromError("", tc.err)
		c := r.Checks[0]
		if r.State != tc.state || c.Status != tc.status || c.Current != tc.current || r.Socket != DefaultSocket || c.ID != "k8s.pod.numa" {
			t.Errorf("%v: state %s, %s %q", tc.err, r.State, c.Status, c.Current)
		}
	}
}
