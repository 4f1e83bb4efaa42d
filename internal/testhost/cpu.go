package testhost

import (
	"syscall"
	"testing"
	"time"
)

// CPUTime is the CPU time (user and system) this process has used so far,
// for benchmarks that report cpu-ms/op next to wall time: other processes
// on a shared machine inflate wall time, not this.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ReportCPU adds cpu-ms/op to b: the CPU time since start per operation.
func ReportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(CPUTime()-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}
