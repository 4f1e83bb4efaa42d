// Package bench measures what the tuning is for, on the node itself and
// against the physical limits (seed sections 1.1.4, 1.2 and 1.8):
//
//   - NUMA memory (RunNUMA): STREAM-style copy and triad bandwidth with all
//     CPUs of node X and the memory bound to node Y (MPOL_BIND through
//     set_mempolicy and mbind), and the idle load-to-use latency of a
//     dependent pointer chase over a buffer much larger than L3, for every
//     (CPU node, memory node) pair, next to the kernel's distance matrix.
//     Every worker is a goroutine locked to its OS thread, pinned with
//     sched_setaffinity to one CPU, with the thread's memory policy bound to
//     Y; its arrays are anonymous mappings mbind'ed to Y and first touched by
//     that thread. Array sizes come from the L3 sizes topo discovered: each
//     STREAM array is at least 4x the machine's L3 in all (STREAM's rule),
//     the chase buffer 8x the largest L3. Bandwidth counts bytes read plus
//     written, as STREAM does (copy 16 B and triad 24 B per element).
//   - Host-to-device copies (RunH2D): pageable and pinned buffers on the
//     GPU's node and on the farthest node, with the CPUs and memory policy
//     that internal/bind chooses for that GPU (or node). Copies go through
//     the CUDA driver API, loaded at run time with dlopen of libcuda.so.1
//     (purego: the binary builds and runs without CUDA and without cgo);
//     without a driver RunH2D returns ErrNoDriver. Sizes follow nvbandwidth's
//     documented copy-engine defaults: a 512 MiB buffer, 16 copies per
//     sample, 3 samples, median; one warm-up copy is excluded.
//   - Allocators (RunAlloc): a command run N times under glibc malloc and
//     under every jemalloc/tcmalloc library found on the host (ld.so.cache,
//     else the standard library directories, read through hostfs), by
//     LD_PRELOAD, with wall, user and system time and peak RSS from wait4's
//     rusage. The built-in workload (ThreadsWorkload) is C code compiled
//     into gpunode with cgo: many threads doing small malloc/free.
//
// Results are models with a schemaVersion, rendered by internal/output, and
// plotted with gonum/plot (Plot). Save keeps a result under the state
// directory (<state-dir>/bench/NAME.json, written atomically through
// hostfs); Load, LoadAll and Latest read them back (gpunode report includes
// them), and Compare sets two results of one kind side by side with a noise
// estimate from their samples.
package bench
