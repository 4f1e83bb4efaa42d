package container_test

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/bind"
	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/container"
	"github.com/gpunode/gpunode/internal/goldenfile"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/testhost"
	"github.com/gpunode/gpunode/internal/topo"
)

var update = flag.Bool("update", false, "rewrite golden files")

func source(t testing.TB, host string, o container.Options) container.Source {
	t.Helper()
	fs, err := hostfs.New(testhost.Path(t, host))
	if err != nil {
		t.Fatal(err)
	}
	b, err := gpu.Open(context.Background(), gpu.Options{Kind: gpu.KindAuto, Host: fs})
	if err != nil {
		t.Fatal(err)
	}
	return container.Source{FS: fs, Backend: b, Options: o}
}

func byKey(cs []check.Check) map[string]check.Check {
	m := map[string]check.Check{}
	for _, c := range cs {
		m[c.Key()] = c
	}
	return m
}

var goldenCases = []struct {
	name, host string
	opt        container.Options
}{
	{"dgx-h100", "dgx-h100", container.Options{CUDA: "12.8", Data: []string{"/data", "/checkpoints", "/workspace"}}},
	{"dgx-h100-image", "dgx-h100", container.Options{ImageConfig: "/root/image-pytorch.json", ContainerSpec: "/root/inspect-train.json", Data: []string{"/data", "/checkpoints", "/workspace"}}},
	{"dgx-h100-pod", "dgx-h100", container.Options{CUDA: "13.0", ContainerSpec: "/root/pod-train.yaml"}},
	{"downgraded", "downgraded", container.Options{CUDA: "13.0", Data: []string{"/home/data", "/var/lib/docker/overlay2/77c4/merged/workspace"}}},
	{"amd-8numa", "amd-8numa", container.Options{}},
	{"vm-2vcpu", "vm-2vcpu", container.Options{}},
}

func TestCheckGoldens(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := container.Run(context.Background(), source(t, tc.host, tc.opt))
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range r.Checks {
				if c.Layer != container.Layer || !c.Status.Valid() {
					t.Errorf("%s: layer %q status %q", c.Key(), c.Layer, c.Status)
				}
			}
			js, _ := json.MarshalIndent(r, "", "  ")
			goldenfile.Check(t, filepath.Join("testdata", "golden", "check-"+tc.name+".json"), append(js, '\n'), *update)
			checkReportProperties(t, r)
		})
	}
}

func TestCheckVerdicts(t *testing.T) {
	ctx := context.Background()
	run := func(host string, o container.Options) map[string]check.Check {
		cs, err := source(t, host, o).Checks(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return byKey(cs)
	}
	dgx := run("dgx-h100", container.Options{CUDA: "12.8", Data: []string{"/data", "/workspace"}})
	for _, id := range []string{container.CheckToolkit, container.CheckDocker, container.CheckContainerd, container.CheckCDI, container.CheckCUDACompat} {
		if dgx[id].Status != check.OK {
			t.Errorf("dgx %s = %s (%s), want ok", id, dgx[id].Status, dgx[id].Detail)
		}
	}
	if dgx[container.CheckCRIO].Status != check.Absent {
		t.Errorf("dgx crio %s, want absent", dgx[container.CheckCRIO].Status)
	}
	if c := dgx["container.overlay//data"]; c.Status != check.OK || !strings.Contains(c.Current, "xfs") {
		t.Errorf("/data: %+v", c)
	}
	if c := dgx["container.overlay//workspace"]; c.Status != check.Drift || len(c.Fix) == 0 {
		t.Errorf("/workspace: %+v", c)
	}

	dg := run("downgraded", container.Options{CUDA: "13.0"})
	want := map[string]string{
		container.CheckToolkit:    "nvidia-ctk",
		container.CheckDocker:     "registers no nvidia runtime",
		container.CheckContainerd: "/usr/local/nvidia/toolkit/nvidia-container-runtime",
		container.CheckCDI:        "needs /dev/nvidia2",
		container.CheckCUDACompat: "",
	}
	for id, sub := range want {
		c := dg[id]
		if c.Status != check.Drift || !strings.Contains(c.Detail+c.Current, sub) {
			t.Errorf("downgraded %s = %s %q %q, want drift naming %q", id, c.Status, c.Current, c.Detail, sub)
		}
	}
	if c := dg[container.CheckCRIO]; c.Status != check.OK || !strings.Contains(c.Current, "/usr/bin/nvidia-container-runtime") {
		t.Errorf("downgraded crio drop-ins: %+v", c)
	}

	// Malformed files: errors naming file and line; the rest still runs.
	bad := run("amd-8numa", container.Options{})
	for id, sub := range map[string]string{
		container.CheckDocker:     "/etc/docker/daemon.json:7:2:",
		container.CheckContainerd: "/etc/containerd/config.toml:4:",
		container.CheckCDI:        "/etc/cdi/nvidia.yaml:8:",
	} {
		if c := bad[id]; c.Status != check.Error || !strings.Contains(c.Detail, sub) {
			t.Errorf("amd-8numa %s = %s %q, want error with %q", id, c.Status, c.Detail, sub)
		}
	}
	if c := bad[container.CheckToolkit]; c.Status != check.Drift {
		t.Errorf("amd-8numa toolkit %s: the other checks must still run", c.Status)
	}
}

func TestContainerSpecs(t *testing.T) {
	cs, err := source(t, "dgx-h100", container.Options{ContainerSpec: "/root/inspect-train.json", Data: []string{"/data/x", "/checkpoints", "/workspace"}}).Checks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m := byKey(cs)
	for k, st := range map[string]check.Status{"container.overlay/train:/data/x": check.OK, "container.overlay/train:/checkpoints": check.OK, "container.overlay/train:/workspace": check.Drift} {
		if m[k].Status != st {
			t.Errorf("%s = %s (%s), want %s", k, m[k].Status, m[k].Current, st)
		}
	}
	pod, err := container.ParseContainerSpec("pod.yaml", []byte("kind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    volumeMounts:\n    - {name: d, mountPath: /data}\n  volumes:\n  - name: d\n    hostPath: {path: /mnt/overlaydir}\n"))
	if err != nil || len(pod) != 1 || len(pod[0].Mounts) != 1 || pod[0].Mounts[0].Kind != "hostPath" || pod[0].Mounts[0].Source != "/mnt/overlaydir" {
		t.Fatalf("pod: %+v %v", pod, err)
	}
}

// overlayHostPod is a Pod whose /data volume is a hostPath inside the
// downgraded host's container overlay (its ext4 root holds a Docker
// container's overlay mount).
const overlayHostPod = "kind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    volumeMounts:\n    - {name: d, mountPath: /data}\n  volumes:\n  - name: d\n    hostPath: {path: /var/lib/docker/overlay2/77c4/merged/data}\n"

// TestContainerSpecHostOnOverlay: a bind whose host side is itself on
// overlayfs is drift, and its fix is advice (a "# ..." comment naming the
// host path), as every overlay fix is.
func TestContainerSpecHostOnOverlay(t *testing.T) {
	root := testhost.Copy(t, "downgraded")
	if err := os.MkdirAll(filepath.Join(root, "root"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "root", "pod.yaml"), []byte(overlayHostPod), 0o644); err != nil {
		t.Fatal(err)
	}
	fs, err := hostfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	b, err := gpu.Open(context.Background(), gpu.Options{Kind: gpu.KindAuto, Host: fs})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := container.Source{FS: fs, Backend: b, Options: container.Options{ContainerSpec: "/root/pod.yaml", Data: []string{"/data", "/scratch"}}}.Checks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m := byKey(cs)
	c := m["container.overlay/p/c:/data"]
	want := "# bind-mount a path from a real filesystem (ext4, xfs, NFS, Lustre) instead of /var/lib/docker/overlay2/77c4/merged/data"
	if c.Status != check.Drift || !strings.Contains(c.Current, "(overlay)") || len(c.Fix) != 1 || c.Fix[0] != want {
		t.Errorf("/data from a hostPath on overlay: %s %q fix %q, want drift with %q", c.Status, c.Current, c.Fix, want)
	}
	c = m["container.overlay/p/c:/scratch"]
	if c.Status != check.Drift || len(c.Fix) != 1 || !strings.HasPrefix(c.Fix[0], "# mount the data instead of copying it into the image") {
		t.Errorf("/scratch on the container's root: %s %q fix %q, want drift with advice as a comment", c.Status, c.Current, c.Fix)
	}
}

func TestImageCUDA(t *testing.T) {
	for in, want := range map[string]string{
		`[{"Config":{"Env":["CUDA_VERSION=12.8.0.038"]}}]`:                              "12.8.0",
		`{"config":{"Env":["NVIDIA_REQUIRE_CUDA=cuda>=12.4 brand=tesla,driver>=470"]}}`: "12.4",
		`{"config":{"Env":["PATH=/bin"]}}`:                                              "",
	} {
		got, err := container.ImageCUDA("img.json", []byte(in))
		if err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", in, got, err, want)
		}
	}
	if _, err := container.ImageCUDA("img.json", []byte("{\n  \"config\": [\n")); err == nil || !strings.Contains(err.Error(), "img.json:") {
		t.Errorf("malformed image config: %v", err)
	}
}

func TestParseDriverVersion(t *testing.T) {
	for in, want := range map[string]string{
		"NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n":              "550.54.15",
		"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build  (dvs-builder@U16)\n": "580.65.06",
	} {
		if got, err := container.ParseDriverVersion(in); err != nil || got != want {
			t.Errorf("%q: %q %v", in, got, err)
		}
	}
	if _, err := container.ParseDriverVersion("garbage"); err == nil {
		t.Error("garbage parsed")
	}
}

func flagsFor(t *testing.T, host string, req container.FlagsRequest) (*container.Flags, error) {
	t.Helper()
	fs, err := hostfs.New(testhost.Path(t, host))
	if err != nil {
		t.Fatal(err)
	}
	tp, err := topo.Discover(context.Background(), fs)
	if err != nil {
		t.Fatal(err)
	}
	return container.ComputeFlags(context.Background(), fs, tp, req, bind.Sources{})
}

func TestFlags(t *testing.T) {
	f, err := flagsFor(t, "dgx-h100", container.FlagsRequest{GPUs: []string{"0", "1"}, Runtime: "docker"})
	if err != nil {
		t.Fatal(err)
	}
	want := `docker run --gpus '"device=0,1"' --cpuset-cpus 0-55,112-167 --cpuset-mems 0 --ulimit memlock=-1:-1 --shm-size 16g`
	if f.Line != want || f.SchemaVersion != "gpunode.container.flags/v1" {
		t.Errorf("line %q\nwant %q", f.Line, want)
	}
	// Two nodes, CDI, RDMA: the verbs devices of node 1's NICs.
	f, err = flagsFor(t, "dgx-h100", container.FlagsRequest{GPUs: []string{"3", "4"}, Runtime: "docker", CDI: true, RDMA: true, IPCHost: true})
	if err != nil {
		t.Fatal(err)
	}
	line := f.Line
	for _, sub := range []string{"--device nvidia.com/gpu=3 --device nvidia.com/gpu=4", "--cpuset-mems 0,1", "--ipc=host", "/dev/infiniband/rdma_cm", "--network=host"} {
		if !strings.Contains(line, sub) {
			t.Errorf("%q lacks %q", line, sub)
		}
	}
	if strings.Contains(line, "--shm-size") {
		t.Errorf("--ipc-host and --shm-size both: %q", line)
	}
	// Isolated CPUs are left out, as gpunode bind does.
	f, err = flagsFor(t, "downgraded", container.FlagsRequest{GPUs: []string{"0"}, Runtime: "podman"})
	if err != nil || f.CPUs.String() != "0-11,16-27" || !strings.Contains(f.Line, "--device nvidia.com/gpu=0") {
		t.Errorf("downgraded podman: %+v %v", f, err)
	}
	f, err = flagsFor(t, "dgx-h100", container.FlagsRequest{GPUs: []string{"2"}, Runtime: "apptainer"})
	if err != nil || f.Env["APPTAINERENV_CUDA_VISIBLE_DEVICES"] != "2" || f.Args[0] != "--nv" {
		t.Errorf("apptainer: %+v %v", f, err)
	}
	f, err = flagsFor(t, "dgx-h100", container.FlagsRequest{GPUs: []string{"2"}, Runtime: "enroot"})
	if err != nil || f.Env["ENROOT_RESTRICT_DEV"] != "yes" || f.Env["NVIDIA_VISIBLE_DEVICES"] != "2" {
		t.Errorf("enroot: %+v %v", f, err)
	}
	f, err = flagsFor(t, "dgx-h100", container.FlagsRequest{GPUs: []string{"5"}, Runtime: "kubernetes", ShmSize: "32g"})
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(f.Pod)
	for _, sub := range []string{`"sizeLimit":"32Gi"`, `"medium":"Memory"`, `"nvidia.com/gpu":1`, `"cpu":"112"`} {
		if !strings.Contains(string(js), sub) {
			t.Errorf("pod %s lacks %s", js, sub)
		}
	}
	for _, req := range []container.FlagsRequest{
		{GPUs: []string{"8"}, Runtime: "docker"},
		{GPUs: []string{"0"}, Runtime: "lxc"},
		{Runtime: "docker"},
		{GPUs: []string{"0"}, Runtime: "docker", ShmSize: "lots"},
		{GPUs: []string{"0", "1"}, Runtime: "docker", MIG: "MIG-x"},
	} {
		if _, err := flagsFor(t, "dgx-h100", req); err == nil || !errorsIsInput(err) {
			t.Errorf("%+v: %v, want an input error", req, err)
		}
	}
}

func errorsIsInput(err error) bool { return err != nil && isInput(err) }

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{"a-b": "a-b", `"device=0,1"`: `'"device=0,1"'`, "it's": `'it'\''s'`, "": "''"} {
		if got := container.ShellQuote(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

func BenchmarkCheckDGX(b *testing.B) {
	s := source(b, "dgx-h100", container.Options{CUDA: "12.8", Data: []string{"/data", "/workspace"}})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Checks(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(m.Run())
}

// A MIG GPU needs its MIG devices named; the spec names only whole GPUs
// (written before MIG was enabled).
func TestCDIMIGDevices(t *testing.T) {
	root, err := testhost.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := testhost.CopyTree(filepath.Join(root, "internal", "gpu", "testdata", "hosts", "a100-mig"), dir); err != nil {
		t.Fatal(err)
	}
	spec := "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: all\n  containerEdits:\n    env: [NVIDIA_VISIBLE_DEVICES=void]\n- name: \"0\"\n  containerEdits:\n    env: [NVIDIA_VISIBLE_DEVICES=void]\n- name: \"1\"\n  containerEdits:\n    env: [NVIDIA_VISIBLE_DEVICES=void]\n- name: MIG-1a2b3c4d-0003-5e6f-8a9b-000000000003\n  containerEdits:\n    env: [NVIDIA_VISIBLE_DEVICES=void]\n"
	if err := os.MkdirAll(filepath.Join(dir, "etc", "cdi"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "etc", "cdi", "nvidia.yaml"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	fs, err := hostfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := gpu.Open(context.Background(), gpu.Options{Kind: gpu.KindFake, Host: fs})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := container.Source{FS: fs, Backend: b}.Checks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := byKey(cs)[container.CheckCDI]
	t.Log(c.Detail)
	if c.Status != check.Drift || !strings.Contains(c.Detail, "MIG 0:0") || strings.Contains(c.Detail, "MIG 0:1") || strings.Contains(c.Detail, "GPU 1,") {
		t.Errorf("cdi on a MIG host: %s %q", c.Status, c.Detail)
	}
}
