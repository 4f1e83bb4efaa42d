package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/output"
)

// AllocSchema identifies the JSON/YAML layout of AllocResult.
const AllocSchema = "gpunode.bench.alloc/v1"

// Allocators.
const (
	Glibc    = "glibc"
	Jemalloc = "jemalloc"
	Tcmalloc = "tcmalloc"
)

// AllocResult is one 'gpunode bench alloc' run.
type AllocResult struct {
	SchemaVersion string   `json:"schemaVersion"`
	Time          string   `json:"time,omitempty"`
	Command       []string `json:"command"`
	// Workload names the built-in workload ("threads"), empty for a user
	// command.
	Workload string     `json:"workload,omitempty"`
	Repeats  int        `json:"repeats"`
	Runs     []AllocRun `json:"runs"`
	// RSSFloorBytes is gpunode's own peak RSS when a run's wait4 figure
	// was not above it (see AllocRun.RSSAtFloor).
	RSSFloorBytes uint64   `json:"rssFloorBytes,omitempty"`
	Notes         []string `json:"notes"`
}

// AllocRun is every sample of one allocator.
type AllocRun struct {
	Allocator string `json:"allocator"`
	// Library is the preloaded file (empty for glibc's own malloc).
	Library     string    `json:"library"`
	WallSeconds []float64 `json:"wallSeconds"`
	UserSeconds []float64 `json:"userSeconds"`
	SysSeconds  []float64 `json:"sysSeconds"`
	MaxRSSBytes []uint64  `json:"maxRSSBytes"`
	// Medians and the relative spread of the wall time (robust sigma over
	// the median), and the ratios of the medians to glibc's.
	MedianWallSeconds float64 `json:"medianWallSeconds"`
	MedianUserSeconds float64 `json:"medianUserSeconds"`
	MedianSysSeconds  float64 `json:"medianSysSeconds"`
	MedianMaxRSSBytes uint64  `json:"medianMaxRSSBytes"`
	WallSpread        float64 `json:"wallSpread"`
	// MaxRSSSource is where the peak RSS comes from: wait4 (ru_maxrss) or
	// VmHWM (reported by the built-in workload itself). RSSAtFloor is set
	// when a wait4 figure was at or below gpunode's own peak, which the
	// kernel reports for a child started with CLONE_VM that stayed smaller.
	MaxRSSSource string  `json:"maxRSSSource"`
	RSSAtFloor   bool    `json:"rssAtFloor,omitempty"`
	WallVsGlibc  float64 `json:"wallVsGlibc,omitempty"`
	RSSVsGlibc   float64 `json:"rssVsGlibc,omitempty"`
}

// AllocLibrary is an allocator found on the host.
type AllocLibrary struct {
	Allocator string `json:"allocator"`
	Path      string `json:"path"`
}

// allocSonames are the sonames of the Debian packages libjemalloc2 and
// libgoogle-perftools4 / libtcmalloc-minimal4, in order of preference.
var allocSonames = []struct{ allocator, soname string }{
	{Jemalloc, "libjemalloc.so.2"},
	{Tcmalloc, "libtcmalloc.so.4"},
	{Tcmalloc, "libtcmalloc_minimal.so.4"},
}

// libDirs are searched when ld.so.cache is missing or does not list an
// allocator.
var libDirs = []string{"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib", "/lib64", "/lib"}

// FindAllocators returns glibc (always) and the jemalloc and tcmalloc
// libraries of the host: from /etc/ld.so.cache when it lists them, else
// from the standard library directories, all read through fs. Notes say
// what was not found.
func FindAllocators(fs *hostfs.FS) ([]AllocLibrary, []string) {
	out := []AllocLibrary{{Allocator: Glibc}}
	var notes []string
	var cache []LDCacheEntry
	if b, err := fs.ReadFile("/etc/ld.so.cache"); err == nil {
		if cache, err = ParseLDCache(b); err != nil {
			notes = append(notes, err.Error())
		}
	}
	found := map[string]bool{}
	for _, s := range allocSonames {
		if found[s.allocator] {
			continue
		}
		p := ""
		for _, e := range cache {
			if e.Name == s.soname && (e.Flags&0xff00) == ldCacheArch(cache) && fs.Exists(e.Path) {
				p = e.Path
				break
			}
		}
		if p == "" {
			for _, d := range libDirs {
				if c := path.Join(d, s.soname); fs.Exists(c) {
					p = c
					break
				}
			}
		}
		if p != "" {
			found[s.allocator] = true
			out = append(out, AllocLibrary{Allocator: s.allocator, Path: p})
		}
	}
	for _, a := range []string{Jemalloc, Tcmalloc} {
		if !found[a] {
			notes = append(notes, fmt.Sprintf("%s not found (Debian: apt-get install %s)", a, map[string]string{Jemalloc: "libjemalloc2", Tcmalloc: "libgoogle-perftools4"}[a]))
		}
	}
	return out, notes
}

// ldCacheArch is the architecture byte pattern of the cache's libc6 entries
// of this machine's word size: the most common high byte of the flags.
func ldCacheArch(cache []LDCacheEntry) int32 {
	count := map[int32]int{}
	best, bestN := int32(0), -1
	for _, e := range cache {
		k := e.Flags & 0xff00
		count[k]++
		if count[k] > bestN {
			best, bestN = k, count[k]
		}
	}
	return best
}

// AllocOptions tune RunAlloc.
type AllocOptions struct {
	// Command is run under each allocator (argv); Workload names it when it
	// is the built-in workload.
	Command  []string
	Workload string
	// Repeats per allocator (default 5). Runs are interleaved (round robin
	// over the allocators) so drift spreads evenly.
	Repeats int
	// Allocators to use (nil: all found).
	Allocators []AllocLibrary
	// Environ is the base environment of the command (LD_PRELOAD removed).
	Environ  []string
	Progress Progress
	// run replaces process execution (tests).
	run func(ctx context.Context, argv, env []string) (sample, error)
}

type sample struct {
	wall, user, sys float64
	maxRSS, floor   uint64
	source          string
}

// RunAlloc runs the command under each allocator.
func RunAlloc(ctx context.Context, o AllocOptions) (*AllocResult, error) {
	if len(o.Command) == 0 {
		return nil, inputf("no command to run")
	}
	if o.Repeats <= 0 {
		o.Repeats = 5
	}
	if o.Progress == nil {
		o.Progress = NoProgress{}
	}
	if o.run == nil {
		o.run = runOnce
	}
	if len(o.Allocators) == 0 {
		return nil, inputf("no allocator to compare")
	}
	base := slices.DeleteFunc(slices.Clone(o.Environ), func(kv string) bool { return strings.HasPrefix(kv, "LD_PRELOAD=") })
	r := &AllocResult{SchemaVersion: AllocSchema, Time: time.Now().UTC().Format(time.RFC3339), Command: o.Command,
		Workload: o.Workload, Repeats: o.Repeats, Notes: []string{}}
	for _, a := range o.Allocators {
		r.Runs = append(r.Runs, AllocRun{Allocator: a.Allocator, Library: a.Path})
	}
	o.Progress.Start("alloc", o.Repeats*len(o.Allocators), 0)
	defer o.Progress.Done()
	for i := 0; i < o.Repeats; i++ {
		for k, a := range o.Allocators {
			env := base
			if a.Path != "" {
				env = append(slices.Clone(base), "LD_PRELOAD="+a.Path)
			}
			s, err := o.run(ctx, o.Command, env)
			if err != nil {
				return nil, fmt.Errorf("%s run %d: %w", a.Allocator, i+1, err)
			}
			run := &r.Runs[k]
			run.WallSeconds = append(run.WallSeconds, round6(s.wall))
			run.UserSeconds = append(run.UserSeconds, round6(s.user))
			run.SysSeconds = append(run.SysSeconds, round6(s.sys))
			run.MaxRSSBytes = append(run.MaxRSSBytes, s.maxRSS)
			run.MaxRSSSource = s.source
			if s.source == RSSFromWait4 && s.floor > 0 && s.maxRSS <= s.floor {
				run.RSSAtFloor = true
				r.RSSFloorBytes = max(r.RSSFloorBytes, s.floor)
			}
			o.Progress.Add(1)
		}
	}
	summarizeAlloc(r)
	if r.RSSFloorBytes > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("peak RSS of runs marked <= is at most gpunode's own %s: the kernel counts the parent's peak for a child started with CLONE_VM (Go's fork/exec)", output.HumanBytes(r.RSSFloorBytes)))
	}
	return r, nil
}

func summarizeAlloc(r *AllocResult) {
	var glibc *AllocRun
	for i := range r.Runs {
		run := &r.Runs[i]
		run.MedianWallSeconds = round6(Median(run.WallSeconds))
		run.MedianUserSeconds = round6(Median(run.UserSeconds))
		run.MedianSysSeconds = round6(Median(run.SysSeconds))
		run.MedianMaxRSSBytes = uint64(Median(u64f(run.MaxRSSBytes)))
		run.WallSpread = round3(RelSpread(run.WallSeconds))
		if run.Allocator == Glibc {
			glibc = run
		}
	}
	if glibc == nil {
		return
	}
	for i := range r.Runs {
		run := &r.Runs[i]
		if run.Allocator == Glibc {
			continue
		}
		run.WallVsGlibc = round3(ratio(run.MedianWallSeconds, glibc.MedianWallSeconds))
		run.RSSVsGlibc = round3(ratio(float64(run.MedianMaxRSSBytes), float64(glibc.MedianMaxRSSBytes)))
	}
}

func u64f(xs []uint64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(x)
	}
	return out
}

func round6(x float64) float64 { return float64(int64(x*1e6+0.5)) / 1e6 }

// runOnce runs argv with env and returns wait4's resource usage.
func runOnce(ctx context.Context, argv, env []string) (sample, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &limitedBuffer{b: &stderr, n: 64 << 10}
	start := time.Now()
	var stdout bytes.Buffer
	cmd.Stdout = &limitedBuffer{b: &stdout, n: 64 << 10}
	var self unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &self)
	err := cmd.Run()
	wall := time.Since(start)
	if strings.Contains(stderr.String(), quotePreloadFailed) {
		return sample{}, fmt.Errorf("the allocator was not loaded: %s", firstLine(stderr.String()))
	}
	if err != nil {
		var ee *exec.ExitError
		msg := strings.TrimSpace(stderr.String())
		if errors.As(err, &ee) && msg != "" {
			return sample{}, fmt.Errorf("%s: %w: %s", argv[0], err, firstLine(msg))
		}
		return sample{}, fmt.Errorf("%s: %w", argv[0], err)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok || ru == nil {
		return sample{}, errors.New("no resource usage from wait4")
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	// ru_maxrss is in KiB on Linux. Go starts children with CLONE_VM, and
	// at execve the kernel keeps the larger of the old (shared, so this
	// process's) and the new peak: a child's figure at or below our own
	// peak is only an upper bound. The built-in workload reports its own
	// VmHWM (its image's peak) on stdout instead.
	s := sample{wall: wall.Seconds(), user: tv(ru.Utime), sys: tv(ru.Stime), maxRSS: uint64(ru.Maxrss) * 1024,
		floor: uint64(self.Maxrss) * 1024, source: RSSFromWait4}
	if v, ok := parsePeakLine(stdout.String()); ok {
		s.maxRSS, s.source = v, RSSFromVmHWM
	}
	return s, nil
}

// Sources of a peak RSS figure.
const (
	RSSFromWait4 = "wait4"
	RSSFromVmHWM = "VmHWM"
)

// peakLine starts the line the built-in workload prints with its VmHWM.
const peakLine = "gpunode-alloc-workload vmhwm-bytes "

func parsePeakLine(out string) (uint64, bool) {
	for line := range strings.Lines(out) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), strings.TrimSpace(peakLine)); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// ReportPeakRSS prints this process's VmHWM (from /proc/self/status,
// through fs) in the line RunAlloc reads from the built-in workload.
func ReportPeakRSS(fs *hostfs.FS, w io.Writer) error {
	b, err := fs.ReadFile("/proc/self/status")
	if err != nil {
		return err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(v)
			if len(f) == 2 && f[1] == "kB" {
				n, err := strconv.ParseUint(f[0], 10, 64)
				if err == nil {
					_, err = fmt.Fprintf(w, "%s%d\n", peakLine, n*1024)
					return err
				}
			}
		}
	}
	return errors.New("/proc/self/status: no VmHWM")
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// limitedBuffer keeps the first n bytes written.
type limitedBuffer struct {
	b *bytes.Buffer
	n int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
