package bench

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// maxNodeBits is the node-mask size passed to set_mempolicy and mbind.
const maxNodeBits = 1024

// boundThread locks the calling goroutine to its OS thread, pins the thread
// to cpus and binds its memory policy to node (MPOL_BIND; node < 0 leaves
// the policy alone). The goroutine must end without unlocking: the runtime
// then retires the thread, so no other goroutine inherits its affinity or
// policy.
func boundThread(cpus []int, node int) error {
	runtime.LockOSThread()
	if len(cpus) > 0 {
		var set unix.CPUSet
		for _, c := range cpus {
			if c < 0 || c >= maxNodeBits {
				return fmt.Errorf("CPU %d out of range", c)
			}
			set.Set(c)
		}
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return fmt.Errorf("sched_setaffinity(%v): %w", cpus, err)
		}
	}
	if node >= 0 {
		mask, err := nodeMask(node)
		if err != nil {
			return err
		}
		if err := unix.SetMemPolicy(unix.MPOL_BIND, mask); err != nil {
			return fmt.Errorf("set_mempolicy(MPOL_BIND, node %d): %w", node, err)
		}
	}
	return nil
}

func nodeMask(node int) (*unix.CPUSet, error) {
	if node < 0 || node >= maxNodeBits {
		return nil, fmt.Errorf("NUMA node %d out of range", node)
	}
	var mask unix.CPUSet // 1024 bits, used as a node mask
	mask.Set(node)
	return &mask, nil
}

// mapOnNode maps size bytes of anonymous memory bound to node with mbind
// (MPOL_BIND), without touching it: the caller's thread faults the pages in
// (first touch). node < 0 maps without a binding.
func mapOnNode(size int, node int) ([]byte, error) {
	if size <= 0 {
		return nil, fmt.Errorf("mapping of %d bytes", size)
	}
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("mmap %d bytes: %w", size, err)
	}
	if node < 0 {
		return b, nil
	}
	mask, err := nodeMask(node)
	if err != nil {
		_ = unix.Munmap(b)
		return nil, err
	}
	_, _, e := unix.Syscall6(unix.SYS_MBIND, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)),
		uintptr(unix.MPOL_BIND), uintptr(unsafe.Pointer(mask)), maxNodeBits, 0)
	if e != 0 {
		_ = unix.Munmap(b)
		return nil, fmt.Errorf("mbind(MPOL_BIND, node %d): %w", node, e)
	}
	return b, nil
}

func unmap(b []byte) {
	if len(b) > 0 {
		_ = unix.Munmap(b)
	}
}

// float64s views b as float64 values.
func float64s(b []byte) []float64 {
	return unsafe.Slice((*float64)(unsafe.Pointer(&b[0])), len(b)/8)
}

// uint64s views b as uint64 values.
func uint64s(b []byte) []uint64 {
	return unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), len(b)/8)
}

// touch writes every page of b from the calling thread (first touch).
func touch(b []byte) {
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
}

// pagesOnNode reports how many of b's pages lie on node (move_pages query
// mode), sampling at most 64 pages; -1 when the kernel does not say.
func pagesOnNode(b []byte, node int) (on, sampled int) {
	const samples = 64
	n := len(b) / 4096
	if n == 0 {
		return -1, 0
	}
	step := max(1, n/samples)
	var ptrs []uintptr
	for i := 0; i < n && len(ptrs) < samples; i += step {
		ptrs = append(ptrs, uintptr(unsafe.Pointer(&b[i*4096])))
	}
	status := make([]int32, len(ptrs))
	_, _, e := unix.Syscall6(unix.SYS_MOVE_PAGES, 0, uintptr(len(ptrs)), uintptr(unsafe.Pointer(&ptrs[0])), 0,
		uintptr(unsafe.Pointer(&status[0])), 0)
	if e != 0 {
		return -1, 0
	}
	for _, s := range status {
		if int(s) == node {
			on++
		}
	}
	return on, len(ptrs)
}
