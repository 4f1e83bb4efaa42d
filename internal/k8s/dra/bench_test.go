package dra

import (
	"context"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/testhost"
)

// The targets: unsatisfiable matchAttribute pcieRoot over 48 GPUs and
// 25 x 2g on a dynamic-MIG node with 24 decided in <= 10 ms each, next to the
// upstream allocator measured in the same run (it is cut off after
// upstreamCap; ns/op then says the cap, and "timedout" is 1).
const upstreamCap = 3 * time.Second

// benchRun reports wall time (ns/op, inflated when the machine is loaded)
// and the process's CPU time per decision (cpu-ms/op), which load does not
// inflate.
func benchRun(b *testing.B, mk func() *Input, o Options) {
	b.ReportAllocs()
	var cpu time.Duration
	defer func() { b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op") }()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		in := mk()
		b.StartTimer()
		c0 := testhost.CPUTime()
		rep, err := Run(context.Background(), in, o)
		cpu += testhost.CPUTime() - c0
		if err != nil {
			b.Fatal(err)
		}
		if rep.Nodes[0].Fits {
			b.Fatal("fits")
		}
		if rep.Nodes[0].Undecided {
			b.ReportMetric(1, "timedout")
		}
	}
}

func BenchmarkPCIeRoot48Gpunode(b *testing.B) {
	benchRun(b, func() *Input { return pcieInput(b, 48) }, Options{})
}

func BenchmarkPCIeRoot48Upstream(b *testing.B) {
	benchRun(b, func() *Input { return pcieInput(b, 48) }, Options{Solver: SolverUpstream, UpstreamLimit: upstreamCap})
}

func BenchmarkPCIeRoot32Gpunode(b *testing.B) {
	benchRun(b, func() *Input { return pcieInput(b, 32) }, Options{})
}

func BenchmarkPCIeRoot32Upstream(b *testing.B) {
	benchRun(b, func() *Input { return pcieInput(b, 32) }, Options{Solver: SolverUpstream, UpstreamLimit: upstreamCap})
}

func BenchmarkMIG25of24Gpunode(b *testing.B) {
	benchRun(b, func() *Input { return migInput(b, 25) }, Options{})
}

func BenchmarkMIG25of24Upstream(b *testing.B) {
	benchRun(b, func() *Input { return migInput(b, 25) }, Options{Solver: SolverUpstream, UpstreamLimit: upstreamCap})
}

// gpunode's search alone (no upstream allocator racing it): what the
// decision itself costs.
func BenchmarkPCIeRoot48SearchOnly(b *testing.B) {
	benchRun(b, func() *Input { return pcieInput(b, 48) }, Options{Solver: SolverGpunode})
}

func BenchmarkMIG25of24SearchOnly(b *testing.B) {
	benchRun(b, func() *Input { return migInput(b, 25) }, Options{Solver: SolverGpunode})
}
