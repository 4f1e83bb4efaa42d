// Package bind launches a command on the CPUs and memory of its GPU's (or
// NIC's, or a given) NUMA node, replacing gpunode in place: no wrapper
// process is left behind (seed sections 1.1.3-1.1.5, 1.4.1, 1.4.2).
//
// # Target and NUMA node
//
// The target is --gpu (physical index in nvidia-smi/PCI order, GPU- UUID or
// PCI address), --nic (InfiniBand device, interface or PCI address), --node,
// or else the local rank's GPU: --local-rank or $LOCAL_RANK, mapped through
// $CUDA_VISIBLE_DEVICES (indices and UUIDs) as CUDA does; without any of
// them GPU 0. The node comes from the chain of the seed's
// bind_numa_affinity.py, and the plan says which step answered:
//
//  1. the GPU driver (NVML nvmlDeviceGetNumaNodeId, set on Grace systems,
//     where it names the GPU memory's CPU-less node: the nearest node with
//     CPUs is used), then its CPU affinity when the source provides one;
//  2. sysfs numa_node;
//  3. local_cpulist (numa_node -1, local CPUs on one node; or a one-node
//     host);
//  4. the current policy: the node gpunode's own memory policy names (as
//     numactl sets it for a wrapped launcher), else the node of the CPU it
//     runs on.
//
// # CPUs, memory, scheduling
//
// The CPUs are the node's online CPUs minus isolated and nohz_full CPUs
// (unless --include-isolated) and --exclude-cpus. When several local ranks
// land on one node (--local-world-size or $LOCAL_WORLD_SIZE), each gets a
// disjoint share of whole physical cores, deterministic by rank: the node's
// cores in CPU-id order, split evenly (earlier ranks get the remainder), or
// --cpus-per-rank logical CPUs' worth of whole cores each. The memory policy
// (--mem) is MPOL_PREFERRED (default), MPOL_BIND or MPOL_INTERLEAVE (over all
// nodes with CPUs and memory) on the node, or none. --sched sets nice,
// SCHED_FIFO/RR priority, batch or idle; --cgroup joins a cgroup v2 cpuset
// with the chosen cpuset.cpus and cpuset.mems.
//
// # Exec
//
// Exec locks the goroutine to its OS thread, joins the cgroup, calls
// set_mempolicy and sched_setaffinity and the scheduler calls on that thread,
// and execve's the command from it. Affinity, memory policy, nice and
// real-time policy are per-thread attributes that survive execve, so the
// command (same PID as gpunode) starts bound and its children inherit it.
// The command gets GPUNODE_CPUS (the chosen list, for data-loader
// worker_init code), GPUNODE_NUMA_NODE and OMP_NUM_THREADS (the share's
// physical cores) unless OMP_NUM_THREADS is already set.
//
// Any failure stops before execve: a command never runs unbound. Missing
// privileges name what is missing (CAP_SYS_NICE, RLIMIT_RTPRIO, write access
// to the cgroup filesystem).
//
// # Show
//
// ReadShow reports a process's allowed CPUs and their nodes, its memory
// policy (get_mempolicy for gpunode itself, numa_maps for others), pages per
// node, and each thread's last CPU, policy, real-time priority and nice -
// the view of taskset -p, numactl --show and ps -L -o tid,psr,policy,rtprio,ni.
package bind
