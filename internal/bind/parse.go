package bind

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/sysfmt"
)

// ErrInput marks errors caused by the caller's flags or environment
// (gpunode exits 2 on them and runs nothing).
var ErrInput = errors.New("bad input")

func inputf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInput, fmt.Sprintf(format, args...))
}

// Memory policy modes (--mem).
const (
	MemPreferred  = "preferred"
	MemBind       = "bind"
	MemInterleave = "interleave"
	MemNone       = "none"
)

// ParseMem validates a --mem value.
func ParseMem(s string) (string, error) {
	switch m := strings.ToLower(strings.TrimSpace(s)); m {
	case "", MemPreferred:
		return MemPreferred, nil
	case MemBind, MemInterleave, MemNone:
		return m, nil
	default:
		return "", inputf("--mem %q: want bind, preferred, interleave or none", s)
	}
}

// Scheduling policies (--sched).
const (
	SchedNice  = "nice"
	SchedFIFO  = "fifo"
	SchedRR    = "rr"
	SchedOther = "other"
	SchedBatch = "batch"
	SchedIdle  = "idle"
)

// Sched is a scheduling request: a nice value for the CFS policies, a
// real-time priority for fifo and rr.
type Sched struct {
	Policy string `json:"policy"`
	// Value is the nice value (nice, other, batch) or the real-time priority
	// (fifo, rr).
	Value int `json:"value"`
}

func (s Sched) String() string {
	if s.Policy == SchedIdle {
		return s.Policy
	}
	return fmt.Sprintf("%s:%d", s.Policy, s.Value)
}

// ParseSched parses --sched: "nice:-5", "fifo:10", "rr:10", "other",
// "batch:5", "idle". Nice values lie in -20..19, real-time priorities in
// 1..99.
func ParseSched(s string) (*Sched, error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return nil, nil
	}
	pol, val, hasVal := strings.Cut(strings.ToLower(in), ":")
	out := &Sched{Policy: pol}
	if hasVal {
		n, err := strconv.Atoi(strings.TrimSpace(val))
		if err != nil {
			return nil, inputf("--sched %q: %q is not a number", s, val)
		}
		out.Value = n
	}
	switch pol {
	case SchedNice, SchedOther, SchedBatch:
		if pol == SchedNice && !hasVal {
			return nil, inputf("--sched %q: want nice:<-20..19>", s)
		}
		if out.Value < -20 || out.Value > 19 {
			return nil, inputf("--sched %q: nice value %d outside -20..19", s, out.Value)
		}
	case SchedFIFO, SchedRR:
		if !hasVal {
			return nil, inputf("--sched %q: want %s:<1..99> (a real-time priority)", s, pol)
		}
		if out.Value < 1 || out.Value > 99 {
			return nil, inputf("--sched %q: real-time priority %d outside 1..99", s, out.Value)
		}
	case SchedIdle:
		if hasVal {
			return nil, inputf("--sched %q: idle takes no value", s)
		}
	default:
		return nil, inputf("--sched %q: want nice:N, fifo:N, rr:N, other, batch or idle", s)
	}
	return out, nil
}

// ParseCPUs parses a user CPU list flag (--exclude-cpus, --avoid,
// --rank-cpus): a kernel cpulist ("0-3,8"), empty for none.
func ParseCPUs(flag, s string) (cpuset.CPUSet, error) {
	set, err := sysfmt.ParseCPUList(s)
	if err != nil {
		return cpuset.New(), inputf("%s: %v", flag, err)
	}
	return set, nil
}

// VisibleDevice is one entry of CUDA_VISIBLE_DEVICES.
type VisibleDevice struct {
	// Index is the physical GPU index (-1 for UUID entries).
	Index int
	// UUID is a GPU UUID or unique prefix ("GPU-8f6c..."), or a MIG device
	// ("MIG-...").
	UUID string
}

// ParseCUDAVisibleDevices parses CUDA_VISIBLE_DEVICES ("0,2,3",
// "GPU-8f6c...,GPU-1d2e..."). As in CUDA, entries are comma-separated and
// the list may mix indices and UUIDs; an entry that is neither is an error
// here (CUDA would silently hide it and every entry after it).
func ParseCUDAVisibleDevices(s string) ([]VisibleDevice, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return []VisibleDevice{}, nil
	}
	var out []VisibleDevice
	for i, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		switch {
		case e == "":
			return nil, inputf("CUDA_VISIBLE_DEVICES=%q: entry %d is empty", s, i)
		case strings.HasPrefix(strings.ToUpper(e), "GPU-"), strings.HasPrefix(strings.ToUpper(e), "MIG-"):
			out = append(out, VisibleDevice{Index: -1, UUID: e})
		default:
			n, err := strconv.Atoi(e)
			if err != nil || n < 0 {
				return nil, inputf("CUDA_VISIBLE_DEVICES=%q: entry %d (%q) is neither a GPU index nor a GPU-/MIG- UUID", s, i, e)
			}
			out = append(out, VisibleDevice{Index: n})
		}
	}
	return out, nil
}

// ParseRank parses a local rank or world size from a flag or variable.
// With an error it returns 0.
func ParseRank(name, s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		return 0, inputf("%s=%q: want a non-negative integer", name, s)
	}
	return n, nil
}
