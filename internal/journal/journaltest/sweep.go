package journaltest

import (
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
)

// FullSweepsEnv is the switch that makes fault and kill sweeps, property
// runs and load tests run at full size. .ci/run sets it in its own step
// ("== full sweeps"); 'go test ./...' runs the stratified sample.
const FullSweepsEnv = "GPUNODE_FULL_SWEEPS"

// FullSweeps reports whether GPUNODE_FULL_SWEEPS=1.
func FullSweeps() bool { return os.Getenv(FullSweepsEnv) == "1" }

// Size returns full when GPUNODE_FULL_SWEEPS=1 and sample otherwise.
func Size(sample, full int) int {
	if FullSweeps() {
		return full
	}
	return sample
}

// Points chooses the fault points of a sweep from the log of a counting run
// (hostfs.Faults.Log: "N op path" per operation). With GPUNODE_FULL_SWEEPS=1
// it returns every point 1..len(log). Otherwise it returns a sample that
// covers every kind of point: the operations are grouped by kind (the
// operation and whether it touches the journal directory or the host), and
// the sample takes each group's first and last operation, up to perKind
// more from each group chosen by a fixed seed, and the run's first and last
// operation. The result is sorted and deterministic.
func Points(log []string, perKind int) []int {
	n := len(log)
	if FullSweeps() {
		out := make([]int, n)
		for i := range out {
			out[i] = i + 1
		}
		return out
	}
	groups := map[string][]int{}
	for i, l := range log {
		groups[kindOf(l)] = append(groups[kindOf(l)], i+1)
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	seen := map[int]bool{}
	var out []int
	add := func(k int) {
		if k >= 1 && k <= n && !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	add(1)
	add(n)
	r := rand.New(rand.NewPCG(uint64(n), 27))
	for _, k := range keys {
		g := groups[k]
		add(g[0])
		add(g[len(g)-1])
		rest := append([]int(nil), g[1:max(len(g)-1, 1)]...)
		r.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
		for i := 0; i < perKind && i < len(rest); i++ {
			add(rest[i])
		}
	}
	sort.Ints(out)
	return out
}

// Kinds returns the kinds of point (see Points) the log holds.
func Kinds(log []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range log {
		if k := kindOf(l); !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// kindOf is a log line's kind: "op journal" or "op host".
func kindOf(line string) string {
	f := strings.SplitN(line, " ", 3)
	if len(f) < 2 {
		return line
	}
	if _, err := strconv.Atoi(f[0]); err != nil {
		return line
	}
	where := "host"
	if len(f) == 3 && strings.Contains(f[2], "/var/lib/gpunode") {
		where = "journal"
	}
	return f[1] + " " + where
}
