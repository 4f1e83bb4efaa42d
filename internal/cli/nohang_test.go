package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// plantFIFO replaces host path p under root by a FIFO (creating the parent
// directory when needed).
func plantFIFO(t *testing.T, root, p string) {
	t.Helper()
	full := filepath.Join(root, p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(full); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(full, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
}

// runWithin runs gpunode in-process and fails the test if it has not
// returned after d. The blocked goroutine (if any) is left behind: the point
// is to report the hang instead of hanging the test binary.
func runWithin(t *testing.T, d time.Duration, args ...string) (int, string, string, bool) {
	t.Helper()
	type result struct {
		code     int
		out, err string
	}
	done := make(chan result, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		var out, errb strings.Builder
		env := Env{
			Args: args, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
			Getenv: func(string) string { return "" }, Environ: func() []string { return nil },
			Exec: func(string, []string, []string) error { return fmt.Errorf("unexpected exec") },
		}
		code := Main(ctx, env)
		done <- result{code, out.String(), errb.String()}
	}()
	select {
	case r := <-done:
		return r.code, r.out, r.err, true
	case <-time.After(d):
		return 0, "", "", false
	}
}

// A FIFO in place of a sysfs/procfs file or a journal must not hang any
// command (issue 10, defect 8): each is refused with a message naming the
// path, and the command finishes.
func TestFIFOPlacementsDoNotHang(t *testing.T) {
	placements := []string{
		"/sys/devices/system/node/node0/cpulist",
		"/sys/devices/system/cpu/online",
		"/sys/devices/system/cpu/cpu0/topology/core_id",
		"/proc/cpuinfo",
		"/proc/meminfo",
		"/proc/interrupts",
		"/proc/sys/vm/swappiness",
		"/sys/kernel/mm/transparent_hugepage/enabled",
		"/var/lib/gpunode/000001-tune.journal",
	}
	commands := [][]string{
		{"topo"},
		{"audit", "--profile", "training"},
		{"irq", "plan"},
		{"tune", "status"},
		{"tune", "rollback"},
		{"tune", "apply", "--profile", "training"},
	}
	// Pairs where the command reads the path, so its output must name it.
	topoFiles := []string{placements[0], placements[1], placements[2], placements[3]}
	mustName := map[string][]string{
		"topo":                          topoFiles,
		"audit --profile training":      append(append([]string{}, topoFiles...), placements[4], placements[5], placements[6], placements[7]),
		"irq plan":                      append(append([]string{}, topoFiles...), placements[5]),
		"tune status":                   {placements[8]},
		"tune rollback":                 {placements[8]},
		"tune apply --profile training": append(append([]string{}, topoFiles...), placements[6], placements[7], placements[8]),
	}
	hangs, runs := 0, 0
	for _, p := range placements {
		root := tuneHost(t)
		plantFIFO(t, root, p)
		for _, c := range commands {
			args := append([]string{"--root", root}, c...)
			runs++
			code, out, errs, ok := runWithin(t, 20*time.Second, args...)
			if !ok {
				hangs++
				t.Errorf("FIFO at %s: gpunode %s hangs", p, strings.Join(c, " "))
				continue
			}
			// Whatever the command concluded, a refused FIFO it read is
			// named: as an error, a warning or a finding.
			named := strings.Contains(out+errs, p)
			if !named && (code >= ExitFailure || slices.Contains(mustName[strings.Join(c, " ")], p)) {
				t.Errorf("FIFO at %s: gpunode %s: exit %d without naming the path:\n%s%s", p, strings.Join(c, " "), code, out, errs)
			}
			t.Logf("FIFO at %s: gpunode %s: exit %d, path named: %v", p, strings.Join(c, " "), code, named)
		}
		// The FIFO is still a FIFO: nothing replaced or wrote it.
		if fi, err := os.Lstat(filepath.Join(root, p)); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
			t.Errorf("FIFO at %s was replaced: %v %v", p, fi, err)
		}
	}
	t.Logf("%d runs (%d placements x %d commands), %d hangs", runs, len(placements), len(commands), hangs)
}
