package bind

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gpunode/gpunode/internal/hostfs"
)

// ErrPrivilege marks a step that needs a privilege gpunode lacks. The message
// names the capability; nothing is executed.
var ErrPrivilege = errors.New("missing privilege")

// Runtime is what Exec touches.
type Runtime struct {
	// FS is the host filesystem (cgroup writes go through it).
	FS *hostfs.FS
	// Environ is the environment handed to the command (plus bind's
	// variables).
	Environ []string
	// Exec replaces the process (unix.Exec); it returns only on failure.
	Exec func(argv0 string, argv, envv []string) error
}

// Exec applies the plan to the calling OS thread and replaces the process
// with the command: no wrapper process is left behind, and the command
// inherits the thread's CPU affinity, memory policy and scheduling (all are
// per thread and survive execve).
//
// Order: the command is looked up first (a missing command changes
// nothing); then runtime.LockOSThread, joining the cgroup (attaching to a
// cpuset resets the affinity to the cgroup's CPUs, so it comes first),
// set_mempolicy, sched_setaffinity, the scheduling policy, and execve. A step
// that fails stops everything: the command never runs unbound.
func Exec(p *Plan, rt Runtime) error {
	if len(p.Command) == 0 {
		return inputf("no command to run: put it after --, e.g. gpunode bind -- python train.py")
	}
	argv0, err := LookPath(p.Command[0], getenv(rt.Environ, "PATH"))
	if err != nil {
		return err
	}
	// Never unlocked: this thread either becomes the command or the process
	// exits with the error.
	runtime.LockOSThread()
	if p.Cgroup != nil {
		if err := joinCgroup(rt.FS, p.Cgroup); err != nil {
			return err
		}
	}
	if err := SetMemPolicy(p.Mem); err != nil {
		return err
	}
	if err := setAffinity(p.CPUs.List()); err != nil {
		return err
	}
	if p.Sched != nil {
		if err := setSched(*p.Sched); err != nil {
			return err
		}
	}
	return rt.Exec(argv0, p.Command, p.Environ(rt.Environ))
}

// Environ returns base with the plan's variables set (OMP_NUM_THREADS only
// when it was not set already).
func (p *Plan) Environ(base []string) []string {
	out := make([]string, 0, len(base)+len(p.Env))
	set := map[string]string{}
	for _, e := range p.Env {
		if !e.Kept {
			set[e.Name] = e.Value
		}
	}
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; ok {
			continue
		}
		out = append(out, kv)
	}
	for _, e := range p.Env {
		if !e.Kept {
			out = append(out, e.Name+"="+e.Value)
		}
	}
	return out
}

func getenv(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// LookPath finds an executable like the shell does, searching pathEnv (the
// command's PATH, not gpunode's) for names without a slash.
func LookPath(file, pathEnv string) (string, error) {
	check := func(p string) error {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if fi.IsDir() || fi.Mode()&0o111 == 0 {
			return fs.ErrPermission
		}
		return nil
	}
	if strings.Contains(file, "/") {
		if err := check(file); err != nil {
			return "", inputf("command %q: %v", file, unwrap(err))
		}
		return file, nil
	}
	for _, dir := range strings.Split(pathEnv, ":") {
		if dir == "" {
			dir = "."
		}
		p := path.Join(dir, file)
		if check(p) == nil {
			return p, nil
		}
	}
	return "", inputf("command %q not found in PATH", file)
}

func unwrap(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// maxNodes is the node mask size handed to the memory policy calls.
const maxNodes = 1024

// SetMemPolicy sets the calling thread's memory policy (set_mempolicy(2)).
func SetMemPolicy(m MemPolicy) error {
	mode := 0
	switch m.Mode {
	case MemNone, "":
		return nil
	case MemBind:
		mode = unix.MPOL_BIND
	case MemPreferred:
		mode = unix.MPOL_PREFERRED
	case MemInterleave:
		mode = unix.MPOL_INTERLEAVE
	default:
		return inputf("memory policy %q", m.Mode)
	}
	var mask unix.CPUSet // 1024 bits, used as a node mask
	for _, n := range m.Nodes {
		if n < 0 || n >= maxNodes {
			return inputf("NUMA node %d out of range", n)
		}
		mask.Set(n)
	}
	if err := unix.SetMemPolicy(mode, &mask); err != nil {
		return fmt.Errorf("set_mempolicy(%s, nodes %v): %w", m.Mode, m.Nodes, err)
	}
	return nil
}

func setAffinity(cpus []int) error {
	if len(cpus) == 0 {
		return inputf("empty CPU set")
	}
	set := unix.NewCPUSet(cpus[len(cpus)-1] + 1)
	for _, c := range cpus {
		set.Set(c)
	}
	if err := unix.SchedSetaffinityDynamic(0, set); err != nil {
		return fmt.Errorf("sched_setaffinity(%v): %w", cpus, err)
	}
	return nil
}

func setSched(s Sched) error {
	attr := &unix.SchedAttr{Size: unix.SizeofSchedAttr}
	switch s.Policy {
	case SchedNice:
		if err := unix.Setpriority(unix.PRIO_PROCESS, 0, s.Value); err != nil {
			if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
				return fmt.Errorf("%w: --sched %s: a negative nice value needs CAP_SYS_NICE (or RLIMIT_NICE of at least %d): %v", ErrPrivilege, s, 20-s.Value, err)
			}
			return fmt.Errorf("setpriority(%d): %w", s.Value, err)
		}
		return nil
	case SchedOther:
		attr.Policy, attr.Nice = unix.SCHED_NORMAL, int32(s.Value)
	case SchedBatch:
		attr.Policy, attr.Nice = unix.SCHED_BATCH, int32(s.Value)
	case SchedIdle:
		attr.Policy = unix.SCHED_IDLE
	case SchedFIFO:
		attr.Policy, attr.Priority = unix.SCHED_FIFO, uint32(s.Value)
	case SchedRR:
		attr.Policy, attr.Priority = unix.SCHED_RR, uint32(s.Value)
	default:
		return inputf("--sched %s", s)
	}
	if err := unix.SchedSetAttr(0, attr, 0); err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			what := "CAP_SYS_NICE"
			if s.Policy == SchedFIFO || s.Policy == SchedRR {
				what = fmt.Sprintf("CAP_SYS_NICE (or RLIMIT_RTPRIO of at least %d)", s.Value)
			}
			return fmt.Errorf("%w: --sched %s needs %s: %v", ErrPrivilege, s, what, err)
		}
		return fmt.Errorf("sched_setattr(%s): %w", s, err)
	}
	return nil
}

// joinCgroup creates the cgroup v2 cpuset (enabling the cpuset controller in
// the parents' cgroup.subtree_control), writes cpuset.cpus and cpuset.mems,
// and moves the process into it (cgroup.procs).
func joinCgroup(fsys *hostfs.FS, cg *Cgroup) error {
	if fsys == nil {
		return fmt.Errorf("--cgroup: no host filesystem")
	}
	priv := func(p string, err error) error {
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.EROFS) {
			return fmt.Errorf("%w: --cgroup %s needs write access to the cgroup v2 filesystem (%s: %v); run as root or inside a delegated cgroup", ErrPrivilege, cg.Name, p, unwrap(err))
		}
		return fmt.Errorf("--cgroup %s: %s: %w", cg.Name, p, err)
	}
	if _, err := fsys.Stat(DefaultCgFS + "/cgroup.controllers"); err != nil {
		return fmt.Errorf("--cgroup %s: %s is not a cgroup v2 filesystem (no cgroup.controllers): %w", cg.Name, DefaultCgFS, err)
	}
	// Enable cpuset in every ancestor's subtree_control.
	rel := strings.Trim(strings.TrimPrefix(cg.Path, DefaultCgFS), "/")
	parent := DefaultCgFS
	for _, part := range strings.Split(rel, "/") {
		ctl := parent + "/cgroup.subtree_control"
		cur, err := fsys.ReadString(ctl)
		if err != nil {
			return priv(ctl, err)
		}
		if !hasWord(cur, "cpuset") {
			if err := fsys.WriteString(ctl, "+cpuset"); err != nil {
				return priv(ctl, err)
			}
		}
		parent += "/" + part
		if _, err := fsys.Stat(parent); errors.Is(err, fs.ErrNotExist) {
			if _, err := fsys.MkdirAll(parent, 0o755); err != nil {
				return priv(parent, err)
			}
		}
	}
	for _, f := range []struct{ name, val string }{{"cpuset.cpus", cg.CPUs.String()}, {"cpuset.mems", cg.Mems}} {
		p := cg.Path + "/" + f.name
		if err := fsys.WriteString(p, f.val); err != nil {
			return priv(p, err)
		}
	}
	p := cg.Path + "/cgroup.procs"
	if err := fsys.WriteString(p, strconv.Itoa(os.Getpid())); err != nil {
		return priv(p, err)
	}
	return nil
}

func hasWord(s, w string) bool {
	for _, f := range strings.Fields(s) {
		if f == w {
			return true
		}
	}
	return false
}

// MemPolicyState is a thread's memory policy as get_mempolicy(2) reports it.
type MemPolicyState struct {
	// Mode is default, preferred, bind, interleave, local, preferred-many or
	// weighted-interleave; Flags are static/relative/numa-balancing.
	Mode  string   `json:"mode"`
	Flags []string `json:"flags,omitempty"`
	Nodes []int    `json:"nodes"`
}

// GetMemPolicy reads the calling thread's memory policy. x/sys/unix has no
// get_mempolicy wrapper, so this is the raw system call.
func GetMemPolicy() (MemPolicyState, error) {
	var mode int32
	var mask [maxNodes / 64]uint64
	_, _, e := unix.Syscall6(unix.SYS_GET_MEMPOLICY, uintptr(unsafe.Pointer(&mode)), uintptr(unsafe.Pointer(&mask[0])), maxNodes+1, 0, 0, 0)
	if e != 0 {
		return MemPolicyState{}, fmt.Errorf("get_mempolicy: %w", e)
	}
	return decodeMemPolicy(int(mode), mask[:]), nil
}

// decodeMemPolicy reads get_mempolicy(2)'s mode word (mode and flag bits)
// and node mask (64 nodes a word).
func decodeMemPolicy(m int, mask []uint64) MemPolicyState {
	st := MemPolicyState{Nodes: []int{}}
	const (
		fStatic   = 1 << 15
		fRelative = 1 << 14
		fBalance  = 1 << 13
	)
	for _, f := range []struct {
		bit  int
		name string
	}{{fStatic, "static"}, {fRelative, "relative"}, {fBalance, "numa-balancing"}} {
		if m&f.bit != 0 {
			st.Flags = append(st.Flags, f.name)
		}
	}
	st.Mode = modeName(m &^ 0xe000)
	for w, word := range mask {
		for b := 0; b < 64; b++ {
			if word&(1<<b) != 0 {
				st.Nodes = append(st.Nodes, w*64+b)
			}
		}
	}
	return st
}

func modeName(m int) string {
	switch m {
	case unix.MPOL_DEFAULT:
		return "default"
	case unix.MPOL_PREFERRED:
		return "preferred"
	case unix.MPOL_BIND:
		return "bind"
	case unix.MPOL_INTERLEAVE:
		return "interleave"
	case unix.MPOL_LOCAL:
		return "local"
	case unix.MPOL_PREFERRED_MANY:
		return "preferred-many"
	case unix.MPOL_WEIGHTED_INTERLEAVE:
		return "weighted-interleave"
	}
	return fmt.Sprintf("mode-%d", m)
}

// Getcpu returns the CPU and NUMA node the calling thread runs on.
func Getcpu() (cpu, node int, err error) {
	var c, n uint32
	_, _, e := unix.RawSyscall(unix.SYS_GETCPU, uintptr(unsafe.Pointer(&c)), uintptr(unsafe.Pointer(&n)), 0)
	if e != 0 {
		return 0, 0, fmt.Errorf("getcpu: %w", e)
	}
	return int(c), int(n), nil
}
