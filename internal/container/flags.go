package container

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/bind"
	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/topo"
)

// FlagsSchemaVersion is the schema of 'gpunode container flags'.
const FlagsSchemaVersion = "gpunode.container.flags/v1"

// Runtimes 'container flags' knows.
const (
	RuntimeDocker     = "docker"
	RuntimePodman     = "podman"
	RuntimeApptainer  = "apptainer"
	RuntimeEnroot     = "enroot"
	RuntimeKubernetes = "kubernetes"
)

// Runtimes lists the runtimes in help order.
func Runtimes() []string {
	return []string{RuntimeDocker, RuntimePodman, RuntimeApptainer, RuntimeEnroot, RuntimeKubernetes}
}

// ErrInput marks errors caused by the request (exit 2); it is bind's, so
// that a GPU bind cannot resolve is the same kind of error.
var ErrInput = bind.ErrInput

func inputf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInput, fmt.Sprintf(format, args...))
}

// DefaultShmSize is the /dev/shm size given when --shm-size is not.
const DefaultShmSize = "16g"

// FlagsRequest is what the user asked for.
type FlagsRequest struct {
	// GPUs are GPU selectors as gpunode bind takes them (index, UUID,
	// PCI address); empty with Node set: no GPU, only placement.
	GPUs    []string
	Node    *int
	Runtime string
	CDI     bool
	// MIG is a MIG device UUID given to the container instead of the
	// whole GPU (its parent is GPUs[0]).
	MIG     string
	RDMA    bool
	IPCHost bool
	ShmSize string
}

// Flags is the model of 'gpunode container flags'.
type Flags struct {
	SchemaVersion string            `json:"schemaVersion"`
	Runtime       string            `json:"runtime"`
	GPUs          []FlagsGPU        `json:"gpus,omitempty"`
	NUMANodes     []int             `json:"numaNodes"`
	CPUs          topo.CPUList      `json:"cpus"`
	Mems          string            `json:"mems"`
	Args          []string          `json:"args"`
	Env           map[string]string `json:"env"`
	// Pod is the pod spec fragment (runtime kubernetes).
	Pod      map[string]any `json:"pod,omitempty"`
	Line     string         `json:"line"`
	Warnings []string       `json:"warnings,omitempty"`
}

// FlagsGPU is one GPU given to the container.
type FlagsGPU struct {
	Index    int    `json:"index"`
	BDF      string `json:"bdf"`
	UUID     string `json:"uuid,omitempty"`
	NUMANode int    `json:"numaNode"`
}

// ComputeFlags resolves each GPU with bind's rules (its NUMA node; the
// node's whole cores, isolated and nohz_full CPUs left out) and writes the
// runtime's flags. src is bind's optional driver layer.
func ComputeFlags(ctx context.Context, fs *hostfs.FS, t *topo.Topology, req FlagsRequest, src bind.Sources) (*Flags, error) {
	if !validRuntime(req.Runtime) {
		return nil, inputf("--runtime %q: want one of %s", req.Runtime, strings.Join(Runtimes(), ", "))
	}
	if len(req.GPUs) == 0 && req.Node == nil {
		return nil, inputf("--gpu: give one or more GPUs (or --node N for placement only)")
	}
	if len(req.GPUs) > 0 && req.Node != nil {
		return nil, inputf("--gpu and --node exclude each other")
	}
	if req.MIG != "" && (len(req.GPUs) != 1 || !strings.HasPrefix(req.MIG, "MIG-")) {
		return nil, inputf("--mig %q: want one MIG- UUID with exactly one --gpu (its parent)", req.MIG)
	}
	shm := req.ShmSize
	if shm == "" {
		shm = DefaultShmSize
	}
	shmBytes, err := ParseSize(shm)
	if err != nil {
		return nil, inputf("--shm-size: %v", err)
	}
	f := &Flags{SchemaVersion: FlagsSchemaVersion, Runtime: req.Runtime, Env: map[string]string{}, Args: []string{}, NUMANodes: []int{}}
	cpus := cpuset.New()
	nodes := map[int]bool{}
	reqs := []bind.Request{}
	if req.Node != nil {
		reqs = append(reqs, bind.Request{Node: req.Node, Mem: bind.MemBind})
	}
	seen := map[string]bool{}
	for _, g := range req.GPUs {
		g = strings.TrimSpace(g)
		if g == "" || seen[g] {
			return nil, inputf("--gpu %q: empty or repeated", g)
		}
		seen[g] = true
		reqs = append(reqs, bind.Request{GPU: g, Mem: bind.MemBind})
	}
	for _, r := range reqs {
		p, err := bind.Resolve(ctx, t, r, src)
		if err != nil {
			return nil, err
		}
		cpus = cpus.Union(p.CPUs.CPUSet)
		for _, n := range p.Mem.Nodes {
			nodes[n] = true
		}
		f.Warnings = append(f.Warnings, p.Warnings...)
		if p.Target.Kind == "gpu" && p.Target.Index != nil {
			f.GPUs = append(f.GPUs, FlagsGPU{Index: *p.Target.Index, BDF: p.Target.BDF, UUID: p.Target.UUID, NUMANode: p.NUMANode})
		}
	}
	for n := range nodes {
		f.NUMANodes = append(f.NUMANodes, n)
	}
	sort.Ints(f.NUMANodes)
	f.CPUs = topo.NewCPUList(cpus)
	f.Mems = intList(f.NUMANodes)
	devs := deviceNames(f.GPUs, req.MIG)
	var rdma []string
	if req.RDMA {
		var err error
		if rdma, err = rdmaDevices(fs, t, f.NUMANodes); err != nil {
			return nil, err
		}
		if len(rdma) == 0 {
			f.Warnings = append(f.Warnings, fmt.Sprintf("--rdma: no RDMA NIC on NUMA node(s) %s", f.Mems))
		}
	}
	switch req.Runtime {
	case RuntimeDocker, RuntimePodman:
		cdi := req.CDI || req.Runtime == RuntimePodman
		if len(devs) > 0 {
			if cdi {
				for _, d := range devs {
					f.Args = append(f.Args, "--device", "nvidia.com/gpu="+d)
				}
			} else {
				f.Args = append(f.Args, "--gpus", gpusValue(devs))
			}
		}
		f.Args = append(f.Args, "--cpuset-cpus", cpus.String(), "--cpuset-mems", f.Mems, "--ulimit", "memlock=-1:-1")
		if req.IPCHost {
			f.Args = append(f.Args, "--ipc=host")
		} else {
			f.Args = append(f.Args, "--shm-size", shm)
		}
		if req.RDMA {
			for _, d := range rdma {
				f.Args = append(f.Args, "--device", d)
			}
			f.Args = append(f.Args, "--network=host", "--cap-add=IPC_LOCK")
		}
	case RuntimeApptainer:
		if len(devs) > 0 {
			if req.CDI {
				f.Args = append(f.Args, "--nvccli", "--contain")
				f.Env["NVIDIA_VISIBLE_DEVICES"] = strings.Join(devs, ",")
			} else {
				f.Args = append(f.Args, "--nv")
				f.Env["APPTAINERENV_CUDA_VISIBLE_DEVICES"] = strings.Join(devs, ",")
			}
		}
		f.Warnings = append(f.Warnings, "apptainer has no cpuset flags: start it under 'gpunode bind --gpu G --' (or numactl) for the CPUs "+cpus.String())
	case RuntimeEnroot:
		if len(devs) > 0 {
			f.Args = append(f.Args, "--env", "NVIDIA_VISIBLE_DEVICES="+strings.Join(devs, ","))
			f.Env["NVIDIA_VISIBLE_DEVICES"] = strings.Join(devs, ",")
		}
		f.Env["ENROOT_RESTRICT_DEV"] = "yes"
		f.Warnings = append(f.Warnings, "enroot has no cpuset flags: start it under 'gpunode bind --gpu G --' for the CPUs "+cpus.String())
	case RuntimeKubernetes:
		f.Pod = podFragment(len(devs), req.MIG != "", cpus.Size(), quantity(shmBytes), req.IPCHost, req.RDMA)
	}
	f.Line = shellLine(f)
	return f, nil
}

func validRuntime(r string) bool {
	for _, x := range Runtimes() {
		if r == x {
			return true
		}
	}
	return false
}

// deviceNames are the names the runtimes take: the MIG UUID, else the
// GPUs' indexes (nvidia-smi order, as --gpus and CDI's index names use).
func deviceNames(gs []FlagsGPU, mig string) []string {
	if mig != "" {
		return []string{mig}
	}
	out := make([]string, 0, len(gs))
	for _, g := range gs {
		out = append(out, strconv.Itoa(g.Index))
	}
	return out
}

// gpusValue is docker's --gpus value: device=0 for one, "device=0,1"
// (with the quotes docker's CSV parser needs) for several.
func gpusValue(devs []string) string {
	if len(devs) == 1 {
		return "device=" + devs[0]
	}
	return `"device=` + strings.Join(devs, ",") + `"`
}

func intList(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, ",")
}

// rdmaDevices lists /dev/infiniband/uverbsN of the RDMA NICs on nodes
// (from /sys/class/infiniband_verbs/uverbsN/ibdev), and rdma_cm.
func rdmaDevices(fs *hostfs.FS, t *topo.Topology, nodes []int) ([]string, error) {
	on := map[int]bool{}
	for _, n := range nodes {
		on[n] = true
	}
	want := map[string]bool{}
	for _, nic := range t.NICs {
		if on[nic.NUMANode] {
			for _, ib := range nic.IBDevs {
				want[ib] = true
			}
		}
	}
	if len(want) == 0 {
		return nil, nil
	}
	const class = "/sys/class/infiniband_verbs"
	names, err := fs.ReadDirNames(class)
	if err != nil {
		return nil, nil
	}
	var out []string
	for i, n := range names {
		if i >= 4096 || !strings.HasPrefix(n, "uverbs") {
			continue
		}
		ib, err := fs.ReadString(class + "/" + n + "/ibdev")
		if err == nil && want[strings.TrimSpace(ib)] {
			out = append(out, "/dev/infiniband/"+n)
		}
	}
	if len(out) > 0 {
		num := func(p string) int {
			n, _ := strconv.Atoi(strings.TrimPrefix(p, "/dev/infiniband/uverbs"))
			return n
		}
		sort.Slice(out, func(i, j int) bool { return num(out[i]) < num(out[j]) })
		out = append(out, "/dev/infiniband/rdma_cm")
	}
	return out, nil
}

// quantity writes a size as a Kubernetes quantity (16Gi, 512Mi, bytes).
func quantity(n int64) string {
	switch {
	case n > 0 && n%(1<<30) == 0:
		return strconv.FormatInt(n>>30, 10) + "Gi"
	case n > 0 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + "Mi"
	case n > 0 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + "Ki"
	}
	return strconv.FormatInt(n, 10)
}

func podFragment(gpus int, mig bool, ncpu int, shm string, ipcHost, rdma bool) map[string]any {
	res := "nvidia.com/gpu"
	if mig {
		res = "nvidia.com/mig-<profile>"
	}
	limits := map[string]any{"cpu": strconv.Itoa(ncpu), "memory": "<set: equal to requests>"}
	if gpus > 0 {
		limits[res] = gpus
	}
	container := map[string]any{
		"resources":       map[string]any{"requests": limits, "limits": limits},
		"securityContext": map[string]any{"capabilities": map[string]any{"add": []string{"IPC_LOCK"}}},
	}
	spec := map[string]any{"containers": []any{container}}
	if !ipcHost {
		container["volumeMounts"] = []any{map[string]any{"name": "dshm", "mountPath": "/dev/shm"}}
		spec["volumes"] = []any{map[string]any{"name": "dshm", "emptyDir": map[string]any{"medium": "Memory", "sizeLimit": shm}}}
	} else {
		spec["hostIPC"] = true
	}
	if rdma {
		spec["hostNetwork"] = true
		spec["dnsPolicy"] = "ClusterFirstWithHostNet"
	}
	return map[string]any{"spec": spec}
}

// shellLine is the flags as one line a shell takes.
func shellLine(f *Flags) string {
	if f.Runtime == RuntimeKubernetes {
		return "# kubernetes: apply the pod fragment (-o yaml); CPUs " + f.CPUs.String() + " come from the kubelet's static CPU manager"
	}
	return CommandLine(f, RunArgv(f, nil))
}

// ShellQuote quotes s for a POSIX shell when it needs it.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// RunArgv is the runtime's argv for 'container run': the runtime, its run
// verb, the flags, then the user's arguments.
func RunArgv(f *Flags, user []string) []string {
	var argv []string
	switch f.Runtime {
	case RuntimeApptainer:
		argv = []string{"apptainer", "exec"}
	case RuntimeEnroot:
		argv = []string{"enroot", "start"}
	default:
		argv = []string{f.Runtime, "run"}
	}
	argv = append(argv, f.Args...)
	return append(argv, user...)
}

// CommandLine is argv with f's environment as one shell line.
func CommandLine(f *Flags, argv []string) string {
	var parts []string
	keys := make([]string, 0, len(f.Env))
	for k := range f.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts = append(parts, k+"="+ShellQuote(f.Env[k]))
	}
	for _, a := range argv {
		parts = append(parts, ShellQuote(a))
	}
	return strings.Join(parts, " ")
}
