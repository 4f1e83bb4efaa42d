package companion

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpunode/gpunode/internal/bench"
	"github.com/gpunode/gpunode/internal/bench/benchplot"
	"github.com/gpunode/gpunode/internal/bind"
	"github.com/gpunode/gpunode/internal/cli"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/topo"
)

// benchOut are the flags every measuring bench command shares.
type benchOut struct {
	plot, save string
	noProgress bool
	force      bool
}

func (b *benchOut) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&b.plot, "plot", "", "also write a plot to FILE.svg or FILE.png")
	fl.StringVar(&b.save, "save", "", "keep the result as --bench-dir/NAME.json (see 'gpunode bench compare')")
	fl.BoolVar(&b.noProgress, "no-progress", false, "no progress bar on stderr")
	fl.BoolVar(&b.force, "force", false, "replace a symbolic link at --plot FILE (the link itself, never what it points to)")
}

func (a *app) newBenchCommand() *cobra.Command {
	dirs := &benchDirs{}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure NUMA memory bandwidth/latency, host-to-device copies and allocators on this node",
		Long: `Measure what the tuning is for, on this node, against the physical limits:

  numa     STREAM-style copy/triad bandwidth and pointer-chase latency for every
           (CPU node, memory node) pair, next to the kernel's distance matrix
  h2d      host<->GPU copies, pageable and pinned, from the GPU's node and the
           farthest node (the CUDA driver, loaded at run time)
  alloc    a command (or the built-in threads workload) under glibc, jemalloc
           and tcmalloc (LD_PRELOAD), N runs each
  compare  two results kept with --save, with a noise estimate

Run it before and after 'gpunode tune apply' with --save NAME, then compare.`,
		Example: `  gpunode bench numa --duration 500ms --plot numa.svg
  gpunode bench h2d --gpu 0 --save before
  gpunode bench alloc --runs 7 -- python -c 'import torch'
  gpunode bench compare before after`,
	}
	dirs.register(cmd.PersistentFlags())
	cmd.AddCommand(a.newBenchNUMACommand(dirs), a.newBenchH2DCommand(dirs), a.newBenchAllocCommand(dirs),
		a.newBenchCompareCommand(dirs), a.newBenchListCommand(dirs), a.newBenchWorkloadCommand())
	return cmd
}

// benchDirs is where saved results are: --bench-dir, or the deprecated
// --state-dir's bench/ folder.
type benchDirs struct{ bench, state string }

func (d *benchDirs) register(fl *pflag.FlagSet) {
	fl.StringVar(&d.bench, "bench-dir", bench.DefaultDir, "directory of saved bench results, NAME.json each (a host path under --root)")
	fl.StringVar(&d.state, "state-dir", "", "deprecated: --state-dir DIR is --bench-dir DIR/bench")
	cli.DeprecatedAlias(fl, "state-dir", "use --bench-dir DIR/bench (the results directory itself)")
}

// dir is the results directory.
func (d *benchDirs) dir() string {
	if d.state != "" {
		return bench.Dir(d.state)
	}
	return d.bench
}

func (a *app) progress(off bool) bench.Progress {
	if off {
		return bench.NoProgress{}
	}
	return bench.NewBar(a.Stderr)
}

// liveTopo discovers this machine for a measurement (measurements run here:
// --root only names where results are kept).
func (a *app) liveTopo(cmd *cobra.Command, out *benchOut) (*topo.Topology, error) {
	if out.plot != "" {
		if _, err := benchplot.PlotFormat(out.plot); err != nil {
			return nil, cli.WrapUsage(err)
		}
		// Refuse a path that is not a regular file before measuring.
		if err := hostfs.CheckOutput(out.plot, hostfs.OutputOptions{Force: out.force}); err != nil {
			return nil, cli.WrapUsage(fmt.Errorf("--plot: %w", err))
		}
	}
	host, err := a.Host()
	if err != nil {
		return nil, err
	}
	if !host.IsLive() {
		return nil, cli.Usagef("bench measures this machine: --root %s works only with 'bench compare' and 'bench list'", a.Root)
	}
	return topo.Discover(cmd.Context(), host)
}

// finish renders v, writes the plot and saves the result.
func (a *app) finishBench(out *benchOut, dir string, v any) error {
	if err := a.Render(v); err != nil {
		return err
	}
	if out.plot != "" {
		format, _ := benchplot.PlotFormat(out.plot)
		b, err := benchplot.Plot(v, format)
		if err != nil {
			return fmt.Errorf("plot: %w", err)
		}
		// The plot is the user's file, named on the command line.
		if err := hostfs.WriteOutput(out.plot, b, 0o644, hostfs.OutputOptions{Force: out.force}); err != nil {
			return fmt.Errorf("plot: %w", err)
		}
	}
	if out.save != "" {
		host, err := a.Host()
		if err != nil {
			return err
		}
		p, err := bench.Save(host, dir, out.save, v)
		if err != nil {
			return benchErr(err)
		}
		fmt.Fprintf(a.Stderr, "saved %s\n", p)
	}
	return nil
}

func benchErr(err error) error {
	if errors.Is(err, bench.ErrInput) {
		return cli.WrapUsage(err)
	}
	return err
}

func (a *app) newBenchNUMACommand(dirs *benchDirs) *cobra.Command {
	var out benchOut
	var o bench.NUMAOptions
	var cpuNodes, memNodes string
	var arrayMiB uint64
	cmd := &cobra.Command{
		Use:   "numa",
		Short: "Memory bandwidth (copy, triad) and latency for every CPU node x memory node pair",
		Long: `For every (CPU node X, memory node Y) pair: STREAM-style copy and triad with
one thread per CPU of X (pinned with sched_setaffinity, memory policy
MPOL_BIND to Y, arrays mbind'ed to Y and first touched by their thread), and
the idle load-to-use latency of a dependent pointer chase from the first CPU
of X over a buffer bound to Y. Arrays are 4x the machine's L3 in all (at
least 64 MiB each), the chase buffer 8x the largest L3 (at least 128 MiB).
GB/s count bytes read plus written (copy 16 B, triad 24 B per element), as
STREAM does; each figure is the median of its samples (every sample is in
-o json). Memcpy passes run over the same arrays with the C library's
memcpy (libc.so.6 loaded at run time; Go's copy where it cannot be, and
memcpyRoutine says which ran): memcpyMbwMiBps counts them as mbw counts
(MiB of one array over the mean pass time), so 'gpunode bench numa
--threads 1 --array-mib N' compares with 'mbw -t1 N', which runs glibc's
memcpy (docs/BANDWIDTH.md). goCopyMbwMiBps is a few passes of Go's copy
(the runtime's memmove, what Go programs get) beside it; copyMbwMiBps
counts the copy loop the same way, as 'mbw -t0 N' runs it. --duration bounds the whole run:
buffers shrink to fit it and half the free memory (a note says so). The table shows the ratio of each remote pair to its CPU node's
local pair and the kernel's distance matrix.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t, err := a.liveTopo(cmd, &out)
			if err != nil {
				return err
			}
			if o.CPUNodes, err = parseIntList("--cpu-nodes", cpuNodes); err != nil {
				return err
			}
			if o.MemNodes, err = parseIntList("--mem-nodes", memNodes); err != nil {
				return err
			}
			if o.Threads < 0 || o.Duration < 0 {
				return cli.Usagef("--threads and --duration must not be negative")
			}
			if arrayMiB > 1<<20 {
				return cli.Usagef("--array-mib %d: at most %d", arrayMiB, 1<<20)
			}
			if arrayMiB > 0 {
				o.ArrayBytes = arrayMiB << 20
			}
			o.Progress = a.progress(out.noProgress)
			r, err := bench.RunNUMA(cmd.Context(), t, o)
			if err != nil {
				return benchErr(err)
			}
			return a.finishBench(&out, dirs.dir(), r)
		},
	}
	fl := cmd.Flags()
	fl.DurationVar(&o.Duration, "duration", 10*time.Second, "bound of the whole run, allocation included (each kernel of each pair gets its share; buffers shrink to fit it and half the free memory)")
	fl.Uint64Var(&arrayMiB, "array-mib", 0, "size of each of the three arrays in MiB, all threads together (as mbw's array_size_in_MiB; default 4x the L3 caches, capped)")
	fl.IntVar(&o.Threads, "threads", 0, "threads per CPU node (default: every online CPU of the node)")
	fl.StringVar(&cpuNodes, "cpu-nodes", "", "only these CPU nodes (comma list)")
	fl.StringVar(&memNodes, "mem-nodes", "", "only these memory nodes (comma list)")
	out.register(cmd)
	return cmd
}

func parseIntList(flag, s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return nil, cli.Usagef("%s %q: want a comma list of node ids", flag, s)
		}
		out = append(out, n)
	}
	return out, nil
}

func (a *app) newBenchH2DCommand(dirs *benchDirs) *cobra.Command {
	var out benchOut
	var gpuSel, backend string
	var sizeMiB, loops, samples int
	cmd := &cobra.Command{
		Use:   "h2d",
		Short: "Host-to-device and device-to-host copy bandwidth, pageable and pinned, local and remote node",
		Long: `The seed's numa_bench.sh done right: for the GPU (--gpu, as 'gpunode bind'
takes it) copy a buffer to the device and back, from pageable and from pinned
(cuMemHostRegister'ed) memory, with the buffer and the copying thread on the
GPU's NUMA node and on the farthest node. Both bindings are the ones
'gpunode bind --mem bind' chooses (--gpu G, and --node FARTHEST). Copies go
through the CUDA driver API (libcuda.so.1 loaded at run time; without it the
command says so and exits 3). Defaults follow nvbandwidth's copy-engine
defaults: 512 MiB per copy, 16 copies per sample, 3 samples, the median
reported; one warm-up copy per case is excluded. The table gives GB/s per
case, the share of the link's theoretical rate (PCIe generation x width from
sysfs) and the local/remote and pinned/pageable ratios.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if sizeMiB <= 0 || loops <= 0 || samples <= 0 {
				return cli.Usagef("--size-mib, --loops and --samples must be positive")
			}
			t, err := a.liveTopo(cmd, &out)
			if err != nil {
				return err
			}
			o := bench.H2DOptions{GPU: gpuSel, Size: sizeMiB << 20, Loops: loops, Samples: samples, Progress: a.progress(out.noProgress)}
			o.Sources.Policy = bind.LivePolicy{}
			if backend != gpu.KindNone {
				o.Sources.GPUs = a.BindGPUSource(backend)
			}
			r, err := bench.RunH2D(cmd.Context(), t, o)
			if err != nil {
				return benchErr(err)
			}
			return a.finishBench(&out, dirs.dir(), r)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&gpuSel, "gpu", "0", "GPU: index (nvidia-smi order), GPU- UUID or PCI address")
	fl.IntVar(&sizeMiB, "size-mib", bench.DefaultH2DSize>>20, "MiB per copy")
	fl.IntVar(&loops, "loops", bench.DefaultH2DLoops, "copies per sample")
	fl.IntVar(&samples, "samples", bench.DefaultH2DSamples, "samples per case")
	fl.StringVar(&backend, "gpu-backend", gpu.KindAuto, "GPU driver layer for UUIDs and NVML NUMA ids: auto, nvml, fake or none")
	out.register(cmd)
	return cmd
}

func (a *app) newBenchAllocCommand(dirs *benchDirs) *cobra.Command {
	var out benchOut
	var runs, threads int
	var ops int64
	var workload, allocators string
	cmd := &cobra.Command{
		Use:   "alloc [flags] [-- COMMAND [ARGS...]]",
		Short: "Run a command under glibc malloc, jemalloc and tcmalloc and compare time and peak RSS",
		Long: `Run COMMAND (default: the built-in workload, --workload threads) --runs
times under each allocator found on this host: glibc's malloc, and jemalloc
and tcmalloc (Debian: libjemalloc2, libgoogle-perftools4) by LD_PRELOAD, their
paths found in /etc/ld.so.cache or the standard library directories. Runs are
interleaved; wall time is measured around each run, user/system time and
peak RSS come from wait4's resource usage. The table shows medians, the
spread and the ratios to glibc; -o json every sample.

The built-in workload is C code compiled into gpunode (cgo): --threads POSIX
threads each doing --ops malloc/free pairs of 16-1024 bytes with 256 blocks
live. A gpunode built without cgo needs a COMMAND.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() < 0 && len(args) > 0 {
				return cli.Usagef("put the command after --: gpunode bench alloc [flags] -- %s", strings.Join(args, " "))
			}
			if runs <= 0 || threads <= 0 || ops <= 0 {
				return cli.Usagef("--runs, --threads and --ops must be positive")
			}
			if _, err := a.liveTopo(cmd, &out); err != nil {
				return err
			}
			o := bench.AllocOptions{Command: args, Repeats: runs, Environ: a.EnvironList(), Progress: a.progress(out.noProgress)}
			if len(args) == 0 {
				if workload != "threads" {
					return cli.Usagef("--workload %q: the built-in workload is 'threads'", workload)
				}
				if !bench.WorkloadAvailable {
					return cli.Usagef("%v", bench.ThreadsWorkload(1, 1))
				}
				exe, err := os.Executable()
				if err != nil {
					return fmt.Errorf("built-in workload: %w", err)
				}
				o.Workload = workload
				o.Command = []string{exe, "bench", "alloc-workload", "--threads", strconv.Itoa(threads), "--ops", strconv.FormatInt(ops, 10)}
			}
			host, err := a.Host()
			if err != nil {
				return err
			}
			libs, notes := bench.FindAllocators(host)
			if allocators != "" {
				want := strings.Split(allocators, ",")
				for _, w := range want {
					if !slices.ContainsFunc(libs, func(l bench.AllocLibrary) bool { return l.Allocator == strings.TrimSpace(w) }) {
						return cli.Usagef("--allocators: %q not found on this host (found: %s)", w, allocatorNames(libs))
					}
				}
				libs = slices.DeleteFunc(libs, func(l bench.AllocLibrary) bool {
					return !slices.ContainsFunc(want, func(w string) bool { return strings.TrimSpace(w) == l.Allocator })
				})
			}
			o.Allocators = libs
			r, err := bench.RunAlloc(cmd.Context(), o)
			if err != nil {
				return benchErr(err)
			}
			r.Notes = append(r.Notes, notes...)
			return a.finishBench(&out, dirs.dir(), r)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&runs, "runs", 5, "runs per allocator")
	fl.StringVar(&workload, "workload", "threads", "built-in workload when no command is given")
	fl.IntVar(&threads, "threads", 8, "threads of the built-in workload")
	fl.Int64Var(&ops, "ops", 1000000, "malloc/free pairs per thread of the built-in workload")
	fl.StringVar(&allocators, "allocators", "", "only these allocators (comma list of glibc, jemalloc, tcmalloc)")
	out.register(cmd)
	return cmd
}

func allocatorNames(libs []bench.AllocLibrary) string {
	var n []string
	for _, l := range libs {
		n = append(n, l.Allocator)
	}
	return strings.Join(n, ", ")
}

// newBenchWorkloadCommand is the built-in allocator workload that 'bench
// alloc' runs as a child process.
func (a *app) newBenchWorkloadCommand() *cobra.Command {
	var threads int
	var ops int64
	cmd := &cobra.Command{
		Use:    "alloc-workload",
		Short:  "The built-in allocator workload (run by 'bench alloc')",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := bench.ThreadsWorkload(threads, ops); err != nil {
				return benchErr(err)
			}
			host, err := a.Host()
			if err != nil {
				return err
			}
			return bench.ReportPeakRSS(host, a.Stdout)
		},
	}
	cmd.Flags().IntVar(&threads, "threads", 8, "threads")
	cmd.Flags().Int64Var(&ops, "ops", 1000000, "malloc/free pairs per thread")
	return cmd
}

func (a *app) newBenchCompareCommand(dirs *benchDirs) *cobra.Command {
	return &cobra.Command{
		Use:   "compare A B",
		Short: "Compare two saved results (before/after) with a noise estimate",
		Long: `Compare the results saved as A and B (of one kind) metric by metric: the
change in percent and the noise, the combined relative spread of the two
sample sets (1.4826 x MAD / median each). A change of at most twice the noise
is reported as within noise.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			host, err := a.Host()
			if err != nil {
				return err
			}
			x, err := bench.Load(host, dirs.dir(), args[0])
			if err != nil {
				return benchErr(err)
			}
			y, err := bench.Load(host, dirs.dir(), args[1])
			if err != nil {
				return benchErr(err)
			}
			c, err := bench.Compare(x, y)
			if err != nil {
				return benchErr(err)
			}
			return a.Render(c)
		},
	}
}

func (a *app) newBenchListCommand(dirs *benchDirs) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the results kept with --save",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			host, err := a.Host()
			if err != nil {
				return err
			}
			all, errs := bench.LoadAll(host, dirs.dir())
			for _, e := range errs {
				a.Warnf("%v", e)
			}
			l := &bench.List{SchemaVersion: bench.ListSchema, Dir: dirs.dir(), Results: []bench.ListEntry{}}
			for _, s := range all {
				l.Results = append(l.Results, bench.ListEntry{Name: s.Name, Kind: s.Kind, SavedAt: s.SavedAt})
			}
			return a.Render(l)
		},
	}
}
